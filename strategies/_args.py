"""Argument checks shared by every implementation: one ValueError naming the argument."""
from __future__ import annotations

import torch

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
MAX_D = 65536


def check_args(x, dy, weight, mean, rstd, groups) -> None:
    def bad(arg: str, problem: str):
        raise ValueError(f"{arg}: {problem}")

    for name, t in (("x", x), ("dy", dy), ("weight", weight), ("rstd", rstd)):
        if not isinstance(t, torch.Tensor):
            bad(name, f"must be a torch.Tensor, got {type(t).__name__}")
    if mean is not None and not isinstance(mean, torch.Tensor):
        bad("mean", f"must be a torch.Tensor or None, got {type(mean).__name__}")
    if x.dim() != 2:
        bad("x", f"must be 2-D (rows, d), got shape {tuple(x.shape)}")
    rows, d = x.shape
    if rows < 1 or d < 1:
        bad("x", f"must have rows >= 1 and d >= 1, got shape {tuple(x.shape)}")
    if d > MAX_D:
        bad("x", f"d = {d} is over the supported maximum {MAX_D}")
    if x.dtype not in DTYPES:
        bad("x", f"unsupported dtype {x.dtype}; use float32, float16 or bfloat16")
    if x.stride(1) != 1:
        bad("x", f"last dimension must be contiguous (stride 1), got strides {x.stride()}")
    if tuple(dy.shape) != tuple(x.shape):
        bad("dy", f"shape {tuple(dy.shape)} does not match x {tuple(x.shape)}")
    if dy.dtype != x.dtype:
        bad("dy", f"dtype {dy.dtype} does not match x ({x.dtype})")
    if dy.stride(1) != 1:
        bad("dy", f"last dimension must be contiguous (stride 1), got strides {dy.stride()}")
    if tuple(weight.shape) != (d,):
        bad("weight", f"shape {tuple(weight.shape)} must be ({d},)")
    if weight.dtype not in DTYPES:
        bad("weight", f"unsupported dtype {weight.dtype}; use float32, float16 or bfloat16")
    for name, t in (("mean", mean), ("rstd", rstd)):
        if t is None:
            continue
        if tuple(t.shape) != (rows,):
            bad(name, f"shape {tuple(t.shape)} must be ({rows},)")
        if t.dtype != torch.float32:
            bad(name, f"dtype must be torch.float32, got {t.dtype}")
    for name, t in (("dy", dy), ("weight", weight), ("mean", mean), ("rstd", rstd)):
        if t is not None and t.device != x.device:
            bad(name, f"is on {t.device} but x is on {x.device}")
    if groups is not None:
        if isinstance(groups, bool) or not isinstance(groups, int):
            bad("groups", f"must be a positive int or None, got {groups!r}")
        if groups < 1:
            bad("groups", f"must be >= 1, got {groups}")
