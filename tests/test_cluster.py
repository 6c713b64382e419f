"""disjoint_cluster on CPU: its plan (which rows it splits, copy width, warps, stages), its place
in the registry where it cannot run, and its Gluon kernel compiled for sm_90 as one CTA of a
2-CTA cluster (bench/regs.py).  Its numbers are checked on the GPU (tests/test_gpu.py): Gluon
has no interpreter."""
import pytest

from normbench import strategies
from normbench.strategies import disjoint_cluster as dc
from tests.test_regs import regs as regs_py

H200 = 227 * 1024


def test_rows_wider_than_2048_up_to_16384_are_split_in_halves_of_a_power_of_two():
    p = dc._rule(16384)
    assert dc.plan(p, 2048, 2, 2, H200) == dc.NOT_SPLIT
    assert dc.plan(p, 16385, 2, 2, H200) == dc.NOT_SPLIT
    assert dc.plan(p, 2049, 2, 2, H200) == dc.NOT_SPLIT           # odd bf16 rows: no cp.async
    assert dc.plan(p, 2049, 4, 4, H200).half == 2048              # fp32: single-element copies
    assert dc.plan(p, 12288, 2, 2, H200).half == 8192             # rank 1 holds 4096 real columns
    assert dc.plan(p, 16384, 2, 2, H200) == dc.Plan(8192, 8, 16, 5)
    assert dc.plan(p, 4096, 2, 2, H200) == dc.Plan(2048, 8, 8, 8)  # 8 warps: one copy a thread wide


def test_stages_fill_inflight_within_shared_memory():
    """1 + ⌈inflight / half row of x and dy⌉, at most MAX_STAGES, fewer where they and γ's half
    would not fit; a num_stages given holds; nothing where not one stage fits."""
    p = dc._rule(16384)
    assert dc.plan(p, 16384, 2, 4, H200).stages == 5              # 5 × 32 KB + 32 KB of γ
    assert dc.plan(p, 16384, 4, 4, H200).stages == 3              # fp32: 3 × 64 KB + 32 KB
    assert dc.plan({**p, "num_stages": 2}, 16384, 2, 2, H200).stages == 2
    assert dc.plan({**p, "inflight": 32 * 1024}, 16384, 2, 2, H200).stages == 2
    assert dc.plan(p, 16384, 4, 4, 64 * 1024) == dc.NOT_SPLIT
    for d in (4096, 8192, 16384):
        for elem, w in ((2, 2), (2, 4), (4, 4)):
            m = dc.plan(p, d, elem, w, H200)
            assert m.stages * m.half * elem * 2 + m.half * w + 2048 <= H200


def test_auto_groups_are_one_cluster_for_every_two_sms():
    assert dc._groups_rule(4096, 16384, 132, dc._rule(16384)) == 66
    assert dc._groups_rule(5, 16384, 132, dc._rule(16384)) == 5


def regs(*args):
    """bench/regs.py --name disjoint_cluster ARGS' JSON (tests/test_regs.regs)."""
    return regs_py("--name", "disjoint_cluster", *args)


@pytest.mark.parametrize("norm,dtype,weight", [("layernorm", "bf16", "bf16"),
                                               ("rmsnorm", "bf16", "fp32"),
                                               ("layernorm", "fp32", "same")])
def test_the_kernel_compiles_as_a_cluster_without_spilling(norm, dtype, weight):
    """Compiled for sm_90 at d = 16384: no spill, its stages within 227 KB, cp.async copies, and one arrive and one
    wait of the cluster barrier in the SASS."""
    r = regs("--d", "16384", "--norm", norm, "--dtype", dtype, "--weight-dtype", weight)
    assert r["stack"] == 0 and r["stl"] == 0, r
    assert r["dynamic"] <= H200 and r["ldgsts"] > 0 and r["cluster_bar"] == 2, r
    assert r["block_d"] == 8192, r
