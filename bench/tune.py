"""Tuning sweep on the GPU: launch parameters and GROUPS per strategy and shape.

    python bench/tune.py [--names a,b] [--shapes 16384x4096,...] [--norms layernorm] [--dtype bf16]
                         [--weight-dtype same] [--rep MS] [--out DIR] [--warm-jobs N] [--budget-s S]
                         [--passes N]
                         [--new-only | --round9 | … | --round12 | --round14 | … | --round22]

--new-only and the --roundN flags are one choice (argparse refuses two together): --new-only
times the shipped defaults and round 8's GROUPS candidates (2 and 3 programs an SM) of the
row-loop strategies at d <= 2048, the defaults alone elsewhere; --roundN the defaults and that
round's candidates.

For each shape it times each strategy under several launch parameters (through
`strategies._tuning.OVERRIDE`, the same hook the kernels read) and GROUPS values with do_bench
(median, L2 flushed), checks every configuration against the fp64 reference (each output
within its own dtype's tolerance, as the harness judges a record:
`inputs.within_tolerances`), times `torch` (and liger/quack when importable) in the same run,
and appends each measurement to tune.csv as it goes (a cut run keeps what it measured).
With --passes N every configuration of a shape is timed N times, each pass in a rotated order,
and the summary reads each one's median: round 22 (docs/PERF_NOTES.md) saw single timings
read 20-50 % slow now and then, whichever configuration was running.
Each row also says what launched (`what_launched`: launch_id, the same for two rows that ran
the same code — compiled code on a GPU — and launched, the first kernel's constexprs and
warps as launched), beside the parameters asked for.
Prints the best configuration per shape and strategy, and where `groups=auto` and the
default parameters land against that best.  The arguments are checked before anything is
timed: an unregistered name, a shape that is not ROWSxD with both >= 1 or is given twice, an
unknown dtype or norm, --passes < 1, a --rep not finite and > 0 or a --device this machine
lacks is one line, exit 2.
Results and their reading go into docs/PERF_NOTES.md.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import json
import itertools
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

try:                # the per-shape summary only; tune.csv is written without it
    import pandas as pd  # noqa: E402
except ImportError:
    pd = None

from normbench import strategies  # noqa: E402
from normbench.harness import model, timing  # noqa: E402
from normbench.harness.config_fields import NORMS  # noqa: E402
from normbench.harness.inputs import (DTYPES, errors, make_inputs, reference,  # noqa: E402
                                      within_tolerances)
from normbench.strategies import _launch, _tuning  # noqa: E402

SHAPES = [(16384, 4096), (16384, 8192), (65536, 1024), (8192, 16384),
          (2048, 768), (4096, 1024), (4096, 4096)]
DEFAULT = "default"          # marks the configuration the shipped rules pick
REPEAT = "default-again"     # the same, timed once more after the others
NEW_ONLY = False             # --new-only: the defaults and round 8's candidates, nothing else
ONLY_ROUND = None            # --round9 … --round22: the defaults and that round's candidates, nothing else


def grid(name: str, d: int, sms: int, rows: int | None = None):
    """(override, groups, again) candidates for one strategy at width d (and `rows`, which
    round 20's groups depend on); the shipped default first.  `again` marks the default timed
    a second time, last.

    Round 7 (docs/perf/tune-7/): the row loop without the register prefetch, pipelined by
    Triton instead (`num_stages` 2–4: the loads of the next tiles go to shared memory by
    cp.async, so bytes in flight no longer cost registers), at the GROUPS its occupancy
    allows — registers and shared memory of each configuration from `bench/regs.py`'s
    compile: at d = 1024 three programs of 4 warps per SM at 4 rows a tile and 3 stages, five
    at 2 rows, eight at 1 row.  Round 8: disjoint_fused's grid sync over 2 and 3 programs
    per SM (--new-only: these and the defaults alone).  Rounds 1–6 searched other grids (git
    history of this file).  Rounds 9–22 (--round9 … --round22, issue 16): see _round9 …
    _round22."""
    yield {}, None, False
    if ONLY_ROUND in ROUND_OF:
        # a round of one strategy's own parameters: the others run at their defaults
        if name in ROUND_OF[ONLY_ROUND]:
            fn = ROUNDS[ONLY_ROUND]
            yield from (fn(d, sms, rows) if ONLY_ROUND >= 20 else fn(d, sms))
            yield {}, None, True
        return
    if not row_loop(name):
        return
    if ONLY_ROUND is not None:
        yield from ROUNDS[ONLY_ROUND](d)
        yield {}, None, True
        return
    if d <= 2048:
        # round 8: more than one program per SM (disjoint_fused's grid sync spans as many as
        # the driver says fit; beyond that the fused kernel takes its ticket path)
        for k in (2, 3):
            yield {}, k * sms, False
    if not NEW_ONLY:
        yield from _round7(d, sms)
    yield {}, None, True


def row_loop(name: str) -> bool:
    """Whether `name`'s programs loop over rows: its registered launch rule says so."""
    launch = strategies.get(name).launch
    return launch is not None and launch.row_loop


def _round9(d: int):
    """Round 9's candidates (docs/PERF_NOTES.md, "Round 9"): rows read twice (d > 8192) with
    the weight loaded as a tile in x's layout (`w_tile`: no shared-memory round trip of an
    fp32 weight); rows that are not a power of two wide — whose tiles are partly masked, so
    fewer bytes are in flight — with a fourth stage, and at 1024 < d < 4096 with twice the
    rows a tile (bench/regs.py: no spill at 3072 for LayerNorm)."""
    bd, one = _tuning.block_d(d)
    if one and bd > 8192:
        yield {"w_tile": True}, None, False
    elif one and bd != d and bd >= 2048:
        yield {"num_stages": 4}, None, False
        if bd <= 4096:
            yield {"block_r": 2 * _tuning.ROW_LOOP.params(d)["block_r"]}, None, False


def _round10(d: int):
    """Round 10's candidates (docs/PERF_NOTES.md, "Round 10"): rows wider than 8192 shared by
    programs (`col_split`: each holds a part of 8192 columns or less, the d = 8192 path, and
    reads the other parts for the row sums alone), with 2 stages (3 do not fit a program's
    shared memory) and with the own part read twice instead of held; at 12288 also three
    parts of 4096 (no masked columns); rows wider than 16384 in parts of 16384 and of 8192
    instead of chunks.  Partly masked tiles at 1024 < d < 4096: round 9's two candidates
    again, at more widths."""
    bd, one = _tuning.block_d(d)
    if one and bd > 8192:
        for reload in (False, True):
            yield {"col_split": 2, "num_stages": 2, "reload": reload}, None, False
        if _tuning.split_width(d, 3) == _tuning.pow2(_tuning.split_width(d, 3)):
            for warps in (8, 16):
                yield {"col_split": 3, "block_r": 1, "num_warps": warps}, None, False
    elif not one:
        yield {"col_split": _tuning.cdiv(d, 16384)}, None, False
        yield {"col_split": _tuning.cdiv(d, 8192), "num_stages": 2}, None, False
    elif bd != d and 2048 <= bd <= 4096:
        yield {"num_stages": 4}, None, False
        yield {"block_r": 2 * _tuning.ROW_LOOP.params(d)["block_r"]}, None, False


def _round11(d: int):
    """Round 11's candidates (docs/PERF_NOTES.md, "Round 11"): rows wider than 8192 shared by
    programs that hand each other their parts' row sums instead of reading the other parts
    (`exchange`, strategies/_exchange.py), polling 0, 4 or 16 times before a part is read
    after all; at 12288 also three parts of 4096; rows wider than 16384 in parts of 8192
    and of 16384."""
    bd, one = _tuning.block_d(d)
    if one and bd > 8192:
        for spin in (0, 4, 16):
            yield {"col_split": 2, "num_stages": 2, "exchange": True, "spin": spin}, None, False
        if _tuning.split_width(d, 3) == _tuning.pow2(_tuning.split_width(d, 3)):
            yield {"col_split": 3, "block_r": 1, "num_warps": 16, "exchange": True,
                   "spin": 4}, None, False
    elif not one:
        yield {"col_split": _tuning.cdiv(d, 8192), "num_stages": 2, "exchange": True,
               "spin": 4}, None, False
        yield {"col_split": _tuning.cdiv(d, 16384), "exchange": True, "spin": 4}, None, False


def _round12(d: int):
    """Round 12's candidates (docs/PERF_NOTES.md, "Round 12"): the row loop asks L2 for the
    tile `l2_ahead` iterations ahead (rowgrad.prefetch_l2: no registers, no shared memory).
    Rows read twice (8192 < d ≤ 16384: not pipelined, one tile in flight a program) 1, 2 or 4
    tiles ahead; rows in chunks (d > 16384) 1 or 2 rows ahead; the pipelined rows (d ≤ 8192,
    whose next two tiles are already on their way to shared memory) 4 or 8 ahead."""
    bd, one = _tuning.block_d(d)
    for ahead in ((1, 2, 4) if one and bd > 8192 else (1, 2) if not one else (4, 8)):
        yield {"l2_ahead": ahead}, None, False


def _round14(d: int, sms: int):
    """Round 14's candidates, disjoint_smem's own (docs/PERF_NOTES.md, "Round 14"): the bytes
    of x and dy a program has on their way into shared memory (`inflight`, hence its stages:
    the rule's 64 KB, 32 and 128 KB); from d = 4096 the other warps — 8 instead of 16, and,
    where the rule takes 8 for a weight wider than the activations (`wide_weight_warps`, from
    ac24202 on; at f8026eb, where round 14 ran, every row had 16 and this candidate was
    {"num_warps": 8} alone), 16 instead; and up to d = 4096 twice the rule's programs (a
    second program per SM where its shared memory and registers leave room)."""
    from normbench.strategies import disjoint_smem
    for kb in (32, 128):
        yield {"inflight": kb * 1024}, None, False
    if d >= 4096:
        yield {"num_warps": 8, "wide_weight_warps": 16}, None, False
    if d <= 4096:
        warps = disjoint_smem._rule(d)["num_warps"]
        yield {}, 2 * sms * max(1, 8 // warps), False


def _round15(d: int, sms: int):
    """Round 15's candidates, disjoint_smem's (docs/PERF_NOTES.md, "Not yet measured"): a row
    that is not a power of two staged in two parts at about its width (`split`: 12288 = 8192 +
    4096, three stages instead of two), where that changes the parts (bf16's copy width and
    the rule's warps; fp32 rows may differ); and round 14's candidates at d ≤ 8192, which its
    grids never reached."""
    from normbench.strategies import disjoint_smem
    p = disjoint_smem._rule(d)
    if disjoint_smem.parts({**p, "split": True}, d, 8, p["num_warps"])[1]:
        yield {"split": not p["split"]}, None, False      # the other choice than the rule's
    if d <= 8192:
        yield from _round14(d, sms)


def _round16(d: int, sms: int):
    """Round 16's candidate (docs/PERF_NOTES.md, "Not yet measured"): `pdl` — the reduce
    launched as a programmatic dependent of the main kernel, which lets it in at its start,
    so the reduce's launch and scheduling overlap the main kernel's last programs (the gap
    between the two kernels, a few µs of every call, small shapes' most)."""
    yield {"pdl": True}, None, False


def _round17(d: int, sms: int):
    """Round 17's candidates, the pipelined row loop's (d ≤ 8192: one block, not read twice;
    docs/PERF_NOTES.md, "Round 17"): the tiles dealt round-robin over the programs
    (`interleave`: the programs sweep the inputs side by side instead of each through its own
    block), and tiles of twice the rule's rows at 16 warps (twice the bytes in flight, half
    the row-sum barriers a byte) from d = 2048 — round 7 timed 8-row tiles at d = 1024 (slower)."""
    p = _tuning.params("disjoint_block", d)
    if not (p["one_chunk"] and p["block_d"] <= 8192):
        return
    yield {"interleave": True}, None, False
    if p["block_d"] >= 2048:
        yield {"block_r": 2 * p["block_r"], "num_warps": 16}, None, False


def _round18(d: int, sms: int):
    """Round 18's candidates, disjoint_smem's (docs/PERF_NOTES.md, "Round 18"): its staged rows
    dealt round-robin over the programs (`interleave`, round 17's schedule, adopted for the
    row loop as disjoint_strided), alone and with `pdl` (round 16: 0.5-1 %, not adopted
    alone) — where the rule stages rows wider than 8192 (below, disjoint_block's row loop
    is the faster)."""
    from normbench.strategies import disjoint_smem
    if disjoint_smem._rule(d)["block_d"] <= 8192:
        return
    yield {"interleave": True}, None, False
    yield {"interleave": True, "pdl": True}, None, False


def _round19(d: int, sms: int):
    """Round 19 compares code, not launch parameters (docs/PERF_NOTES.md, "Round 19"): every
    strategy at its shipped default alone, timed once with each variant of the source files
    in place (bench/device_ab.sh swaps them) — so no candidates here."""
    return iter(())


def _round20(d: int, sms: int, rows: int | None):
    """Round 20's candidates, disjoint_strided's row loop (d ≤ 8192; docs/PERF_NOTES.md,
    "Round 20"): the reduce as a programmatic dependent (`pdl`: round 16 measured it on the
    contiguous row loop, round 18 adopted it for the staged rows); one stage more (more bytes
    in flight: round 7 found a fourth stage slower with contiguous blocks, before the rows
    were dealt round-robin); and GROUPS that deal the tiles out evenly — the largest divisor
    of the tiles between 90 % of the rule's programs and the rule's (16384 × 4096 is 8192 tiles
    of two rows: over 132 programs 16 of them take a 63rd tile while the other 116 are done;
    over 128, each takes 64).
    `pdl` is in the rule since round 20 (its candidate is then the rule itself)."""
    from normbench.strategies import _groups, disjoint_strided
    p = disjoint_strided.backward.params(d)
    if p["staged"] or not (p["one_chunk"] and p["block_d"] <= 8192):
        return
    loop = _row_loop_only(p)
    yield {"pdl": True, **loop}, None, False
    yield {"num_stages": p["num_stages"] + 1, **loop}, None, False
    if rows:
        g0 = _groups.row_loop_programs(rows, d, sms, p)
        tiles = _tuning.cdiv(rows, p["block_r"])
        even = [g for g in range(g0 - 1, int(0.9 * g0) - 1, -1) if tiles % g == 0]
        if tiles % g0 and even:
            yield {**loop}, even[0], False
            yield {"pdl": True, **loop}, even[0], False


def _row_loop_only(p) -> dict:
    """What keeps a row-loop candidate of disjoint_strided on the row loop: since round 30
    its rule stages fp32 rows of 7168-8192 (`stage_from`), which a candidate without this
    would silently time instead (the staged path does not read the row loop's parameters)."""
    return {"stage_from": 0} if p.get("stage_from") else {}


def _round21(d: int, sms: int, rows: int | None):
    """Round 21's candidates, the staged kernel's (disjoint_smem and disjoint_strided) where
    it stages a row in two parts (docs/PERF_NOTES.md, "Round 21"): the other warps — 8 where
    the rule has 16 and 16 where it has 8 (`wide_weight_warps`, 8 for a weight wider than the
    activations: tune-14 chose it at rows of one part) — and other bytes in flight (32 KB:
    two stages; 128 KB: four where they fit, with a bf16 γ; with an fp32 one three still fit,
    as at the rule's 64 KB, so that candidate times the rule once more).  Round 20 left
    disjoint_strided 20 % behind disjoint_smem at RMS 12288 with an fp32 γ."""
    from normbench.strategies import disjoint_smem
    p = disjoint_smem._rule(d)
    if p["block_d"] <= 8192 or not disjoint_smem.parts(p, d, 8, 8)[1]:
        return
    yield {"num_warps": 8, "wide_weight_warps": 16}, None, False
    for kb in (32, 128):
        yield {"inflight": kb * 1024}, None, False


def _round22(d: int, sms: int, rows: int | None):
    """Round 22's candidates, disjoint_strided's row loop where its tile is partly masked (d
    ≤ 8192 not a power of two; docs/PERF_NOTES.md, "Round 22"): LayerNorm at 32768 × 3072 is
    82-86 % of copy where RMSNorm is 91-92 %, and 3-4 points behind LayerNorm at 4096.  Round
    10 (contiguous blocks, before the rows were dealt round-robin) found twice the rows a tile
    12 % faster for LayerNorm at 2560 and 3072 and up to 19 % slower for RMSNorm at 1536, and
    adopted the fourth stage instead; no rule could see the norm then.  Here: twice the rows
    a tile at the rule's stages and at one stage fewer, and half the warps (fewer warps a row
    to sum across) — at every partly masked width, both norms timed."""
    from normbench.strategies import disjoint_strided
    p = disjoint_strided.backward.params(d)
    if p["staged"] or not (p["one_chunk"] and p["block_d"] <= 8192) or p["block_d"] == d:
        return
    br, st, loop = p["block_r"], p["num_stages"], _row_loop_only(p)
    yield {"block_r": 2 * br, **loop}, None, False
    yield {"block_r": 2 * br, "num_stages": st - 1, **loop}, None, False
    if p["num_warps"] >= 8:
        yield {"num_warps": p["num_warps"] // 2, **loop}, None, False


# the rounds --round9 … --round22 time alone (issue 16); ROUND_OF: a round of some strategies'
# own parameters (the other strategies named run at their defaults, a control)
ROUNDS = {9: _round9, 10: _round10, 11: _round11, 12: _round12, 14: _round14, 15: _round15,
          16: _round16, 17: _round17, 18: _round18, 19: _round19, 20: _round20, 21: _round21,
          22: _round22}
ROUND_OF = {14: ("disjoint_smem",), 15: ("disjoint_smem",), 16: ("disjoint_block", "disjoint_smem"),
            17: ("disjoint_block", "disjoint_fused"), 18: ("disjoint_smem",), 19: (),
            20: ("disjoint_strided",), 21: ("disjoint_smem", "disjoint_strided"),
            22: ("disjoint_strided",)}


def _round7(d: int, sms: int):
    """Round 7's candidates (the pipelined row loop's stages, tiles, warps and GROUPS; round 7
    timed the GROUPS candidates for disjoint_block alone)."""
    pipe = dict(prefetch=False)
    if d >= 16384:
        yield {"num_stages": 2}, None, False
    elif d <= 1024:
        yield {**pipe, "num_stages": 3}, None, False
        yield {**pipe, "num_stages": 4}, None, False
        yield {**pipe, "num_stages": 3, "block_r": 8, "num_warps": 8}, None, False
        yield {**pipe, "num_stages": 3}, 3 * sms, False
        for st, g in ((3, 4 * sms), (3, 5 * sms), (4, 5 * sms)):
            yield {**pipe, "num_stages": st, "block_r": 2}, g, False
        yield {**pipe, "num_stages": 4, "block_r": 1}, 8 * sms, False
    elif d <= 4096:
        for st in (3, 4):
            yield {**pipe, "num_stages": st}, None, False
        yield {**pipe, "num_stages": 3, "num_warps": 16}, None, False
        for st in (3, 4):
            yield {**pipe, "num_stages": st, "block_r": 1, "num_warps": 8}, 2 * sms, False
    else:
        for st in (2, 3, 4):
            yield {**pipe, "num_stages": st}, None, False


def warm(args, shapes, sms, part: int, nparts: int) -> None:
    """Call every configuration whose index ≡ part (mod nparts) once: it compiles."""
    k = 0
    for (rows, d), norm in itertools.product(shapes, args.norms.split(",")):
        inputs = None
        for name in args.names.split(","):
            e = strategies.get(name)
            for ov, g, _ in grid(name, d, sms, rows):
                k += 1
                if k % nparts != part:
                    continue
                if inputs is None:
                    inputs = make_inputs(norm, rows, d, args.dtype, wdtype(args), seed=0,
                                         device=args.device)
                _tuning.OVERRIDE[name] = ov
                try:
                    e.backward(*inputs, groups=g)
                except Exception:   # the timed pass records it
                    pass
            _tuning.OVERRIDE.pop(name, None)


def wdtype(args) -> str:
    """The weight's dtype: --weight-dtype, or the activations' for `same`."""
    return args.dtype if args.weight_dtype == "same" else args.weight_dtype


def what_launched(call, gpu: bool) -> tuple[str, str]:
    """(launch_id, launched) of one call (`_launch.capture`, no kernel run): launch_id, 12 hex
    digits naming everything it launches (empty where nothing is launched through
    `_launch`: the peers) — on a GPU the compiled kernels' code, so two rows
    with one id ran the same code whatever their parameters asked for (a stage count that
    shared memory caps, an option the path never reads) — and launched, its first kernel's
    name, grid and the constexprs and warps it was launched with (after `fit_stages`, the
    staged kernel's own warps and stages): what ran, where the columns before it say what
    was asked for.  The columns the parameters give (block_d … col_split) stay as asked."""
    with _launch.capture() as meta:
        call()
    if gpu:
        with _launch.capture(code=True) as code:
            call()
    else:
        code = meta
    if not meta:                # nothing through _launch (a peer, torch): no id to share
        return "", ""
    ident = hashlib.sha256(repr(code).encode()).hexdigest()[:12]
    name, grid, _, consts = meta[0]
    return ident, f"{name} grid={'x'.join(map(str, grid))} " + " ".join(
        f"{k}={v}" for k, v in consts)


def parse_shapes(text: str) -> list[tuple[int, int]] | None:
    """'ROWSxD,...' -> [(rows, d), ...], each whole numbers >= 1; None for anything else."""
    out = []
    for shape in text.split(","):
        parts = shape.split("x")
        try:
            rows, d = map(int, parts) if len(parts) == 2 else (0, 0)
        except ValueError:
            return None
        if rows < 1 or d < 1:
            return None
        out.append((rows, d))
    return out


def shapes_problem(text: str) -> str:
    """Why --shapes `text` cannot be timed (one line), or "": each shape ROWSxD with both
    >= 1, none given twice (its rows could not be told apart in the CSV and the summary)."""
    seen = set()
    for one in text.split(","):
        shape = (parse_shapes(one) or [None])[0]
        if shape is None:
            return f"--shapes {text!r}: {one!r} is not ROWSxD with ROWS, D whole numbers >= 1"
        if shape in seen:
            return (f"--shapes {text!r}: {shape[0]}x{shape[1]} given twice: its timings could "
                    "not be told apart")
        seen.add(shape)
    return ""


def run_problem(rep: float, device: str) -> str:
    """Why --rep / --device cannot time (one line), or "": a repetition time finite and > 0,
    and a device torch and this machine have (no CUDA: --device cpu, the interpreter)."""
    if not (math.isfinite(rep) and rep > 0):
        return f"--rep {rep}: a repetition time in ms, finite and > 0"
    try:
        strategies.sm_count(device)
    except ValueError as e:
        return f"--device: {str(e).removeprefix('device: ')}" + (
            " (--device cpu: the Triton interpreter)" if "cuda" in device else "")
    return ""


def checked_args(ap, args) -> list[tuple[int, int]]:
    """The shapes to time; before anything is timed, ap.error (one line, exit 2) for a name
    that is not registered, a shape that is not ROWSxD with both >= 1 or is given twice, a
    dtype or norm not known, --passes < 1, a --rep not finite and > 0, and a --device this
    machine lacks."""
    for name in args.names.split(","):
        try:
            strategies.get(name)
        except KeyError as err:
            ap.error(f"--names: {err.args[0]}")
    if args.shapes and (why := shapes_problem(args.shapes)):
        ap.error(why)
    shapes = parse_shapes(args.shapes) if args.shapes else SHAPES
    for norm in args.norms.split(","):
        if norm not in NORMS:
            ap.error(f"--norms: {norm!r} is not one of {', '.join(NORMS)}")
    if args.dtype not in DTYPES:
        ap.error(f"--dtype {args.dtype!r}: one of {', '.join(DTYPES)}")
    if args.weight_dtype != "same" and args.weight_dtype not in DTYPES:
        ap.error(f"--weight-dtype {args.weight_dtype!r}: same or one of {', '.join(DTYPES)}")
    if args.passes < 1:
        ap.error(f"--passes {args.passes}: at least 1")
    if why := run_problem(args.rep, args.device):
        ap.error(why)
    return shapes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."), help="folder for tune.csv ($OUT)")
    ap.add_argument("--names", default="disjoint_block,disjoint_fused,grouped_atomic,spin_lock,atomic",
                    help="strategies to tune (torch, liger, quack are timed too when present)")
    ap.add_argument("--shapes", default="", help="ROWSxD,... (default: the seven of issue 5)")
    ap.add_argument("--norms", default="layernorm,rmsnorm", help="layernorm,rmsnorm or one")
    ap.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32 (x, dy; the weight too with "
                                                    "--weight-dtype same)")
    ap.add_argument("--weight-dtype", default="same", help="same, bf16, fp16 or fp32")
    ap.add_argument("--rep", type=float, default=20, help="do_bench repetition time per configuration, ms")
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting new shapes after this")
    ap.add_argument("--passes", type=int, default=1,
                    help="time every configuration of a shape this many times, each pass in a "
                         "rotated order; the summary reads each one's median (tune.csv: `pass`)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test under the interpreter")
    ap.add_argument("--warm-jobs", type=int, default=0,
                    help="first compile every configuration in this many parallel processes "
                         "(Triton's disk cache then serves the timed pass; compiling is most "
                         "of a tuning run's time)")
    # one selection of candidates a run: grid() follows one of them (given together, a round
    # silently took over --new-only, and the highest round the others)
    only = ap.add_mutually_exclusive_group()
    only.add_argument("--new-only", action="store_true",
                      help="time the shipped defaults and, for the row-loop strategies at "
                           "d <= 2048, only round 8's candidates (GROUPS of 2 and 3 programs "
                           "an SM); round 7's are left out, and wider rows get the defaults "
                           "alone")
    for n in ROUNDS:
        only.add_argument(f"--round{n}", action="store_true",
                          help=f"time the shipped defaults and only round {n}'s candidates "
                               "(issue 16)")
    ap.add_argument("--warm-part", default="", help=argparse.SUPPRESS)   # "i/n": one warm process
    args = ap.parse_args()
    shapes = checked_args(ap, args)
    global NEW_ONLY, ONLY_ROUND
    NEW_ONLY = args.new_only
    ONLY_ROUND = max((n for n in ROUNDS if getattr(args, f"round{n}")), default=None)
    gpu = args.device == "cuda"
    sms = strategies.sm_count(args.device)
    if args.warm_part:
        return warm(args, shapes, sms, *map(int, args.warm_part.split("/")))
    if args.warm_jobs > 1:
        t = time.time()
        argv, skip = [], False
        for a in sys.argv[1:]:          # everything but --warm-jobs N
            if not skip and not a.startswith("--warm-jobs"):
                argv.append(a)
            skip = not skip and a == "--warm-jobs"
        procs = [subprocess.Popen([sys.executable, __file__, *argv, "--warm-part",
                                   f"{i}/{args.warm_jobs}"]) for i in range(args.warm_jobs)]
        codes = [p.wait() for p in procs]
        print(f"compiled in {args.warm_jobs} processes: {time.time() - t:.0f} s "
              f"(exit codes {codes})", flush=True)
    copy = timing.copy_ceiling_gbps(args.device, gpu)
    print(f"device {torch.cuda.get_device_name() if gpu else 'cpu'}  SMs {sms}  "
          f"copy ceiling {copy:.0f} GB/s", flush=True)
    names = args.names.split(",")
    peers = [n for n in ("torch", "liger", "quack") if n in strategies.names()]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tune.csv")
    fields = ["norm", "rows", "d", "dtype", "weight_dtype", "name", "config", "override", "groups",
              "geff", "block_d", "block_r", "num_warps", "num_stages", "prefetch", "reload", "w_tile",
              "col_split", "launch_id", "launched", "us", "pct_copy", "err", "status", "pass"]
    out = open(path, "w", newline="")
    w = csv.DictWriter(out, fieldnames=fields)
    w.writeheader()
    t0 = time.time()
    for (rows, d), norm in itertools.product(shapes, args.norms.split(",")):
        if time.time() - t0 > args.budget_s:
            print(f"budget spent: skipping {norm} {rows}x{d}", flush=True)
            continue
        wd = wdtype(args)
        x, dy, wt, mean, rstd = make_inputs(norm, rows, d, args.dtype, wd, seed=rows ^ d,
                                            device=args.device)
        ref = reference(x, dy, wt, mean, rstd)
        nbytes = model.bytes_moved(norm, rows, d, args.dtype, wd)
        recs = []
        runs = [(name, ov, g, again) for name in names + peers
                for ov, g, again in (grid(name, d, sms, rows) if name in names
                                     else [({}, None, False)])]
        checked = {}
        for n in range(args.passes):
            # each pass in another order (rotated), so no configuration always follows the same
            # one: a reading that is the moment's, not the configuration's, shows as a spread
            for k in range(len(runs)):
                name, ov, g, again = runs[(k + n) % len(runs)]
                e = strategies.get(name)
                _tuning.OVERRIDE[name] = ov
                p = e.params(d) if name in names else {}
                key = (name, json.dumps(ov, sort_keys=True), g, again)
                try:
                    if key not in checked:
                        res = e.backward(x, dy, wt, mean, rstd, groups=g)
                        err = max(v for v in errors(res, ref)
                                  if v is not None)
                        checked[key] = (err, "ok" if within_tolerances(res, ref, args.dtype, wd)
                                        else "WRONG",
                                        *what_launched(lambda: e.backward(x, dy, wt, mean, rstd,
                                                                          groups=g), gpu))
                    err, status, launch_id, launched = checked[key]
                    ms = timing.summarize(timing.bench(
                        lambda: e.backward(x, dy, wt, mean, rstd, groups=g), 5, args.rep, gpu))["time_ms"]
                except Exception as ex:  # record and go on
                    err, ms, status = float("nan"), float("nan"), f"{type(ex).__name__}: {str(ex)[:80]}"
                    launch_id = launched = ""
                rec = dict(norm=norm, rows=rows, d=d, dtype=args.dtype, weight_dtype=wd, name=name,
                           config=(REPEAT if again else DEFAULT) if not ov and g is None else "",
                           override=json.dumps(ov, sort_keys=True) if ov else "",
                           groups=g, geff=e.effective_groups(rows, d, g),
                           block_d=p.get("block_d"), block_r=p.get("block_r"),
                           num_warps=_tuning.row_loop_warps(p, mean is not None,
                                                            model.ITEMSIZE[args.dtype]) if p else None,
                           num_stages=p.get("num_stages"),
                           prefetch=p.get("prefetch"), reload=p.get("reload"),
                           w_tile=p.get("w_tile"), col_split=p.get("col_split"),
                           launch_id=launch_id, launched=launched, us=round(ms * 1e3, 2),
                           pct_copy=round(model.pct(model.gbps(nbytes, ms), copy), 1) if ms == ms else None,
                           err=err, status=status, **{"pass": n})
                w.writerow(rec)
                recs.append(rec)
                _tuning.OVERRIDE.pop(name, None)
                out.flush()
        if pd is None:
            print(f"== {norm} {rows}x{d} {args.dtype} (weight {wd}): {len(recs)} timings "
                  "(no pandas here: read tune.csv)", flush=True)
            continue
        df = pd.DataFrame(recs)
        ok = df[df.status == "ok"]
        if args.passes > 1:     # each configuration's median over the passes
            keys = ["name", "config", "override", "groups"]
            ok = (ok.fillna({"groups": -1}).groupby(keys, as_index=False, sort=False)
                  .agg(geff=("geff", "first"), us=("us", "median"), pct_copy=("pct_copy", "median"))
                  .replace({"groups": {-1: None}}))
        best = ok.loc[ok.groupby("name")["us"].idxmin()].set_index("name")
        # the default's better timing of its two (first and last), as round 4 read it
        dflt = ok[ok.config.isin([DEFAULT, REPEAT])].groupby("name")["us"].min()
        best["default_us"] = dflt
        best["default_vs_best"] = (dflt / best["us"]).round(3)
        # issue 5.3: groups=auto against the best GROUPS at the default launch parameters
        best["auto_vs_best_g"] = (dflt / ok[ok.override == ""].groupby("name")["us"].min()).round(3)
        print(f"\n== {norm} {rows}x{d} {args.dtype} (weight {wd})  ({time.time() - t0:.0f}s)", flush=True)
        cols = ["geff", "override", "us", "pct_copy", "default_us", "default_vs_best",
                "auto_vs_best_g"]
        print(best.sort_values("us")[cols].to_string(), flush=True)
        # candidates that ran the default's code: the rule timed again under another name
        ids = df[df.config.isin([DEFAULT, REPEAT]) & (df.launch_id != "")]
        ids = set(zip(ids.name, ids.launch_id))
        ran = pd.Series([(n, i) in ids for n, i in zip(df.name, df.launch_id)], index=df.index)
        again = df[(df.config == "") & ran]
        again = again.drop_duplicates(["name", "override", "groups"])
        if len(again):
            print("launched what the default launches (the same " + ("compiled code" if gpu else
                  "kernels and constexprs") + "): " + "; ".join(
                f"{r.name} {r.override or '{}'} groups="
                f"{'auto' if pd.isna(r.groups) else int(r.groups)}" for r in again.itertuples()),
                flush=True)
        bad = df[df.status != "ok"]
        if len(bad):
            print("NOT OK:\n" + bad[["name", "groups", "block_r", "num_warps", "status"]].to_string(index=False))
    out.close()


if __name__ == "__main__":
    main()
