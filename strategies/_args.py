"""Argument checks shared by every implementation: one ValueError naming the argument.
Every tensor argument is a dense (strided) tensor: sparse layouts are refused by name.  None
may have the negative bit set (a lazy negation view: torch._neg_view, the .imag of a conjugate
view): the kernels read its storage, which holds the values un-negated, so the gradients came
back sign-flipped; it is refused by name (.resolve_neg() makes the values real).  The
conjugate bit cannot be set on the real dtypes accepted (torch refuses it).  mean and rstd
are (rows,) fp32: a statistic as PyTorch's forward ops save it — (rows, 1), or 16-bit from
native_layer_norm on CPU — is refused with how to pass it (`_saved_hint`)."""
from __future__ import annotations

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_D = 65536
# The kernels hold row numbers in int32 (program ids, a program's first and last row, a loop's
# row + step): every sum of two of them must stay below 2^31.  At rows ≤ 2^30 it does — a
# GROUPS·⌈rows/GROUPS⌉ is under 2·rows, a round-robin row + GROUPS too — where at 2^31 − 1
# rows the last program's end wrapped negative and a grid of one program a row passed CUDA's
# 2^31 − 1.  The config's rows share the limit (harness/config_fields.MAX_ROWS).
MAX_ROWS = 2**30


_F32 = torch.float32
_STRIDED = torch.strided


def check_args(x, dy, weight, mean, rstd, groups) -> None:
    """Raise ValueError("<argument>: <problem>") for the first bad argument.

    Runs on every call, so the common case — every argument good — is one pass over each
    tensor's attributes (half the host time of the itemised checks: 2.9 against 5.5 µs for
    LayerNorm CPU tensors on the development machine, the layout checks 0.4 µs of it; the
    five negative-bit reads, added since, about 0.1 µs each: 2.5 → 3.0 µs on a shared
    2-core machine, the itemised checks 5.1 → 6.4 µs);
    anything it does not accept goes to `_explain`, which names the problem (and is the
    authority: what it lets through is accepted)."""
    T = torch.Tensor
    if (isinstance(x, T) and isinstance(dy, T) and isinstance(weight, T) and isinstance(rstd, T)
            and (mean is None or isinstance(mean, T))):
        xs, dt, dev = x.shape, x.dtype, x.device
        if (x.layout is _STRIDED and dy.layout is _STRIDED and weight.layout is _STRIDED
                and rstd.layout is _STRIDED and (mean is None or mean.layout is _STRIDED)
                and not (x.is_neg() or dy.is_neg() or weight.is_neg() or rstd.is_neg()
                         or (mean is not None and mean.is_neg()))
                and len(xs) == 2 and 1 <= xs[0] <= MAX_ROWS and 1 <= xs[1] <= MAX_D and dt in DTYPES
                and (x.stride()[1] == 1 or xs[1] == 1) and dy.shape == xs and dy.dtype is dt
                and (dy.stride()[1] == 1 or xs[1] == 1)
                and weight.shape == (xs[1],) and weight.dtype in DTYPES
                and rstd.shape == (xs[0],) and rstd.dtype is _F32
                and (mean is None or (mean.shape == (xs[0],) and mean.dtype is _F32
                                      and mean.device == dev))
                and dy.device == dev and weight.device == dev and rstd.device == dev
                and (groups is None or (type(groups) is int and groups >= 1))):
            return
    _explain(x, dy, weight, mean, rstd, groups)


