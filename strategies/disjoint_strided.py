"""disjoint_strided — disjoint_block with the tiles of rows dealt round-robin over the programs.

Program p owns the tiles p, p + G, p + 2G, … (BLOCK_R rows each) of all the rows instead of
one contiguous block: at any moment the G programs work on neighbouring tiles, so together
they sweep x and dy from the first row to the last, as a copy does.  Each program still sums
its own fixed rows in a fixed order into its own partial row of the fp32 [GROUPS, d]
workspace, and the same fixed-order reduce sums the partial rows: one writer per slot, no
atomics, bitwise deterministic — with other sums than disjoint_block's (other rows a partial
row), so the two agree with fp64, not with each other's bits.

Why a strategy of its own (tuning round 17, docs/PERF_NOTES.md; H200): the programs'
in-kernel span (bench/timeline.py, bf16) was 0.8–7.4 % shorter at 12 of 15 cases — LayerNorm
512–8192, RMSNorm 1024–6144 — and 0.6–2.1 % longer at LayerNorm 2560 and 3072, where the whole
call was still 1–2 % faster; fp32 rows 2–3 % shorter.  With every peer in one run
(results/h200-targets-narrow, d ≤ 8192, five dtype mixes): 1.02–1.12× disjoint_fused (the
contiguous blocks in one launch) at all 50 lines.  Rows wider than 8192 (read twice, or in
chunks) deal their tiles out alike but were not measured.  The kernel is disjoint_block's (its
INTERLEAVE); the launch rule is disjoint_block's with `interleave` on.
"""
from . import _groups, _tuning
from ._contention import Contention
from ._launch import prepare
from ._registry import register
from .disjoint_block import _disjoint_kernel, launch_partials
from .reduce import reduce_partials


def _rule(d: int) -> dict:
    return {**_tuning.ROW_LOOP.params(d), "interleave": True}


@register("disjoint_strided", kind="strategy", deterministic_by_design=True, uses_groups=True,
          launch=_tuning.Rule(_rule, row_loop=True), auto_groups=_groups.row_loop_programs,
          contention=Contention(writers=1, partial_rows="groups"))
def backward(x, dy, weight, mean, rstd, *, groups):
    """disjoint_block with tiles dealt round-robin: program p sums tiles p, p+G, …; fixed-order reduce."""
    c = prepare(x, dy, weight, mean, rstd)
    pw, pb, pdl = launch_partials(_disjoint_kernel, c, groups, backward.params)
    return c.outputs(*reduce_partials(pw, pb, c.weight, pdl))
