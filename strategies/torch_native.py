"""torch — what PyTorch itself runs for a layer-norm / RMS-norm backward (a baseline).

LayerNorm: aten.native_layer_norm_backward; RMSNorm: aten._fused_rms_norm_backward (PyTorch
≥ 2.8, CUDA).  Which path a call takes is decided once per (norm, device type, x dtype, weight
dtype) by asking the native op itself on a tiny input of those dtypes, and is named in the
record's `notes` (`backward.notes`):

  native     the op takes the inputs as they are;
  upcast     the op refuses the dtype mix (on CUDA: bf16 x with an fp32 weight, "expected
             scalar type BFloat16 but found Float"; on CPU: 16-bit x with fp32 statistics).
             A user gets there through autocast, which runs layer_norm / rms_norm in fp32:
             x, dy and the weight are upcast to fp32, the native fp32 kernel runs, and dx is
             cast back to x's dtype, dγ/dβ to the weight's — those copies are timed, since
             the user pays them;
  composite  the op has no kernel here (RMSNorm on CPU, or a PyTorch without the op):
             F.rms_norm then runs its composite implementation, whose backward is autograd
             through its ops (fp32 upcast, rsqrt(mean(x²) + eps), scale) — done here the same
             way, with eps recovered from the saved rstd.

Inputs with a row stride larger than d are made contiguous first, as the native ops require:
that copy is part of what a PyTorch user pays, so it is timed.
"""
from __future__ import annotations

import warnings

import torch

from ._registry import register

_F32 = torch.float32
_paths: dict[tuple, tuple[str, str]] = {}      # (rms, device type, x dtype, w dtype) -> (path, why)


def _name(dt: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}.get(dt, str(dt))


def _native(dy, x, weight, mean, rstd):
    rows, d = x.shape
    # the ops read mean and rstd as dense (rows, 1): a strided view (the saved statistics in
    # one (rows, 2) buffer) must be made dense first, as the Triton strategies' prepare does
    rstd = rstd.contiguous()
    mean = mean.contiguous() if mean is not None else None
    if mean is None:
        op = getattr(torch.ops.aten, "_fused_rms_norm_backward", None)
        if op is None:
            raise NotImplementedError("this PyTorch has no aten._fused_rms_norm_backward")
        dx, dw = op(dy, x, [d], rstd.view(rows, 1), weight, [True, True])
        return dx, dw, None
    # The op wants a bias tensor to size dβ; its values are never read, so pass the weight
    # rather than allocate (and memset) a zero bias on every call.
    return torch.ops.aten.native_layer_norm_backward(
        dy, x, [d], mean.view(rows, 1), rstd.view(rows, 1), weight, weight, [True, True, True])


def _upcast(dy, x, weight, mean, rstd):
    dx, dw, db = _native(dy.to(_F32), x.to(_F32), weight.to(_F32), mean, rstd)
    wd = weight.dtype
    return dx.to(x.dtype), dw.to(wd), (db.to(wd) if db is not None else None)


def _composite(dy, x, weight, mean, rstd):
    """dx, dγ (RMSNorm) by autograd through F.rms_norm's composite ops, from the saved rstd."""
    # autograd also under no_grad / inference_mode (whose tensors it cannot record: copied)
    with warnings.catch_warnings(), torch.inference_mode(False), torch.enable_grad():
        warnings.simplefilter("ignore")
        x, dy, weight, rstd = (t.clone() if t.is_inference() else t for t in (x, dy, weight, rstd))
        xf = x.detach().to(_F32).requires_grad_(True)
        w = weight.detach().requires_grad_(True)
        r = rstd.to(_F32)[:, None]
        ms = (xf * xf).mean(dim=1, keepdim=True)
        eps = (1.0 / (r * r) - ms).detach()      # rstd = 1/sqrt(mean(x²) + eps), per row
        y = (xf * torch.rsqrt(ms + eps)) * w
        dx, dw = torch.autograd.grad(y, (xf, w), dy.to(_F32))
    return dx.to(x.dtype), dw.to(weight.dtype), None


_RUN = {"native": _native, "upcast": _upcast, "composite": _composite}


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return (lines[0][:160] if lines else type(e).__name__).rstrip(".")


def _decide(rms: bool, device: torch.device, xdt: torch.dtype, wdt: torch.dtype) -> tuple[str, str]:
    """(path, why): ask the native op on a 2 × 8 input of these dtypes (refusals depend on dtypes
    and device, not on sizes)."""
    g = torch.Generator(device="cpu").manual_seed(0)
    xs = torch.randn(2, 8, generator=g)
    x = xs.to(device=device, dtype=xdt)
    dy = torch.randn(2, 8, generator=g).to(device=device, dtype=xdt)
    w = torch.ones(8, device=device, dtype=wdt)
    mean = None if rms else xs.mean(1).to(device)
    var = (xs * xs).mean(1) if rms else xs.var(1, unbiased=False)
    rstd = torch.rsqrt(var + 1e-5).to(device)
    op = "aten._fused_rms_norm_backward" if rms else "aten.native_layer_norm_backward"
    try:
        _native(dy, x, w, mean, rstd)
        return "native", f"{op} (native kernel)"
    except (NotImplementedError, RuntimeError) as e:
        refused = _first_line(e)
        missing = isinstance(e, NotImplementedError) or "Could not run" in refused
        if missing and not rms:
            raise
    if missing:                                    # no op, or no kernel for this backend
        why = (refused if "no aten." in refused else f"{op} has no {device.type} kernel")
        return "composite", f"{why}; F.rms_norm's composite path: autograd through its fp32 ops"
    _native(dy.to(_F32), x.to(_F32), w.to(_F32), mean, rstd)   # the fp32 kernel must take it
    ups = "x, dy" + (", weight" if wdt != _F32 else "")
    back = f"dx cast back to {_name(xdt)}" + (f", dγ to {_name(wdt)}" if wdt != _F32 else "")
    return "upcast", (f"{op} refuses {_name(xdt)} x with {_name(wdt)} weight on {device.type} "
                      f"({refused}); autocast's path: {ups} upcast to fp32 through the native "
                      f"fp32 kernel, {back}")


def _path(x, weight, mean) -> tuple[str, str]:
    key = (mean is None, x.device.type, x.dtype, weight.dtype)
    p = _paths.get(key)
    if p is None:
        p = _paths[key] = _decide(mean is None, x.device, x.dtype, weight.dtype)
    return p


@register("torch", kind="baseline", deterministic_by_design=True, uses_groups=False)
def backward(x, dy, weight, mean, rstd, *, groups=None):
    """PyTorch's native layer-norm / RMS-norm backward kernels (autocast's fp32 path where they refuse a dtype mix)."""
    path = _path(x, weight, mean)[0]
    if (x.requires_grad or dy.requires_grad or weight.requires_grad or rstd.requires_grad
            or (mean is not None and mean.requires_grad)):
        # a weight that is an nn.Parameter: the native ops would record a double-backward
        # graph on every call and return gradients holding it (time and memory no other
        # implementation pays); the strategies' outputs hold no graph, nor do these
        with torch.no_grad():
            return _RUN[path](dy.contiguous(), x.contiguous(), weight, mean, rstd)
    return _RUN[path](dy.contiguous(), x.contiguous(), weight, mean, rstd)


def notes(x, dy, weight, mean, rstd) -> str:
    """The path this call takes, in words (the record's `notes`)."""
    return _path(x, weight, mean)[1]


backward.notes = notes
