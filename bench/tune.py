"""Tuning sweep on the GPU: launch parameters and GROUPS per strategy and shape.

    python bench/tune.py [--quick] [--out DIR]

For each shape (bf16, LayerNorm and RMSNorm) it times every strategy under several launch
parameters (harness `_tuning.OVERRIDE`) and GROUPS values with do_bench (median, L2 flushed),
checks each configuration against the fp64 reference, and times `torch` (and liger/quack when
importable) in the same run.  Writes tune.csv and prints the best configuration per shape.
Results and their reading go into docs/PERF_NOTES.md.
"""
from __future__ import annotations

import argparse
import itertools
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pandas as pd  # noqa: E402
import torch  # noqa: E402
import triton.testing  # noqa: E402

import strategies  # noqa: E402
from harness import model, timing  # noqa: E402
from harness.inputs import make_inputs, reference, rel_error, tolerance  # noqa: E402
from strategies import _tuning  # noqa: E402

SHAPES = [(16384, 4096), (16384, 8192), (65536, 1024), (8192, 16384),
          (2048, 768), (4096, 1024), (4096, 4096)]


def grid(name: str, d: int, sms: int):
    """(override, groups) candidates for one strategy at width d."""
    warps = [4, 8, 16] if d >= 2048 else [2, 4, 8]
    if name == "disjoint_block":
        brs = [2, 4] if d >= 2048 else [4, 8, 16]
        ws = [8, 16] if d >= 2048 else [4, 8]
        for br, w, g, st in itertools.product(brs, ws, [sms, 2 * sms], [1, 2]):
            yield {"block_r": br, "num_warps": w, "num_stages": st}, g
    elif name == "disjoint_fused":
        brs = [2, 4, 8] if d >= 2048 else [4, 8, 16]
        for br, w, g in itertools.product(brs, [4, 8], [16, 33, 66]):
            yield {"block_r": br, "num_warps": w}, g
    elif name in ("grouped_atomic", "spin_lock"):
        for w, g in itertools.product(warps, [sms // 2, sms, 2 * sms, 4 * sms]):
            yield {"num_warps": w}, g
    elif name == "atomic":
        for w in warps:
            yield {"num_warps": w}, None
    else:
        yield {}, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--names", default="disjoint_block,disjoint_fused,grouped_atomic,spin_lock,atomic")
    ap.add_argument("--shapes", default="")
    ap.add_argument("--rep", type=float, default=40)
    args = ap.parse_args()
    shapes = SHAPES if not args.shapes else [tuple(map(int, s.split("x"))) for s in args.shapes.split(",")]
    sms = strategies.sm_count()
    copy = timing.copy_ceiling_gbps("cuda", True)
    print(f"device {torch.cuda.get_device_name()}  SMs {sms}  copy ceiling {copy:.0f} GB/s", flush=True)
    rows_out = []
    names = args.names.split(",")
    peers = [n for n in ("torch", "liger", "quack") if n in strategies.names()]
    t0 = time.time()
    for (rows, d), norm in itertools.product(shapes, ["layernorm", "rmsnorm"]):
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, "bf16", "bf16", seed=rows ^ d, device="cuda")
        ref = reference(x, dy, w, mean, rstd)
        nbytes = model.bytes_moved(norm, rows, d, "bf16", "bf16")
        for name in names + peers:
            if name == "disjoint_fused" and rows * d > 4096 * 4096:
                continue   # one program reduces: only a candidate at small shapes
            e = strategies.get(name)
            for ov, g in grid(name, d, sms):
                _tuning.OVERRIDE[name] = ov
                try:
                    out = e.backward(x, dy, w, mean, rstd, groups=g)
                    err = max(v for v in (rel_error(o, r) for o, r in zip(out, ref)) if v is not None)
                    ms = triton.testing.do_bench(lambda: e.backward(x, dy, w, mean, rstd, groups=g),
                                                 warmup=10, rep=args.rep, return_mode="median")
                    status = "ok" if err <= tolerance("bf16", "bf16") else "WRONG"
                except Exception as ex:  # record and go on
                    err, ms, status = float("nan"), float("nan"), f"{type(ex).__name__}: {str(ex)[:80]}"
                rows_out.append(dict(norm=norm, rows=rows, d=d, name=name, groups=g,
                                     geff=e.effective_groups(rows, d, g), **ov, us=ms * 1e3,
                                     pct_copy=model.pct(model.gbps(nbytes, ms), copy) if ms == ms else None,
                                     err=err, status=status))
            _tuning.OVERRIDE.pop(name, None)
        df = pd.DataFrame(rows_out)
        cur = df[(df.norm == norm) & (df.rows == rows) & (df.d == d) & (df.status == "ok")]
        best = cur.loc[cur.groupby("name")["us"].idxmin()].sort_values("us")
        print(f"\n== {norm} {rows}x{d}  ({time.time() - t0:.0f}s)", flush=True)
        print(best[[c for c in ["name", "groups", "block_r", "num_warps", "num_stages", "us", "pct_copy"] if c in best]].to_string(index=False), flush=True)
    df = pd.DataFrame(rows_out)
    df.to_csv(os.path.join(args.out, "tune.csv"), index=False)
    bad = df[df.status != "ok"]
    if len(bad):
        print("\nNOT OK:\n" + bad.to_string(index=False))


if __name__ == "__main__":
    main()
