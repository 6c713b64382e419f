"""disjoint_smem on CPU: its rules (copy width, stages, warps, which kernel runs), its place in
the registry where it cannot run, and its Gluon kernel compiled for sm_90 (bench/regs.py).
Its numbers are checked on the GPU (tests/test_gpu.py: against fp64, bits over repeats, the
staged and the fallback paths): Gluon has no interpreter."""
import itertools
import os
import subprocess
import sys

import pytest
import torch

from normbench import strategies
from normbench.strategies import disjoint_smem as smem
from tests.test_regs import regs as regs_py
from tests.test_regs import run_regs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
H200 = 227 * 1024


def test_copy_width_is_the_widest_that_divides_every_unit():
    assert smem.vec_width(2, 16384, 16384, 0) == 8           # 16-byte copies of bf16
    assert smem.vec_width(2, 4100) == 4                       # 8 bytes
    assert smem.vec_width(2, 1002) == 2                       # 4 bytes
    assert smem.vec_width(2, 1001) == 0                       # odd bf16 rows: not stageable
    assert smem.vec_width(4, 777) == 1                        # single fp32 elements
    assert smem.vec_width(2, 4096, 4096, 1) == 0              # a pointer not 16-byte aligned
    assert smem.vec_width(4, 4096, 4096, 1) == 1


def test_stages_fill_the_bytes_in_flight_within_shared_memory():
    """1 + ⌈64 KB / row⌉ stages, at most MAX_STAGES, fewer where x, dy and γ would not fit a
    program's shared memory; none where not even one row of x and dy fits."""
    st = {d: smem.stages(smem._rule(d), d, 2, 2, H200) for d in (1024, 4096, 8192, 16384)}
    assert st == {1024: 8, 4096: 5, 8192: 3, 16384: 2}
    p = smem._rule(16384)
    assert smem.stages(p, 16384, 4, 4, H200) == 1             # fp32 rows: one 128 KB stage
    assert smem.stages({**p, "inflight": 128 * 1024}, 16384, 2, 2, H200) == 3
    assert smem.stages({**p, "inflight": 128 * 1024}, 16384, 2, 4, H200) == 2
    assert smem.stages(p, 16384, 4, 4, 100 * 1024) == 0
    for d in (1024, 4096, 8192, 16384):
        for elem, w in ((2, 2), (2, 4), (4, 4)):
            q = smem._rule(d)
            n = smem.stages(q, d, elem, w, H200)
            assert n == 0 or n * q["block_d"] * elem * 2 + q["block_d"] * w + 2048 <= H200


def test_warps_follow_the_width_and_a_wide_weight():
    assert [smem._rule(d)["num_warps"] for d in (512, 1024, 2048, 4096, 16384)] == [4, 4, 8, 16, 16]
    p = smem._rule(16384)
    assert smem.warps(p, 16384, 2, 4) == 8                    # fp32 γ with bf16 x
    assert smem.warps(p, 16384, 2, 2) == 16
    assert smem.warps(p, 16384, 4, 4) == 16
    assert smem.warps(smem._rule(8192), 8192, 2, 4) == 16     # measured only above 8192
    assert smem.warps({**p, "wide_weight_warps": 16}, 16384, 2, 4) == 16


def test_a_layernorm_row_in_two_parts_takes_8_warps():
    """Round 21: LayerNorm with 16-bit activations and a weight of their width, at rows the
    rule stages in two parts at 8 warps (12288, 11264; 10240, whose 2048-column part only 8
    warps can split off), runs 8 warps; RMSNorm, fp32 activations, an fp32 γ (its own 8),
    rows of one part (16384, 14336) and narrower rows keep the rule's warps."""
    def launch(d, elem=2, w_elem=2, ln=True):
        return smem.launch_meta(smem._rule(d), d, elem, w_elem, H200, ln=ln)
    for d, rest in ((12288, 4096), (11264, 4096), (10240, 2048)):
        m = launch(d)
        assert (m.warps, m.block_d, m.block_d2) == (8, 8192, rest), d
        assert launch(d, ln=False).warps == 16, d
        assert launch(d, 4, 4).warps == 16, d
        assert launch(d, 2, 4).warps == 8, d                 # wide_weight_warps
    assert launch(10240, ln=False).block_d2 == 0              # 16 warps: no split there
    for d in (16384, 14336):
        assert launch(d).warps == 16, d
    for d in (8192, 7168, 3072):
        assert launch(d).warps == smem._rule(d)["num_warps"], d
    # the switch: with ln_split_warps at the rule's warps nothing changes
    p = {**smem._rule(12288), "ln_split_warps": 16}
    assert smem.launch_meta(p, 12288, 2, 2, H200, ln=True).warps == 16


def test_a_row_in_two_parts_takes_split_inflight():
    """`split_inflight` sets the bytes in flight of a row staged in two parts (disjoint_strided's
    rule: 32 KB, two stages of 12288 instead of three) and of no other row, but in RMSNorm with
    a weight wider than the activations (round 24: 16 % slower there); disjoint_smem's 0 keeps
    `inflight`; a tuning override of `inflight` reaches two-part rows too."""
    from normbench.strategies import _tuning, disjoint_strided

    def stages(p, d, elem=2, w_elem=2, ln=True):
        return smem.launch_meta(p, d, elem, w_elem, H200, ln=ln).stages
    rule = smem._rule(12288)
    strided = {**rule, "split_inflight": disjoint_strided.SPLIT_INFLIGHT}
    for ln in (True, False):
        assert stages(rule, 12288, ln=ln) == 3 and stages(strided, 12288, ln=ln) == 2, ln
    assert stages(rule, 10240) == 3 and stages(strided, 10240) == 2   # 8192 + 2048 at LN's 8 warps
    assert stages(rule, 10240, ln=False) == stages(strided, 10240, ln=False) == 2  # one part
    assert stages(rule, 12288, 2, 4) == 3 and stages(strided, 12288, 2, 4) == 2
    assert stages(strided, 12288, 2, 4, ln=False) == 3      # RMSNorm with a wider γ: 64 KB
    assert stages(strided, 12288, 4, 4, ln=False) == stages(rule, 12288, 4, 4, ln=False)
    one = {**smem._rule(16384), "split_inflight": 1024}
    assert stages(one, 16384, ln=False) == stages(smem._rule(16384), 16384, ln=False) == 2
    over = _tuning.overridden(strided, {"inflight": 128 * 1024}, 12288)
    assert over["split_inflight"] == 0 and stages(over, 12288) == 4
    assert stages(_tuning.overridden(strided, {"split_inflight": 65536}, 12288), 12288) == 3


