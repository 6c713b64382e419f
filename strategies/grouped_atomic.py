"""grouped_atomic — row r atomically adds into partial row r mod GROUPS, then a fixed-order reduce.

Any GROUPS up to rows gives every partial row a row (partition "modulo"): GROUPS runs as
min(GROUPS, rows).  Writers per slot drop from rows to ⌈rows/GROUPS⌉, at the cost of a fp32
[GROUPS, d] workspace (×2 with dβ) that is zeroed on every call and read once by the reduce
kernel.
The order of the additions within one partial row still depends on timing, so the result is
nondeterministic; the reduce over the partial rows is fixed-order.
"""
import triton
import triton.language as tl

from . import _tuning
from ._contention import Contention
from ._launch import launch, prepare, scratch
from ._registry import register
from .reduce import reduce_partials
from .rowgrad import accumulate_rows, atomic_combine


@triton.jit
def _grouped_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N, G, stride_x, stride_dy, stride_dx,
                    HAS_MEAN: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr, RELOAD: tl.constexpr):
    row = tl.program_id(0)
    rows = (row + tl.arange(0, 1)).to(tl.int64)
    row_mask = rows < ROWS
    base = (row % G).to(tl.int64) * N
    accumulate_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, stride_dx, N,
                    PW, PB, PW, PW, base, HAS_MEAN, 1, BLOCK_D, ONE_CHUNK, RELOAD, atomic_combine)


def auto_groups(rows: int, d: int, sms: int, launch) -> int:
    """Relaxed atomics resolve in L2 without serialising a whole row, so few partial rows
    suffice and keep the reduce cheap (tune-1, tune-4: SMs/2 fastest at d = 4096, 8192 and
    16384).  Short rows are many more rows per partial row, and their reduce is cheap: 2·SMs
    at d ≤ 1024 (tune-4, 65536 × 1024: 231 against 245 µs at SMs/2)."""
    return max(1, min(sms // 2 if d > 1024 else 2 * sms, rows))


@register("grouped_atomic", kind="strategy", deterministic_by_design=False, uses_groups=True,
          launch=_tuning.ONE_TILE_ROW, auto_groups=auto_groups, partition="modulo",
          contention=Contention(writers="rows/groups", partial_rows="groups"),
          reduce_kernel=True)
def backward(x, dy, weight, mean, rstd, *, groups):
    """Row r atomic_adds into partial row r mod GROUPS; a fixed-order reduce sums the groups."""
    c = prepare(x, dy, weight, mean, rstd)
    p = backward.params(c.d)
    pw, pb = scratch(groups, c.d, c.has_mean, x.device, zero=True)
    launch(_grouped_kernel, (c.sig, groups),
           (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw, pb if pb is not None else pw),
           lambda: ((c.rows,), (c.rows, c.d, groups, *c.strides),
                    dict(HAS_MEAN=c.has_mean, BLOCK_D=p["block_d"], ONE_CHUNK=p["one_chunk"],
                         RELOAD=p["reload"], num_warps=p["num_warps"])))
    return c.outputs(*reduce_partials(pw, pb, c.weight))
