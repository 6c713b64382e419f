"""Launch parameters: block sizes and warps, chosen from d and dtype.

Every choice here is a measured rule (see docs/PERF_NOTES.md); `OVERRIDE` lets the tuning
script (bench/tune.py) try other values without editing a kernel.
"""
from __future__ import annotations

import triton

# Widest row processed in one block; wider rows are processed in chunks of CHUNK_D.
MAX_BLOCK_D = 16384
CHUNK_D = 8192

# strategy name -> dict of forced parameters (block_r, num_warps, block_d), for tuning runs.
OVERRIDE: dict[str, dict] = {}


def block_d(d: int) -> tuple[int, bool]:
    """(BLOCK_D, ONE_CHUNK): the column block and whether a whole row fits in it."""
    if d <= MAX_BLOCK_D:
        return triton.next_power_of_2(d), True
    return min(CHUNK_D, MAX_BLOCK_D), False


def params(name: str, d: int, *, rows_per_tile: int | None = None) -> dict:
    """block_d, one_chunk, block_r, num_warps for strategy `name` at width d."""
    bd, one = block_d(d)
    # Tile of about 16K elements: 4 rows at d=4096, 2 at 8192 (docs/perf/tune-1.log: block_r 4
    # and 2 were the fastest there, block_r 1 the slowest).
    br = rows_per_tile if rows_per_tile is not None else max(1, min(16, 16384 // bd)) if one else 1
    warps = 16 if bd * br >= 16384 else max(4, min(16, bd * br // 512))
    p = {"block_d": bd, "one_chunk": one, "block_r": br, "num_warps": warps, "num_stages": 1,
         "prefetch": False}
    p.update(OVERRIDE.get(name, {}))
    if "block_d" in OVERRIDE.get(name, {}):
        p["one_chunk"] = p["block_d"] >= d
    return p
