"""The verdicts and numbers of a record can fail: each test here fails on a harness bug that
the rest of the suite let through (mutants of measure.py, timing.py and inputs.py that left
every other test passing, session 50's mutation hunt)."""
from __future__ import annotations

import json
import statistics

import pytest
import torch

from normbench.harness import model, timing
from normbench.harness.measure import Settings, measure, same_bits
from normbench.harness.plan import Case
from normbench.strategies import _registry


def _register(monkeypatch, name, fn):
    e = _registry.Entry(name=name, kind="baseline", deterministic_by_design=False,
                        uses_groups=False, fn=fn, doc="test")
    monkeypatch.setitem(_registry._REGISTRY, name, e)


def _torch_fn():
    from normbench import strategies
    return strategies.get("torch").fn


def _run(impl, *, dtype="fp32", weight_dtype="fp32", rows=6, d=16, repeats=3):
    case = Case(norm="layernorm", implementation=impl, rows=rows, d=d, dtype=dtype,
                weight_dtype=weight_dtype, groups="-")
    return measure(case, Settings(warmup_ms=1, rep_ms=1, repeats=repeats, seed=0,
                                  peak_tbps=None, copy_gbps=None, device_name="cpu"))


def test_a_result_wrong_only_on_its_first_call_is_not_correct(monkeypatch):
    """dγ 10 % off on the first call only (a workspace not cleared before first use), right
    on every later one: the record's own err_dw is far past its tolerance, so it is not
    correct, whatever the later calls say."""
    torch_fn, calls = _torch_fn(), [0]

    def wrong_first(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        return dx, (dw * 1.1 if calls[0] == 1 else dw), db
    _register(monkeypatch, "test_wrong_first", wrong_first)
    rec = _run("test_wrong_first")
    assert rec["status"] == "ok" and rec["correct"] is False
    assert rec["err_dw"] > 0.05 and rec["distinct_results"] == 2


def test_a_nan_in_the_first_call_only_is_an_error(monkeypatch):
    torch_fn, calls = _torch_fn(), [0]

    def nan_first(x, dy, w, mean, rstd, *, groups=None):
        calls[0] += 1
        dx, dw, db = torch_fn(x, dy, w, mean, rstd)
        return (dx * float("nan") if calls[0] == 1 else dx), dw, db
    _register(monkeypatch, "test_nan_first", nan_first)
    rec = _run("test_nan_first")
    assert rec["status"] == "error" and "dx of the first call" in rec["error"], rec["error"]


def test_bits_not_values_decide_determinism():
    """+0.0 and −0.0 are equal values and other bits: two results that differ so are two
    distinct results; a NaN of one payload is the same bits as itself."""
    pos, neg = torch.tensor([0.0, 1.0]), torch.tensor([-0.0, 1.0])
    assert torch.equal(pos, neg) and not same_bits(pos, neg)
    nan = torch.tensor([float("nan")])
    assert same_bits(nan, nan.clone())
    assert not same_bits(pos, pos.double())


def test_the_record_s_numbers_follow_from_its_samples_and_the_bytes_model(monkeypatch):
    """With the timer's samples fixed (one outlier among them), a bf16/fp32 LayerNorm record
    holds: bytes_moved of the stated model at its dtypes (not the two swapped), time_ms the
    samples' median (not their mean), gbps bytes_moved over that median (not over p20), and
    every sample kept to the nanosecond."""
    samples = [0.0102345, 0.0101234, 0.05, 0.0103456, 0.0104567]
    monkeypatch.setattr(timing, "bench", lambda fn, w, r, on_gpu: list(samples))
    rec = _run("torch", dtype="bf16", weight_dtype="fp32", rows=6, d=16)
    assert rec["status"] == "ok", rec["error"]
    want_bytes = model.bytes_moved("layernorm", 6, 16, "bf16", "fp32")
    assert rec["bytes_moved"] == want_bytes != model.bytes_moved("layernorm", 6, 16, "fp32",
                                                                  "bf16")
    assert rec["time_ms"] == pytest.approx(statistics.median(samples), rel=1e-12)
    assert rec["gbps"] == pytest.approx(want_bytes / (rec["time_ms"] * 1e-3) / 1e9, rel=1e-9)
    kept = json.loads(rec["time_samples_ms"])
    assert kept == pytest.approx(samples, abs=1e-6)


def test_every_row_has_its_own_statistics_and_values():
    """A kernel that reads another row's mean or rstd is far off only where rows differ: the
    inputs' rows must (one row repeated made such a kernel pass every case)."""
    from normbench.harness.inputs import make_inputs
    for norm in ("layernorm", "rmsnorm"):
        x, dy, w, mean, rstd = make_inputs(norm, 16, 32, "fp32", "fp32", seed=0, device="cpu")
        assert len({tuple(r.tolist()) for r in x}) == 16
        assert len({tuple(r.tolist()) for r in dy}) == 16
        assert rstd.std() / rstd.mean() > 0.1                  # scales 0.5-4 apart
        assert len(set(rstd.tolist())) == 16
        if mean is not None:
            assert len(set(mean.tolist())) == 16 and mean.std() > 0.3