def test_a_layernorm_row_of_16384_takes_ln_inflight(monkeypatch):
    """`ln_inflight` (round 24): a LayerNorm row of one 16384-column block with a weight of
    the activations' 16-bit width keeps 128 KB in flight — three stages, which fit an H200
    beside γ — in disjoint_smem's rule and disjoint_strided's (round 25); RMSNorm, a wider
    weight, fp32 rows and narrower blocks keep the two stages of `inflight`; an `inflight`
    override holds in LayerNorm too."""
    from normbench.strategies import _tuning, disjoint_strided

    def stages(p, d, elem=2, w_elem=2, ln=True):
        return smem.launch_meta(p, d, elem, w_elem, H200, ln=ln).stages
    rule = smem._rule(16384)
    assert stages(rule, 16384) == 3 and stages(rule, 14336) == 3 and stages(rule, 9000) == 3
    assert stages(rule, 16384, ln=False) == 2
    assert stages(rule, 16384, 2, 4) == 2                     # fp32 γ: three would not fit
    assert stages(rule, 16384, 4, 4) == 1
    assert stages(smem._rule(8192), 8192) == stages(smem._rule(8192), 8192, ln=False) == 3
    assert stages(rule, 12288) == 3                            # two parts: split_inflight's
    assert smem.launch_meta(rule, 16384, 2, 2, 200 * 1024, ln=True).stages == 2  # less smem
    monkeypatch.setattr(smem, "_WHY", "")                     # its staged rule, on CPU too
    strided = disjoint_strided._rule(16384)
    assert strided["ln_inflight"] == smem.LN_INFLIGHT and stages(strided, 16384) == 3
    assert stages(strided, 16384, ln=False) == 2 and stages(strided, 16384, 2, 4) == 2
    over = _tuning.overridden(rule, {"inflight": 65536}, 16384)
    assert over["ln_inflight"] == 0 and stages(over, 16384) == 2


def test_half_rows_where_they_put_more_ahead_than_whole_rows(monkeypatch):
    """`half_rows` (a tuning option, off in both rules since round 28 had it 7 % slower): a
    row of one block staged by halves where whole rows keep fewer of its bytes on their way —
    LayerNorm's rows of one 16384 block with 16-bit activations and an fp32 γ (five half-row
    slots: 3 halves = 96 KB ahead, against two whole stages' 64 KB); not a 16-bit γ (three
    whole stages hold as much), not RMSNorm (its 64 KB aim two whole stages already hold),
    not fp32 rows (three half rows of 64 KB and γ do not fit), not two-part rows, nor with the
    option off or `inflight` overridden; where shared memory is scarcer, halves where whole
    rows get one stage."""
    from normbench.strategies import _tuning, disjoint_strided
    monkeypatch.setattr(smem, "_WHY", "")

    def meta(p, d, elem=2, w_elem=4, ln=True, sm=H200):
        return smem.launch_meta(p, d, elem, w_elem, sm, ln=ln)
    assert not meta(smem._rule(16384), 16384).halves
    assert not meta(disjoint_strided._rule(16384), 16384).halves
    on = {"half_rows": True}
    for rule in (smem._rule(16384) | on, disjoint_strided._rule(16384) | on):
        for d in (16384, 15000, 9000):
            m = meta(rule, d)
            assert m.halves and (m.block_d, m.block_d2, m.stages, m.warps) == (8192, 8192, 3, 8)
            assert 5 * 8192 * 2 * 2 + 16384 * 4 + 2048 <= H200, m
        assert not meta(rule, 16384, 2, 2).halves                       # 16-bit γ
        assert not meta(rule, 16384, ln=False).halves                   # RMSNorm
        # fp32 rows: not with γ in shared memory; disjoint_strided's one_stage_halves (round
        # 31) holds γ in registers to have them
        assert meta(rule, 16384, 4, 4).halves is bool(rule.get("one_stage_halves"))
        assert not meta(rule | {"one_stage_halves": False}, 16384, 4, 4).halves
        assert not meta(rule, 12288).halves                             # two parts
        assert not meta({**rule, "half_rows": False}, 16384).halves
        assert not meta(_tuning.overridden(rule, {"inflight": 65536}, 16384), 16384).halves
    assert not meta(smem._rule(8192) | on, 8192).halves                 # one part of 8192
    m = meta(smem._rule(16384) | on, 16384, sm=163 * 1024)  # an A100's: whole rows one stage
    assert m.halves and m.stages == 2                      # 2 + 1 half-row slots
    assert smem.half_slots(16384, 2, 4, H200, 128 * 1024) == 5
    assert smem.half_slots(16384, 2, 2, H200, 128 * 1024) == 6
    assert smem.half_slots(16384, 4, 4, H200, 128 * 1024) == 2


def test_one_stage_halves_stage_fp32_rows_of_16384_by_halves(monkeypatch):
    """disjoint_strided's rule (round 31, `one_stage_halves`): where whole rows fit one stage
    beside γ — fp32 rows of 16384 on an H200, both norms — γ in registers and the row by
    halves, 2 + 1 half slots; every other row keeps the Launch it had (16-bit rows of 16384
    with either weight, fp32 rows of two parts), and so does disjoint_smem's rule and the
    option turned off."""
    from normbench.strategies import disjoint_strided
    monkeypatch.setattr(smem, "_WHY", "")

    def meta(p, d, elem, w_elem, ln):
        return smem.launch_meta(p, d, elem, w_elem, H200, ln=ln)
    rule = disjoint_strided._rule(16384)
    off = rule | {"one_stage_halves": False}
    for ln in (True, False):
        m = meta(rule, 16384, 4, 4, ln)
        assert m.halves and m.w_regs and (m.block_d, m.block_d2, m.stages) == (8192, 8192, 2)
        # (disjoint_strided's LayerNorm rows of one block ask L2 a row ahead: round 47)
        assert meta(off, 16384, 4, 4, ln) == meta(smem._rule(16384), 16384, 4, 4,
                                                  ln)._replace(l2_ahead=int(ln))
        assert meta(off, 16384, 4, 4, ln).stages == 1
        for elem, w_elem in ((2, 2), (2, 4)):
            assert meta(rule, 16384, elem, w_elem, ln) == meta(off, 16384, elem, w_elem, ln)
        r12 = disjoint_strided._rule(12288)
        assert meta(r12, 12288, 4, 4, ln) == meta(r12 | {"one_stage_halves": False}, 12288, 4,
                                                  4, ln)


