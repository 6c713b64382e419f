"""disjoint_strided — disjoint_block's partial rows with the rows dealt round-robin over the programs.

Program p owns the tiles p, p + G, p + 2G, … (BLOCK_R rows each) of all the rows instead of
one contiguous block: at any moment the G programs work on neighbouring tiles, so together
they sweep x and dy from the first row to the last, as a copy does.  Each program still sums
its own fixed rows in a fixed order into its own partial row of the fp32 [GROUPS, d]
workspace, and the same fixed-order reduce sums the partial rows: one writer per slot, no
atomics, bitwise deterministic — with other sums than disjoint_block's (other rows a partial
row), so the two agree with fp64, not with each other's bits.

Where a row is held, by width — the faster way measured for each:
  * d ≤ 8192: disjoint_block's pipelined row loop (its kernel's INTERLEAVE).  Tuning round 17
    (docs/PERF_NOTES.md; H200): the programs' in-kernel span (bench/timeline.py, bf16) 0.8–7.4 %
    shorter at 12 of 15 cases, 0.6–2.1 % longer at LayerNorm 2560 and 3072 (where the whole
    call was still 1–2 % faster); with every peer (results/h200-targets-narrow) 1.02–1.12×
    disjoint_fused at all 50 lines.  LayerNorm with 16-bit activations at 2048 < d < 4096
    runs it at 8 warps (round 22: `ln_warps` below).  But fp32 rows of 7168-8192 (28-32 KB of
    x, about a 16-bit row of 16384): the staged kernel below, rows dealt alike (round 30:
    STAGE_FROM).
  * 8192 < d ≤ 16384, where disjoint_smem stages rows (a CUDA GPU with Gluon; aligned rows):
    its staged kernel with the rows dealt round-robin (INTERLEAVE there), at disjoint_smem's
    rule.  Round 18 (H200): faster than this strategy's row loop read twice at every shape
    (LN 8192 × 16384 bf16 245.8 against 305.7 µs) — and than disjoint_smem's contiguous blocks
    in RMSNorm with 16-bit activations at unsplit rows (8192 × 16384 208.7 against 217.9) and
    with fp32 activations (2.5–4 %), slower in LayerNorm with 16-bit activations (5–8 %) and
    at RMSNorm's split rows of 12288 (7 %): there disjoint_smem is the faster strategy.  With
    every peer (results/h200-targets-widest, ac26d9c): 1.04–1.07× disjoint_smem at RMS 16384
    with 16-bit activations, 1.02–1.04× at every fp32 line; 0.93–0.97× it in LayerNorm with
    16-bit activations, 0.84–0.93× at RMS 12288.  Rows staged in two parts (12288, 10240)
    keep 32 KB of x and dy in flight, not 64 (SPLIT_INFLIGHT: round 24, 1-3.5 % faster).
    fp32 rows of 16384, one whole-row stage beside γ, go by halves with γ in registers
    (ONE_STAGE_HALVES: round 31, 0.6-0.7 % faster).  The partial rows of 16-bit rows are
    stored in whole 32-byte sectors (FULL_SECTORS: round 44, 1.6-4.5 % faster in turn, up to
    10 % with an fp32 γ in LayerNorm between counted runs) — but not in RMSNorm with an fp32 γ
    or LayerNorm fp16/fp16 at rows of one block (SECTORS_OFF: round 45, 3-9 % slower there).
    bf16 is widened in pairs (disjoint_smem's `bf16_pairs`), but not in RMSNorm with an fp32 γ at
    rows of one block (PAIRS_OFF: round 46, 6.6-7.2 % slower with them there).  LayerNorm's rows
    of one block ask L2 for the row one past their stages' (LN_L2_AHEAD: round 47, 1.2-4.8 %
    faster), but not with fp16 activations and an fp16 γ (L2_OFF: untimed).
  * wider rows, or rows the staged kernel does not take: the row loop in column chunks, or
    read twice, its tiles dealt alike (not timed).
"""
import functools
from types import MappingProxyType

