"""GROUPS rules shared by the two-pass strategies (derived in docs/PERF_NOTES.md)."""
from __future__ import annotations

import math


def writers_grouped(rows: int, groups: int | None) -> int:
    """Rows that add into one partial row when row r goes to partial r mod GROUPS."""
    return math.ceil(rows / groups)


def auto_contended(rows: int, d: int, sms: int) -> int:
    """grouped_atomic / spin_lock: enough partial rows that few rows collide on one at a time.

    More groups mean less contention but a larger workspace for the reduce kernel to read."""
    g = 4 * sms if d <= 2048 else 2 * sms
    return max(1, min(g, rows))


def auto_blocks(rows: int, d: int, sms: int) -> int:
    """disjoint_block: programs (= partial rows).  Enough to fill every SM; few enough that
    each program owns many rows, so the partial rows stay small next to the input."""
    g = 2 * sms
    return max(1, min(g, rows))