def test_w_regs_leaves_shared_memory_to_the_rows(monkeypatch):
    """`w_regs` (a tuning option, round 29; off in both rules): γ held in fp32 registers,
    so the stages are counted without it — RMSNorm 12288 with an fp32 γ keeps its three
    stages (64 KB in flight) in 48 KB less; LayerNorm's rows of one 16384 block with an fp32
    γ aim at ln_inflight as with a 16-bit one (three stages instead of two); fp32 rows of
    12288 get two stages instead of one; with `half_rows` too, halves only where they keep
    more ahead than whole rows without γ's bytes: fp32 rows of 16384 (one whole-row stage, or
    2 + 1 half slots), not LayerNorm's 16-bit rows (three whole stages)."""
    from normbench.strategies import _tuning, disjoint_strided
    monkeypatch.setattr(smem, "_WHY", "")

    def meta(p, d, elem=2, w_elem=4, ln=True):
        return smem.launch_meta(p, d, elem, w_elem, H200, ln=ln)
    on = {"w_regs": True}
    for rule in (smem._rule(16384), disjoint_strided._rule(16384)):
        assert not meta(rule, 16384).w_regs
        assert meta(rule, 16384).stages == 2 and meta(rule | on, 16384).stages == 3
        assert meta(rule | on | {"half_rows": True}, 16384).halves is False
        for ln in (True, False):
            m = meta(rule | on | {"half_rows": True}, 16384, 4, 4, ln=ln)
            assert m.halves and m.w_regs and (m.block_d, m.block_d2, m.stages) == (8192, 8192, 2)
            no = {"half_rows": True, "one_stage_halves": False}
            assert not meta(rule | no, 16384, 4, 4, ln=ln).halves       # γ's 64 KB in the way
        assert meta(rule | on, 16384, ln=False).stages == 2     # RMSNorm's 64 KB: 2 anyway
    r12 = smem._rule(12288)
    assert not meta(r12, 12288).w_regs
    m = meta(r12 | on, 12288, ln=False)
    assert m.w_regs and (m.block_d, m.block_d2, m.stages, m.warps) == (8192, 4096, 3, 8)
    assert meta(r12, 12288, 4, 4, ln=False).stages == 1
    assert meta(r12 | on, 12288, 4, 4, ln=False).stages == 2
    assert meta(_tuning.overridden(r12, {"w_regs": True, "num_stages": 4}, 12288),
                12288, ln=False).stages == 4           # 4 × 48 KB: fits without γ's 48 KB
    assert meta(_tuning.overridden(r12, {"num_stages": 4}, 12288), 12288, ln=False).stages == 3
    # disjoint_strided's rule (round 29): RMSNorm rows of two parts with a 4096-column second
    # part and a wider weight; not 10240's 2048, LayerNorm, a 16-bit γ, fp32 rows, nor
    # disjoint_smem's rule
    s12 = disjoint_strided._rule(12288)
    for d in (12288, 11264):
        m = meta(s12, d, ln=False)
        assert m.w_regs and (m.block_d, m.block_d2, m.stages) == (8192, 4096, 3), (d, m)
    assert not meta(disjoint_strided._rule(10240), 10240, ln=False).w_regs
    assert not meta(s12, 12288).w_regs and not meta(s12, 12288, 2, 2, ln=False).w_regs
    assert not meta(s12, 12288, 4, 4, ln=False).w_regs
    assert not meta(disjoint_strided._rule(16384), 16384, ln=False).w_regs
    assert not meta(r12, 12288, ln=False).w_regs


def test_strided_layernorm_rows_of_one_block_take_ln_warps(monkeypatch):
    """`ln_warps` (round 27): disjoint_strided's LayerNorm rows of one 16384-column block with
    bf16 activations and a bf16 weight run 8 warps (fp16 keeps 16, and so do
    disjoint_smem's contiguous blocks); RMSNorm, fp32 rows and two-part rows keep their own
    warps, a wider weight its wide_weight_warps; a num_warps override holds in LayerNorm too."""
    from normbench.strategies import _tuning, disjoint_strided
    monkeypatch.setattr(smem, "_WHY", "")

    def warps(p, d, elem=2, w_elem=2, ln=True, bf16=True):
        return smem.launch_meta(p, d, elem, w_elem, H200, ln=ln, bf16=bf16).warps
    strided = disjoint_strided._rule(16384)
    assert strided["ln_warps"] == disjoint_strided.LN_WARPS == 8
    assert warps(strided, 16384) == warps(strided, 14336) == 8
    assert warps(strided, 16384, bf16=False) == 16                                  # fp16
    assert warps(smem._rule(16384), 16384) == 16
    assert warps(strided, 16384, ln=False) == 16 and warps(strided, 16384, 4, 4) == 16
    assert warps(strided, 16384, 2, 4) == 8                   # wide_weight_warps
    assert warps(strided, 12288) == 8 and warps(strided, 12288, ln=False) == 16  # two parts
    assert warps(_tuning.overridden(strided, {"num_warps": 16}, 16384), 16384) == 16