from . import _groups, _tuning, disjoint_smem
from ._contention import Contention
from ._launch import prepare
from ._registry import register
from .disjoint_block import SPLIT_INTERLEAVED, _disjoint_kernel, launch_partials
from .reduce import reduce_partials

NAME = "disjoint_strided"


def _loop_rule(d: int) -> dict:
    """The row loop's parameters (disjoint_block's rule) with `interleave` on, and `pdl` (the
    reduce launched as a programmatic dependent: round 20, H200, at issue 16's five shapes of
    d ≤ 8192 — faster than both timings of the rule at all 8 lines with fp32 activations, by
    0.3–0.8 %, and at 5 of 7 lines in bf16, by 0.2–1.3 %, level at a sixth; the seventh, LN
    32768 × 3072, 7.5 % slower in that call and level when timed again).

    ln_warps (`_tuning.row_loop_warps`): 8 warps instead of 16 for LayerNorm with 16-bit
    activations where the tile of 4096 is partly masked (2048 < d < 4096) — tuning round 22
    (H200, docs/perf/tune-22/): timed in turn with 16, six rounds on fresh inputs
    (bench/ab_repeat.py), LN 32768 × 3072 bf16 152.8 against 173.4 µs (medians; faster in all
    six rounds) and 32768 × 2560 149.7 against 172.1 (in five of six); in five tuning
    processes 146-154 against 165-173 with bf16, fp16 and bf16 with an fp32 γ.  (Single
    timings of either, and of the other candidates, now and then read 20-50 % slow: round
    22's first call.)  Not in RMSNorm (level at 3072 in the timings that were not slow; not
    timed in turn) nor with fp32 activations (level); 2048 < d < 4096 was timed at 2560 and
    3072 only.  With torch and torch_compile (results/h200-targets-narrow-ln-3072): LN 32768 ×
    3072 at 91-93 % of copy in the four 16-bit mixes, 82-86 % before."""
    p = _tuning.ROW_LOOP.params(d)
    masked = p["one_chunk"] and p["block_d"] == 4096 and d != 4096
    return {**p, "interleave": True, "staged": False, "pdl": True, "ln_warps": 8 if masked else 0}


