"""The register budget at d = 16384, checked by compiling for sm_90 here (bench/regs.py):
reading each row twice (rowgrad_reload) must spill less than keeping x̂ and g in registers,
and not at all for RMSNorm.  A kernel change that brings the spills back fails here, before
it costs device time."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def regs(*args):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "regs.py"), *args],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "NORMBENCH_QUIET": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_reload_spills_less_at_16384():
    reload = regs("--d", "16384")
    plain = regs("--d", "16384", "--override", '{"reload": false}')
    assert reload["reload"] and not plain["reload"]
    assert reload["stack"] < plain["stack"], (reload, plain)
    assert regs("--d", "16384", "--norm", "rmsnorm")["stack"] == 0


def test_the_pipelined_loop_stages_its_tiles_in_shared_memory_without_spilling():
    """Tune-7's rule: 3 stages, so two [block_r, d] tiles of x and dy wait in shared memory
    (cp.async) — if Triton stopped pipelining the loop, the dynamic shared memory would drop.
    And _tuning.fit_stages' model of that memory is an upper bound of what the compiler takes:
    fp32 rows of 8192 (the widest pipelined) fit an H200's 227 KB a program."""
    from normbench.strategies import _tuning
    for d, dtype, elem in (("4096", "bf16", 2), ("1024", "bf16", 2), ("8192", "fp32", 4)):
        r = regs("--d", d, "--dtype", dtype)
        tile = r["block_r"] * int(d) * elem * 2
        assert r["num_stages"] == 3 and not r["prefetch"] and r["stack"] == 0, r
        assert 2 * tile <= r["dynamic"] <= 2 * tile + 1024, r
        assert _tuning.fit_stages(_tuning.params("disjoint_block", int(d)), elem, 227 * 1024) == 3


def test_the_fused_kernel_does_not_spill_at_16_warps():
    """disjoint_fused adds its reduce to the row loop: at d = 4096 (16 warps, 128 registers a
    thread at most) it reaches the cap — one more live value would spill."""
    for norm in ("layernorm", "rmsnorm"):
        r = regs("--d", "4096", "--norm", norm, "--fused", "132")
        assert r["stack"] == 0 and r["local"] == 0, r


def test_l2_ahead_prefetches_without_costing_registers_or_stages():
    """`l2_ahead` compiles to bulk L2 prefetches (UBLKPF) in the row loop and nowhere else: none
    at the rule's default, and asking for them leaves the pipelined loop's shared-memory stages
    at d = 4096 as they were and the spills at d = 16384 (rows read twice) within 16 bytes
    (80 -> 96 B with Triton 3.6, 88 -> 96 B with 3.9: the prefetches' addresses)."""
    for d in ("16384", "4096"):
        plain = regs("--d", d)
        ahead = regs("--d", d, "--override", '{"l2_ahead": 2}')
        assert plain["pf2"] == 0 and ahead["pf2"] > 0, (plain, ahead)
        assert ahead["dynamic"] == plain["dynamic"] and ahead["ldgsts"] == plain["ldgsts"], (plain, ahead)
        assert ahead["stack"] <= plain["stack"] + 16, (plain, ahead)