def test_which_kernel_runs():
    """staged() -> its Launch (VEC first), or NOT_STAGED where disjoint_block's kernel runs: rows
    wider than 16384, bf16 rows of odd width, a tensor not 16-byte aligned in 16-bit types."""
    bf = torch.bfloat16
    x = torch.zeros(8, 16384, dtype=bf)
    assert smem.staged(x, x, torch.zeros(16384, dtype=bf))[0] == 8
    wide = torch.zeros(4, 20000, dtype=bf)
    assert smem.staged(wide, wide, torch.zeros(20000, dtype=bf)) == smem.NOT_STAGED
    odd = torch.zeros(4, 1001, dtype=bf)
    assert smem.staged(odd, odd, torch.zeros(1001, dtype=bf)) == smem.NOT_STAGED
    padded = torch.zeros(6, 4100, dtype=bf)[:, :4096]
    assert smem.staged(padded, padded, torch.zeros(4096, dtype=bf))[0] == 4
    shifted = torch.zeros(6 * 4096 + 1, dtype=bf)[1:].view(6, 4096)
    assert smem.staged(shifted, shifted, torch.zeros(4096, dtype=bf)) == smem.NOT_STAGED
    f = torch.zeros(6 * 4096 + 1)[1:].view(6, 4096)
    assert smem.staged(f, f, torch.zeros(4096))[0] == 1


def test_rows_narrower_than_1024_are_not_staged():
    """Below MIN_BLOCK_D (block_d < 1024: d ≤ 512) disjoint_block's kernel runs; from 1024 on
    the rule's layout (warps · 32 lanes · VEC) never outgrows the row, at any copy width."""
    for d in (1, 16, 100, 512):
        for elem in (2, 4):
            assert smem.launch_meta(smem._rule(d), d, elem, elem, H200) == smem.NOT_STAGED, (d, elem)
    for d in (513, 777, 1000, 1024, 3000, 4096, 12288, 16384):
        for elem in (2, 4):
            m = smem.launch_meta(smem._rule(d), d, elem, elem, H200)
            assert m.vec == 0 or m.vec * 32 * m.warps <= m.block_d, (d, elem)


def test_split_rows_are_staged_at_about_their_width():
    """`split` (on in the rule above 8192, round 15): 12288 as 8192 + 4096 — three 48 KB
    stages of bf16 where the one block of 16384 fits two — never a part narrower than one copy
    a thread, never where the two parts make a whole block (7168) or d is a power of two."""
    on, off = {"split": True}, {"split": False}
    assert smem._rule(12288)["split"] is True and smem._rule(10000)["split"] is True
    assert smem._rule(8192)["split"] is False and smem._rule(5120)["split"] is False
    assert smem.parts(smem._rule(12288), 12288, 8, 16) == (8192, 4096)
    assert smem.parts({**smem._rule(12288), **off}, 12288, 8, 16) == (16384, 0)
    assert smem.parts(smem._rule(5120), 5120, 8, 16) == (8192, 0)
    assert smem.parts({**smem._rule(10000), **on}, 10000, 8, 16) == (16384, 0)   # 2048 < 4096
    assert smem.parts({**smem._rule(10000), **on}, 10000, 8, 8) == (8192, 2048)
    assert smem.parts({**smem._rule(7168), **on}, 7168, 8, 16) == (8192, 0)
    assert smem.parts({**smem._rule(16384), **on}, 16384, 8, 16) == (16384, 0)
    m = smem.launch_meta(smem._rule(12288), 12288, 2, 2, H200)
    assert (m.block_d, m.block_d2, m.stages) == (8192, 4096, 3)
    assert smem.launch_meta({**smem._rule(12288), **off}, 12288, 2, 2, H200).stages == 2


def test_the_split_kernel_compiles_without_spilling():
    """Compiled for sm_90 at 12288 in two parts: both parts' stages in shared memory (3 of
    (8192 + 4096) bf16 columns of x and dy, γ beside them), each read twice, no spill — with
    an fp32 γ (8 warps) too."""
    for extra in ((), ("--weight-dtype", "fp32"), ("--norm", "rmsnorm")):
        r = regs("--d", "12288", "--override", '{"split": true}', *extra)
        assert (r["block_d"], r["block_d2"], r["num_stages"]) == (8192, 4096, 3), r
        assert r["stack"] == 0 and r["ldgsts"] > 0, r
        assert 3 * 12288 * 4 <= r["dynamic"] <= 3 * 12288 * 4 + 12288 * 4 + 2048, r


def regs(*args):
    """bench/regs.py --name disjoint_smem ARGS' JSON (tests/test_regs.regs: a copy of the
    first call's with the same ARGS)."""
    return regs_py("--name", "disjoint_smem", *args)


def test_the_staged_kernel_reads_shared_memory_twice_without_spilling():
    """Compiled for sm_90: at d = 16384 (bf16, 16 warps) the rows wait in two 64 KB stages of
    x and dy (cp.async) and γ beside them; each pass reads x, dy and γ from shared memory —
    4 16-byte loads of each a thread, so 24 in all: were the barrier between the passes lost,
    the compiler would merge them into 12 and spill — and nothing spills, LayerNorm or
    RMSNorm; with an fp32 γ at 8 warps (twice the columns a thread) neither."""
    for norm, over in (("layernorm", '{"ln_inflight": 0}'), ("rmsnorm", "{}")):
        r = regs("--d", "16384", "--norm", norm, "--override", over)
        assert r["num_warps"] == 16 and r["num_stages"] == 2, r
        assert r["stack"] == 0 and r["stl"] == 0 and r["ldgsts"] > 0, r
        assert r["lds128"] == 24, r
        assert 2 * 65536 + 32768 <= r["dynamic"] <= 2 * 65536 + 32768 + 2048, r
    r = regs("--d", "16384", "--weight-dtype", "fp32")
    assert r["num_warps"] == 8 and r["stack"] == 0 and r["lds128"] == 64, r
    # the rows dealt round-robin (`interleave`): the same stages and reads, no spill
    r = regs("--d", "16384", "--override", '{"interleave": true, "ln_inflight": 0}')
    assert r["num_stages"] == 2 and r["stack"] == 0 and r["lds128"] == 24, r


