"""torch — PyTorch's own native backward kernels for layer norm and RMS norm (a baseline).

LayerNorm: aten.native_layer_norm_backward; RMSNorm: aten._fused_rms_norm_backward (PyTorch
≥ 2.8).  Where a build lacks the native op, or the op refuses the argument mix (mixed dtypes on
CPU), it falls back to autograd through the same formula in fp32 and says so once.  Inputs with
a row stride larger than d are made contiguous first, as the native ops require: that copy is
part of what a PyTorch user pays, so it is timed.
"""
from __future__ import annotations

import sys
import warnings

import torch

from ._registry import register

_warned: set[str] = set()


def _note(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        print(f"normbench: torch baseline: {msg}", file=sys.stderr)


def _autograd(x, dy, weight, mean, rstd):
    """dx, dγ, dβ by autograd through y = x̂·γ (+β), x̂ built from the saved statistics."""
    xf = x.detach().float().requires_grad_(True)
    w = weight.detach().float().requires_grad_(True)
    r = rstd.float()[:, None]
    if mean is None:
        # rstd = 1/sqrt(mean(x²)+eps): keep its dependence on x so that dx is complete
        ms = (xf * xf).mean(dim=1, keepdim=True)
        eps = (1.0 / (r * r) - ms).detach()
        xhat = xf * torch.rsqrt(ms + eps)
        y = xhat * w
        dx, dw = torch.autograd.grad(y, (xf, w), dy.float())
        return dx.to(x.dtype), dw.to(weight.dtype), None
    b = torch.zeros_like(w, requires_grad=True)
    mu = xf.mean(dim=1, keepdim=True)
    var = ((xf - mu) ** 2).mean(dim=1, keepdim=True)
    eps = (1.0 / (r * r) - var).detach()
    y = (xf - mu) * torch.rsqrt(var + eps) * w + b
    dx, dw, db = torch.autograd.grad(y, (xf, w, b), dy.float())
    return dx.to(x.dtype), dw.to(weight.dtype), db.to(weight.dtype)


@register("torch", kind="baseline", deterministic_by_design=True, uses_groups=False)
def backward(x, dy, weight, mean, rstd, *, groups=None):
    """PyTorch's native layer-norm / RMS-norm backward kernels."""
    rows, d = x.shape
    x, dy = x.contiguous(), dy.contiguous()
    try:
        if mean is None:
            op = getattr(torch.ops.aten, "_fused_rms_norm_backward", None)
            if op is None:
                raise NotImplementedError("this PyTorch has no _fused_rms_norm_backward")
            dx, dw = op(dy, x, [d], rstd.view(rows, 1), weight, [True, True])
            return dx, dw, None
        # The op wants a bias tensor to size dβ; its values are never read, so pass the weight
        # rather than allocate (and memset) a zero bias on every call.
        dx, dw, db = torch.ops.aten.native_layer_norm_backward(
            dy, x, [d], mean.view(rows, 1), rstd.view(rows, 1), weight, weight, [True, True, True])
        return dx, dw, db
    except (NotImplementedError, RuntimeError) as e:
        _note(f"native op unavailable here ({str(e).splitlines()[0][:120]}); using autograd")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _autograd(x, dy, weight, mean, rstd)
