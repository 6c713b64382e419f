"""GROUPS rules shared by the two-pass strategies (derived in docs/PERF_NOTES.md)."""
from __future__ import annotations

import math

from . import _tuning


def writers_grouped(rows: int, groups: int | None) -> int:
    """Rows that add into one partial row when row r goes to partial r mod GROUPS."""
    return math.ceil(rows / groups)


def auto_grouped_atomic(rows: int, d: int, sms: int) -> int:
    """grouped_atomic: relaxed atomics resolve in L2 without serialising a whole row, so few
    partial rows suffice and keep the reduce cheap (tune-1, tune-4: SMs/2 fastest at d = 4096,
    8192 and 16384).  Short rows are many more rows per partial row, and their reduce is
    cheap: 2·SMs at d ≤ 1024 (tune-4, 65536 × 1024: 231 against 245 µs at SMs/2)."""
    return max(1, min(sms // 2 if d > 1024 else 2 * sms, rows))


def auto_spin_lock(rows: int, d: int, sms: int) -> int:
    """spin_lock: a lock serialises whole-row updates, so it needs many partial rows to keep
    waiters few (tune-1: 4·SMs fastest at d=4096, SMs at d=8192)."""
    return max(1, min(4 * sms if d <= 4096 else sms, rows))


def row_loop_programs(name: str, rows: int, d: int, sms: int) -> int:
    """The row-loop strategies (disjoint_block, disjoint_fused): programs (= partial rows).
    One program of 8–16 warps per SM keeps enough bytes in flight; at 4 warps (d ≤ 1024) two
    per SM (tune-2: G = SMs best at d = 4096 and 8192, 2·SMs at d = 1024; tune-7, with the
    pipelined loop: still 2·SMs at d = 1024, 0.5–38 % ahead of 3–5·SMs; tune-8: the same
    for disjoint_fused once its grid sync may span every program that fits at once — 65536 ×
    1024 LN 113.0 / RMS 112.2 µs at 2·SMs against 142.5 / 133.1 at SMs and 115.1 / 132.0 at
    3·SMs).  Few programs also keep the partial rows — and the reduce that reads them — small."""
    warps = _tuning.params(name, d)["num_warps"]
    return max(1, min(sms * max(1, 8 // warps), rows))


def auto_blocks(rows: int, d: int, sms: int) -> int:
    """disjoint_block's GROUPS: row_loop_programs."""
    return row_loop_programs("disjoint_block", rows, d, sms)


def auto_fused(rows: int, d: int, sms: int) -> int:
    """disjoint_fused's GROUPS: row_loop_programs (its kernel synchronises them all where the
    driver says they fit at once: three programs per SM at d ≤ 1024 on the H200)."""
    return row_loop_programs("disjoint_fused", rows, d, sms)