def test_a_layernorm_row_of_16384_in_three_stages_fits_and_reads_twice():
    """The rule's LayerNorm at 16384 (`ln_inflight`, round 24): three 64 KB stages and γ fit an
    H200's 227 KB a program, each pass still reads shared memory apart (24 16-byte loads a
    thread); the third stage costs registers — compiled here (Triton 3.9, sm_90) 128, the most
    16 warps have, and 8 bytes of stack (one spilled store), against 102 and none at two
    stages.  Round 24 timed it on the device's Triton 3.6: 2.5 % faster all the same."""
    r = regs("--d", "16384", "--norm", "layernorm")
    assert r["num_warps"] == 16 and r["num_stages"] == 3, r
    assert 3 * 65536 + 32768 <= r["dynamic"] <= 227 * 1024, r
    assert r["lds128"] == 24 and r["stack"] <= 8 and r["stl"] <= 1, r


def test_half_rows_compile_in_one_ring_without_spilling():
    """`half_rows` (an option) compiled for sm_90 (LayerNorm 16384, bf16 x, fp32 γ, 8 warps):
    3 + 2 half-row slots of x and dy and γ in shared memory (≤ 227 KB), each pass reading
    both halves (64 16-byte loads a thread, as whole rows at 8 warps), and nothing spilled
    in the contiguous blocks."""
    r = regs("--d", "16384", "--weight-dtype", "fp32", "--override", '{"half_rows": true}')
    assert r["halves"] and (r["block_d"], r["block_d2"], r["num_stages"]) == (8192, 8192, 3), r
    assert 5 * 32768 + 65536 <= r["dynamic"] <= 227 * 1024, r
    assert r["num_warps"] == 8 and r["lds128"] == 64 and r["stack"] == 0, r
    # two rings: no CTA barrier between a row's two copies, one reduction a row — as many
    # barriers as whole rows (one ring had 13 here against their 7)
    whole_bars = regs("--d", "16384", "--weight-dtype", "fp32")["bar"]
    assert r["bar"] <= whole_bars + 1, (r, whole_bars)
    whole = regs("--d", "16384", "--weight-dtype", "fp32")
    assert not whole["halves"] and whole["num_stages"] == 2 and whole["lds128"] == 64, whole


def test_w_regs_compiles_without_spilling():
    """`w_regs` (an option) compiled for sm_90: γ read once into registers (8 warps, an fp32
    γ beside 16-bit rows) — at RMSNorm 12288 half the 16-byte shared loads (γ's are gone: 24
    a thread against 48), three stages in 48 KB less shared memory, and nothing spilled."""
    r = regs("--d", "12288", "--norm", "rmsnorm", "--dtype", "fp16", "--weight-dtype", "fp32",
             "--override", '{"w_regs": true}')
    old = regs("--d", "12288", "--norm", "rmsnorm", "--dtype", "fp16", "--weight-dtype", "fp32")
    assert r["w_regs"] and not old["w_regs"], (r, old)
    assert (r["num_warps"], r["num_stages"]) == (old["num_warps"], old["num_stages"]) == (8, 3)
    assert r["lds128"] * 2 == old["lds128"] and r["stack"] == 0, (r, old)
    assert old["dynamic"] - r["dynamic"] >= 12288 * 4, (r, old)


def test_regs_says_where_the_kernel_does_not_stage():
    out = run_regs("--name", "disjoint_smem", "--d", "20000")
    assert out.returncode != 0 and "disjoint_block's kernel" in out.stderr


_TIMELINE_COMPILE = r'''
import os, sys
os.environ.pop("TRITON_INTERPRET", None)
import torch
torch.cuda.is_available = lambda: True
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
sys.path[:0] = [sys.argv[1], os.path.join(sys.argv[1], "bench")]
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental.gluon._runtime import GluonASTSource
import timeline_staged as ts
k = ts._timed_smem
names = k.arg_names
from normbench.strategies import _launch, disjoint_smem
# the constexprs the staged kernel is launched with (kernel_args), so that the wrapper cannot
# drift from them (round 30's timeline call failed on a W_REGS the wrapper did not take)
x = torch.zeros(4, 16384, dtype=torch.bfloat16)
cl = _launch.prepare(x, x, torch.ones(16384, dtype=torch.bfloat16), torch.zeros(4), torch.ones(4))
_, meta = disjoint_smem.kernel_args(cl, 4, disjoint_smem.Launch(8, 3, 8, 16384, 0), True, False)
consts = {n: v for n, v in meta.items() if n != "num_warps"}
if len(sys.argv) > 2:         # the per-row clocks (--rows): Clk a tensor, CLOCKS on
    consts.pop("Clk")        # (--phases: CLOCKS 2, four clocks a row)
    consts["CLOCKS"] = 2 if sys.argv[2] == "phases" else True
sig = {n: "constexpr" if n in consts else "*bf16" if n in ("X", "DY", "DX", "W") else
       "*i64" if n in ("T", "Clk") else "*fp32" if n in ("Mean", "Rstd", "PW", "PB") else "i32" for n in names}
attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names
         if n not in consts and n not in ("ROWS", "ROWS_PER_PROG")}
src = GluonASTSource(k, sig, attrs=attrs, constexprs={(names.index(a),): v for a, v in consts.items()})
c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
print(c.asm["ptx"].count("%globaltimer"), c.asm["ptx"].count("%smid"), c.metadata.shared)
'''


def _timeline_compile(tmp_path, *args):
    """`python -c _TIMELINE_COMPILE ROOT ARGS`, checked: the code as a script of its own
    (tmp_path/timeline_compile.py) forked from the server of bench/regs.py's calls
    (run_regs: a new process, Triton's compile afresh, without torch's import),
    which has done regs.py's set-up — no TRITON_INTERPRET, an sm_90 GPU pretended — as the
    code does first."""
    script = tmp_path / "timeline_compile.py"
    script.write_text(_TIMELINE_COMPILE)
    out = run_regs(ROOT, *args, script=script)
    out.check_returncode()
    return out


