"""Host-side preparation shared by the Triton strategies (outputs, strides, placeholders)."""
from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Call:
    x: torch.Tensor
    dy: torch.Tensor
    dx: torch.Tensor
    weight: torch.Tensor
    mean: torch.Tensor          # rstd stands in when there is no mean (RMSNorm); never read then
    rstd: torch.Tensor
    has_mean: bool
    rows: int
    d: int

    @property
    def strides(self) -> tuple[int, int, int]:
        return self.x.stride(0), self.dy.stride(0), self.dx.stride(0)

    def outputs(self, dw: torch.Tensor, db: torch.Tensor | None):
        return self.dx, dw, (db if self.has_mean else None)


def prepare(x, dy, weight, mean, rstd) -> Call:
    rows, d = x.shape
    rstd = rstd.contiguous()
    return Call(x=x, dy=dy, dx=torch.empty((rows, d), dtype=x.dtype, device=x.device),
                weight=weight.contiguous(), mean=mean.contiguous() if mean is not None else rstd,
                rstd=rstd, has_mean=mean is not None, rows=rows, d=d)


def partial_workspace(groups: int, d: int, has_bias: bool) -> int:
    """Bytes of the fp32 [GROUPS, d] partial rows of the two-pass schemes (×2 with dβ)."""
    return groups * d * 4 * (2 if has_bias else 1)
