"""One call of one implementation at one shape, inside a profiler range, for ncu.

    python bench/profile_target.py --impl disjoint_block --norm rmsnorm --rows 65536 --d 1024
                                   [--dtype bf16] [--weight-dtype same] [--set l2_ahead=1,...]

Warm-up calls first (they compile and settle the caches of the host path), then one call
between cudaProfilerStart and cudaProfilerStop, so that `ncu --profile-from-start off`
(bench/device_ncu.sh) captures exactly the kernels of one call — ours, or a peer's.  Checks the
call against the fp64 reference, so a profile of a wrong answer cannot pass unnoticed.  Without
a GPU it runs the same calls under the interpreter (a smoke test of this script).
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402

from normbench import strategies  # noqa: E402
from normbench.harness.inputs import errors, make_inputs, reference, within_tolerances  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--impl", required=True, help="a registered name (run_bench.py list)")
    ap.add_argument("--norm", default="rmsnorm", choices=["layernorm", "rmsnorm"])
    ap.add_argument("--rows", type=int, default=65536)
    ap.add_argument("--d", type=int, default=1024)
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--weight-dtype", default="same", choices=["same", "bf16", "fp16", "fp32"])
    ap.add_argument("--set", default="", metavar="K=V,...",
                    help="launch parameters forced for --impl (strategies._tuning.OVERRIDE), "
                         "values in JSON: l2_ahead=1,num_stages=2")
    ap.add_argument("--warmup", type=int, default=3, help="calls before the profiled one")
    a = ap.parse_args()
    wd = a.dtype if a.weight_dtype == "same" else a.weight_dtype
    if a.set:
        from normbench.strategies import _tuning
        _tuning.OVERRIDE[a.impl] = {k: json.loads(v) for k, v in
                                    (kv.split("=", 1) for kv in a.set.split(","))}
    gpu = torch.cuda.is_available()
    e = strategies.get(a.impl)
    if not e.available:
        print(f"profile_target: {a.impl} is not available here: {e.reason}", file=sys.stderr)
        return 2
    x, dy, w, mean, rstd = make_inputs(a.norm, a.rows, a.d, a.dtype, wd, seed=0,
                                       device="cuda" if gpu else "cpu")
    for _ in range(a.warmup):
        e.backward(x, dy, w, mean, rstd)
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
    out = e.backward(x, dy, w, mean, rstd)
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
    ref = reference(x, dy, w, mean, rstd)
    err = max(e for e in errors(out, ref) if e is not None)
    ok = within_tolerances(out, ref, a.dtype, wd)
    print(f"{a.impl} {a.norm} {a.rows}x{a.d} {a.dtype}/{wd} {a.set}: max rel err {err:.2e} "
          f"({'correct' if ok else 'WRONG'})", file=sys.stderr)   # stdout: the profiler's CSV
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
