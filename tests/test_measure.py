"""measure.py: the memory pre-check, the bytes model, and an interruption never recorded as a failure."""
import signal

from normbench.harness import model
from normbench.harness.measure import memory_shortfall
from normbench.harness.plan import Case


def case(rows, d, dtype="bf16"):
    return Case(norm="layernorm", implementation="disjoint_block", rows=rows, d=d, dtype=dtype,
                weight_dtype=dtype, groups="auto")


def test_a_case_larger_than_free_memory_is_refused_before_launch():
    big = case(1 << 20, 65536)                       # 64 Gi elements: hundreds of GiB
    msg = memory_shortfall(big, 0, free_bytes=140 << 30)
    assert msg and "GiB of device memory" in msg and "140.0 GiB free" in msg
    assert memory_shortfall(case(16384, 4096), 4 << 20, free_bytes=140 << 30) is None


def test_bytes_model_counts_each_tensor_once():
    # 3 activations (x, dy in; dx out) + rstd, mean + weight in, dγ, dβ out
    assert model.bytes_moved("layernorm", 16384, 4096, "bf16", "bf16") == \
        3 * 16384 * 4096 * 2 + 16384 * 4 * 2 + 4096 * 2 * 3
    assert model.bytes_moved("rmsnorm", 10, 8, "fp32", "bf16") == 3 * 10 * 8 * 4 + 10 * 4 + 8 * 2 * 2
    assert model.peak_tbps("NVIDIA H200") == 4.8
    assert model.peak_tbps("NVIDIA H100 80GB HBM3") == 3.35
    assert model.peak_tbps("NVIDIA H200", override=5.0) == 5.0
    assert model.peak_tbps("Some CPU") is None


def _raise_wrapped(*a, **k):
    from normbench.harness.interrupt import Interrupted
    try:
        raise Interrupted(signal.SIGTERM)
    except Interrupted as e:
        raise RuntimeError("Error calling __set_name__ on 'X' instance 'y' in 'Z'") from e


def test_a_signal_that_surfaces_wrapped_is_still_an_interruption():
    """Python 3.11 wraps an exception from a descriptor's __set_name__ in a RuntimeError: a
    signal landing while a module defines such a class (torch's FakeTensor on first import)
    arrived as that RuntimeError — the CLI printed a traceback and exited 1."""
    from normbench.harness.interrupt import Interrupted, interruption

    class D:
        def __set_name__(self, owner, name):
            raise Interrupted(signal.SIGINT)
    try:
        class C:   # noqa: F841
            d = D()
    except BaseException as e:      # RuntimeError on 3.11, the Interrupted itself from 3.12
        i = interruption(e)
    assert isinstance(i, Interrupted) and i.signum == signal.SIGINT
    assert interruption(RuntimeError("no signal here")) is None


def test_a_wrapped_interruption_stops_measure_instead_of_becoming_a_record(monkeypatch):
    import pytest
    from normbench import strategies
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.measure import Settings, measure
    e = strategies.get("disjoint_block")
    monkeypatch.setattr(e, "effective_groups", _raise_wrapped)
    s = Settings(warmup_ms=1, rep_ms=1, repeats=1, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name="cpu")
    with pytest.raises(Interrupted):
        measure(case(8, 16), s)
    monkeypatch.setattr(e, "effective_groups", lambda *a, **k: 1 / 0)
    assert measure(case(8, 16), s)["status"] == "error"     # an ordinary failure: a record
