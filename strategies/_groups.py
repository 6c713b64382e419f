"""The GROUPS=auto rule shared by the row-loop strategies (derived in docs/PERF_NOTES.md).

Each strategy names its rule in its registration (`auto_groups=`); the one-row strategies'
rules live in their own files."""
from __future__ import annotations


def row_loop_programs(rows: int, d: int, sms: int, launch) -> int:
    """The row-loop strategies (disjoint_block, disjoint_fused): programs (= partial rows),
    from the warps of the launch parameters at d.  One program of 8–16 warps per SM keeps
    enough bytes in flight; at 4 warps (d ≤ 1024) two per SM (tune-2: G = SMs best at d = 4096
    and 8192, 2·SMs at d = 1024; tune-7, with the pipelined loop: still 2·SMs at d = 1024,
    0.5–38 % ahead of 3–5·SMs; tune-8: the same for disjoint_fused once its grid sync may span
    every program that fits at once — 65536 × 1024 LN 113.0 / RMS 112.2 µs at 2·SMs against
    142.5 / 133.1 at SMs and 115.1 / 132.0 at 3·SMs).  Few programs also keep the partial rows
    — and the reduce that reads them — small.  disjoint_fused's kernel synchronises them all
    where the driver says they fit at once (three programs per SM at d ≤ 1024 on the H200).
    Where col_split programs share each row, the same programs make that many times fewer
    partial rows."""
    programs = sms * max(1, 8 // launch["num_warps"])
    return max(1, min(programs // launch.get("col_split", 1), rows))


def row_loop_units(rows: int, d: int, launch) -> int:
    """The most partial rows of the row-loop kernel (`disjoint_block.disjoint_partials`) that
    each get a row: with `interleave` its tiles of BLOCK_R rows are dealt round-robin, one
    program a tile, so past ⌈rows / BLOCK_R⌉ programs the rest store a partial row of zeros
    that the reduce reads for nothing (`balance` spreads the last round by rows, and the
    staged kernel deals single rows: every row a unit there).  Contiguous blocks: rows."""
    if launch.get("interleave") and not launch.get("balance") and not launch.get("staged"):
        return -(-rows // launch["block_r"])
    return rows
