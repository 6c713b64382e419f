"""GPU-only checks (run on the device machine): the issue's correctness shapes at full size."""
import pytest
import torch

import strategies
from harness.inputs import make_inputs, reference, rel_error, tolerance

pytestmark = pytest.mark.gpu

SHAPES = [("bf16", 16384, 4096), ("bf16", 16384, 8192), ("fp32", 1024, 65536)]
NAMES = [n for n in ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "disjoint_fused",
                     "torch", "liger", "quack") if n in strategies.names()]


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("dtype,rows,d", SHAPES)
@pytest.mark.parametrize("name", NAMES)
def test_full_size_against_fp64(name, norm, dtype, rows, d):
    x, dy, w, mean, rstd = make_inputs(norm, rows, d, dtype, dtype, seed=rows + d, device="cuda")
    try:
        out = strategies.get(name).backward(x, dy, w, mean, rstd)
    except NotImplementedError as e:
        pytest.skip(str(e))
    ref = reference(x, dy, w, mean, rstd)
    tol = tolerance(dtype, dtype)
    errs = {k: rel_error(o, r) for k, o, r in zip(("dx", "dw", "db"), out, ref)}
    print(f"\n{name} {norm} {rows}x{d} {dtype}: " +
          " ".join(f"{k}={v:.2e}" for k, v in errs.items() if v is not None))
    assert all(v <= tol for v in errs.values() if v is not None), (errs, tol)


@pytest.mark.parametrize("name", [n for n in NAMES if strategies.get(n).deterministic_by_design])
def test_deterministic_by_design_repeats_bits_on_gpu(name):
    x, dy, w, mean, rstd = make_inputs("layernorm", 16384, 4096, "bf16", "bf16", seed=5, device="cuda")
    first = strategies.get(name).backward(x, dy, w, mean, rstd)
    for _ in range(5):
        again = strategies.get(name).backward(x, dy, w, mean, rstd)
        for a, b in zip(first, again):
            assert torch.equal(a.view(torch.int16), b.view(torch.int16))