# Bytes of x and dy in flight for a row the staged kernel holds in two parts (12288 = 8192 +
# 4096: two stages instead of disjoint_smem's three).  Tuning round 24 (H200,
# docs/perf/tune-24/call2/; six rounds in turn on fresh inputs, bench/ab_repeat.py): LN 8192 ×
# 12288 bf16/fp32 166.7 -> 162.4 µs, fp16/fp32 164.5 -> 162.5, bf16/bf16 163.6 -> 162.0,
# 8192 × 10240 bf16/fp32 148.2 -> 143.0, RMS 8192 × 12288 bf16 163.0 -> 161.1 — faster in
# every round at all five; RMS with an fp32 γ (this strategy's slow line there, 198 µs) 1 %.
# The third call (docs/perf/tune-24/call3/): LN fp16/fp16 level, LN 4096 × 12288 bf16/fp32
# 95.5 -> 92.4, LN 8192 × 11264 bf16 158.2 -> 154.6, RMS 4096 × 12288 bf16 faster where
# readable (89-91 against 90-151) — but RMS fp16 with an fp32 γ 181.0 -> 209.1: RMSNorm with
# a weight wider than the activations keeps 64 KB (disjoint_smem.launch_meta).
SPLIT_INFLIGHT = 32 * 1024
# LayerNorm's rows of one 16384-column block with a 16-bit γ take disjoint_smem's
# `ln_inflight` (128 KB: three stages) here too — tuning round 25 (H200, docs/perf/tune-25/
# call1/; six rounds in turn on fresh inputs): LN 8192 × 16384 bf16 233.1 -> 225.9 µs, 4096 ×
# 16384 130.9 -> 127.3, faster in every round at both (the contiguous blocks' round 24: 2.5 and
# 0.9 %).  Compiled here for sm_90 (Triton 3.9) the third stage costs 16 bytes of stack (two
# spilled stores) at 128 registers — tests/test_regs.py; the device's Triton 3.6 timed it.
# Those rows with bf16 activations at 8 warps instead of 16 (`ln_warps`, the staged kernel's
# too here: a LayerNorm row of one block with bf16 activations and a bf16 weight) — tuning
# round 27 (H200, docs/perf/tune-27/; six rounds in turn on fresh inputs, two calls): LN 8192 ×
# 16384 bf16 224.7 -> 221.7 µs, faster in all six rounds; 4096 × 16384 125.3-126.0 against
# 126.5-127.3 in the rounds the timing hazard spared.  With fp16 8 warps were 0.6 % slower
# (222.3-222.5 against 220.6-221.5 µs, all six rounds) and level at 4096 rows: compiled for
# sm_90 (Triton 3.9) the fp16 rows fit 16 warps' 128 registers (99, no spill), the bf16 ones
# do not (two spilled stores) — at 8 warps both take 180 without spilling.  The contiguous
# blocks (disjoint_smem) were 1.1 % slower at 8 warps with bf16 (round 25): they keep 16.
LN_WARPS = 8
# RMSNorm's rows staged in two parts with a second part of 4096 columns (10240 < d ≤ 12288)
# and a weight wider than the activations hold γ in fp32 registers (disjoint_smem's `w_regs`)
# — tuning round 29 (H200, docs/perf/tune-29/; six rounds in turn on fresh inputs): RMS 8192 ×
# 12288 fp16/fp32 181.0 -> 159.6 µs and 159.1 in a second call, bf16/fp32 198.1 -> 159.4.
# Not at 10240 (8192 + 2048), where it read 135-234 µs from round to round against the
# rule's steady 149 (faster in two rounds of six, slower in four), nor in LayerNorm (8192 ×
# 12288 with an fp32 γ 189-192 against 162), nor for the contiguous blocks (disjoint_smem,
# ±2 %).  4096 × 12288 read 91-232 µs either way: unreadable.  In one or two rounds of six
# at 12288 it too read 208-217 µs (the slow mode of this line in rounds 21 and 24).
RMS_SPLIT_W_REGS = 4096


# Rows whose one block fits a single whole-row stage beside γ — fp32 rows of 16384 on an H200
# (x and dy 128 KB, γ 64 KB: nothing of the next row on its way while one is worked on) — hold
# γ in fp32 registers and are staged by halves in 2 + 1 half slots, the next row's first half
# on its way (disjoint_smem's `one_stage_halves`: `w_regs` with `half_rows`) — tuning round 31
# (H200, docs/perf/tune-31/call2/; six rounds in turn on fresh inputs, bench/ab_repeat.py),
# faster or level in every round at each: fp32 RMS 4096 × 16384 210.2 -> 209.0 µs, LN 4096 ×
# 16384 211.5 -> 210.0, RMS 8192 × 16384 398.1 -> 395.9.  Compiled for sm_90 (Triton 3.6):
# RMSNorm 108 registers, no spill; LayerNorm 128 and one 8-byte spilled store.
ONE_STAGE_HALVES = True
# The staged rows' partial rows stored in whole 32-byte sectors (disjoint_smem's
# `full_sectors`: each warp trades its accumulators among its threads first, where 16-bit rows
# leave a thread 32 contiguous bytes of them, stored as two 16-byte halves each writing half
# of every sector — Nsight Compute counted the partial rows' L2 sector writes twice, round 44).
# Tuning round 44 (H200, docs/perf/tune-44/call7/; six rounds in turn on fresh inputs, GPU
# time), faster in every round at each: LN 4096 × 16384 bf16 124.2-124.7 -> 118.7-119.2 µs,
# RMS 4096 × 16384 bf16 112.0-112.5 -> 109.9-111.0, LN 8192 × 16384 bf16 219.8-220.1 ->
# 215.9-216.4 (call time); round 45 (docs/perf/tune-45/call1/, four rounds, GPU time): LN
# 8192 × 12288 bf16 164.0 -> 160.9, RMS 158.2 -> 157.3 (rows of two parts), LN 4096 × 16384
# fp16 level (124.7 / 124.8).  With fp32 activations a thread's 16 bytes fill its sectors
# already (no effect).  The contiguous blocks (disjoint_smem) at LN 8192 × 16384 with an fp32
# γ read 1 % faster or 3 % slower by the order of the two in a round: not taken there.
FULL_SECTORS = True
# ... but not at two classes of rows of one block (disjoint_smem.ROW_CLASSES), where the
# counted run at 22ed27a (round 45: results/h200-targets-widest-16bit-*-22ed27a) read it
# slower than the last counted run of the same kernel without it, quack's GPU time within
# 0.2 % (RMSNorm) and 1.2 % (LayerNorm) of its own there, disjoint_smem's unchanged fp16
# kernels within 1 %: RMSNorm with an fp32 γ, 6.0-9.3 % (RMS 8192 × 16384 fp16/fp32
# 207.0 -> 226.3 µs of GPU time against 608c60e, whose row kernel is byte-identical to this
# one's with the option off — sm_90 SASS, Triton 3.6), and LayerNorm fp16/fp16, 3.2 % at 8192
# × 16384 (222.9 -> 230.0 against e4bba9f, byte-identical too; level at 4096 rows, and in
# turn there in round 45's first call: 124.8 against 124.7).  With the option ptxas schedules
# the row loop of those kernels anew (RMS fp16/fp32: 127 registers against 157, the loop's
# instructions the same, 809 of its 1139 lines in another order).
SECTORS_OFF = ("rms_wide_weight", "ln_fp16")
# In turn since (round 45c, docs/perf/tune-45/call2/; four rounds on fresh inputs, GPU time):
# RMS 8192 × 16384 fp16/fp32 207.1 against 226.1 µs with it, LN 8192 × 16384 fp16/fp16 220.4
# against 228.4.

