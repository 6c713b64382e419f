"""disjoint_strided — disjoint_block with the tiles of rows dealt round-robin over the programs.

Program p owns the tiles p, p + G, p + 2G, … (BLOCK_R rows each) of all the rows instead of
one contiguous block: at any moment the G programs work on neighbouring tiles, so together
they sweep x and dy from the first row to the last, as a copy does.  Each program still sums
its own fixed rows in a fixed order into its own partial row of the fp32 [GROUPS, d]
workspace, and the same fixed-order reduce sums the partial rows: one writer per slot, no
atomics, bitwise deterministic — with other sums than disjoint_block's (other rows a partial
row), so the two agree with fp64, not with each other's bits.

Why a strategy of its own (tuning round 17, docs/PERF_NOTES.md): on the H200 the programs'
in-kernel spans (bench/timeline.py) ended 2–7 % sooner this way at 11 of the 13 bf16 widths
measured from 512 to 8192, within 2 % the other way at the two LayerNorm rows of 2560 and 3072,
and the fp32 rows measured 2–3 % sooner.  The kernel is disjoint_block's (its INTERLEAVE); the
launch rule is disjoint_block's with `interleave` on.
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
