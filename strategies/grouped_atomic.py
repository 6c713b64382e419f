"""grouped_atomic — row r atomically adds into partial row r mod GROUPS, then a fixed-order reduce.

Writers per slot drop from rows to ⌈rows/GROUPS⌉, at the cost of a fp32 [GROUPS, d]
workspace (×2 with dβ) that is zeroed on every call and read once by the reduce kernel.
The order of the additions within one partial row still depends on timing, so the result is
nondeterministic; the reduce over the partial rows is fixed-order.
"""
import triton
import triton.language as tl

from . import _groups, _tuning
from ._launch import launch, partial_workspace, prepare, scratch
from ._registry import register
from .reduce import reduce_partials
from .rowgrad import row_coeffs, rowgrad_chunk, rowgrad_rows


@triton.jit
def _grouped_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N, G, stride_x, stride_dy, stride_dx,
                    HAS_MEAN: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr, RELOAD: tl.constexpr):
    row = tl.program_id(0)
    rows = (row + tl.arange(0, 1)).to(tl.int64)
    row_mask = rows < ROWS
    base = (row % G).to(tl.int64) * N
    if ONE_CHUNK:
        gw, gb, cols, col_mask = rowgrad_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask,
                                              stride_x, stride_dy, stride_dx, N, HAS_MEAN,
                                              BLOCK_D, RELOAD)
        tl.atomic_add(PW + base + cols, tl.sum(gw, axis=0), mask=col_mask, sem="relaxed")
        if HAS_MEAN:
            tl.atomic_add(PB + base + cols, tl.sum(gb, axis=0), mask=col_mask, sem="relaxed")
    else:
        c1, c2 = row_coeffs(X, DY, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, N,
                            HAS_MEAN, 1, BLOCK_D)
        for c0 in range(0, N, BLOCK_D):
            gw, gb, cols, col_mask = rowgrad_chunk(X, DY, DX, W, Mean, Rstd, rows, row_mask, c0,
                                                   c1, c2, stride_x, stride_dy, stride_dx, N,
                                                   HAS_MEAN, BLOCK_D)
            tl.atomic_add(PW + base + cols, tl.sum(gw, axis=0), mask=col_mask, sem="relaxed")
            if HAS_MEAN:
                tl.atomic_add(PB + base + cols, tl.sum(gb, axis=0), mask=col_mask, sem="relaxed")


@register("grouped_atomic", kind="strategy", deterministic_by_design=False, uses_groups=True,
          auto_groups=_groups.auto_grouped_atomic, writers=_groups.writers_grouped,
          workspace=lambda rows, d, g, has_bias: partial_workspace(g, d, has_bias))
def backward(x, dy, weight, mean, rstd, *, groups):
    """Row r atomic_adds into partial row r mod GROUPS; a fixed-order reduce sums the groups."""
    c = prepare(x, dy, weight, mean, rstd)
    p = _tuning.params("grouped_atomic", c.d, rows_per_tile=1)
    pw, pb = scratch(groups, c.d, c.has_mean, x.device, zero=True)
    launch(_grouped_kernel, (c.sig, groups),
           (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw, pb if pb is not None else pw),
           lambda: ((c.rows,), (c.rows, c.d, groups, *c.strides),
                    dict(HAS_MEAN=c.has_mean, BLOCK_D=p["block_d"], ONE_CHUNK=p["one_chunk"],
                         RELOAD=p["reload"], num_warps=p["num_warps"])))
    return c.outputs(*reduce_partials(pw, pb, c.weight))