def _explain(x, dy, weight, mean, rstd, groups) -> None:
    """The itemised checks: raise for the first bad argument, naming it."""
    def bad(arg: str, problem: str):
        raise ValueError(f"{arg}: {problem}")

    for name, t in (("x", x), ("dy", dy), ("weight", weight), ("rstd", rstd)):
        if not isinstance(t, torch.Tensor):
            bad(name, f"must be a torch.Tensor, got {type(t).__name__}")
    if mean is not None and not isinstance(mean, torch.Tensor):
        bad("mean", f"must be a torch.Tensor or None, got {type(mean).__name__}")
    # a sparse (or mkldnn) tensor has no strides to index it by: refused before any stride is
    # read (a sparse x read as "strides (0, 0)", a sparse weight failed inside torch)
    for name, t in (("x", x), ("dy", dy), ("weight", weight), ("mean", mean), ("rstd", rstd)):
        if t is not None and t.layout != torch.strided:
            bad(name, f"must be a dense (strided) tensor, got layout {t.layout}")
    for name, t in (("x", x), ("dy", dy), ("weight", weight), ("mean", mean), ("rstd", rstd)):
        if t is not None and t.is_neg():
            bad(name, "has the negative bit set (a lazy negation view); call .resolve_neg() first")
    if x.dim() != 2:
        bad("x", f"must be 2-D (rows, d), got shape {tuple(x.shape)}")
    rows, d = x.shape
    if rows < 1 or d < 1:
        bad("x", f"must have rows >= 1 and d >= 1, got shape {tuple(x.shape)}")
    if rows > MAX_ROWS:
        bad("x", f"rows = {rows} is over the supported maximum {MAX_ROWS}")
    if d > MAX_D:
        bad("x", f"d = {d} is over the supported maximum {MAX_D}")
    if x.dtype not in DTYPES:
        bad("x", f"unsupported dtype {x.dtype}; use float32, float16 or bfloat16")
    # a column of one element has any stride torch likes (a transposed row: (1, rows)); the
    # kernels step rows by stride(0) only, and torch calls such a tensor contiguous
    if x.stride(1) != 1 and d != 1:
        bad("x", f"last dimension must be contiguous (stride 1), got strides {x.stride()}")
    if tuple(dy.shape) != tuple(x.shape):
        bad("dy", f"shape {tuple(dy.shape)} does not match x {tuple(x.shape)}")
    if dy.dtype != x.dtype:
        bad("dy", f"dtype {dy.dtype} does not match x ({x.dtype})")
    if dy.stride(1) != 1 and d != 1:
        bad("dy", f"last dimension must be contiguous (stride 1), got strides {dy.stride()}")
    if tuple(weight.shape) != (d,):
        bad("weight", f"shape {tuple(weight.shape)} must be ({d},)")
    if weight.dtype not in DTYPES:
        bad("weight", f"unsupported dtype {weight.dtype}; use float32, float16 or bfloat16")
    for name, t in (("mean", mean), ("rstd", rstd)):
        if t is None:
            continue
        if tuple(t.shape) != (rows,):
            bad(name, f"shape {tuple(t.shape)} must be ({rows},){_saved_hint(name, t, rows)}")
        if t.dtype != torch.float32:
            bad(name, f"dtype must be torch.float32, got {t.dtype}{_saved_hint(name, t, rows)}")
    for name, t in (("dy", dy), ("weight", weight), ("mean", mean), ("rstd", rstd)):
        if t is not None and t.device != x.device:
            bad(name, f"is on {t.device} but x is on {x.device}")
    if groups is not None:
        if isinstance(groups, bool) or not isinstance(groups, int):
            bad("groups", f"must be a positive int or None, got {groups!r}")
        if groups < 1:
            bad("groups", f"must be >= 1, got {groups}")


# PyTorch's forward ops save the statistics in a form the kernels do not take: x's leading
# shape and a trailing 1 — (rows, 1) for a 2-D x — from native_layer_norm (mean and rstd)
# and _fused_rms_norm (rstd); and native_layer_norm on CPU saves them in x's 16-bit dtype
# where the weight has it too (on CUDA, or with an fp32 weight, they are fp32).  A refusal
# of such a statistic says how to pass it; the kernels keep taking (rows,) fp32 only.
_SAVED_BY = {"mean": "native_layer_norm saves", "rstd": "native_layer_norm and "
                                                        "_fused_rms_norm save"}


def _saved_hint(name: str, t: torch.Tensor, rows: int) -> str:
    """How to pass `t` if it is a statistic as PyTorch saves it, else ''."""
    if tuple(t.shape) != (rows,):
        if t.dim() >= 2 and t.shape[-1] == 1 and t.numel() == rows:
            saved = "(rows, 1)" if t.dim() == 2 else "x's leading shape and a trailing 1"
            return f"; PyTorch's {_SAVED_BY[name]} {saved}: pass {name}.view(-1)"
        return ""
    if t.dtype in (torch.float16, torch.bfloat16):
        return (f"; PyTorch's native_layer_norm on CPU saves x's dtype for 16-bit x and "
                f"weight: pass {name}.float()")
    return ""
