"""The partial rows kept between calls (strategies._launch.scratch)."""
import torch

from normbench import strategies
from normbench.harness.inputs import errors, make_inputs, reference
from normbench.strategies import _launch


def test_scratch_is_reused_per_shape_and_bounded(monkeypatch):
    monkeypatch.setattr(_launch, "_SCRATCH", {})
    cpu = torch.device("cpu")
    pw, pb = _launch.scratch(3, 8, True, cpu)
    assert pw.shape == pb.shape == (3, 8) and pw.dtype == torch.float32
    again = _launch.scratch(3, 8, True, cpu)
    assert again[0].data_ptr() == pw.data_ptr() and again[1].data_ptr() == pb.data_ptr()
    rms, none = _launch.scratch(3, 8, False, cpu)
    assert none is None and rms.data_ptr() != pw.data_ptr()
    for g in range(1, _launch.SCRATCH_KEEP + 2):     # more shapes than are kept
        _launch.scratch(g, 16, False, cpu)
    assert len(_launch._SCRATCH) == _launch.SCRATCH_KEEP
    assert (3, 8, True, cpu, None) not in _launch._SCRATCH    # the oldest went first


def test_scratch_zero_clears_both():
    cpu = torch.device("cpu")
    pw, pb = _launch.scratch(2, 4, True, cpu)
    pw.fill_(1.0)
    pb.fill_(2.0)
    pw, pb = _launch.scratch(2, 4, True, cpu, zero=True)
    assert not pw.any() and not pb.any()


def test_calls_after_a_reused_workspace_stay_right():
    """A second call of the same shape reads partial rows the first one left behind: every
    strategy must overwrite (or zero) them, so the answers stay right."""
    for name in ("disjoint_block", "disjoint_fused", "grouped_atomic", "spin_lock"):
        e = strategies.get(name)
        for seed in (1, 2):
            x, dy, w, mean, rstd = make_inputs("layernorm", 12, 40, "fp32", "fp32", seed=seed,
                                               device="cpu")
            got = e.backward(x, dy, w, mean, rstd, groups=3)
            ref = reference(x, dy, w, mean, rstd)
            assert max(e for e in errors(got, ref) if e is not None) < 1e-5, name


def test_workspaces_made_in_inference_mode_serve_later_calls(monkeypatch):
    """A kept workspace (partial rows, grid counters) first made by a call inside
    torch.inference_mode is no inference tensor: a later call outside it — of any strategy
    sharing the key, grouped_atomic zeroing it in place — stays right."""
    from normbench.strategies import disjoint_fused
    monkeypatch.setattr(_launch, "_SCRATCH", {})
    monkeypatch.setattr(disjoint_fused, "_COUNTERS", {})
    x, dy, w, mean, rstd = make_inputs("layernorm", 8, 64, "fp32", "fp32", seed=0, device="cpu")
    ref = reference(x, dy, w, mean, rstd)
    with torch.inference_mode():
        for name in ("disjoint_block", "disjoint_fused"):
            strategies.get(name).backward(x, dy, w, mean, rstd, groups=4)
    for name in ("grouped_atomic", "disjoint_fused", "disjoint_block"):
        out = strategies.get(name).backward(x, dy, w, mean, rstd, groups=4)
        assert max(errors(out, ref)) < 1e-4, name


def test_fused_after_an_interrupted_call_stays_right(monkeypatch):
    """A disjoint_fused call interrupted among the interpreter's programs (Ctrl-C) leaves
    tickets in its grid counter; the next call must still sum every partial row of its own
    (not reduce early from the last call's rows, nor never)."""
    from normbench.strategies import disjoint_fused
    monkeypatch.setattr(disjoint_fused, "_COUNTERS", {})
    e = strategies.get("disjoint_fused")
    x, dy, w, mean, rstd = make_inputs("layernorm", 64, 64, "fp32", "fp32", seed=1, device="cpu")
    e.backward(x, dy, w, mean, rstd, groups=8)
    (counter,) = disjoint_fused._COUNTERS.values()
    for left in (3, 8, 11):                 # tickets of programs that ran before the interrupt
        counter[0] = left
        x, dy, w, mean, rstd = make_inputs("layernorm", 64, 64, "fp32", "fp32", seed=left,
                                           device="cpu")
        out = e.backward(x, dy, w, mean, rstd, groups=8)
        assert max(errors(out, reference(x, dy, w, mean, rstd))) < 1e-4, left
        assert not counter.any()


def test_per_shape_caches_stay_bounded(monkeypatch):
    """A client whose token counts vary call to call (a training run) must not grow the
    hot path's caches without end: an entry's GROUPS per shape keeps the last GROUPS_KEEP
    (launch plans, PLANS_KEEP, go through the same `remember`), and calls stay right."""
    from normbench.strategies import _registry
    e = strategies.get("disjoint_block")
    monkeypatch.setattr(e, "_groups", {})
    monkeypatch.setattr(_registry, "GROUPS_KEEP", 3)
    for rows in range(2, 8):
        x, dy, w, mean, rstd = make_inputs("layernorm", rows, 16, "fp32", "fp32", seed=rows,
                                           device="cpu")
        got = e.backward(x, dy, w, mean, rstd)
        assert max(v for v in errors(got, reference(x, dy, w, mean, rstd)) if v is not None) < 1e-5
    assert len(e._groups) == 3
    assert [k[0] for k in e._groups] == [5, 6, 7]     # the newest stay
    cache = {}
    for k in range(5):
        _launch.remember(cache, k, -k, 2)
    assert cache == {3: -3, 4: -4}