# Round 43's bf16 pairs (disjoint_smem's `bf16_pairs`, on) kept off at RMSNorm's rows of one
# block with an fp32 γ: tuning round 46 (H200, docs/perf/tune-46/call1/; six rounds in turn
# on fresh inputs, GPU time), RMS 8192 × 16384 bf16/fp32 225.7 -> 210.9 µs, 4096 × 16384
# 123.3 -> 114.4 (round 43 timed the pairs in LayerNorm and at RMS 4096 × 16384 bf16/bf16,
# never in RMSNorm with an fp32 γ).
# Not elsewhere: with the pairs faster at RMS 8192 × 12288 bf16/fp32 (rows of two parts; 158.4
# against 162.6), LN 8192 × 16384 bf16/fp32 (223.1 / 226.3) and 4096 rows (121.9 / 123.7).
PAIRS_OFF = ("rms_wide_weight",)

# LayerNorm's rows of one block ask L2 for the row one past their stages' as they ask for a
# stage's copy (disjoint_smem's `l2_ahead` 1 there: `ln_l2_ahead`) — tuning round 47 (H200,
# docs/perf/tune-47/call1/; six rounds in turn on fresh inputs, GPU time), faster in every round
# at each: LN 8192 × 16384 bf16/fp32 222.9 -> 212.6 µs, fp16/fp32 223.5 -> 212.8, 4096 × 16384
# bf16/fp32 121.8 -> 117.2 (two stages beside an fp32 γ), 8192 × 16384 bf16/bf16 216.4 -> 213.8
# (three stages).  Not in RMSNorm (4096 × 16384 bf16/bf16 110.4 -> 116.5, bf16/fp32 114.4 ->
# 125.1: its rows wait ~0.06 µs for their data, round 44, LayerNorm's ~1.1), not two rows ahead
# (20-30 % slower everywhere), nor for the contiguous blocks (disjoint_smem LN 8192 × 16384
# fp16/fp32 226.0 -> 236.1).  Not at rows of two parts (round 47's second call,
# docs/perf/tune-47/call2/: 8192 × 12288 bf16/bf16 161.5 -> 163.4 µs, bf16/fp32 160.7 -> 159.5,
# both past their targets).  Slower at LN 4096 × 16384 bf16/bf16 (the same call: 118.3 -> 120.4,
# where 8192 rows gained 1.2 %) — kept: one line, short of its copy target either way.
LN_L2_AHEAD = 1
# ... but not at LayerNorm fp16/fp16 (disjoint_smem.ROW_CLASSES' "ln_fp16": 16 warps where bf16
# takes 8, and its full sectors off): round 47's second call, LN 8192 × 16384 fp16/fp16 221.1
# -> 230.9 µs with it (GPU time; its registers: 102 and no spill under Triton 3.6, 128 and 24
# bytes of stack under Triton 3.9).
L2_OFF = ("ln_fp16",)


