"""torch_compile: Inductor's code for the backward, correct at odd shapes (CPU: its C++ backend),
compiled once per key and reused, never sent to eager by Dynamo's recompile limit."""
import pytest
import torch

from checks import check
from normbench import strategies
from normbench.harness.inputs import make_inputs
from normbench.strategies import torch_compile as tc

pytestmark = pytest.mark.skipif(not strategies.get("torch_compile").available,
                                reason=f"torch_compile: {strategies.get('torch_compile').reason}")


def test_registered_as_a_baseline():
    e = strategies.get("torch_compile")
    assert e.kind == "baseline" and not e.uses_groups and e.deterministic_by_design and e.doc
    assert "torch_compile" in strategies.names()


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_odd_shapes_against_fp64(poisoned, norm, dtype):
    for rows, d in ((1, 3), (3, 33), (2, 100)):
        check("torch_compile", norm, rows, d, dtype)
    check("torch_compile", norm, 3, 33, dtype, row_stride=40)


def test_d1():
    """d = 1: LayerNorm's dx is 0 and dγ = Σ dy·x̂.  RMSNorm's dx = rstd·γ·dy·(1 − x̂²), where
    1 − x̂² = eps/(x² + eps) cancels in fp32 for any x̂-based formula: dx's error is measured
    against the size of the terms it is the difference of (`inputs.Reference`), so both
    are judged to the fp32 tolerance."""
    check("torch_compile", "layernorm", 3, 1, "fp32")
    check("torch_compile", "rmsnorm", 3, 1, "fp32")


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_mixed_weight_dtype(poisoned, norm):
    check("torch_compile", norm, 3, 100, "bf16", weight_dtype="fp32")
    x, dy, w, mean, rstd = make_inputs(norm, 3, 100, "bf16", "fp32", seed=0, device="cpu")
    note = tc.notes(x, dy, w, mean, rstd)
    assert note.startswith("torch.compile (Inductor")
    assert ("cast to the weight's (fp32)" in note) == (norm == "rmsnorm")


def test_compiled_once_per_key_and_reused_with_the_same_bits():
    x, dy, w, mean, rstd = make_inputs("layernorm", 3, 17, "fp32", "fp32", seed=2, device="cpu")
    e = strategies.get("torch_compile")
    first = e.backward(x, dy, w, mean, rstd)
    n = len(tc._compiled)
    fn = tc._compiled[(False, (3, 17), x.stride(), dy.stride(), x.dtype, w.dtype, x.device)]
    for _ in range(3):
        again = e.backward(x, dy, w, mean, rstd)
        assert all(torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(first, again))
    assert len(tc._compiled) == n
    assert tc._compiled[(False, (3, 17), x.stride(), dy.stride(), x.dtype, w.dtype, x.device)] is fn


def test_more_shapes_than_dynamos_recompile_limit_all_compile():
    """Dynamo keeps at most recompile_limit (8) entries per code object and then runs the
    function eagerly: each key has a code object of its own, so every shape is compiled."""
    from torch._dynamo.utils import counters
    limit = torch._dynamo.config.recompile_limit
    before = counters["stats"]["unique_graphs"]
    for d in range(40, 40 + limit + 2):
        check("torch_compile", "rmsnorm", 2, d, "fp32")
    assert counters["stats"]["unique_graphs"] - before == limit + 2


def test_without_a_cxx_compiler_it_is_unavailable_with_a_reason(monkeypatch):
    if strategies.default_device().type != "cpu":
        pytest.skip("the C++ compiler is asked for only on CPU")
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(tc.shutil, "which", lambda name: None)
    reason, _ = tc._probe()
    assert "C++ compiler" in reason and "\n" not in reason


# ----------------------------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@pytest.mark.parametrize("wdt", ["same", "fp32"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_gpu_against_fp64(norm, wdt):
    dev = torch.device("cuda")
    for rows, d, dtype, stride in ((1, 3, "bf16", None), (3, 33, "fp16", 40), (300, 4096, "bf16", None),
                                   (4096, 1000, "bf16", None), (2, 65536, "fp32", None)):
        check("torch_compile", norm, rows, d, dtype, weight_dtype=wdt, row_stride=stride, device=dev)


@pytest.mark.gpu
def test_gpu_repeats_its_bits():
    x, dy, w, mean, rstd = make_inputs("layernorm", 16384, 4096, "bf16", "fp32", seed=5, device="cuda")
    e = strategies.get("torch_compile")
    first = e.backward(x, dy, w, mean, rstd)
    for _ in range(5):
        again = e.backward(x, dy, w, mean, rstd)
        assert all(torch.equal(a.view(torch.uint8), b.view(torch.uint8)) for a, b in zip(first, again))


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_statistics_that_require_grad_are_taken_as_values(norm):
    """A forward run under autograd saves mean and rstd with requires_grad: the backward takes
    them as values (Inductor has no derivative for the backward ops), as every strategy does."""
    x, dy, w, mean, rstd = make_inputs(norm, 3, 17, "fp32", "fp32", seed=4, device="cpu")
    e = strategies.get("torch_compile")
    plain = e.backward(x, dy, w, mean, rstd)
    stats = (None if mean is None else mean.clone().requires_grad_(), rstd.clone().requires_grad_())
    again = e.backward(x.clone().requires_grad_(), dy, w, *stats)
    for a, b in zip(plain, again):
        assert (a is None) == (b is None)
        if a is not None:
            assert not b.requires_grad and torch.equal(a, b)
