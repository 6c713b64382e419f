"""Host time per call, on the GPU machine: where the small shapes' time goes.

    python bench/host.py [--rows 2048 --d 768]

For each implementation: the host time of one call (a loop of calls with no synchronisation,
divided by the count, at a shape whose GPU work is much shorter than the host work), with the
direct launch path (strategies._launch) on and off, and the do_bench median for comparison;
then a cProfile of the calls of the fastest deterministic strategy.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import triton.testing  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness.inputs import make_inputs  # noqa: E402
from normbench.strategies import _launch  # noqa: E402


def host_us(fn, n=300) -> float:
    fn()
    torch.cuda.synchronize()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    dt = time.perf_counter() - t
    torch.cuda.synchronize()
    return dt / n * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2048)
    ap.add_argument("--d", type=int, default=768)
    ap.add_argument("--names", default="disjoint_block,disjoint_fused,grouped_atomic,atomic,torch,liger,quack")
    args = ap.parse_args()
    x, dy, w, mean, rstd = make_inputs("layernorm", args.rows, args.d, "bf16", "bf16", seed=0,
                                       device="cuda")
    print(f"host time per call, layernorm {args.rows}x{args.d} bf16 (µs)")
    print(f"{'name':16s} {'host fast':>10s} {'host plain':>10s} {'do_bench':>9s}")
    for name in args.names.split(","):
        if name not in strategies.names():
            continue
        e = strategies.get(name)
        call = lambda: e.backward(x, dy, w, mean, rstd)  # noqa: E731
        _launch._FAST = False
        plain = host_us(call)
        _launch._FAST = True
        fast = host_us(call)
        bench = triton.testing.do_bench(call, warmup=10, rep=50, return_mode="median") * 1e3
        print(f"{name:16s} {fast:10.1f} {plain:10.1f} {bench:9.1f}", flush=True)
    pieces = {
        "torch.empty": lambda: torch.empty((264, args.d), dtype=torch.float32, device="cuda"),
        "check_args": lambda: strategies._args.check_args(x, dy, w, mean, rstd, 264),
        "prepare": lambda: _launch.prepare(x, dy, w, mean, rstd),
        "x.sum (one torch op)": lambda: x.sum(),
    }
    for k, f in pieces.items():
        print(f"{k:22s} {host_us(f, 2000):6.1f}")
    e = strategies.get("disjoint_block")
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(300):
        e.backward(x, dy, w, mean, rstd)
    pr.disable()
    torch.cuda.synchronize()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(18)
    print(s.getvalue())


if __name__ == "__main__":
    main()
