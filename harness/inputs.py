"""Inputs for one case, as a forward pass would leave them, and the fp64 reference backward."""
from __future__ import annotations

import torch

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
EPS = 1e-5

# Largest tolerated max|out − ref| / scale of an output (`errors`: max|ref|, for dx and
# LayerNorm's dγ never less than a tenth of the terms each is the difference of: `Reference`),
# by that output's storage dtype.
# fp32 storage: fp32 accumulation error only.  fp16/bf16: four units of rounding of the largest
# element (4·2^-11, 4·2^-8).  A result rounded once to nearest is within one (2^-11, 2^-8
# relative); the worst of every committed H200 run, 4201 records of every implementation, was
# 1.06 (bf16 dγ 0.0041 — liger, which rounds x̂ to bf16 first — and fp16 dγ 0.00052); the
# Triton interpreter converts fp32 to bf16 by truncation, up to two (ours on CPU: 1.6).  It was
# about eight (4e-3, 3e-2) until session 43, which let a bf16 dx without its projection terms
# pass at d ≥ 4096 (tests/test_inputs.py).  No bound of this kind sees one row left out of a
# 16-bit dγ of thousands of rows: that row is below the output's own rounding there.
TOLERANCE = {"fp32": 1e-4, "fp16": 4 * 2.0 ** -11, "bf16": 4 * 2.0 ** -8}
# Below a 16-bit format's smallest normal number its spacing stops shrinking (subnormals: one
# unit of rounding is half the smallest subnormal, 2^-25 for fp16, 2^-134 for bf16, not 2^-11
# or 2^-8 of the value), so a 16-bit output's scale is never taken below it (`rel_error`):
# an absolute error of four units of rounding there — two smallest subnormals, 4·2^-25 and
# 4·2^-134 — always passes, and an fp16 dx of max|dx| ~ 1e-5, rounded once, is right (it
# failed).  At or above the smallest normal nothing changes.
SCALE_FLOOR = {torch.float16: torch.finfo(torch.float16).tiny,      # 2^-14
               torch.bfloat16: torch.finfo(torch.bfloat16).tiny}    # 2^-126


def dtype_names(dtype: str, weight_dtype: str) -> tuple[str, str]:
    """(dtype, weight_dtype) as DTYPES names, weight_dtype "same" (the config's default) being
    the activations' dtype, as in the config; ValueError naming the field otherwise."""
    names = ", ".join(DTYPES)
    if not (isinstance(dtype, str) and dtype in DTYPES):
        raise ValueError(f"dtype: unknown {dtype!r}; use {names}")
    if weight_dtype == "same":
        return dtype, dtype
    if not (isinstance(weight_dtype, str) and weight_dtype in DTYPES):
        raise ValueError(f"weight_dtype: unknown {weight_dtype!r}; use same, {names}")
    return dtype, weight_dtype


def output_tolerances(dtype: str, weight_dtype: str) -> tuple[float, float]:
    """(dx's, dγ's and dβ's) tolerance: each output is judged by its own dtype — dx by the
    activations', dγ and dβ by the weight's (`dtype_names`: "same" is the activations').  The
    reference starts from the same rounded inputs, so an fp32 dγ of bf16 activations owes
    fp32 accuracy (a kernel that rounds x̂ or its products through bf16 on the way fails
    there, as it should)."""
    dtype, weight_dtype = dtype_names(dtype, weight_dtype)
    return TOLERANCE[dtype], TOLERANCE[weight_dtype]


def tolerance(dtype: str, weight_dtype: str) -> float:
    """The coarser of the two: a bound that holds for every output of the case."""
    return max(output_tolerances(dtype, weight_dtype))


