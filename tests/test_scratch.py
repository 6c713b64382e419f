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
