"""Where a row-loop call's time goes: each program's start and end on the GPU's clock.

    python bench/timeline.py [--shapes layernorm:16384x4096,...] [--dtype bf16]
                             [--weight-dtype same] [--variants 'rule={};inter={"interleave":true}']
                             [--n 30] [--out FILE.csv]

disjoint_block's main kernel is launched with its own launch parameters (the rule, or a
variant's override), wrapped in a kernel that reads `%globaltimer` when each program starts and
after its last store, and `%smid`.  Each sample flushes L2 as do_bench does (256 MiB written),
then times the instrumented kernel with events; alongside, the whole calls of disjoint_block
and disjoint_fused under the same flush.  Per sample, relative to the first program's start:

  start_spread  the last program's start (the launch's ramp);
  end_first / end_p50 / end_last   the programs' ends (the spread end_last − end_p50 is time
                the GPU runs below full width: a tail that balanced programs would not have);
  busy          the mean over programs of end − start, against end_last (the kernel's span).

and a copy of the shape's model bytes (`copy_us`: its read and write together) under the same
flush.
The medians over the samples are printed and written (one CSV row per shape and variant).
Only the rows' order in each program differs between variants, so the checks against fp64 of
the whole calls (printed) hold for the instrumented kernel's arithmetic too.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pandas as pd  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra.cuda import globaltimer, smid  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness import model  # noqa: E402
from normbench.harness.inputs import make_inputs, reference, within_tolerances  # noqa: E402
from normbench.strategies import _launch, _tuning, disjoint_block  # noqa: E402

from flush_check import cases, gpu_args, gpu_setup  # noqa: E402  (bench/, the script's folder)


@triton.jit
def _timed_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, XS, T, ROWS, N, ROWS_PER_PROG,
                  stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr,
                  NUM_STAGES: tl.constexpr, PREFETCH: tl.constexpr, RELOAD: tl.constexpr,
                  W_TILE: tl.constexpr, COL_SPLIT: tl.constexpr, EXCHANGE: tl.constexpr,
                  SPIN: tl.constexpr, L2_AHEAD: tl.constexpr, INTERLEAVE: tl.constexpr):
    pid = tl.program_id(0)
    t0 = globaltimer()
    disjoint_block.row_partials(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                                stride_x, stride_dy, stride_dx, HAS_MEAN, BLOCK_R, BLOCK_D,
                                ONE_CHUNK, NUM_STAGES, PREFETCH, RELOAD, W_TILE, COL_SPLIT,
                                EXCHANGE, SPIN, L2_AHEAD, INTERLEAVE)
    tl.debug_barrier()
    t1 = globaltimer()
    tl.store(T + pid * 3, t0)
    tl.store(T + pid * 3 + 1, t1)
    tl.store(T + pid * 3 + 2, smid().to(tl.int64))


def _median_us(fn, flush, n: int) -> float:
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(n)]
    for _ in range(3):
        fn()
    for a, b in ev:
        flush.zero_()
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)


def program_clocks(v: torch.Tensor):
    """One sample's clock reads, [programs, 3] (start and end in ns on the GPU's global timer,
    the SM): (its summary — the spread of the starts, the first, median and last end, the mean
    busy time in µs from the first start, and the SMs used —, each program's start and end
    in µs from the first start)."""
    st, en = v[:, 0].double(), v[:, 1].double()
    z = st.min()
    st, en = (st - z) / 1e3, (en - z) / 1e3
    ens = en.sort().values
    return dict(start_spread=float(st.max()), end_first=float(ens[0]),
                end_p50=float(ens[len(ens) // 2]), end_last=float(ens[-1]),
                busy=float((en - st).mean()), sms=len(set(v[:, 2].tolist()))), st, en


def timeline(c, groups: int, flush, n: int) -> dict:
    """The instrumented main kernel's event time and the medians of its per-sample timeline."""
    t = torch.zeros(groups * 3, dtype=torch.int64, device=c.x.device)
    samples, evs = [], []
    for i in range(n + 3):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        disjoint_block.launch_partials(_timed_kernel, c, groups, disjoint_block.backward.params,
                                       (t,))
        b.record()
        torch.cuda.synchronize()
        if i < 3:
            continue
        evs.append(a.elapsed_time(b) * 1e3)
        samples.append(program_clocks(t.view(groups, 3).cpu())[0])
    out = {k: round(statistics.median(s[k] for s in samples), 2) for k in samples[0]}
    out["kernel_us"] = round(statistics.median(evs), 2)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gpu_args(ap, "layernorm:16384x4096,rmsnorm:16384x4096,layernorm:65536x1024,"
             "rmsnorm:65536x1024,layernorm:32768x3072,layernorm:16384x8192", 30)
    ap.add_argument("--variants", default='rule={};interleave={"interleave":true}',
                    help="label=JSON override of disjoint_block's (and disjoint_fused's) "
                         "launch parameters, ';'-separated")
    args = ap.parse_args()
    dev, flush, wd = gpu_setup(args, "timeline: needs a CUDA GPU (it reads the GPU's clock in "
                                     "each program)")
    variants = [v.split("=", 1) for v in args.variants.split(";") if v]
    rows_out = []
    for norm, rows, d in cases(args.shapes):
        nbytes = model.bytes_moved(norm, rows, d, args.dtype, wd)
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, args.dtype, wd, seed=rows ^ d, device=dev)
        ref = reference(x, dy, w, mean, rstd)
        src = torch.empty(nbytes // 8, dtype=torch.float32, device=dev)   # nbytes moved
        dst = torch.empty_like(src)
        copy_us = _median_us(lambda: dst.copy_(src), flush, args.n)
        del src, dst
        for label, js in variants:
            ov = json.loads(js)
            row = dict(case=f"{norm} {rows}x{d} {args.dtype}/{wd}", variant=label,
                       override=js, copy_us=round(copy_us, 2))
            try:
                for name in ("disjoint_block", "disjoint_fused"):
                    _tuning.OVERRIDE[name] = ov
                    impl = strategies.get(name)
                    ok = within_tolerances(impl.backward(x, dy, w, mean, rstd, groups=None),
                                           ref, args.dtype, wd)
                    row[f"{name}_us"] = round(_median_us(
                        lambda: impl.backward(x, dy, w, mean, rstd, groups=None), flush, args.n), 2)
                    row[f"{name}_ok"] = ok
                groups = strategies.get("disjoint_block").effective_groups(rows, d, None)
                c = _launch.prepare(x, dy, w, mean, rstd)
                row.update(groups=groups, **timeline(c, groups, flush, args.n))
            except Exception as e:  # one variant's failure is printed, the rest go on
                print(f"{row['case']} {label}: {type(e).__name__}: {e}", flush=True)
                continue
            finally:
                _tuning.OVERRIDE.clear()
            row["pct_copy_block"] = round(100 * copy_us / row["disjoint_block_us"], 1)
            rows_out.append(row)
            print(json.dumps(row), flush=True)
        del x, dy, w, mean, rstd, ref
        torch.cuda.empty_cache()
    if rows_out:
        print(f"\n{'case':34s} {'variant':12s} {'block':>7s} {'fused':>7s} {'kernel':>7s} "
              f"{'ramp':>6s} {'end1':>7s} {'end50':>7s} {'endN':>7s} {'busy':>7s} {'copy':>7s}")
        for r in rows_out:
            print(f"{r['case']:34s} {r['variant']:12s} {r['disjoint_block_us']:7.1f} "
                  f"{r['disjoint_fused_us']:7.1f} {r['kernel_us']:7.1f} {r['start_spread']:6.1f} "
                  f"{r['end_first']:7.1f} {r['end_p50']:7.1f} {r['end_last']:7.1f} "
                  f"{r['busy']:7.1f} {r['copy_us']:7.1f}")
    if args.out and rows_out:
        pd.DataFrame(rows_out).to_csv(args.out, index=False)


if __name__ == "__main__":
    main()
