"""The register budget at d = 16384, checked by compiling for sm_90 here (bench/regs.py):
reading each row twice (rowgrad_reload) must spill less than keeping x̂ and g in registers,
and not at all for RMSNorm.  A kernel change that brings the spills back fails here, before
it costs device time."""
import functools
import json
import os
import subprocess
import sys
import tempfile

from tests import forkcli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGS = os.path.join(ROOT, "bench", "regs.py")


def regs(*args):
    """bench/regs.py ARGS' JSON: a copy of the first call's with the same ARGS (the same
    compile and SASS: several tests read the same configuration)."""
    return dict(_regs(*args))


@functools.cache
def _regs(*args):
    out = run_regs(*args)
    out.check_returncode()
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_regs(*args, script=None) -> subprocess.CompletedProcess:
    """`python bench/regs.py ARGS` (its stdout and stderr as text, its exit code) through
    tests/forkcli.py, whose server for these calls has done regs.py's module-level set-up
    (Triton and normbench with the GPU pretended) and hashed Triton's files once
    (_forkserver.preload): about 2 s of CPU a call less.  script: `python SCRIPT ARGS`
    instead, from the same server — a compile script that does regs.py's set-up first and
    names its target."""
    return forkcli.run([sys.executable, script or REGS, *args], text=True,
                       env=forkcli.without_interpreter(), preload=REGS)


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


def test_pdl_lets_the_reduce_in_early_and_changes_nothing_else():
    """`pdl` (a tuning option, off): the main kernel's griddepcontrol.launch_dependents
    (PREEXIT) at its start — disjoint_block's and disjoint_smem's — and nothing else of it
    changed (registers, stages, loads); none without the option."""
    for name in ("disjoint_block", "disjoint_smem"):
        plain = regs("--name", name, "--d", "4096")
        pdl = regs("--name", name, "--d", "4096", "--override", '{"pdl": true}')
        assert plain["preexit"] == 0 and pdl["preexit"] == 1, (name, plain, pdl)
        for k in ("regs", "stack", "dynamic", "ldgsts", "lds", "bar"):
            assert pdl[k] == plain[k], (name, k, plain, pdl)


def test_the_reduce_waits_for_the_kernel_before_it_only_with_pdl(tmp_path):
    """The reduce launched with pdl waits (griddepcontrol.wait: ACQBULK) before its first
    read; without it there is no wait and no programmatic launch."""
    code = (
        "import os, sys, subprocess, tempfile\n"
        "os.environ.pop('TRITON_INTERPRET', None)\n"
        "import torch; torch.cuda.is_available = lambda: True\n"
        f"sys.path.insert(0, {ROOT!r})\n"
        "import triton\n"
        "from triton.backends.compiler import GPUTarget\n"
        "from triton.compiler import ASTSource\n"
        "from normbench.strategies.reduce import _reduce_kernel as k\n"
        "tools = os.path.join(os.path.dirname(triton.__file__), 'backends', 'nvidia', 'bin')\n"
        "for pdl in (False, True):\n"
        "    c = dict(HAS_B=True, BLOCK_G=256, BLOCK_N=32, PAIRED=True, PDL=pdl, WIDE=False)\n"
        "    sig = {n: 'constexpr' if n in c else '*fp32' if n in ('PW', 'PB') else '*bf16'\n"
        "           if n in ('DW', 'DB') else 'i32' for n in k.arg_names}\n"
        "    src = ASTSource(k, sig, constexprs={(k.arg_names.index(n),): v for n, v in c.items()})\n"
        "    b = triton.compile(src, target=GPUTarget('cuda', 90, 32),\n"
        "                       options={'num_warps': 4, 'launch_pdl': pdl})\n"
        "    with tempfile.NamedTemporaryFile(suffix='.cubin') as f:\n"
        "        f.write(b.asm['cubin']); f.flush()\n"
        "        sass = subprocess.run([os.path.join(tools, 'cuobjdump'), '-sass', f.name],\n"
        "                              capture_output=True, text=True, check=True).stdout\n"
        "    print(pdl, bool(b.metadata.launch_pdl), 'ACQBULK' in sass)\n")
    # CODE as a script of its own, forked from the server of regs.py's calls (run_regs:
    # a new process, Triton's compile afresh; without TRITON_INTERPRET, which CODE drops first,
    # and a GPU pretended, as CODE does; its compile names its target)
    script = tmp_path / "reduce_pdl.py"
    script.write_text(code)
    out = run_regs(script=script)
    out.check_returncode()
    assert out.stdout.split() == ["False", "False", "False", "True", "True", "True"], out.stdout


