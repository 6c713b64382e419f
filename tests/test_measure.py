"""measure.py's pure parts: the memory pre-check and the bytes model behind it."""
from harness import model
from harness.measure import memory_shortfall
from harness.plan import Case


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