def test_the_staged_timeline_compiles_its_clock_reads_around_the_kernel(tmp_path):
    """bench/timeline_staged.py's wrapper (the staged kernel between two reads of the GPU's
    clock, and its SM) compiles for sm_90 at LayerNorm 16384's three stages, with every
    constexpr disjoint_smem.kernel_args launches the staged kernel with; on a machine without
    a GPU the script says it needs one."""
    out = _timeline_compile(tmp_path)
    clocks, sms, shared = map(int, out.stdout.split()[-3:])
    assert clocks == 2 and sms == 1 and 3 * 65536 + 32768 <= shared <= 227 * 1024, out.stdout
    out = _timeline_compile(tmp_path, "rows")
    assert list(map(int, out.stdout.split()[-3:]))[:2] == [3, 1], out.stdout   # one a row too
    out = _timeline_compile(tmp_path, "phases")
    assert list(map(int, out.stdout.split()[-3:]))[:2] == [6, 1], out.stdout   # four a row
    if not torch.cuda.is_available():
        r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "timeline_staged.py")],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "needs a CUDA GPU" in r.stderr, r.stderr[-500:]


def test_kernel_args_count_vec_elements_and_carry_the_launch():
    """The staged kernel's arguments (run_staged's and bench/timeline_staged.py's): widths and
    row strides in units of VEC elements, rows a program rounded up, the Launch's blocks,
    stages, warps, halves and w_regs as constexprs."""
    from normbench.strategies import _launch
    x = torch.zeros(10, 16392, dtype=torch.bfloat16)[:, :16384]        # row stride 16392
    dy = torch.zeros(10, 16384, dtype=torch.bfloat16)
    c = _launch.prepare(x, dy, torch.ones(16384), torch.zeros(10), torch.ones(10))
    m = smem.Launch(8, 3, 8, 8192, 8192, True)
    scalars, meta = smem.kernel_args(c, 4, m, True, False)
    assert scalars == (10, 2048, 3, 2049, 2048, 2048)
    assert meta == dict(HAS_MEAN=True, BLOCK_D=8192, BLOCK_D2=8192, VEC=8, STAGES=3,
                        NUM_WARPS=8, PDL=False, INTERLEAVE=True, HALVES=True, W_REGS=False,
                        PAIRS=False, FMA=False, SECTORS=False, Clk=None, CLOCKS=False,
                        L2_AHEAD=0, num_warps=8)
    assert smem.kernel_args(c, 4, smem.Launch(8, 3, 8, 16384, 0, False, True), False,
                            True)[1]["W_REGS"] is True
    meta = smem.kernel_args(c, 4, smem.Launch(8, 3, 8, 16384, 0, pairs=True, fma=True), False,
                            True)[1]
    assert meta["PAIRS"] is True and meta["FMA"] is True


def test_bf16_pairs_and_xhat_fma_pass_through_and_change_nothing_else():
    """`bf16_pairs` (round 43: on in the rule) and `xhat_fma` (a tuning option, off) reach
    the Launch as `pairs` and `fma` — fma for LayerNorm only (RMSNorm has no mean) — and leave
    every other field of it as the rule has it; a call that is not staged stays NOT_STAGED."""
    for d, elem, w_elem in ((16384, 2, 2), (16384, 2, 4), (12288, 2, 4), (10000, 2, 2),
                            (16384, 4, 4), (8192, 2, 2)):
        for ln in (True, False):
            p = smem._rule(d)
            assert p["bf16_pairs"] and not p["xhat_fma"], d
            m0 = smem.launch_meta({**p, "bf16_pairs": False}, d, elem, w_elem, H200, ln=ln)
            assert not m0.pairs and not m0.fma, (d, m0)
            assert smem.launch_meta(p, d, elem, w_elem, H200, ln=ln) == m0._replace(pairs=True)
            m = smem.launch_meta({**p, "bf16_pairs": True, "xhat_fma": True}, d, elem, w_elem,
                                 H200, ln=ln)
            assert m == m0._replace(pairs=True, fma=ln), (d, ln, m0, m)
    p = {**smem._rule(16384), "one_chunk": False, "bf16_pairs": True, "xhat_fma": True}
    assert smem.launch_meta(p, 16384, 2, 2, H200, ln=True) == smem.NOT_STAGED


def test_full_sectors_passes_through_and_changes_nothing_else():
    """`full_sectors` (round 44; off in this rule, on in disjoint_strided's) reaches the
    Launch as `sectors` where the rows are copied 8 elements at a time (16-bit rows: fp32
    rows' 4 fill their sectors already) and the kernel as SECTORS, and leaves every other
    field as the rule has it; a call that is not staged stays NOT_STAGED."""
    for d, elem, w_elem in ((16384, 2, 2), (16384, 2, 4), (12288, 2, 4), (16384, 4, 4)):
        for ln in (True, False):
            p = smem._rule(d)
            assert not p["full_sectors"], d
            m0 = smem.launch_meta(p, d, elem, w_elem, H200, ln=ln)
            m = smem.launch_meta({**p, "full_sectors": True}, d, elem, w_elem, H200, ln=ln)
            assert m0.vec and m == m0._replace(sectors=m0.vec == 8), (d, ln, m0, m)
    p = {**smem._rule(16384), "one_chunk": False, "full_sectors": True}
    assert smem.launch_meta(p, 16384, 2, 2, H200, ln=True) == smem.NOT_STAGED
    from normbench.strategies import _launch
    x = torch.zeros(10, 16384, dtype=torch.bfloat16)
    c = _launch.prepare(x, x, torch.ones(16384), torch.zeros(10), torch.ones(10))
    meta = smem.kernel_args(c, 4, smem.Launch(8, 3, 8, 16384, 0, sectors=True), True, False)[1]
    assert meta["SECTORS"] is True