# Rows of d ≤ 8192 whose x holds at least this many bytes (fp32 rows of 7168 to 8192: 28-32 KB
# of x and as much of dy, about the bytes of a 16-bit row of 16384) take the staged kernel with
# their rows dealt round-robin (`_row_staged`: a stage of 8192 columns, 64 KB ahead) instead
# of the row loop — tuning round 30 (H200, docs/perf/tune-30/; six rounds in turn on fresh
# inputs, bench/ab_repeat.py), faster in all six rounds at each: fp32 RMS 16384 × 8192 394.5 ->
# 389.9 µs, LN 396.4 -> 393.2 (through the rule: 393.8 -> 390.1, 395.1 -> 393.6); 16384 × 7168
# RMS 343.5 -> 341.0, LN 346.8 -> 343.5.  Not at fp32 rows of 6144 (24 KB: 1.7 / 0.6 % slower),
# 5120 (8-12 % slower), 4096 and 3072 (a stage of their own block: 13 and 25 % slower), nor
# with 16-bit activations (round 14: 0.7-0.95× the row loop at rows of 16 KB).
STAGE_FROM = 28 * 1024


def _rule(d: int) -> dict:
    """_loop_rule, or where disjoint_smem stages rows wider than 8192 here (`staged`):
    disjoint_smem's rule with `interleave` on, SPLIT_INFLIGHT at rows of two parts (its
    `ln_inflight` as it is: 128 KB at LayerNorm's rows of 16384, round 25), LN_WARPS for
    LayerNorm's bf16 rows of one block (round 27), RMS_SPLIT_W_REGS (round 29),
    ONE_STAGE_HALVES (round 31), FULL_SECTORS (round 44) but at SECTORS_OFF (round 45),
    disjoint_smem's bf16 pairs but at PAIRS_OFF (round 46), and LN_L2_AHEAD but at L2_OFF
    (round 47).
    At d ≤ 8192 where the staged kernel runs here, `stage_from` (STAGE_FROM, round 30): a call
    whose row of x holds that many bytes takes the staged kernel at `_row_staged`'s
    parameters."""
    sm = disjoint_smem._rule(d)
    if disjoint_smem._WHY or not sm["one_chunk"]:
        return _loop_rule(d)
    if sm["block_d"] <= 8192:
        return {**_loop_rule(d), "stage_from": STAGE_FROM}
    return {**_loop_rule(d), **sm, "interleave": True, "staged": True,
            "split_inflight": SPLIT_INFLIGHT, "ln_warps": LN_WARPS,
            "rms_split_w_regs": RMS_SPLIT_W_REGS, "one_stage_halves": ONE_STAGE_HALVES,
            "full_sectors": FULL_SECTORS, "sectors_off": SECTORS_OFF, "pairs_off": PAIRS_OFF,
            "ln_l2_ahead": LN_L2_AHEAD, "l2_off": L2_OFF}


@functools.cache
def _row_staged(d: int):
    """The staged kernel's parameters for a row of d ≤ 8192 that `stage_from` stages:
    disjoint_smem's rule (64 KB in flight) with the rows dealt round-robin and the reduce as a
    programmatic dependent, as round 30 timed them (read-only; not under OVERRIDE: tune the
    row loop there with {"stage_from": 0}, or time this path with "staged" and these keys)."""
    return MappingProxyType({**disjoint_smem._rule(d), "interleave": True, "staged": True,
                             "pdl": True})


