"""What the L2 flush before each sample costs the sample (issue 16's "% of the copy ceiling").

    python bench/flush_check.py [--shapes layernorm:16384x4096,...] [--names a,b] [--dtype bf16]
                                [--weight-dtype same] [--n 60] [--out FILE.csv]

do_bench (and the harness's GPU-time clock) flushes L2 before every sample by writing a
256 MiB buffer (`zero_`): the L2 is left full of *dirty* lines, which the timed call then
writes back to memory as it evicts them — tens of MB of traffic that the bytes model does not
count, and that the copy ceiling (a 2 GiB copy) pays once over 4 GiB of traffic.  This script
times the same call three ways, side by side, to measure that term instead of guessing it:

  dirty    the flush as do_bench does it (256 MiB written), then the call;
  clean    the same flush, then a read of another 256 MiB buffer (the dirty lines are written
           back before the start event; L2 holds clean lines of neither input);
  steady   no flush: K calls back to back, their total over K (the state a training step
           leaves: each call inherits the dirty lines of the one before, inputs ≫ L2).

and a device-to-device copy of the shape's own model bytes (and of 2 GiB) the same three ways,
so that "% of copy" can be read against a copy of the same size under the same clock.  Every
implementation's output is checked against fp64 once.  Results: a table on stdout, one CSV row
per (case, implementation, mode).
"""
from __future__ import annotations

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness import model  # noqa: E402
from normbench.harness.inputs import make_inputs, reference, within_tolerances  # noqa: E402

FLUSH_BYTES = 256 << 20
MODES = ("dirty", "clean", "steady")


def gpu_args(ap: argparse.ArgumentParser, shapes: str, n: int) -> None:
    """The options this script and bench/timeline.py share: the cases and samples a case."""
    ap.add_argument("--shapes", default=shapes, help="norm:ROWSxD,...")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--weight-dtype", default="same")
    ap.add_argument("--n", type=int, default=n)
    ap.add_argument("--out", default=None)


def gpu_setup(args, why: str):
    """(device, the flush buffer, the weight dtype) — or exit with `why` where there is no GPU."""
    if not torch.cuda.is_available():
        sys.exit(why)
    dev = torch.device("cuda")
    flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=dev)
    return dev, flush, args.dtype if args.weight_dtype == "same" else args.weight_dtype


def cases(shapes: str):
    """(norm, rows, d) of each `norm:ROWSxD` in the comma-separated `shapes`."""
    for spec in shapes.split(","):
        norm, shape = spec.split(":")
        rows, d = (int(v) for v in shape.split("x"))
        yield norm, rows, d


def timed(fn, mode: str, n: int, flush, reader, k: int = 20) -> float:
    """Median µs of `fn` under `mode` (see the module docstring)."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(n)]
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    for a, b in ev:
        if mode == "steady":
            a.record()
            for _ in range(k):
                fn()
            b.record()
            continue
        flush.zero_()
        if mode == "clean":
            reader.sum()
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) * 1e3 for a, b in ev)
    med = t[len(t) // 2]
    return med / k if mode == "steady" else med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    gpu_args(ap, "layernorm:16384x4096,rmsnorm:16384x4096,layernorm:16384x8192,"
             "layernorm:65536x1024,layernorm:8192x16384", 60)
    ap.add_argument("--names", default="disjoint_block,disjoint_smem,torch,quack")
    args = ap.parse_args()
    dev, flush, wd = gpu_setup(args, "flush_check: needs a CUDA GPU (it times the L2 flush of one)")
    reader = torch.ones(FLUSH_BYTES // 4, dtype=torch.int32, device=dev)
    avail = set(strategies.names())
    names = [s for s in args.names.split(",") if s in avail]
    rows_out = []

    def emit(case, name, mode, us, nbytes, ok=""):
        rows_out.append(dict(case=case, name=name, mode=mode, us=round(us, 2),
                             bytes=nbytes, gbps=round(nbytes / us / 1e3, 1), correct=ok))

    big = 2 << 30
    src = torch.empty(big // 4, dtype=torch.float32, device=dev).uniform_()
    dst = torch.empty_like(src)
    for mode in MODES:
        emit("copy 2GiB", "copy", mode, timed(lambda: dst.copy_(src), mode, 20, flush, reader, 3),
             2 * big)
    ceiling = {r["mode"]: r["gbps"] for r in rows_out}
    for norm, rows, d in cases(args.shapes):
        nbytes = model.bytes_moved(norm, rows, d, args.dtype, wd)
        case = f"{norm} {rows}x{d} {args.dtype}/{wd}"
        half = nbytes // 2 // 4
        s, t = src[:half], dst[:half]
        for mode in MODES:
            emit(case, "copy", mode, timed(lambda: t.copy_(s), mode, args.n, flush, reader), nbytes)
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, args.dtype, wd, seed=rows ^ d, device=dev)
        ref = reference(x, dy, w, mean, rstd)
        for name in names:
            impl = strategies.get(name)
            try:
                ok = within_tolerances(impl.backward(x, dy, w, mean, rstd, groups=None), ref,
                                       args.dtype, wd)
                for mode in MODES:
                    us = timed(lambda: impl.backward(x, dy, w, mean, rstd, groups=None), mode,
                               args.n, flush, reader)
                    emit(case, name, mode, us, nbytes, "yes" if ok else "NO")
            except Exception as e:  # one implementation's failure is printed, the rest go on
                print(f"{case} {name}: {type(e).__name__}: {e}", flush=True)
        del x, dy, w, mean, rstd, ref
        torch.cuda.empty_cache()
        for r in rows_out:
            if r["case"] == case:
                print(f"{case:32s} {r['name']:15s} {r['mode']:7s} {r['us']:9.2f} µs "
                      f"{100 * r['gbps'] / ceiling[r['mode']]:5.1f} % of the 2 GiB copy "
                      f"({r['mode']}) {r['correct']}", flush=True)
    print("copy 2 GiB GB/s:", ceiling)
    if args.out:
        with open(args.out, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(rows_out[0]))
            wr.writeheader()
            wr.writerows(rows_out)


if __name__ == "__main__":
    main()
