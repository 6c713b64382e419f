"""Where a staged call's time goes: each program of the staged kernel's start and end on the GPU's clock.

    python bench/timeline_staged.py [--shapes rmsnorm:4096x16384,...] [--dtype bf16]
                                    [--weight-dtype same] [--names disjoint_smem,disjoint_strided]
                                    [--n 30] [--out FILE.csv]

bench/timeline.py's question for the row loop, asked of disjoint_smem's Gluon kernel
(strategies/_smem_kernel.py), which disjoint_smem and disjoint_strided run above 8192: the
kernel is launched at the strategy's own launch parameters (`disjoint_smem.staged`), wrapped in
a Gluon kernel that reads `%globaltimer` when each program starts and after its partial rows'
stores, and `%smid`.  Each sample flushes L2 as do_bench does, then times the instrumented
kernel with events; alongside, the strategy's whole call under the same flush, and a copy of
the shape's model bytes.  Per sample, relative to the first program's start (µs):

  start_spread  the last program's start (the launch's ramp);
  end_first / end_p50 / end_last   the programs' ends (end_last − end_p50: the tail);
  busy / busy_min / busy_max       each program's end − start: mean, least, most;
  event_us      the events around the wrapper's launch from Python — the host's launch (the
                Gluon kernel's slow path: no plan is kept here) included, so not the
                kernel's time and not comparable with call_us (the strategy's whole call).

With --per-sm FILE, each SM's median busy time and end (µs) per case: which SMs are slow.
With --rows K, the kernel itself (its CLOCKS) reads the clock after each row; of a program's
first K rows: `row_steps`, per step the median over the programs that ran K rows or more and
the samples — the first row from the program's start, each next row from the one before, and
the program's end from row K's (the rows past K and the partial rows' stores): whether a
program's time beyond its rows' is at its start, spread over its rows, or at its end.  With
--phases as well (the kernel's CLOCKS 2: three more clock stores a row, which slow a step by
~10 %), `row_phases`: each of the first K rows split into [ask, wait, sums, dx] — its copies
ahead asked for, the row waited for in shared memory, its sums, its dx and contributions.
--override JSON (repeatable) times a tuning override of each strategy's rule as a line of its
own beside the rule's; --no-flush leaves L2 as the call before left it (round 44).

Round 27 (docs/PERF_NOTES.md) found 9–21 µs a call in the staged kernel at rows of 16384 that
twice the rows do not double: the ramp, the tail and the programs' own first and last rows are
what this separates (a program's own fixed part: twice its busy time at 4096 rows less its
busy time at 8192).  The instrumented kernel's arithmetic is the kernel's own (the wrapper
adds two clock reads and three stores a program): the whole calls' check against fp64 is
printed beside it.  Needs a CUDA GPU with the staged kernel (compute capability 8.0 on).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pandas as pd  # noqa: E402
import torch  # noqa: E402
from triton.experimental import gluon  # noqa: E402
from triton.experimental.gluon import language as gl  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness import model  # noqa: E402
from normbench.harness.inputs import make_inputs, reference, within_tolerances  # noqa: E402
from normbench.strategies import _launch, _tuning, disjoint_smem  # noqa: E402
from normbench.strategies._smem_kernel import _barrier, _globaltimer, smem_kernel  # noqa: E402

from flush_check import cases, gpu_args, gpu_setup  # noqa: E402  (bench/, the script's folder)
from timeline import _median_us, program_clocks  # noqa: E402


@gluon.jit
def _sm():
    return gl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=gl.int32,
                                     is_pure=False, pack=1)


@gluon.jit
def _timed_smem(X, DY, DX, W, Mean, Rstd, PW, PB, T, ROWS, N_V, ROWS_PER_PROG,
                stride_x_v, stride_dy_v, stride_dx_v, HAS_MEAN: gl.constexpr,
                BLOCK_D: gl.constexpr, BLOCK_D2: gl.constexpr, VEC: gl.constexpr,
                STAGES: gl.constexpr, NUM_WARPS: gl.constexpr, PDL: gl.constexpr,
                INTERLEAVE: gl.constexpr, HALVES: gl.constexpr, W_REGS: gl.constexpr,
                PAIRS: gl.constexpr = False, FMA: gl.constexpr = False,
                SECTORS: gl.constexpr = False, Clk=None, CLOCKS: gl.constexpr = False,
                L2_AHEAD: gl.constexpr = 0):
    pid = gl.program_id(0)
    t0 = _globaltimer()
    smem_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N_V, ROWS_PER_PROG, stride_x_v,
                stride_dy_v, stride_dx_v, HAS_MEAN, BLOCK_D, BLOCK_D2, VEC, STAGES, NUM_WARPS,
                PDL, INTERLEAVE, HALVES, W_REGS, PAIRS, FMA, SECTORS, Clk,
                CLOCKS, L2_AHEAD)
    _barrier()
    t1 = _globaltimer()
    gl.store(T + pid * 3, t0)
    gl.store(T + pid * 3 + 1, t1)
    gl.store(T + pid * 3 + 2, _sm().to(gl.int64))


def launch_timed(name: str, x, dy, w, mean, rstd, t, clk=None):
    """The staged kernel of strategy `name` at its launch parameters for this call, wrapped
    in the clock reads (and with `clk`, one int64 a row, the clock after each row: the
    kernel's CLOCKS); (the number of programs, whether its rows are dealt round-robin), or
    (0, False) where the call is not staged."""
    e = strategies.get(name)
    c = _launch.prepare(x, dy, w, mean, rstd)
    p = e.params(c.d)
    m = disjoint_smem.staged(c.x, c.dy, c.weight, p, c.dx, c.has_mean)
    if not m.vec:
        return 0, False
    groups = e.effective_groups(c.rows, c.d, None, c.x.device)
    pw, pb = _launch.scratch(groups, c.d, c.has_mean, c.x.device)
    scalars, meta = disjoint_smem.kernel_args(c, groups, m, p["interleave"], pdl=False)
    if clk is not None:
        # one clock a row (CLOCKS 1), or four (2: --phases; Clk holds 4 · rows)
        meta.update(Clk=clk, CLOCKS=1 if clk.numel() == c.rows else 2)
    _timed_smem[(groups,)](c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw,
                           pb if pb is not None else pw, t, *scalars, **meta)
    return groups, bool(p["interleave"])


def program_rows(p: int, g: int, rows: int, interleave: bool) -> list[int]:
    """Program p's rows of `rows` over g programs: p, p + g, … dealt round-robin, else its
    contiguous block of ⌈rows / g⌉."""
    per = -(-rows // g)
    return list(range(p, rows, g) if interleave else range(p * per, min(rows, (p + 1) * per)))


def row_steps(v: torch.Tensor, clk: list, k: int, interleave: bool) -> list[list[float]]:
    """One sample's per-row clocks (`clk`, one a row) as steps (µs): for each program with k
    rows or more (program p's rows: p, p + G, … dealt round-robin over G programs, else its
    contiguous block of ⌈rows / G⌉), [its first row's end − its start, its second row's end
    − its first's, …, its k-th row's end − its (k−1)-th's, its end − its k-th row's]."""
    g, rows = v.shape[0], len(clk)
    out = []
    for p, (st, en, _) in enumerate(v.tolist()):
        mine = program_rows(p, g, rows, interleave)
        if len(mine) < k:
            continue
        marks = [st, *(clk[r] for r in mine[:k]), en]
        out.append([(b - a) / 1e3 for a, b in zip(marks, marks[1:])])
    return out


def row_phases(v: torch.Tensor, clk: list, k: int, interleave: bool) -> list[list[list[float]]]:
    """With --phases (`clk`: four clocks a row, Clk[j·rows + r]): for each program with k
    rows or more, for each of its first k rows [ask, wait, sums, dx] in µs — the copies ahead
    asked for (from the row before's end, or the program's start), its row waited for in
    shared memory, its sums, its dx and contributions (to the row's end)."""
    g, rows = v.shape[0], len(clk) // 4
    out = []
    for p, (st, _, _) in enumerate(v.tolist()):
        mine = program_rows(p, g, rows, interleave)
        if len(mine) < k:
            continue
        prog, prev = [], st
        for r in mine[:k]:
            marks = [prev, clk[rows + r], clk[2 * rows + r], clk[3 * rows + r], clk[r]]
            prog.append([(b - a) / 1e3 for a, b in zip(marks, marks[1:])])
            prev = clk[r]
        out.append(prog)
    return out


def timeline(name: str, inputs, flush, n: int, k: int = 0, phases: bool = False) -> dict:
    """The instrumented staged kernel's event time and the medians of its per-sample timeline
    (k > 0: also `row_steps` — each step's median over the programs and samples)."""
    x = inputs[0]
    t = torch.zeros(x.shape[0] * 3, dtype=torch.int64, device=x.device)
    clk = (torch.zeros(x.shape[0] * (4 if phases else 1), dtype=torch.int64, device=x.device)
           if k else None)
    samples, evs, per_sm, steps, phase = [], [], {}, [], []
    for i in range(n + 3):
        flush.zero_()
        if k:
            clk.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g, dealt = launch_timed(name, *inputs, t, clk)
        b.record()
        torch.cuda.synchronize()
        if not g:
            return {}
        if i < 3:
            continue
        evs.append(a.elapsed_time(b) * 1e3)
        v = t[:g * 3].view(g, 3).cpu()
        if k:
            cl = clk.cpu().tolist()
            steps += row_steps(v, cl[:x.shape[0]], k, dealt)
            if phases:
                phase += row_phases(v, cl, k, dealt)
        s, st, en = program_clocks(v)
        busy = en - st
        for sm, b_, e_ in zip(v[:, 2].tolist(), busy.tolist(), en.tolist()):
            per_sm.setdefault(sm, []).append((b_, e_))
        sms = s.pop("sms")
        samples.append({**s, "busy_min": float(busy.min()), "busy_max": float(busy.max()),
                        "sms": sms})
    out = {k: round(statistics.median(s[k] for s in samples), 2) for k in samples[0]}
    out["event_us"] = round(statistics.median(evs), 2)
    out["programs"] = g
    if steps:
        out["row_steps"] = [round(statistics.median(p[j] for p in steps), 2)
                            for j in range(k + 1)]
    if phase:
        # each of the first k rows' [ask, wait, sums, dx], the median over programs and samples
        out["row_phases"] = [[round(statistics.median(p[j][q] for p in phase), 2)
                              for q in range(4)] for j in range(k)]
    # each SM's median busy time and end over the samples (the programs it ran)
    out["per_sm"] = {sm: (round(statistics.median(b for b, _ in v), 2),
                          round(statistics.median(e for _, e in v), 2), len(v))
                     for sm, v in sorted(per_sm.items())}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gpu_args(ap, "rmsnorm:4096x16384,rmsnorm:8192x16384,layernorm:4096x16384,"
             "layernorm:8192x16384", 30)
    ap.add_argument("--names", default="disjoint_smem,disjoint_strided",
                    help="strategies whose staged kernel is timed, at their own rules")
    ap.add_argument("--per-sm", default=None,
                    help="CSV of each SM's median busy time and end (which SMs are slow)")
    ap.add_argument("--rows", type=int, default=0, metavar="K",
                    help="also the clock after each of a program's first K rows: row_steps, "
                         "each step's median (the first row from the program's start, …, "
                         "the program's end from row K's)")
    ap.add_argument("--override", action="append", default=None, metavar="JSON",
                    help="a tuning override of each strategy's rule (e.g. '{\"bf16_pairs\": "
                         "false}'), timed as its own line beside the rule's; repeatable")
    ap.add_argument("--phases", action="store_true",
                    help="with --rows: also each of the first K rows' phases (row_phases: "
                         "the copies ahead asked for, the row waited for, its sums, its dx)")
    ap.add_argument("--no-flush", action="store_true",
                    help="do not flush L2 before each sample (the kernel's code and γ stay in "
                         "L2 from the call before; the first rows of x and dy do not)")
    args = ap.parse_args()
    if args.phases and not args.rows:
        ap.error("--phases needs --rows K (the rows whose phases are read)")
    try:
        variants = [{}] + [dict(json.loads(o)) for o in args.override or []]
    except (ValueError, TypeError) as e:
        ap.error(f"--override: not a JSON object ({e})")
    dev, flush, wd = gpu_setup(args, "timeline_staged: needs a CUDA GPU (it reads the GPU's "
                                     "clock in each program)")
    if args.no_flush:
        flush = torch.empty(1, dtype=torch.int32, device=dev)   # its zero_() flushes nothing
    if disjoint_smem._WHY:
        sys.exit(f"timeline_staged: the staged kernel cannot run here: {disjoint_smem._WHY}")
    rows_out, sm_rows = [], []
    for norm, rows, d in cases(args.shapes):
        nbytes = model.bytes_moved(norm, rows, d, args.dtype, wd)
        inputs = make_inputs(norm, rows, d, args.dtype, wd, seed=rows ^ d, device=dev)
        ref = reference(*inputs)
        src = torch.empty(nbytes // 8, dtype=torch.float32, device=dev)   # nbytes moved
        dst = torch.empty_like(src)
        copy_us = _median_us(lambda: dst.copy_(src), flush, args.n)
        del src, dst
        for name, ov in itertools.product(args.names.split(","), variants):
            row = dict(case=f"{norm} {rows}x{d} {args.dtype}/{wd}", name=name,
                       override=json.dumps(ov) if ov else "", copy_us=round(copy_us, 2))
            _tuning.OVERRIDE.pop(name, None)
            if ov:
                _tuning.OVERRIDE[name] = ov
            try:
                impl = strategies.get(name)
                row["ok"] = within_tolerances(impl.backward(*inputs), ref, args.dtype, wd)
                row["call_us"] = round(_median_us(lambda: impl.backward(*inputs), flush,
                                                  args.n), 2)
                tl_ = timeline(name, inputs, flush, args.n, args.rows, args.phases)
                if not tl_:
                    print(f"{row['case']} {name}: not staged", flush=True)
                    continue
                for sm, (b_, e_, k) in tl_.pop("per_sm").items():
                    sm_rows.append(dict(case=row["case"], name=name, override=row["override"],
                                        sm=sm, busy=b_, end=e_, samples=k))
                row.update(tl_)
            except Exception as e:  # one case's failure is printed, the rest go on
                print(f"{row['case']} {name} {row['override']}: {type(e).__name__}: {e}",
                      flush=True)
                continue
            finally:
                _tuning.OVERRIDE.pop(name, None)
            rows_out.append(row)
            print(json.dumps(row), flush=True)
        del inputs, ref
        torch.cuda.empty_cache()
    if rows_out:
        print(f"\n{'case':34s} {'name':17s} {'call':>7s} {'event':>7s} {'ramp':>6s} "
              f"{'end1':>7s} {'end50':>7s} {'endN':>7s} {'busy':>7s} {'bmin':>7s} {'bmax':>7s} "
              f"{'copy':>7s}")
        for r in rows_out:
            label = (r["name"] + " " + r["override"])[:40]
            print(f"{r['case']:34s} {label:17s} {r['call_us']:7.1f} {r['event_us']:7.1f} "
                  f"{r['start_spread']:6.1f} {r['end_first']:7.1f} {r['end_p50']:7.1f} "
                  f"{r['end_last']:7.1f} {r['busy']:7.1f} {r['busy_min']:7.1f} "
                  f"{r['busy_max']:7.1f} {r['copy_us']:7.1f}")
    if args.out and rows_out:
        pd.DataFrame(rows_out).to_csv(args.out, index=False)
    if args.per_sm and sm_rows:
        pd.DataFrame(sm_rows).to_csv(args.per_sm, index=False)


if __name__ == "__main__":
    main()
