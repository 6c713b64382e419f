"""GROUPS rules shared by the two-pass strategies (derived in docs/PERF_NOTES.md)."""
from __future__ import annotations

import math


def writers_grouped(rows: int, groups: int | None) -> int:
    """Rows that add into one partial row when row r goes to partial r mod GROUPS."""
    return math.ceil(rows / groups)


def auto_grouped_atomic(rows: int, d: int, sms: int) -> int:
    """grouped_atomic: relaxed atomics resolve in L2 without serialising a whole row, so few
    partial rows suffice and keep the reduce cheap (tune-1: SMs/2 was fastest at d=4096, 8192)."""
    return max(1, min(sms // 2, rows))


def auto_spin_lock(rows: int, d: int, sms: int) -> int:
    """spin_lock: a lock serialises whole-row updates, so it needs many partial rows to keep
    waiters few (tune-1: 4·SMs fastest at d=4096, SMs at d=8192)."""
    return max(1, min(4 * sms if d <= 4096 else sms, rows))


def auto_blocks(rows: int, d: int, sms: int) -> int:
    """disjoint_block: programs (= partial rows).  Enough to fill every SM; few enough that
    each program owns many rows, so the partial rows stay small next to the input."""
    g = 2 * sms
    return max(1, min(g, rows))