def path(d: int, elem: int, p) -> str:
    """Which kernel a call with rows of d elements of `elem` bytes runs at this strategy's
    parameters p (`backward.params(d)`): "staged" (rows wider than 8192 that disjoint_smem
    stages: its staged kernel at p, the row loop at `_loop_rule` where it cannot), "row_staged"
    (rows of d ≤ 8192 whose x holds `stage_from` bytes or more, round 30: the staged kernel at
    `_row_staged`'s parameters, the row loop at p where it cannot) or "loop" (the row loop at
    p).  The one place the choice is made: `backward` runs it, its notes say it and
    `staged_params` compiles it.  A `col_split` (a tuning override) is refused here, one line
    saying why: every path deals whole rows round-robin, and an override's col_split
    parameters (`_tuning.overridden`: disjoint_block's rule at the part's width) would run
    another strategy under this name.  So is a `staged` or `stage_from` override where
    disjoint_smem is unavailable (no staged kernel to run: its reason, in one line)."""
    if p.get("col_split", 1) > 1:
        raise ValueError(f"{NAME} deals its rows round-robin (interleave) on every path; "
                         + SPLIT_INTERLEAVED)
    if disjoint_smem._WHY and (p["staged"] or p.get("stage_from")):
        key = "staged" if p["staged"] else "stage_from"
        raise ValueError(f"{NAME}: {key} runs disjoint_smem's staged kernel, unavailable here: "
                         f"{disjoint_smem._WHY}")
    if p["staged"]:
        return "staged"
    if p.get("stage_from") and d * elem >= p["stage_from"]:
        return "row_staged"
    return "loop"


def staged_params(d: int, elem: int):
    """The kernel a call with rows of d elements of `elem` bytes runs here, for the tools that
    compile what runs (bench/regs.py): the staged kernel's parameters — disjoint_smem's keys
    and LayerNorm's `ln_warps`, at this rule's values (tuning overrides applied) — or None
    where the row loop runs."""
    p = backward.params(d)
    way = path(d, elem, p)
    if way == "staged":
        return {k: p[k] for k in (*disjoint_smem._rule(d), "ln_warps") if k in p}
    return dict(_row_staged(d)) if way == "row_staged" else None


@register(NAME, kind="strategy", deterministic_by_design=True, uses_groups=True,
          launch=_tuning.Rule(_rule, row_loop=True), auto_groups=_groups.row_loop_programs,
          max_groups=_groups.row_loop_units,
          contention=Contention(writers=1, partial_rows="groups"), reduce_kernel=True)
def backward(x, dy, weight, mean, rstd, *, groups):
    """disjoint_block with rows dealt round-robin: program p sums tiles p, p+G, …; fixed-order reduce."""
    c = prepare(x, dy, weight, mean, rstd)
    p = backward.params(c.d)
    way = path(c.d, c.x.element_size(), p)
    if way == "staged":
        return disjoint_smem.run_staged(c, groups, backward.params, _loop_rule)
    if way == "row_staged":
        return disjoint_smem.run_staged(c, groups, _row_staged, backward.params)
    pw, pb, pdl = launch_partials(_disjoint_kernel, c, groups, backward.params)
    return c.outputs(*reduce_partials(pw, pb, c.weight, pdl))


def _notes(x, dy, weight, mean, rstd) -> str:
    """The path this call takes, for the record's `notes`."""
    p = backward.params(x.shape[1])
    way = path(x.shape[1], x.element_size(), p)
    if way == "staged":
        return disjoint_smem.notes(x, dy, weight, p, mean is not None) + ", rows dealt round-robin"
    if way == "row_staged":
        rs = _row_staged(x.shape[1])
        m = disjoint_smem.staged(x, dy, weight, rs, None, mean is not None)
        if m.vec:
            return (disjoint_smem.notes(x, dy, weight, rs, mean is not None, m)
                    + ", rows dealt round-robin")
    w = _tuning.row_loop_warps(p, mean is not None, x.element_size())
    own = ", LayerNorm's 8 warps" if w != p["num_warps"] else ""
    return "the row loop, tiles dealt round-robin" + own


backward.notes = _notes