def test_strided_compiles_the_kernel_its_rule_runs_at_each_width():
    """regs.py compiles what an H200 runs: disjoint_strided's row loop (disjoint_block's kernel,
    imported) up to 8192 and disjoint_smem's staged kernel above at its own rule's stages —
    rows of 16384 read twice from shared memory (24 16-byte loads), in two stages in RMSNorm
    (no spill) and three in LayerNorm with a 16-bit γ (round 25: `ln_inflight`, as
    disjoint_smem), with bf16 at 8 warps since round 27 (`ln_warps`: 48 16-byte loads a
    thread, no spill — compiled here, Triton 3.9, sm_90; at 16 warps 128 registers and 16
    bytes of stack; fp16 fits 16 warps); two of 12288 (disjoint_smem three) —
    and rows in chunks past 16384.  LayerNorm's rows of one block ask L2 a row ahead (round 47)."""
    loop = regs("--name", "disjoint_strided", "--d", "4096")
    assert loop["num_stages"] == 3 and loop["block_d"] == 4096 and loop["stack"] == 0, loop
    rms = regs("--name", "disjoint_strided", "--d", "16384", "--norm", "rmsnorm")
    assert rms["lds128"] == 24 and rms["num_stages"] == 2 and rms["stack"] == 0, rms
    assert rms["dynamic"] >= 2 * 65536, rms
    ln = regs("--name", "disjoint_strided", "--d", "16384", "--norm", "layernorm")
    assert ln["num_warps"] == 8 and ln["num_stages"] == 3 and ln["lds128"] == 48, ln
    assert ln["stack"] == 0 and ln["stl"] == 0, ln
    assert 3 * 65536 <= ln["dynamic"] <= 227 * 1024, ln
    # LayerNorm's rows of one block ask L2 a row ahead (round 47: two bulk prefetches in the
    # loop, x's and dy's), RMSNorm's not
    assert ln["l2_ahead"] == 1 and ln["pf2"] == 2 and rms["pf2"] == 0, (ln, rms)
    # at the 16 warps of round 25 the same three stages spill (the registers a thread: 128)
    ln16 = regs("--name", "disjoint_strided", "--d", "16384", "--norm", "layernorm",
                "--override", '{"num_warps": 16, "ln_l2_ahead": 0}')
    assert ln16["num_warps"] == 16 and ln16["num_stages"] == 3 and ln16["stack"] <= 16, ln16
    # fp16 keeps 16 warps: its rows fit them without spilling (99 registers here), and do not
    # ask L2 ahead (L2_OFF: untimed with it, and 24 bytes of stack with it under Triton 3.9)
    h = regs("--name", "disjoint_strided", "--d", "16384", "--norm", "layernorm", "--dtype", "fp16")
    assert h["num_warps"] == 16 and h["num_stages"] == 3 and h["stack"] == 0, h
    assert h["l2_ahead"] == 0 and h["pf2"] == 0, h
    # its own rule's bytes in flight: two stages of 12288 (split_inflight), not disjoint_smem's 3
    assert regs("--name", "disjoint_strided", "--d", "12288")["num_stages"] == 2
    assert regs("--name", "disjoint_smem", "--d", "12288")["num_stages"] == 3
    chunks = regs("--name", "disjoint_strided", "--d", "32768")
    assert chunks["block_d"] == 8192 and chunks["dynamic"] < 65536, chunks   # nothing staged


def test_strided_fp32_rows_of_16384_compile_by_halves_with_gamma_in_registers():
    """Round 31's rule as regs.py compiles it: fp32 rows of 16384 in 2 + 1 half slots (three
    64 KB halves of x and dy: no γ in shared memory), γ in registers, at 16 warps — at most 8
    bytes of stack (Triton 3.9 here: 128 registers and one or two spilled stores in both
    norms; the device's Triton 3.6 had RMSNorm at 108 registers with none)."""
    for norm in ("rmsnorm", "layernorm"):
        r = regs("--name", "disjoint_strided", "--d", "16384", "--norm", norm, "--dtype", "fp32")
        assert r["halves"] and r["w_regs"] and r["num_stages"] == 2, (norm, r)
        assert r["block_d"] == r["block_d2"] == 8192 and r["num_warps"] == 16, (norm, r)
        assert 3 * 65536 <= r["dynamic"] < 3 * 65536 + 2048 and r["stack"] <= 8, (norm, r)


