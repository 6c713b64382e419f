"""The one correctness check every implementation test uses: fresh inputs, fp64 reference; and
the bit-for-bit comparison of two calls' outputs."""
import random

import pytest
import torch

from normbench import strategies
from normbench.harness import measure
from normbench.harness.inputs import errors, make_inputs, output_tolerances, reference


# Implementations whose fp32 dγ (and dβ) of 16-bit activations carry 16-bit rounding, so that
# the harness records them ✗ (each output judged by its own dtype): (name, norm, device type or
# None for any) -> the outputs that are off.  check() expects that verdict there.
FP32_DW_OF_16BIT_X_OFF = {
    # aten.native_layer_norm_backward on CPU takes 16-bit x with an fp32 weight as they are
    # (on CUDA it refuses them and the baseline takes autocast's fp32 path): dγ 1e-3–3e-2 off
    ("torch", "layernorm", "cpu"): ("dw", "db"),
    # liger's RMSNorm ("llama" casting) sums dY·(X·rstd).to(X's dtype): x̂ rounded to 16 bits
    # (README: its RMSNorm records with an fp32 weight ✗, bf16 dγ 2.0–2.6e-3 off on an H200)
    ("liger", "rmsnorm", None): ("dw",),
}


def _known_off(name, norm, dtype, wdt, device) -> tuple:
    """The outputs FP32_DW_OF_16BIT_X_OFF says are off for this case, or ()."""
    if dtype == "fp32" or wdt != "fp32":
        return ()
    return (FP32_DW_OF_16BIT_X_OFF.get((name, norm, torch.device(device).type))
            or FP32_DW_OF_16BIT_X_OFF.get((name, norm, None)) or ())


def check(name, norm, rows, d, dtype, weight_dtype="same", groups=None, row_stride=None,
          device=None):
    """Run `name` once on fresh random inputs and compare dx, dγ, dβ with the fp64 reference.

    Each output is judged by its own dtype's tolerance, as the harness judges it
    (`inputs.output_tolerances`: dx by the activations', dγ and dβ by the weight's — an fp32
    dγ of bf16 activations owes fp32 accuracy).  Where FP32_DW_OF_16BIT_X_OFF names the case,
    the harness's verdict is expected instead: ✗, the outputs it names not all within their
    tolerance, every other one within.  Also checks dtypes and shapes, and that the inputs
    were not modified.  An implementation that refuses a combination with
    NotImplementedError is skipped with its reason."""
    wdt = dtype if weight_dtype == "same" else weight_dtype
    device = device or strategies.default_device()
    seed = random.randrange(2**31)           # fresh inputs every run; printed on failure
    x, dy, w, mean, rstd = make_inputs(norm, rows, d, dtype, wdt, seed=seed, device=device,
                                       row_stride=row_stride)
    x0, dy0 = x.clone(), dy.clone()
    try:
        dx, dw, db = strategies.get(name).backward(x, dy, w, mean, rstd, groups=groups)
    except NotImplementedError as e:
        pytest.skip(f"{name}: {e}")
    assert torch.equal(x, x0) and torch.equal(dy, dy0), "inputs were modified"
    ref = reference(x, dy, w, mean, rstd)
    assert dx.shape == x.shape and dw.shape == w.shape
    assert dx.dtype == x.dtype and dw.dtype == w.dtype
    assert (db is None) == (norm == "rmsnorm")
    if db is not None:
        assert db.dtype == w.dtype
    tol_x, tol_w = output_tolerances(dtype, wdt)
    tols = {"dx": tol_x, "dw": tol_w, "db": tol_w}
    errs = dict(zip(tols, errors((dx, dw, db), ref)))
    bad = {k: f"{v} > {tols[k]}" for k, v in errs.items() if v is not None and not v <= tols[k]}
    case = f"{name} {norm} {rows}x{d} {dtype}/{wdt} groups={groups} stride={row_stride} seed={seed}"
    if off := _known_off(name, norm, dtype, wdt, device):
        assert set(bad) & set(off), f"{case}: {off} expected past the fp32 tolerance: {errs}"
        bad = {k: v for k, v in bad.items() if k not in off}
    assert not bad, f"{case}: {bad}"


def same_bits(first, again, note=None):
    """Two calls' outputs (dx, dγ, dβ or None) are the same bits, output by output (the
    harness's own comparison, harness.measure.same_bits)."""
    for u, v in zip(first, again, strict=True):
        assert measure.same_bits(u, v), note


def exchange_words_empty():
    """Every kept word of the row-sum exchange (strategies/_exchange.py) is EMPTY (-1), and
    there is at least one: what a launch must leave for the next."""
    from normbench.strategies import _launch
    words = [v for k, v in _launch._SCRATCH.items() if k[0] == "exchange"]
    assert words and all(bool((t == -1).all()) for t in words)


def fused_launch_plans(monkeypatch) -> list:
    """Spy on disjoint_fused's launches: the list returned gets (GROUPS, meta, programs) for
    each launch plan made — the constexprs its `meta` chose (GRID_SYNC, TAIL, …) for a grid
    of `programs`."""
    from normbench.strategies import disjoint_fused as f
    plans, real = [], f.launch_partials

    def spy(kernel, c, groups, params, extra=(), extra_meta=None):
        def meta(compile, programs):
            m = extra_meta(compile, programs)
            plans.append((groups, m, programs))
            return m
        return real(kernel, c, groups, params, extra, meta)
    monkeypatch.setattr(f, "launch_partials", spy)
    return plans
