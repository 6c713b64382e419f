"""atomic — every row atomically adds its dγ/dβ contribution into one fp32 [d] buffer.

One program per row: rows writers contend for every slot.  Simple and one pass over the
partials, but the order of the fp32 additions depends on timing, so the bits of dγ/dβ change
from run to run: nondeterministic by design.  Workspace: d fp32 (×2 with dβ), zeroed per call,
then cast to the weight's dtype — none with an fp32 weight: the buffer is then the dγ (dβ)
output itself, returned as it is, and its write the output's (`bytes_moved` counts it).
"""
import torch
import triton
import triton.language as tl

from . import _tuning
from ._contention import Contention
from ._launch import launch, prepare
from ._registry import register
from .rowgrad import accumulate_rows, atomic_combine


@triton.jit
def _atomic_kernel(X, DY, DX, W, Mean, Rstd, AW, AB, ROWS, N, stride_x, stride_dy, stride_dx,
                   HAS_MEAN: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
                   ONE_CHUNK: tl.constexpr, RELOAD: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    row_mask = rows < ROWS
    rows = rows.to(tl.int64)
    accumulate_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, stride_dx, N,
                    AW, AB, AW, AW, 0, HAS_MEAN, BLOCK_R, BLOCK_D, ONE_CHUNK, RELOAD,
                    atomic_combine)


@register("atomic", kind="strategy", deterministic_by_design=False, uses_groups=False,
          launch=_tuning.ONE_ROW,
          # every row adds into the one fp32 [d] buffer (×2 with dβ), the output itself with an
          # fp32 weight
          contention=Contention(writers="rows", partial_rows=1, partial_rows_are_fp32_output=True))
def backward(x, dy, weight, mean, rstd, *, groups=None):
    """Every row atomic_adds into one fp32 [d] buffer (contended, nondeterministic)."""
    c = prepare(x, dy, weight, mean, rstd)
    p = backward.params(c.d)
    aw = torch.zeros(c.d, dtype=torch.float32, device=x.device)
    ab = torch.zeros(c.d, dtype=torch.float32, device=x.device) if c.has_mean else aw
    launch(_atomic_kernel, c.sig, (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, aw, ab),
           lambda: ((_tuning.cdiv(c.rows, p["block_r"]),), (c.rows, c.d, *c.strides),
                    dict(HAS_MEAN=c.has_mean, BLOCK_R=p["block_r"], BLOCK_D=p["block_d"],
                         ONE_CHUNK=p["one_chunk"], RELOAD=p["reload"],
                         num_warps=p["num_warps"])))
    wd = weight.dtype
    return c.outputs(aw.to(wd), ab.to(wd) if c.has_mean else None)
