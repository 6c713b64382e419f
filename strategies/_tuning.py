"""Launch parameters: block sizes, warps and the row loop, chosen from d.

Every choice here is a measured rule (docs/PERF_NOTES.md, docs/perf/tune-*.log); `OVERRIDE`
lets the tuning script (bench/tune.py) try other values without editing a kernel.
"""
from __future__ import annotations

import functools
from types import MappingProxyType

# Widest row processed in one block; wider rows are processed in chunks of CHUNK_D.
MAX_BLOCK_D = 16384
CHUNK_D = 8192

# strategy name -> dict of forced parameters (block_r, num_warps, block_d, prefetch, reload),
# for tuning.
OVERRIDE: dict[str, dict] = {}


def cdiv(a: int, b: int) -> int:
    """⌈a/b⌉ for the host path (triton.cdiv is a constexpr function: slow to call from Python)."""
    return -(-a // b)


def pow2(n: int) -> int:
    """The smallest power of two ≥ n."""
    return 1 << (n - 1).bit_length()


def block_d(d: int) -> tuple[int, bool]:
    """(BLOCK_D, ONE_CHUNK): the column block and whether a whole row fits in it."""
    if d <= MAX_BLOCK_D:
        return pow2(d), True
    return CHUNK_D, False


def _rule(name: str, d: int, rows_per_tile: int | None) -> dict:
    bd, one = block_d(d)
    if rows_per_tile is None and one and bd <= 8192:
        # The row-loop kernels (disjoint_block, disjoint_fused).  Tune-2: a tile of 4096
        # elements (d ≤ 1024) or 8192 (wider).  Tune-7: Triton's pipeliner, 3 stages (the next
        # two tiles' x and dy on their way into shared memory by cp.async while this one is
        # computed), beat tune-2's register prefetch at every shape, by 5–16 % (RMS 65536 × 1024
        # 118.1 -> 111.9 µs; LN 16384 × 4096 122.9 -> 114.3); 4 stages and 2 were slower.  With
        # it, 32 elements of each input per thread up to d = 2048 and 16 from d = 4096 (tune-7:
        # 16 warps at 4096 within 2 % of 8 everywhere, and never the one slow outlier of 8).
        tile = 4096 if bd <= 1024 else max(8192, bd)
        br = max(1, min(16, tile // bd))
        warps = max(4, min(16, br * bd // (32 if bd <= 2048 else 16) // 32))
        return dict(block_d=bd, one_chunk=True, block_r=br, num_warps=warps, num_stages=3,
                    prefetch=False, reload=False)
    # One tile of rows per program (atomic, grouped_atomic, spin_lock), or rows wider than a
    # block: tune-1's rule (tune-2 found these within 5 % of their best).
    br = rows_per_tile if rows_per_tile is not None else 1
    warps = 16 if bd * br >= 16384 else max(4, min(16, bd * br // 512))
    if name == "spin_lock" and bd <= 1024:
        # the locked read-modify-write of a short row goes faster with more threads
        # (tune-4, 65536 × 1024: 8 warps 323 / 249 µs against 4 warps 361 / 271, LN / RMS)
        warps = 8
    # A row-loop program at d = 16384 reads each tile twice rather than spill (rowgrad_reload;
    # tune-4: LN 8192 × 16384 458 -> 342 µs, RMS 320 -> 233).  A one-row program holds no
    # accumulators, spills less, and was faster without it (grouped_atomic 525 against 562).
    return dict(block_d=bd, one_chunk=one, block_r=br, num_warps=warps, num_stages=1,
                prefetch=False, reload=one and bd >= 16384 and rows_per_tile is None)


def params(name: str, d: int, *, rows_per_tile: int | None = None):
    """block_d, one_chunk, block_r, num_warps, num_stages, prefetch, reload for `name` at d.

    Returns a read-only mapping (cached: this runs on every call)."""
    ov = OVERRIDE.get(name)
    if not ov:
        return _frozen(name, d, rows_per_tile)
    p = dict(_rule(name, d, rows_per_tile))
    p.update(ov)
    if "block_d" in ov:
        p["one_chunk"] = p["block_d"] >= d
    return p


def fit_stages(p, elem_bytes: int, smem_bytes: int) -> int:
    """num_stages of `p` (params) lowered until the pipelined tiles fit a program's shared
    memory: Triton keeps num_stages − 1 tiles of x and dy in flight, [block_r, block_d] each
    (plus a few hundred bytes of row statistics).  An H200 has 227 KB a program, where every
    shipped rule fits in fp32 too; a GPU with less would otherwise fail to launch."""
    st = p["num_stages"]
    tile = p["block_r"] * p["block_d"] * elem_bytes * 2
    while st > 1 and (st - 1) * tile + 1024 > smem_bytes:
        st -= 1
    return st


@functools.lru_cache(maxsize=None)
def _frozen(name: str, d: int, rows_per_tile: int | None):
    return MappingProxyType(_rule(name, d, rows_per_tile))