def make_inputs(norm: str, rows: int, d: int, dtype: str, weight_dtype: str, *, seed: int,
                device: torch.device | str, row_stride: int | None = None):
    """x, dy, weight, mean (None for RMSNorm), rstd — fresh random values from `seed`.

    Every row has its own statistics and its own gradient, as a batch of tokens has: row r of
    x is N(0, 1)·s_r + m_r (s_r = e^U(−0.7, 1.4), 0.5–4; m_r ~ U(−2, 2)), and row r of dy is
    N(0, 1) + a_r·x̂_r + b_r (a_r, b_r ~ U(−1, 1)), so that dx's projection terms x̂·mean(g·x̂)
    and mean(g) are of the size of dx itself at every width, and a kernel that reads another
    row's mean or rstd, or leaves a term out, is far off.  (Rows drawn alike made those terms
    shrink like 1/√d: at d ≥ 4096 a bf16 dx without them passed.)  weight: 1 + N(0, 0.5²).

    `row_stride` > d makes x and dy slices of wider tensors (a strided-rows case).  dtype and
    weight_dtype are DTYPES names, weight_dtype "same" the activations' (`dtype_names`)."""
    dtype, weight_dtype = dtype_names(dtype, weight_dtype)
    g = torch.Generator(device="cpu").manual_seed(seed)
    dt, wdt = DTYPES[dtype], DTYPES[weight_dtype]
    if norm not in ("layernorm", "rmsnorm"):
        raise ValueError(f"norm: unknown {norm!r}")
    if row_stride is not None and row_stride < d:
        raise ValueError(f"row_stride: must be >= d ({d}), got {row_stride}")
    width = row_stride or d

    # drawn on the CPU (the same values on any device), shaped on the device; in fp32 named,
    # not torch's default dtype, which an implementation measured earlier may have changed
    # (torch.set_default_dtype in a plugin drew other inputs for every later case)
    def draw(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(device)

    def per_row(lo, hi):
        return torch.empty(rows, 1, dtype=torch.float32).uniform_(lo, hi, generator=g).to(device)

    x_wide = (draw(rows, width) * per_row(-0.7, 1.4).exp_() + per_row(-2.0, 2.0)).to(dt)
    weight = (1.0 + 0.5 * torch.randn(d, generator=g, dtype=torch.float32)).to(wdt).to(device)
    xf = x_wide[:, :d].float()
    if norm == "layernorm":
        mean = xf.mean(dim=1)
        var = xf.var(dim=1, unbiased=False)
    else:
        mean = None
        var = (xf * xf).mean(dim=1)
    rstd = torch.rsqrt(var + EPS)
    del xf
    # x̂ over the whole width (the columns past d only pad the strided case), then dy in place
    dy_wide = x_wide.to(torch.float32, copy=True)     # never x itself (fp32 x: .float() is x)
    if mean is not None:
        dy_wide.sub_(mean[:, None])
    dy_wide.mul_(rstd[:, None]).mul_(per_row(-1.0, 1.0)).add_(draw(rows, width))
    dy_wide = dy_wide.add_(per_row(-1.0, 1.0)).to(dt)
    return x_wide[:, :d], dy_wide[:, :d], weight, mean, rstd


class Reference(tuple):
    """The fp64 reference's (dx, dγ, dβ) — dβ None for RMSNorm — and `scales`, what each
    output's error is divided by (`errors`); None: the output's own max|ref|.

    dx's is max|dx|, but never less than a tenth of the size of the terms dx is the
    difference of (max over its elements of rstd·(|g| + |x̂·c1| + |c2|), g = γ·dy).  Where a
    row is short the terms cancel: at d = 1 RMSNorm's dx is rstd·g·ε/(x² + ε), about 1e-5 of
    its terms, and against max|dx| the terms' own fp32 rounding, which no formula of them
    avoids, would be judged an error of the result (torch's and every strategy's at RMS
    1 × 1 fp32).  At the widths benchmarked the terms are within 2.5× of max|dx| (2.08× at
    most over ten seeds of 64 × 64, 1.84× at 1024 × 1024, with `make_inputs`' rows of their
    own statistics; `tests/test_inputs.py`), so the floor does not bind there.

    LayerNorm's dγ's is max|dγ|, but never less than a tenth of the size of the two sums it is
    the difference of, Σᵣ dy·x·rstd and Σᵣ dy·mean·rstd (x̂ = x·rstd − mean·rstd; the larger
    column of |first| + |second|).  In rows of one element x̂ and dγ are exactly 0, and against
    max|dγ| = 0 the error would be absolute — PyTorch's x·rstd − mean·rstd, whose fp32 rounding
    is of those sums' size, judged right or wrong by the units of dy; in rows of 2–3 the
    sums cancel as dx's terms do.  At d ≥ 64 the sums are within 3.5× of max|dγ| (3.44× at
    most over six seeds of eleven shapes, 1 × 64 to 16384 × 64), so the floor does not bind
    there.  dβ = Σ dy and RMSNorm's dγ = Σ dy·x·rstd are no such difference: max|ref|."""

    def __new__(cls, outputs, scales=(None, None, None)):
        ref = super().__new__(cls, outputs)
        ref.scales = tuple(scales)
        return ref

    def __getnewargs__(self):
        return tuple(self), self.scales


def reference(x, dy, weight, mean, rstd) -> Reference:
    """The backward in fp64 from the same (rounded) inputs: dx, dγ, dβ (None for RMSNorm),
    with dx's scale and LayerNorm dγ's (`Reference`)."""
    x, dy, w = x.double(), dy.double(), weight.double()
    r = rstd.double()[:, None]
    xhat = (x - mean.double()[:, None]) * r if mean is not None else x * r
    g = w * dy
    d = x.shape[1]
    c1 = (xhat * g).sum(dim=1, keepdim=True) / d
    xc = xhat * c1
    if mean is not None:
        c2 = g.sum(dim=1, keepdim=True) / d
        out = ((g - xc - c2) * r, (dy * xhat).sum(dim=0), dy.sum(dim=0))
    else:
        c2 = None
        out = ((g - xc) * r, (dy * xhat).sum(dim=0), None)
    scale = None
    if g.numel():       # the terms' size, in place over g and xc (no longer needed)
        terms = g.abs_().add_(xc.abs_())
        if c2 is not None:
            terms.add_(c2.abs())
        scale = max(out[0].abs().max().item(), terms.mul_(r).max().item() / 10)
    scale_w = None
    if mean is not None and dy.numel():
        # LayerNorm's dγ is the difference of Σ dy·x·rstd and b = Σ dy·mean·rstd
        # (x̂ = x·rstd − mean·rstd): their size, without a full-size array more
        b = dy.t() @ (mean.double() * rstd.double())
        scale_w = max(out[1].abs().max().item(),
                      (out[1] + b).abs_().add_(b.abs()).max().item() / 10)
    return Reference(out, (scale, scale_w, None))


def rel_error(out: torch.Tensor | None, ref: torch.Tensor | None,
              scale: float | None = None) -> float | None:
    """max|out − ref| / scale in fp64 (scale: max|ref| unless given, for a 16-bit `out` never
    below its dtype's smallest normal number: `SCALE_FLOOR`; a zero scale — an all-zero
    reference — divides by 1); inf when out has a NaN or Inf, or is missing."""
    if ref is None:
        return None
    if out is None or tuple(out.shape) != tuple(ref.shape):
        return float("inf")
    o = out.detach().double().cpu()
    r = ref.detach().cpu()
    if not torch.isfinite(o).all():
        return float("inf")
    if scale is None:
        scale = r.abs().max().item()
    scale = max(scale, SCALE_FLOOR.get(out.dtype, 0.0)) if scale else 1.0
    return (o - r).abs().max().item() / scale


def errors(out, ref) -> list:
    """`rel_error` of each output of `out` (dx, dγ, dβ) against the reference's, each divided
    by its scale (`Reference.scales`; a plain tuple: max|ref| for all three)."""
    scales = getattr(ref, "scales", (None, None, None))
    return [rel_error(o, r, s) for o, r, s in zip(out, ref, scales)]


def errors_within(errs, dtype: str, weight_dtype: str) -> bool:
    """Whether each of `errs` (`errors`' dx, dγ, dβ; None: not judged) is within its own
    tolerance (output_tolerances: dx by the activations' dtype, dγ and dβ by the weight's)."""
    tol_x, tol_w = output_tolerances(dtype, weight_dtype)
    return all(e is None or e <= t for e, t in zip(errs, (tol_x, tol_w, tol_w)))


def within_tolerances(out, ref, dtype: str, weight_dtype: str) -> bool:
    """Whether every output of `out` (dx, dγ, dβ) is within its own tolerance of the fp64
    `ref` (`errors_within`)."""
    return errors_within(errors(out, ref), dtype, weight_dtype)