def test_sectors_off_keeps_full_sectors_off_at_its_classes_of_one_block_rows():
    """`sectors_off` (round 45; disjoint_strided's rule names two ROW_CLASSES): where
    `full_sectors` is on, a call in a named class whose rows are one block keeps `sectors`
    off — RMSNorm with a weight wider than its activations, LayerNorm fp16 with a weight of
    their width — while bf16 LayerNorm, RMSNorm with a weight of its width and rows staged in
    two parts keep it; [] takes it everywhere; a name it does not know is refused."""
    on = {"full_sectors": True}
    both = {**on, "sectors_off": ("rms_wide_weight", "ln_fp16")}
    for d in (16384, 14000, 12288):
        p = smem._rule(d)
        for ln, w_elem, bf16 in itertools.product((True, False), (2, 4), (True, False)):
            every = smem.launch_meta({**p, **on, "sectors_off": []}, d, 2, w_elem, H200, ln=ln,
                                     bf16=bf16)
            m = smem.launch_meta({**p, **both}, d, 2, w_elem, H200, ln=ln, bf16=bf16)
            one_block = not every.block_d2
            off = one_block and (w_elem > 2 if not ln else (not bf16 and w_elem == 2))
            assert every.sectors, (d, ln, w_elem, bf16)
            assert m == every._replace(sectors=not off), (d, ln, w_elem, bf16, m)
    assert smem.row_classes(smem.Launch(8, 2, 8, 16384, 0), False, 2, 4, True) == \
        {"rms_wide_weight"}
    assert smem.row_classes(smem.Launch(8, 3, 16, 16384, 0), True, 2, 2, False) == {"ln_fp16"}
    assert smem.row_classes(smem.Launch(8, 3, 8, 16384, 0), True, 2, 2, True) == set()
    with pytest.raises(ValueError, match="sectors_off: no such class"):
        smem.launch_meta({**smem._rule(16384), **on, "sectors_off": ["rms"]}, 16384, 2, 4, H200)


def test_pairs_off_keeps_bf16_pairs_off_at_its_classes_of_one_block_rows():
    """`pairs_off` (round 46; disjoint_strided's rule names RMSNorm with an fp32 γ): where
    `bf16_pairs` is on, a call in a named class whose rows are one block keeps `pairs` off,
    everything else of its Launch as it was; rows staged in two parts and other classes keep
    the pairs; a name it does not know is refused."""
    for d in (16384, 14000, 12288):
        p = {**smem._rule(d), "bf16_pairs": True}
        for ln, w_elem in itertools.product((True, False), (2, 4)):
            every = smem.launch_meta(p, d, 2, w_elem, H200, ln=ln, bf16=True)
            m = smem.launch_meta({**p, "pairs_off": ["rms_wide_weight"]}, d, 2, w_elem, H200,
                                 ln=ln, bf16=True)
            off = not every.block_d2 and not ln and w_elem == 4
            assert every.pairs, (d, ln, w_elem)
            assert m == every._replace(pairs=not off), (d, ln, w_elem, m)
    assert smem.launch_meta({**smem._rule(16384), "bf16_pairs": False,
                             "pairs_off": ["rms_wide_weight"]}, 16384, 2, 2, H200).pairs is False
    with pytest.raises(ValueError, match="pairs_off: no such class"):
        smem.launch_meta({**smem._rule(16384), "pairs_off": ["bf16"]}, 16384, 2, 4, H200)


def _rule_launches(ds):
    """(d, ln, elem, w_elem, p, Launch) at disjoint_smem's rule for widths `ds`, both norms,
    16-bit and fp32 rows with a weight as wide or wider, bf16 where 16-bit."""
    for d, ln, elem, w_elem in itertools.product(ds, (True, False), (2, 4), (2, 4)):
        if w_elem >= elem:
            p = smem._rule(d)
            yield d, ln, elem, w_elem, p, smem.launch_meta(p, d, elem, w_elem, H200, ln=ln,
                                                           bf16=True)


def test_l2_ahead_passes_through_at_whole_row_stages_and_changes_nothing_else(monkeypatch):
    """`l2_ahead` = K (round 47, a tuning option): the Launch's `l2_ahead` K at rows staged
    whole (one block or two parts), everything else as without it; 0 where rows go by halves
    (the kernel asks L2 only beside whole-row copies) and, through `staged`, on a GPU older
    than sm_90 (no bulk prefetch); the kernel gets it as L2_AHEAD; a value that is not a
    whole number of rows from 0 to MAX_STAGES is refused."""
    for d, ln, elem, w_elem, p, m0 in _rule_launches((16384, 12288, 9000)):
        for k in (1, 3):
            m = smem.launch_meta({**p, "l2_ahead": k}, d, elem, w_elem, H200, ln=ln, bf16=True)
            assert m == m0._replace(l2_ahead=0 if m0.halves else k), (d, ln, elem, w_elem, m)
    halves = smem.launch_meta({**smem._rule(16384), "one_stage_halves": True, "l2_ahead": 2},
                              16384, 4, 4, H200)
    assert halves.halves and halves.l2_ahead == 0, halves
    for bad in (-1, smem.MAX_STAGES + 1, True, 1.5):
        with pytest.raises(ValueError, match="l2_ahead: .* is not a whole number of rows"):
            smem.launch_meta({**smem._rule(16384), "l2_ahead": bad}, 16384, 2, 2, H200)
    from normbench.strategies import _launch
    x = torch.zeros(10, 16384, dtype=torch.bfloat16)
    c = _launch.prepare(x, x, torch.ones(16384), torch.zeros(10), torch.ones(10))
    m = smem.Launch(8, 2, 16, 16384, 0, l2_ahead=2)
    assert smem.kernel_args(c, 4, m, True, False)[1]["L2_AHEAD"] == 2
    p = {**smem._rule(16384), "l2_ahead": 1}
    monkeypatch.setattr(smem._device, "smem_per_program", lambda device: H200)
    monkeypatch.setattr(smem._device, "pdl_supported", lambda device: False)
    assert smem.staged(x, x, torch.ones(16384), p).l2_ahead == 0          # before sm_90
    monkeypatch.setattr(smem._device, "pdl_supported", lambda device: True)
    assert smem.staged(x, x, torch.ones(16384), p).l2_ahead == 1


