"""The one correctness check every implementation test uses: fresh inputs, fp64 reference; and
the bit-for-bit comparison of two calls' outputs."""
import random

import pytest
import torch

from normbench import strategies
from normbench.harness import measure
from normbench.harness.inputs import errors, make_inputs, reference, tolerance


def check(name, norm, rows, d, dtype, weight_dtype="same", groups=None, row_stride=None,
          device=None):
    """Run `name` once on fresh random inputs and compare dx, dγ, dβ with the fp64 reference.

    Also checks dtypes and shapes, and that the inputs were not modified.  An implementation
    that refuses a combination with NotImplementedError is skipped with its reason."""
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
    tol = tolerance(dtype, wdt)
    errs = dict(zip(("dx", "dw", "db"), errors((dx, dw, db), ref)))
    bad = {k: v for k, v in errs.items() if v is not None and not v <= tol}
    assert not bad, (f"{name} {norm} {rows}x{d} {dtype}/{wdt} groups={groups} "
                     f"stride={row_stride} seed={seed}: {bad} > {tol}")


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
