"""disjoint_smem — disjoint_block with each row staged in shared memory, read from DRAM once.

Program p owns a contiguous block of rows, as in disjoint_block, sums dy·x̂ and dy over them in
registers (fp32, row order) and stores partial row p; the same fixed-order reduce
(`reduce.reduce_partials`) sums the partial rows: one writer per slot, no atomics, bitwise
deterministic.  What differs is where a row waits between its two uses.  disjoint_block's row
loop holds a tile in registers (rows ≤ 8192, pipelined by Triton into shared memory) or, at
12288–16384, where x̂ and g do not fit beside the accumulators, reads each tile twice and
pipelines nothing (docs/PERF_NOTES.md, version 4 and rounds 9–12: 48–64 % of the copy ceiling
in LayerNorm).  Here the kernel is written in Gluon, Triton's layout-explicit dialect, so that
the row's place is said outright:

  * the row STAGES − 1 ahead is copied into a ring of shared-memory buffers (cp.async), one
    row of x and of dy a stage, while this one is worked on;
  * the row sums read x, dy and γ from shared memory, and dx reads them from there again (a
    barrier between the two passes keeps the compiler from holding the first read in
    registers), so registers hold only the accumulators (32 columns a thread at d = 16384,
    16 warps: about 100 registers, no spill, compiled for sm_90 — bench/regs.py --name disjoint_smem);
  * each thread reads from shared memory only the bytes its own copies wrote (the copies and
    the reads have one layout; Gluon still puts a barrier after each wait, and one more at the
    end of each row guards the ring's reuse).

The per-row math is rowgrad's (strategies/rowgrad.py: g = γ·dy, c1 = Σ x̂g/d, c2 = Σ g/d,
dx = (g − (x̂·c1 + c2))·rstd, contributions dy·x̂ and dy), written for Gluon's laid-out tensors,
which Triton's layout-free helpers cannot take.

Where it runs: compiled code only (Gluon has no interpreter), on a CUDA GPU with cp.async
(compute capability 8.0 or newer).  Rows too wide to stage (more than 16384 columns, or fewer
than one stage of x and dy in a program's shared memory) or not aligned for cp.async (copies of
16, 8 or 4 bytes: the widest whose element count divides the width and the row strides of x,
dy and dx; 4-byte copies of single elements need fp32, and a tensor not 16-byte aligned
leaves only those), or narrower than MIN_BLOCK_D (d ≤ 512), run disjoint_block's kernel
instead, with the same partial rows and reduce — `staged(...)` says which, and a record's
`notes` too.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from . import _device, _tuning
from ._contention import Contention
from ._registry import register, register_unavailable

NAME = "disjoint_smem"
# Bytes of x and dy a program aims to have on their way into shared memory (the stages ahead
# of the row being worked on): a launch parameter (`inflight`).  Tune-14: 128 KB within
# 1.3 % of it at rows of 12288-16384 with a 16-bit γ, where only 1-3 stages fit anyway (32 KB
# launched the same stages as 64 KB at all nine of its lines, and 128 KB as well wherever γ
# or the activations were fp32 — a session-52 audit: those timings compared the rule with
# itself); at d ≤ 8192 (where it decides 3-8 stages) not yet measured.
INFLIGHT = 64 * 1024
MAX_STAGES = 8
# Bytes in flight for a LayerNorm row of one 16384-column block with a weight of the
# activations' 16-bit width (`ln_inflight`): three stages of x and dy (192 KB, with γ's 32 KB
# still within an H200's 227 KB) instead of two.  Tuning round 24 (H200, docs/perf/tune-24/
# call4/; six rounds in turn on fresh inputs, bench/ab_repeat.py): LN 8192 × 16384 bf16 231.5
# -> 225.7 µs (faster in all six rounds), 4096 × 16384 127.1 -> 125.9; round 14 had RMSNorm
# 1-1.5 % slower with it, so RMSNorm keeps INFLIGHT.
LN_INFLIGHT = 128 * 1024
# The narrowest block staged: from 1024 columns the rule's warps · 32 lanes · a copy of up to
# 16 bytes never outgrow a row (4 warps of 8 bf16 = 1024), and that is what the GPU tests and
# runs have covered; narrower rows run disjoint_block's kernel (which holds several rows a
# tile there; the staged kernel at one row a stage was 0.7× it at d = 1024 in
# results/h200-targets-bf16).
MIN_BLOCK_D = 1024


def _rule(d: int) -> dict:
    """Launch parameters at d: a whole row a stage (block_d = pow2(d) ≤ 16384), warps so that
    a thread holds 8-32 columns from 1024 on (staged only there: MIN_BLOCK_D), stages from
    `inflight` (num_stages 0) or as given.

    split: a row that is not a power of two staged in two parts at about its width (`parts`)
    instead of in one block of pow2(d), on for rows wider than 8192 — tuning round 15 (H200,
    docs/perf/tune-15/): LayerNorm 8192 × 12288 in 8192 + 4096 columns, three stages instead
    of two, 1.12× faster with a bf16 γ (202.4 -> 180.4 µs) and 1.19× with an fp32 one (208.4
    -> 175.3); unmeasured at d ≤ 8192, where disjoint_block's kernel is the faster anyway, so
    off there.

    wide_weight_warps: the warps where rows wider than 8192 come with a weight wider than the
    activations (`warps`): there 16 warps' 128 registers a thread are not enough — tune-14
    (H200, bf16 x, fp32 γ): LayerNorm 8-12 % faster at 8 warps at 8192 × 16384, 4096 × 16384
    and 8192 × 12288, RMSNorm within 0.7 %; with a bf16 γ LayerNorm 2 % slower at 8 warps
    (so 16 stay there), fp32 x with fp32 γ within 0.3 %.

    ln_split_warps: the warps of a LayerNorm row staged in two parts with 16-bit activations
    and a weight of their width (`warps`) — tuning round 21 (H200, bf16, docs/perf/tune-21/):
    8 instead of 16 faster at all three widths timed, for both strategies, by 3-24 %
    (disjoint_strided LN 8192 × 12288 170.0 -> 163.0 µs, 11264 167.3 -> 157.4, 10240 197.5 ->
    150.0, where 8 warps are what lets the rule split the row at all: a 2048-column part is
    one 16-byte copy a thread wide at 8 warps, not at 16); rows of one part keep 16 (round 14:
    8 warps 2 % slower at 16384).  Not in RMSNorm, where 8 warps were 1-4 % slower at 12288 and
    disjoint_strided 19 % slower at 10240.

    pdl: the reduce launched as a programmatic dependent of the staged kernel, on for rows
    wider than 8192 — faster in both rounds that timed it (H200): round 16 0.5-1.0 % where
    its timings were readable (LN 8192 × 16384 bf16 231.4 against 233.4/233.5 µs), round 18
    0.3-2.8 % at 16 of 16 readable pairs with the rows dealt round-robin (fp32 LN 8192 ×
    16384 401.8 against 406.2); unmeasured at d ≤ 8192.  Off where the GPU cannot
    (`_device.pdl_supported`: sm_90 on).

    split_inflight: `inflight` for a row staged in two parts (0: the same as one part's), but
    in RMSNorm with a weight wider than the activations — this strategy's contiguous blocks
    keep 64 KB (round 24: 32 KB 3.4 % slower at RMS 8192 × 12288 with an fp32 γ; round 21:
    2-10 % slower in LayerNorm); disjoint_strided's rows dealt round-robin take 32 KB (its
    rule), but not in RMSNorm with a wider weight (round 24: 16 % slower with fp16 x and an
    fp32 γ, level with bf16 x).

    ln_inflight: `inflight` for a LayerNorm row of one block with a weight of the activations'
    width — LN_INFLIGHT at blocks of 16384 (round 24: 2.5 % faster at 8192 × 16384 bf16), 0
    (= inflight) elsewhere; disjoint_strided's rule takes it too (round 25: 3.1 % faster at
    8192 × 16384 with its rows dealt round-robin, 2.8 % at 4096 × 16384).  Round 25 timed
    128 KB at two-part rows too (`split_inflight`, four stages at 12288 with a 16-bit γ): level
    in RMSNorm at 12288, 0.7 and 3.7 % slower in LayerNorm — not adopted.  (Its RMSNorm line
    at 10240 was the rule timed twice: with RMSNorm's 16 warps that row is one unsplit block
    of 16384 whatever `split_inflight` says — a session-52 audit.)

    half_rows: a row of one block staged by halves — first halves in one ring, second halves
    in another, one slot fewer (`half_slots`, the kernel's HALVES) — where that keeps more of the rows ahead on their way than whole-row stages
    do — on an H200 only LayerNorm's rows of one 16384 block with 16-bit activations and an
    fp32 γ: whole rows fit two stages there beside γ (64 KB ahead; three would need 256 KB),
    halves five slots (three first halves and two second ones: 96 KB ahead, of
    ln_inflight's 128).  Round 28 (H200, docs/perf/tune-28/call2/; six rounds in turn on
    fresh inputs): in one ring of five half-row slots 7 % slower at LN 8192 × 16384 with bf16
    and fp16 activations (242.0 / 241.2 against 225.3 / 224.6 µs, all six rounds), 7 % at
    4096 rows, 2.6 % for disjoint_strided — compiled by the device's Triton 3.6 that kernel
    had a CTA barrier between the two copies into the one ring and two reductions a row
    instead of one; in two rings with one reduction (the kernel now) still 5 % slower at
    those four lines (call 3: 237.0 against 225.1 µs at 8192 bf16, all six rounds).

    w_regs: γ held in fp32 registers laid out as the rows are read, loaded once a program,
    instead of in shared memory in its own dtype and read in both passes of every row — the
    stages counted without it, and a LayerNorm row of one block aiming at ln_inflight
    whatever its weight's width (three stages at 16384 with an fp32 γ); with `half_rows`, halves
    whose slots count no γ.
    Off in this strategy's rule (round 29, docs/PERF_NOTES.md: at RMSNorm 8192 × 12288 with
    an fp32 γ 1.9 % faster with fp16 x and 2.2 % slower with bf16 x, at LayerNorm 8192 ×
    16384 with an fp32 γ level with bf16 x and 1.7 % slower with fp16 x); costs 32-64
    registers a thread.

    rms_split_w_regs: `w_regs` for RMSNorm's rows staged in two parts whose second part is at
    least this many columns, with a weight wider than the activations (0: never) —
    disjoint_strided's rule sets it (round 29).

    bf16_pairs: bf16 widened to fp32 two elements a 32-bit word (a shift and a mask,
    _smem_kernel._f32) instead of the compiler's three instructions a pair — the same bits.
    On (round 43, docs/PERF_NOTES.md; H200, six rounds in turn on fresh inputs, GPU time):
    LayerNorm's rows of 16384 with a bf16 γ 1.1–1.4 % faster (disjoint_smem 4096 rows 126.9 ->
    125.1 µs, disjoint_strided 8192 rows 222.6 -> 220.2), level with an fp32 γ and in RMSNorm
    (112.7 / 112.8 at 4096 × 16384); 10-14 % fewer instructions a row compiled for sm_90.
    `pairs_off` keeps it off at the ROW_CLASSES it names (disjoint_strided's rule: round 46,
    RMSNorm with an fp32 γ at rows of one block, 6.6-7.2 % slower with the pairs there).

    xhat_fma: LayerNorm's x̂ as one fused multiply-add, x·rstd + (−mean·rstd), an instruction
    an element and pass fewer — its error grows with |mean|·rstd.  Off (round 43: with
    bf16_pairs a further 1.0–1.2 % at the bf16 lines above, level or up to 4 % slower with an
    fp32 γ; not worth its accuracy where the mean is far from zero).

    full_sectors: the partial rows stored in whole 32-byte sectors (_smem_kernel._store_partial:
    each warp trades its accumulators among its threads first) where 16-bit rows copied 16
    bytes at a time (8 elements) leave each thread 32 contiguous bytes of them, stored as two
    16-byte halves — the Launch's `sectors` only there; the same bits.  On in
    disjoint_strided's rule (round 44), off here (one line timed, order-dependent);
    `sectors_off` keeps it off at the ROW_CLASSES it names (disjoint_strided's rule: round
    45), an override of [] takes it everywhere.  2 (a tuning option, round 45; no rule sets
    it): the trade through shared memory — the drained stages — instead of shuffles, as
    Triton's own stores convert (with shuffles ptxas schedules the row loop anew: RMS 16384
    fp16/fp32 127 registers against 157; through shared memory 149, the loop reordered too).

    l2_ahead: K > 0 asks L2 for the row K rows past the ring's last whenever the ring's copy
    of a row is asked for (one bulk prefetch of its x and one of its dy, by one thread;
    _smem_kernel._prefetch_row) — K more rows of DRAM reads on their way a program than its
    stages hold, in no shared memory; whole-row stages only (not `half_rows`), sm_90 on (the
    bulk prefetch), the same bits.  A tuning option (round 47), off in this strategy's rule.

    ln_l2_ahead: `l2_ahead` for LayerNorm's rows of one block, where `l2_ahead` is 0, but at
    the ROW_CLASSES that `l2_off` names — disjoint_strided's rule sets both (round 47).

    one_stage_halves: where whole rows of one block fit a single stage beside γ (nothing of the
    next row on its way while one is worked on: fp32 rows of 16384 on an H200), `w_regs` and
    `half_rows` together wherever they give halves (2 + 1 half slots there) —
    disjoint_strided's rule sets it (round 31)."""
    bd = _tuning.pow2(d)
    warps = max(4, min(16, bd // 256))
    return dict(block_d=bd, one_chunk=d <= _tuning.MAX_BLOCK_D, num_warps=warps,
                wide_weight_warps=8 if bd > 8192 else warps,
                ln_split_warps=8 if bd > 8192 else warps, num_stages=0, inflight=INFLIGHT,
                split_inflight=0, ln_inflight=LN_INFLIGHT if bd == 16384 else 0,
                split=bd > 8192, pdl=bd > 8192, interleave=False, half_rows=False,
                w_regs=False, rms_split_w_regs=0, one_stage_halves=False, bf16_pairs=True,
                xhat_fma=False, full_sectors=False, sectors_off=(), pairs_off=(), l2_ahead=0,
                ln_l2_ahead=0, l2_off=())


def _groups_rule(rows: int, d: int, sms: int, launch) -> int:
    """One program per SM from 8 warps up, two of 4 warps (as the row loop, _groups)."""
    return max(1, min(sms * max(1, 8 // launch["num_warps"]), rows))


def vec_width(elem: int, *units: int) -> int:
    """Elements per cp.async: the widest copy of 16, 8 or 4 bytes whose element count divides
    every one of `units` (the row width, the row strides, the pointers' offsets in elements);
    0 where not even 4 bytes do (a 2-byte row of odd width, say): not stageable."""
    for nbytes in (16, 8, 4):
        v = nbytes // elem
        if v >= 1 and all(u % v == 0 for u in units):
            return v
    return 0


def stages(p, d: int, elem: int, w_elem: int, smem: int) -> int:
    """How many rows of x and dy a program keeps in shared memory: 1 + ⌈inflight / row bytes⌉
    (or num_stages where given), at most MAX_STAGES, lowered until they and γ (w_elem bytes a
    column; 0 where γ waits in registers) fit `smem` (with 2 KB for the row sums' scratch); 0
    where not even one stage fits."""
    row = p["block_d"] * elem * 2
    st = p["num_stages"] or 1 + math.ceil(p["inflight"] / row)
    st = min(st, MAX_STAGES)
    while st > 0 and st * row + p["block_d"] * w_elem + 2048 > smem:
        st -= 1
    return st


def warps(p, d: int, elem: int, w_elem: int, ln_vec: int = 0, bf16: bool = False) -> int:
    """The warps of a program: `num_warps`, or `wide_weight_warps` where rows wider than 8192
    come with a weight wider than the activations (an fp32 γ with 16-bit x), or
    `ln_split_warps` for a LayerNorm call (`ln_vec`: its copy width; 0 for RMSNorm) with
    16-bit activations and a weight of their width whose rows the rule stages in two parts
    at those warps — and `ln_warps` (where a rule sets it: disjoint_strided's) for such a
    call with bf16 activations (`bf16`) whose rows are one block."""
    if p["block_d"] > 8192 and w_elem > elem:
        return p["wide_weight_warps"]
    nw = p["ln_split_warps"]
    if ln_vec and elem == w_elem == 2:
        if parts(p, d, ln_vec, nw)[1]:
            return nw
        if bf16 and p.get("ln_warps"):
            return p["ln_warps"]
    return p["num_warps"]


class Launch(NamedTuple):
    """How the staged kernel runs a call: VEC elements a copy, STAGES rows in shared memory,
    warps, and the row's block(s) — block_d columns, and with `split` a second part of
    block_d2 (0: none); with `halves` (`half_rows`) the row's two halves of block_d, the
    first halves in STAGES slots and the second in STAGES − 1; with `w_regs` γ held in
    fp32 registers, not in shared memory.  vec = 0: not staged
    (disjoint_block's kernel runs)."""
    vec: int
    stages: int
    warps: int
    block_d: int
    block_d2: int
    halves: bool = False
    w_regs: bool = False
    pairs: bool = False
    fma: bool = False
    sectors: int = 0
    l2_ahead: int = 0


NOT_STAGED = Launch(0, 0, 0, 0, 0)


def parts(p, d: int, vec: int, nw: int) -> tuple[int, int]:
    """(block_d, block_d2): one block of pow2(d) columns, or with `split` a row that is not a
    power of two as two — the largest power of two below d, then the next power of two of the
    rest (12288 = 8192 + 4096; 10000 = 8192 + 2048, 208 masked) — where that is narrower than
    one block (7168 would be 4096 + 4096) and the second part at least one copy a thread wide
    (a layout no wider than the part)."""
    bd = p["block_d"]
    if p.get("split") and d != bd:
        rest = _tuning.pow2(d - bd // 2)
        if vec * 32 * nw <= rest < bd // 2:
            return bd // 2, rest
    return bd, 0


def launch_meta(p, d: int, elem: int, w_elem: int, smem: int, units=(), ln: bool = False,
                bf16: bool = False) -> Launch:
    """The Launch of the staged kernel at launch parameters p for rows of d elements of `elem`
    bytes, a weight of `w_elem`, `smem` bytes of shared memory a program, and the other
    `units` a copy must divide (row strides, pointer offsets), for LayerNorm (`ln`) or
    RMSNorm, with bf16 activations (`bf16`: what `ln_warps` asks) or others; NOT_STAGED where
    disjoint_block's kernel runs.  `bf16_pairs`, `xhat_fma`, `full_sectors` and `l2_ahead` pass
    through to the kernel (its PAIRS, FMA, SECTORS and L2_AHEAD)."""
    m = _launch_meta(p, d, elem, w_elem, smem, units, ln, bf16)
    if not m.vec:
        return m
    classes = row_classes(m, ln, elem, w_elem, bf16)
    sectors = int(p.get("full_sectors") or 0)
    if sectors not in (0, 1, 2):
        raise ValueError(f"full_sectors: {p.get('full_sectors')!r} is not false, true or 2")
    if m.vec != 8 or _off(p, "sectors_off") & classes:
        sectors = 0
    elif sectors == 2 and m.stages < 2:
        sectors = 1     # the drained stages hold a partial row's fp32 from two 16-bit stages on
    pairs = bool(p.get("bf16_pairs")) and not _off(p, "pairs_off") & classes
    l2, ln_l2 = (_rows_ahead(p, key) for key in ("l2_ahead", "ln_l2_ahead"))
    if ln and not m.block_d2 and not _off(p, "l2_off") & classes:
        l2 = l2 or ln_l2
    return m._replace(pairs=pairs, fma=bool(ln and p.get("xhat_fma")), sectors=sectors,
                      l2_ahead=0 if m.halves else l2)


# The calls a rule can keep an option off at (`sectors_off` for `full_sectors`, `pairs_off`
# for `bf16_pairs`, `l2_off` for `ln_l2_ahead`), at rows of one block:
ROW_CLASSES = {
    "rms_wide_weight": "RMSNorm with a weight wider than its activations (an fp32 γ)",
    "ln_fp16": "LayerNorm with fp16 activations and a weight of their width",
}


def _off(p, key: str) -> set[str]:
    """The ROW_CLASSES that p's `key` (sectors_off, pairs_off, l2_off) names; a name it does
    not know is refused."""
    off = set(p.get(key) or ())
    if off - set(ROW_CLASSES):
        raise ValueError(f"{key}: no such class {sorted(off - set(ROW_CLASSES))} "
                         f"(one of {list(ROW_CLASSES)})")
    return off


def _rows_ahead(p, key: str) -> int:
    """p's `key` (l2_ahead, ln_l2_ahead): a whole number of rows from 0 to MAX_STAGES, else
    refused."""
    k = p.get(key) or 0
    if type(k) is not int or not 0 <= k <= MAX_STAGES:
        raise ValueError(f"{key}: {k!r} is not a whole number of rows from 0 to {MAX_STAGES}")
    return k


def row_classes(m: Launch, ln: bool, elem: int, w_elem: int, bf16: bool) -> set[str]:
    """Which of ROW_CLASSES a staged call (its Launch m) is in: none where its rows are
    staged in two parts or by halves."""
    if m.block_d2 or m.halves:
        return set()
    if not ln:
        return {"rms_wide_weight"} if w_elem > elem else set()
    return {"ln_fp16"} if elem == 2 and not bf16 and w_elem == elem else set()


def _launch_meta(p, d: int, elem: int, w_elem: int, smem: int, units=(), ln: bool = False,
                 bf16: bool = False) -> Launch:
    if not p["one_chunk"] or p["block_d"] < MIN_BLOCK_D:
        return NOT_STAGED
    vec = vec_width(elem, d, *units)
    if not vec:
        return NOT_STAGED
    nw = warps(p, d, elem, w_elem, vec if ln else 0, bf16)
    bd, bd2 = parts(p, d, vec, nw)
    # RMSNorm with a weight wider than its activations keeps `inflight` (round 24: 32 KB 16 %
    # slower for disjoint_strided at RMS 8192 × 12288 fp16/fp32, level with bf16/fp32)
    inflight = p.get("split_inflight") if bd2 and (ln or w_elem <= elem) else 0
    # γ in registers (`w_regs`) leaves shared memory to the rows: a LayerNorm row of one block
    # then aims at ln_inflight whatever its weight's width, as with a weight of its own
    w_regs = bool(p.get("w_regs")) or (not ln and w_elem > elem
                                       and bd2 >= (p.get("rms_split_w_regs") or bd + 1))
    if ln and not bd2 and (w_elem == elem or w_regs):
        inflight = p.get("ln_inflight") or inflight
    st = stages({**p, "block_d": bd + bd2, "inflight": inflight or p["inflight"]}, d, elem,
                0 if w_regs else w_elem, smem)
    if not st:
        return NOT_STAGED
    if st == 1 and not bd2 and p.get("one_stage_halves") and not (w_regs and p.get("half_rows")):
        m = launch_meta({**p, "w_regs": True, "half_rows": True}, d, elem, w_elem, smem, units,
                        ln, bf16)
        if m.halves:
            return m
    if p.get("half_rows") and not bd2 and bd // 2 >= vec * 32 * nw:
        # the row by halves where that puts more of it on its way than whole rows do (a
        # LayerNorm row aims at ln_inflight whatever its weight); with w_regs γ takes none of
        # the shared memory (an fp32 row of 16384: one whole-row stage, or 2 + 1 half slots)
        aim = (p.get("ln_inflight") if ln else 0) or inflight or p["inflight"]
        # the kernel's rings: first halves in (h + 1) // 2 slots, second halves in one fewer
        hs = (half_slots(bd, elem, 0 if w_regs else w_elem, smem, aim) + 1) // 2
        if hs >= 2 and 2 * hs - 3 > 2 * (st - 1):
            return Launch(vec, hs, nw, bd // 2, bd // 2, True, w_regs)
    return Launch(vec, st, nw, bd, bd2, False, w_regs)


def half_slots(bd: int, elem: int, w_elem: int, smem: int, inflight: int) -> int:
    """Half-row slots of x and dy for rows of one block of bd columns: the two halves of the
    row worked on and ⌈inflight / half row⌉ more, at most 2·MAX_STAGES, fewer where they and
    γ would not fit `smem` (with 2 KB for the row sums' scratch).  The kernel uses an odd
    count of them (launch_meta)."""
    half = bd // 2 * elem * 2
    fit = (smem - bd * w_elem - 2048) // half
    return max(0, min(2 + math.ceil(inflight / half), 2 * MAX_STAGES, fit))


def staged(x, dy, weight, p=None, dx=None, ln: bool = False) -> Launch:
    """launch_meta for this call (dx: the output, x's layout if not given; `ln`: LayerNorm)."""
    d = x.shape[1]
    p = p or _tuning.overridden(_rule(d), _tuning.OVERRIDE.get(NAME, {}), d)
    elem = x.element_size()
    dx = x if dx is None else dx
    units = [x.stride(0), dy.stride(0), dx.stride(0)]
    for t in (x, dy, dx):
        # Triton knows of a pointer only whether it is 16-byte aligned (its specialisation)
        units.append(0 if t.data_ptr() % 16 == 0 else 1)
    m = launch_meta(p, d, elem, weight.element_size(), _device.smem_per_program(x.device), units,
                    ln, x.dtype == torch.bfloat16)
    # the bulk prefetch of `l2_ahead` needs sm_90 or newer, as PDL does
    return m if _device.pdl_supported(x.device) else m._replace(l2_ahead=0)


def kernel_args(c, groups: int, m: Launch, interleave: bool, pdl: bool):
    """(scalars, meta): the staged kernel's run-time arguments after its tensors, and its
    constexpr parameters and launch options, for the call `c` (`_launch.prepare`) over
    `groups` programs at Launch m — what run_staged launches, and bench/timeline_staged.py."""
    vec = m.vec
    sx, sdy, sdx = c.strides
    # widths and strides in units of VEC elements: the kernel multiplies them back, so the
    # compiler knows every row start and the mask are VEC-aligned
    scalars = (c.rows, c.d // vec, _tuning.cdiv(c.rows, groups), sx // vec, sdy // vec,
               sdx // vec)
    meta = dict(HAS_MEAN=c.has_mean, BLOCK_D=m.block_d, BLOCK_D2=m.block_d2, VEC=vec,
                STAGES=m.stages, NUM_WARPS=m.warps, PDL=pdl, INTERLEAVE=bool(interleave),
                HALVES=m.halves, W_REGS=m.w_regs, PAIRS=m.pairs, FMA=m.fma, SECTORS=m.sectors,
                Clk=None, CLOCKS=False, L2_AHEAD=m.l2_ahead, num_warps=m.warps)
    return scalars, meta


# one partial row a program, as disjoint_block: declared once, for either registration below
CONTENTION = Contention(writers=1, partial_rows="groups")
_WHY = _device.gluon_unavailable((8, 0), "cp.async", "_smem_kernel")
if _WHY:
    register_unavailable(NAME, kind="strategy", reason=_WHY, deterministic_by_design=True,
                         uses_groups=True, contention=CONTENTION, reduce_kernel=True,
                         doc="disjoint_block with each row staged in shared memory (Gluon, cp.async)")
else:
    from ._launch import launch, prepare, scratch
    from ._smem_kernel import smem_kernel
    from .disjoint_block import _disjoint_kernel, launch_partials
    from . import disjoint_block
    from .reduce import reduce_partials

    # call signature (`Call.sig`: dtypes, sizes, strides, 16-byte alignment) and device ->
    # its Launch: every call asks, and working it out again costs host time (~8 µs here)
    _LAUNCHES: dict = {}

    def run_staged(c, groups: int, params, fallback):
        """The outputs of the call `c` (`_launch.prepare`) at the launch parameters
        `params(d)` (the calling strategy's `backward.params`): the staged kernel where
        `staged` says it runs — rows in a program's contiguous block, or dealt round-robin with
        `interleave` (disjoint_strided's wide rows) — else disjoint_block's kernel at the
        parameters `fallback(d)`; the reduce after either.  Plans are kept by `params`, as
        disjoint_block.launch_partials keeps them: each caller its own."""
        p = params(c.d)
        # the sig fixes what staged() reads (dx is empty_like(x): x's sizes and strides fix
        # its layout, a fresh allocation its alignment), the device its shared memory;
        # a tuning override changes p, so then nothing is kept (nor does a narrowed block limit
        # get the rule's old answer back: the limit is in the key, as in _tuning._frozen)
        key = (c.sig, c.x.device, _tuning.MAX_BLOCK_D, params)
        m = None if _tuning.OVERRIDE else _LAUNCHES.get(key)
        if m is None:
            m = staged(c.x, c.dy, c.weight, p, c.dx, c.has_mean)
            if not _tuning.OVERRIDE:
                _LAUNCHES[key] = m
        if not m.vec:
            pw, pb, pdl = launch_partials(_disjoint_kernel, c, groups, fallback)
            return c.outputs(*reduce_partials(pw, pb, c.weight, pdl))
        pw, pb = scratch(groups, c.d, c.has_mean, c.x.device)
        tensors = (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw, pb if pb is not None else pw)

        def setup():
            return (groups,), *kernel_args(c, groups, m, p["interleave"], pdl)

        # pdl: the reduce launched as a programmatic dependent, let in early by this kernel
        # (compiled code on sm_90+ only: `_device.pdl_supported`)
        pdl = _device.pdl_on(p, c.x.device)
        launch(smem_kernel, (c.sig, groups, pdl, params), tensors, setup)
        return c.outputs(*reduce_partials(pw, pb, c.weight, pdl))

    @register(NAME, kind="strategy", deterministic_by_design=True, uses_groups=True,
              launch=_tuning.Rule(_rule), auto_groups=_groups_rule,
              contention=CONTENTION, reduce_kernel=True)
    def backward(x, dy, weight, mean, rstd, *, groups):
        """disjoint_block with each row staged in shared memory (Gluon, cp.async): read from DRAM once."""
        c = prepare(x, dy, weight, mean, rstd)
        return run_staged(c, groups, backward.params, disjoint_block.backward.params)

    def notes(x, dy, weight, p, ln: bool = False, m: Launch | None = None) -> str:
        """The path a call at launch parameters p takes, for the record's `notes` (m: its
        Launch, where the caller has it)."""
        if m is None:
            m = staged(x, dy, weight, p, x, ln)
        if not m.vec:
            return "not staged: the kernel of disjoint_block runs (see disjoint_smem.staged)"
        # pairs: said where a bf16 tensor is there to widen (the kernel's _f32 leaves others)
        paired = m.pairs and torch.bfloat16 in (x.dtype, weight.dtype)
        where = (", γ in registers" if m.w_regs else "") + (
            ", bf16 widened in pairs" if paired else "") + (", x̂ by one FMA" if m.fma else "") + (
            ", partial rows in whole sectors" if m.sectors else "") + (
            " through shared memory" if m.sectors == 2 else "") + (
            f", each row asked of L2 {m.l2_ahead} row{'s' * (m.l2_ahead > 1)} before its stage"
            if m.l2_ahead else "")
        if m.halves:
            return (f"staged: {m.vec * x.element_size()}-byte copies, by halves of a row "
                    f"({m.block_d}) in {m.stages} + {m.stages - 1} slots, {m.warps} warps{where}")
        split = f" in parts of {m.block_d} + {m.block_d2}" if m.block_d2 else ""
        return (f"staged: {m.vec * x.element_size()}-byte copies, {m.stages} "
                f"stage{'s' * (m.stages > 1)} of a row{split}, {m.warps} warps{where}")

    def _notes(x, dy, weight, mean, rstd) -> str:
        return notes(x, dy, weight, backward.params(x.shape[1]), mean is not None)

    backward.notes = _notes
