"""GPU time per call from the profiler's kernel records, beside the harness's do_bench time.

    python bench/kernel_time.py [--impls disjoint_block,disjoint_fused,quack]
                                [--shapes 65536x1024,...] [--norms rmsnorm,layernorm]
                                [--dtype bf16] [--calls 50] [--out DIR]

The harness times a call as the host sees it: CUDA events around the call, L2 flushed before
each (`do_bench`).  Where an implementation's host path is slower than its kernels, that time
is the host's, not the GPU's (the README marks such medians †).  This script separates the two.
For each implementation and shape it runs `--calls` calls, each after an L2 flush by a kernel
of its own (`_l2_flush`, 256 MiB written), under torch.profiler (CUPTI), and reads every
kernel the call ran from the trace:

    kernel_us   the call's kernel durations, summed (GPU busy time); busy_p10 / busy_p90
                its spread over the calls
    span_us     from the first kernel's start to the last one's end (busy time plus the gaps
                between a call's launches, which is what a host that runs ahead would see)
    first_us    the call's first kernel's duration, and after_first_us the call's end less
                that kernel's end: where a later kernel runs as a programmatic dependent
                (`pdl`: launched early, waiting on the GPU) its record spans the wait, so
                kernel_us counts the overlap twice and these two split the span instead
    kernels     kernels per call, and each kernel's median duration (kernels.csv)

medians over the calls, and the do_bench median of the same calls (`do_bench_us`, taken
first).  Every
call's answer is checked against the fp64 reference first.  Writes kernel_time.csv and
kernels.csv to --out; prints the table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pandas as pd  # noqa: E402
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness import timing  # noqa: E402
from normbench.harness.inputs import errors, make_inputs, reference, within_tolerances  # noqa: E402

MARK = "_l2_flush"


@triton.jit
def _l2_flush(P, N, BLOCK: tl.constexpr):
    i = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(P + i, tl.zeros([BLOCK], dtype=tl.int32), mask=i < N)


def per_call(kernels: list[tuple[str, float, float]], mark: str = MARK) -> list[list[tuple]]:
    """Split a trace's kernels (name, start µs, duration µs) into calls: each call is the
    kernels after one `mark` kernel and before the next (or the trace's end).  Kernels before
    the first mark belong to no call."""
    calls: list[list[tuple]] = []
    for k in sorted(kernels, key=lambda k: k[1]):
        if k[0] == mark:
            calls.append([])
        elif calls:
            calls[-1].append(k)
    return calls


def summarize(calls: list[list[tuple]]) -> dict:
    """Medians over calls of busy time, span and kernel count; each kernel name's median
    duration (over the calls that ran it)."""
    calls = [c for c in calls if c]
    if not calls:
        return dict(kernel_us=float("nan"), busy_p10=float("nan"), busy_p90=float("nan"),
                    span_us=float("nan"), first_us=float("nan"), after_first_us=float("nan"),
                    kernels=0, by_name={})
    busy = [sum(k[2] for k in c) for c in calls]
    end = [max(k[1] + k[2] for k in c) for c in calls]
    first = [min(c, key=lambda k: k[1]) for c in calls]
    span = [e - f[1] for e, f in zip(end, first)]
    after = [e - (f[1] + f[2]) for e, f in zip(end, first)]
    names: dict[str, list[float]] = {}
    for c in calls:
        for k in c:
            names.setdefault(k[0], []).append(k[2])
    q = statistics.quantiles(busy, n=10, method="inclusive") if len(busy) > 1 else busy * 9
    return dict(kernel_us=statistics.median(busy), busy_p10=q[0], busy_p90=q[-1],
                span_us=statistics.median(span),
                first_us=statistics.median(f[2] for f in first),
                after_first_us=statistics.median(after),
                kernels=statistics.median(len(c) for c in calls),
                by_name={n: statistics.median(v) for n, v in names.items()})


def trace_kernels(path: str) -> list[tuple[str, float, float]]:
    """(name, ts, dur) of every kernel in a torch.profiler Chrome trace."""
    with open(path) as f:
        ev = json.load(f)["traceEvents"]
    return [(e["name"], float(e["ts"]), float(e["dur"])) for e in ev
            if e.get("cat") == "kernel" and "dur" in e]


def profile(fn, calls: int, flush_buf: torch.Tensor) -> list[list[tuple]]:
    n = flush_buf.numel()
    block = 4096

    def flush():
        _l2_flush[(triton.cdiv(n, block),)](flush_buf, n, BLOCK=block)

    for _ in range(3):
        flush()
        fn()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            flush()
            fn()
        flush()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "trace.json")
        prof.export_chrome_trace(path)
        return per_call(trace_kernels(path))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impls", default="disjoint_block,disjoint_fused,torch,liger,quack",
                    help="registered names; the absent ones are skipped with a note")
    ap.add_argument("--shapes", default="16384x4096,16384x8192,65536x1024,8192x16384")
    ap.add_argument("--norms", default="rmsnorm,layernorm")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--calls", type=int, default=50, help="profiled calls per case")
    ap.add_argument("--rep", type=float, default=100, help="do_bench repetition time, ms")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("kernel_time.py: needs a CUDA GPU (the profiler reads kernel records)", file=sys.stderr)
        return 2
    flush_buf = torch.empty(64 << 20, dtype=torch.int32, device="cuda")      # 256 MiB
    rows_out, kern_out = [], []
    for shape in a.shapes.split(","):
        rows, d = map(int, shape.split("x"))
        for norm in a.norms.split(","):
            x, dy, w, mean, rstd = make_inputs(norm, rows, d, a.dtype, a.dtype, seed=rows ^ d,
                                               device="cuda")
            ref = reference(x, dy, w, mean, rstd)
            for name in a.impls.split(","):
                if name not in strategies.names() or not strategies.get(name).available:
                    print(f"kernel_time.py: {name} skipped (not available here)", file=sys.stderr)
                    continue
                e = strategies.get(name)

                def fn():
                    return e.backward(x, dy, w, mean, rstd)
                try:
                    out = fn()
                    err = max(v for v in errors(out, ref) if v is not None)
                    ok = within_tolerances(out, ref, a.dtype, a.dtype)
                    # do_bench first: a process that has run the profiler keeps some of its
                    # host overhead (on the H200, small shapes' do_bench medians doubled)
                    bench_us = timing.summarize(timing.bench_gpu(fn, 25, a.rep))["time_ms"] * 1e3
                    s = summarize(profile(fn, a.calls, flush_buf))
                except Exception as ex:          # record and go on
                    print(f"kernel_time.py: {name} {norm} {shape}: {type(ex).__name__}: {ex}",
                          file=sys.stderr)
                    continue
                rows_out.append(dict(norm=norm, rows=rows, d=d, dtype=a.dtype, impl=name,
                                     correct=ok, err=err, kernel_us=round(s["kernel_us"], 2),
                                     busy_p10=round(s["busy_p10"], 2),
                                     busy_p90=round(s["busy_p90"], 2),
                                     span_us=round(s["span_us"], 2),
                                     first_us=round(s["first_us"], 2),
                                     after_first_us=round(s["after_first_us"], 2),
                                     kernels=s["kernels"],
                                     do_bench_us=round(bench_us, 2)))
                for k, v in s["by_name"].items():
                    kern_out.append(dict(norm=norm, rows=rows, d=d, impl=name, kernel=k[:120],
                                         median_us=round(v, 2)))
                print(pd.DataFrame(rows_out[-1:]).to_string(index=False, header=len(rows_out) == 1),
                      flush=True)
    os.makedirs(a.out, exist_ok=True)
    pd.DataFrame(rows_out).to_csv(os.path.join(a.out, "kernel_time.csv"), index=False)
    pd.DataFrame(kern_out).to_csv(os.path.join(a.out, "kernels.csv"), index=False)
    print(pd.DataFrame(rows_out).to_string(index=False))
    return 0 if rows_out and all(r["correct"] for r in rows_out) else 1


if __name__ == "__main__":
    sys.exit(main())
