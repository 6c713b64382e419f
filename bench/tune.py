"""Tuning sweep on the GPU: launch parameters and GROUPS per strategy and shape.

    python bench/tune.py [--names a,b] [--shapes 16384x4096,...] [--norms layernorm] [--dtype bf16]
                         [--rep MS] [--out DIR]

For each shape it times each strategy under several launch parameters (through
`strategies._tuning.OVERRIDE`, the same hook the kernels read) and GROUPS values with do_bench
(median, L2 flushed), checks every configuration against the fp64 reference, times `torch`
(and liger/quack when importable) in the same run, and appends each measurement to tune.csv
as it goes (a cut run keeps what it measured).  Prints the best configuration per shape and
strategy, and where `groups=auto` and the default parameters land against that best.
Results and their reading go into docs/PERF_NOTES.md.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pandas as pd  # noqa: E402
import torch  # noqa: E402

import strategies  # noqa: E402
from harness import model, timing  # noqa: E402
from harness.inputs import make_inputs, reference, rel_error, tolerance  # noqa: E402
from strategies import _tuning  # noqa: E402

SHAPES = [(16384, 4096), (16384, 8192), (65536, 1024), (8192, 16384),
          (2048, 768), (4096, 1024), (4096, 4096)]
DEFAULT = "default"          # marks the configuration the shipped rules pick


def grid(name: str, rows: int, d: int, sms: int, dtype: str = "bf16"):
    """(override, groups) candidates for one strategy at rows × d; the shipped default first.

    Round 3 (docs/perf/tune-3.log): the shipped rules, GROUPS alone around them, and a few
    neighbours of the rules.  Rounds 1–2 searched wider grids (git history of this file)."""
    yield {}, None
    if name in ("disjoint_block", "grouped_atomic", "spin_lock"):
        # GROUPS alone at the default parameters: where groups=auto should land (issue 5.3)
        for g in [sms // 2, sms, 2 * sms, 4 * sms]:
            yield {}, g
    elif name == "disjoint_fused":
        for g in [33, 66, sms, 2 * sms]:       # ≤ SMs: grid-synchronised; above: last ticket
            yield {}, g
    if name == "disjoint_block":
        if dtype != "bf16":
            variants = [{"block_r": 1, "num_warps": 4}, {"block_r": 1, "num_warps": 8},
                        {"block_r": 2, "num_warps": 16}, {"prefetch": False}]
        elif d <= 1024:
            variants = [{"block_r": 2, "num_warps": 4}, {"block_r": 8, "num_warps": 4}]
        elif d <= 4096:
            variants = [{"block_r": 1, "num_warps": 4}, {"block_r": 2, "num_warps": 16}]
        elif d <= 8192:
            variants = [{"block_r": 1, "num_warps": 8}]
        else:
            variants = [{"block_r": 1, "num_warps": 32}, {"prefetch": False}]
        for ov in variants:
            yield ov, None
    elif name in ("grouped_atomic", "spin_lock"):
        for w in ([4, 8, 16] if d >= 2048 else [2, 4, 8]):
            if w != _tuning.params(name, d, rows_per_tile=1)["num_warps"]:
                yield {"num_warps": w}, None
    elif name == "atomic":
        for w in ([4, 8, 16] if d >= 2048 else [2, 4, 8]):
            yield {"num_warps": w}, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--names", default="disjoint_block,disjoint_fused,grouped_atomic,spin_lock,atomic")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--norms", default="layernorm,rmsnorm")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--rep", type=float, default=20)
    ap.add_argument("--budget-s", type=float, default=1e9, help="stop starting new shapes after this")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test under the interpreter")
    args = ap.parse_args()
    shapes = SHAPES if not args.shapes else [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")]
    gpu = args.device == "cuda"
    sms = strategies.sm_count(args.device)
    copy = timing.copy_ceiling_gbps(args.device, gpu)
    print(f"device {torch.cuda.get_device_name() if gpu else 'cpu'}  SMs {sms}  "
          f"copy ceiling {copy:.0f} GB/s", flush=True)
    names = args.names.split(",")
    peers = [n for n in ("torch", "liger", "quack") if n in strategies.names()]
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "tune.csv")
    fields = ["norm", "rows", "d", "dtype", "name", "config", "groups", "geff", "block_r",
              "num_warps", "prefetch", "us", "pct_copy", "err", "status"]
    out = open(path, "w", newline="")
    w = csv.DictWriter(out, fieldnames=fields)
    w.writeheader()
    t0 = time.time()
    for (rows, d), norm in itertools.product(shapes, args.norms.split(",")):
        if time.time() - t0 > args.budget_s:
            print(f"budget spent: skipping {norm} {rows}x{d}", flush=True)
            continue
        x, dy, wt, mean, rstd = make_inputs(norm, rows, d, args.dtype, args.dtype, seed=rows ^ d,
                                            device=args.device)
        ref = reference(x, dy, wt, mean, rstd)
        nbytes = model.bytes_moved(norm, rows, d, args.dtype, args.dtype)
        recs = []
        for name in names + peers:
            e = strategies.get(name)
            for ov, g in (grid(name, rows, d, sms, args.dtype) if name in names else [({}, None)]):
                _tuning.OVERRIDE[name] = ov
                p = _tuning.params(name, d) if name in names else {}
                try:
                    res = e.backward(x, dy, wt, mean, rstd, groups=g)
                    err = max(v for v in (rel_error(o, r) for o, r in zip(res, ref)) if v is not None)
                    ms = timing.summarize(timing.bench(
                        lambda: e.backward(x, dy, wt, mean, rstd, groups=g), 5, args.rep, gpu))["time_ms"]
                    status = "ok" if err <= tolerance(args.dtype, args.dtype) else "WRONG"
                except Exception as ex:  # record and go on
                    err, ms, status = float("nan"), float("nan"), f"{type(ex).__name__}: {str(ex)[:80]}"
                rec = dict(norm=norm, rows=rows, d=d, dtype=args.dtype, name=name,
                           config=DEFAULT if not ov and g is None else "",
                           groups=g, geff=e.effective_groups(rows, d, g),
                           block_r=p.get("block_r"), num_warps=p.get("num_warps"),
                           prefetch=p.get("prefetch"), us=round(ms * 1e3, 2),
                           pct_copy=round(model.pct(model.gbps(nbytes, ms), copy), 1) if ms == ms else None,
                           err=err, status=status)
                w.writerow(rec)
                recs.append(rec)
            _tuning.OVERRIDE.pop(name, None)
            out.flush()
        df = pd.DataFrame(recs)
        ok = df[df.status == "ok"]
        best = ok.loc[ok.groupby("name")["us"].idxmin()].set_index("name")
        dflt = ok[ok.config == DEFAULT].set_index("name")["us"]
        best["default_us"] = dflt
        best["default_vs_best"] = (dflt / best["us"]).round(3)
        print(f"\n== {norm} {rows}x{d} {args.dtype}  ({time.time() - t0:.0f}s)", flush=True)
        cols = ["geff", "block_r", "num_warps", "prefetch", "us", "pct_copy", "default_us", "default_vs_best"]
        print(best.sort_values("us")[cols].to_string(), flush=True)
        bad = df[df.status != "ok"]
        if len(bad):
            print("NOT OK:\n" + bad[["name", "groups", "block_r", "num_warps", "status"]].to_string(index=False))
    out.close()


if __name__ == "__main__":
    main()