def test_strided_layernorm_at_3072_compiles_at_its_8_warps_without_spilling():
    """Round 22's rule as regs.py compiles it: LayerNorm at 3072 with 16-bit activations at 8
    warps (170 registers a thread in Triton 3.6, no spill: one program an SM, as at 16), RMSNorm
    and fp32 activations at the rule's 16."""
    ln = regs("--name", "disjoint_strided", "--d", "3072")
    assert ln["num_warps"] == 8 and ln["stack"] == 0, ln
    assert regs("--name", "disjoint_strided", "--d", "3072", "--norm", "rmsnorm")["num_warps"] == 16
    assert regs("--name", "disjoint_strided", "--d", "3072", "--dtype", "fp32")["num_warps"] == 16


def test_bf16_pairs_and_xhat_fma_take_instructions_off_the_staged_row():
    """Round 43, compiled for sm_90: `bf16_pairs` (the rule's) widens bf16 without a PRMT
    (the compiler's conversion moves each high half down first) and `xhat_fma` takes
    LayerNorm's x̂ subtraction (an FADD an element and pass) off — fewer instructions both,
    the stages and copies as they were."""
    plain = regs("--name", "disjoint_smem", "--d", "16384", "--override", '{"bf16_pairs": false}')
    pairs = regs("--name", "disjoint_smem", "--d", "16384")
    both = regs("--name", "disjoint_smem", "--d", "16384", "--override",
                '{"bf16_pairs": true, "xhat_fma": true}')
    assert plain["prmt"] > 0 and pairs["prmt"] == 0 and pairs["bf16_pairs"], (plain, pairs)
    assert both["instrs"] < pairs["instrs"] < plain["instrs"], (plain, pairs, both)
    assert both["fadd"] < pairs["fadd"] == plain["fadd"] and both["xhat_fma"], (plain, both)
    for k in ("dynamic", "ldgsts", "num_stages", "num_warps"):
        assert plain[k] == pairs[k] == both[k], (k, plain, both)
    rms = regs("--name", "disjoint_smem", "--d", "16384", "--norm", "rmsnorm", "--override",
               '{"xhat_fma": true}')
    assert not rms["xhat_fma"], rms


def test_full_sectors_trades_by_shuffles_or_through_shared_memory():
    """Rounds 44-45, compiled for sm_90: `full_sectors` trades each warp's partial-row
    elements by shuffles (SHFL), 2 through shared memory (barriers and 16-byte shared loads,
    no more shuffles than without); neither spills; disjoint_strided's rule keeps it off at
    RMSNorm with an fp32 γ (`sectors_off`) and on at LayerNorm bf16."""
    args = ("--name", "disjoint_strided", "--d", "16384", "--norm", "rmsnorm", "--dtype",
            "fp16", "--weight-dtype", "fp32", "--override")
    rule = regs(*args, "{}")
    shfl = regs(*args, '{"sectors_off": []}')
    smem = regs(*args, '{"full_sectors": 2, "sectors_off": []}')
    assert (rule["sectors"], shfl["sectors"], smem["sectors"]) == (0, 1, 2)
    assert shfl["shfl"] > rule["shfl"] == smem["shfl"], (rule, shfl, smem)
    assert smem["bar"] > rule["bar"] and smem["lds128"] > rule["lds128"], (rule, smem)
    for k in ("dynamic", "ldgsts", "num_stages", "num_warps"):
        assert rule[k] == shfl[k] == smem[k], (k, rule, shfl, smem)
    assert rule["stack"] == shfl["stack"] == smem["stack"] == 0
    assert regs("--name", "disjoint_strided", "--d", "16384")["sectors"] == 1


def test_a_bad_override_is_refused_as_the_tuning_path_refuses_it():
    """--override went to _tuning.overridden unchecked: a typo ("num_warp") compiled and
    reported the rule's registers (exit 0), and text that is not a JSON object was a
    traceback.  Each is one line and exit 2, as _tuning.params would refuse it."""
    for ov, said in (('{"num_warp": 8}', "unknown tuning option 'num_warp'"),
                     ('{"num_warps": "8"}', "expected an int or a bool"),
                     ("xx", "not JSON"), ("[1]", "not a JSON object")):
        r = run_regs("--d", "4096", "--override", ov)
        err = [ln for ln in r.stderr.splitlines() if "regs.py: error:" in ln]
        assert r.returncode == 2 and len(err) == 1 and said in err[0], r.stderr
        assert "Traceback" not in r.stderr and not r.stdout