def test_ln_l2_ahead_asks_l2_ahead_at_layernorms_rows_of_one_block():
    """`ln_l2_ahead` (round 47; disjoint_strided's rule sets 1): `l2_ahead` at LayerNorm's rows
    of one block — whatever the weight — where `l2_ahead` itself is 0, but at the classes
    `l2_off` names; RMSNorm, rows in two parts and rows by halves keep 0; an `l2_ahead` given
    wins; bad values are refused."""
    for d, ln, elem, w_elem, p, m0 in _rule_launches((16384, 15000, 12288)):
        m = smem.launch_meta({**p, "ln_l2_ahead": 1}, d, elem, w_elem, H200, ln=ln, bf16=True)
        on = ln and not m0.block_d2 and not m0.halves
        assert m == m0._replace(l2_ahead=int(on)), (d, ln, elem, w_elem, m0, m)
        both = smem.launch_meta({**p, "ln_l2_ahead": 1, "l2_ahead": 2}, d, elem, w_elem, H200,
                                ln=ln, bf16=True)
        assert both.l2_ahead == (0 if m0.halves else 2), (d, ln, both)
    assert smem.launch_meta({**smem._rule(16384), "ln_l2_ahead": 1}, 16384, 2, 4, H200,
                            ln=True).l2_ahead == 1                   # two stages beside an fp32 γ
    # `l2_off` (disjoint_strided's rule: LayerNorm fp16/fp16) keeps ln_l2_ahead off at its
    # classes; an l2_ahead given still asks there
    p = {**smem._rule(16384), "ln_l2_ahead": 1, "l2_off": ["ln_fp16"]}
    for bf16, w_elem, want in ((False, 2, 0), (True, 2, 1), (False, 4, 1)):
        m = smem.launch_meta(p, 16384, 2, w_elem, H200, ln=True, bf16=bf16)
        assert m.l2_ahead == want, (bf16, w_elem, m)
    assert smem.launch_meta({**p, "l2_ahead": 2}, 16384, 2, 2, H200, ln=True).l2_ahead == 2
    with pytest.raises(ValueError, match="l2_off: no such class"):
        smem.launch_meta({**p, "l2_off": ["fp16"]}, 16384, 2, 2, H200, ln=True)
    with pytest.raises(ValueError, match="ln_l2_ahead: -1 is not a whole number of rows"):
        smem.launch_meta({**smem._rule(16384), "ln_l2_ahead": -1}, 16384, 2, 2, H200, ln=True)


def test_l2_ahead_compiles_to_one_bulk_prefetch_a_tensor_a_row():
    """Compiled for sm_90: with `l2_ahead` 1 the staged kernel's loop asks L2 for x's and dy's
    row once each (two bulk prefetches, UBLKPF), with 2 also the prologue's one row more —
    nothing spills, the stages and their copies as without it; without it none."""
    base = regs("--d", "16384", "--norm", "rmsnorm")
    assert base["pf2"] == 0, base
    for k, want in ((1, 2), (2, 4)):
        r = regs("--d", "16384", "--norm", "rmsnorm", "--override", f'{{"l2_ahead": {k}}}')
        assert r["pf2"] == want and r["stack"] == 0 and r["l2_ahead"] == k, r
        assert (r["num_stages"], r["ldgsts"], r["dynamic"]) == (
            base["num_stages"], base["ldgsts"], base["dynamic"]), (r, base)


def test_full_sectors_2_trades_through_shared_memory_from_two_stages_on():
    """`full_sectors` = 2 (round 45, a tuning option): the Launch's `sectors` 2 — the kernel
    trades through the drained stages, which hold a partial row's fp32 from two 16-bit stages
    on — and 1 (shuffles) where one stage is all that fits; a value other than false, true or
    2 is refused."""
    p = {**smem._rule(16384), "full_sectors": 2}
    m = smem.launch_meta(p, 16384, 2, 2, H200, ln=True)
    assert m.stages >= 2 and m.sectors == 2, m
    one = smem.launch_meta(p, 16384, 2, 2, 2 * 16384 * 2 + 16384 * 2 + 4096, ln=True)
    assert one.vec == 8 and one.stages == 1 and one.sectors == 1, one
    assert smem.launch_meta({**p, "full_sectors": True}, 16384, 2, 2, H200, ln=True).sectors == 1
    assert smem.launch_meta(p, 16384, 4, 4, H200).sectors == 0          # fp32 rows: no trade
    with pytest.raises(ValueError, match="full_sectors: 3 is not"):
        smem.launch_meta({**p, "full_sectors": 3}, 16384, 2, 2, H200)


def test_row_phases_split_each_row_at_its_clocks():
    """bench/timeline_staged.py --phases: each of a program's first k rows split at its four
    clocks (Clk[j·rows + r]) into [ask, wait, sums, dx], the first from the program's start
    and each next from the row before's end."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import timeline_staged as ts
    v = torch.tensor([[0, 10000, 5], [100, 12000, 6]])          # start, end (ns), SM
    # rows 0..3 dealt round-robin: p0 has rows 0, 2; p1 rows 1, 3
    end = [4000, 5000, 8000, 9000]
    ask = [1000, 1100, 5000, 6000]
    here = [2000, 3100, 6000, 7000]
    sums = [3000, 4100, 7000, 8000]
    ph = ts.row_phases(v, end + ask + here + sums, 2, True)
    assert ph == [[[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]],
                  [[1.0, 2.0, 1.0, 0.9], [1.0, 1.0, 1.0, 1.0]]], ph
    assert ts.row_phases(v, end + ask + here + sums, 3, True) == []   # fewer than k rows


def test_row_steps_follow_each_programs_own_rows():
    """bench/timeline_staged.py --rows: a program's steps are its first row's end from its
    start, each next row's end from the one before, its end from its k-th row's — its rows
    a contiguous block, or p, p + G, … dealt round-robin; a program with fewer than k rows is
    left out."""
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import timeline_staged as ts
    v = torch.tensor([[0, 10000, 5], [100, 12000, 6]])          # start, end (ns), SM
    clk = [2000, 5000, 4000, 9000]                               # each row's end (ns)
    assert ts.row_steps(v, clk, 2, False) == [[2.0, 3.0, 5.0], [3.9, 5.0, 3.0]]
    assert ts.row_steps(v, clk, 2, True) == [[2.0, 2.0, 6.0], [4.9, 4.0, 3.0]]
    assert ts.row_steps(v, clk[:3], 2, False) == [[2.0, 3.0, 5.0]]   # p1: one row of 3
