"""The partial rows' reduce kernel (strategies/reduce.py) under other launch parameters, on the GPU.

    python bench/reduce_tune.py [--shapes 8192x16384,...] [--norms layernorm,rmsnorm]
                                [--names disjoint_block] [--rep MS] [--out DIR] [--device cuda]

For each shape and norm it runs each strategy's whole call (bf16) with the reduce at the
shipped parameters and at each candidate of `CANDIDATES` (through
`strategies._tuning.OVERRIDE["reduce"]`, which `reduce.reduce_params` reads), checks every call
against the fp64 reference and its bits against a second call, and times it with do_bench (L2
flushed before each sample: the harness's timing), then the reduce alone on that call's
partial rows (L2 flushed too, so the partials come from DRAM, where in a call the main kernel
has just written them).  Appends each to reduce.csv as it goes; prints the best per shape.
The arguments are checked before anything is timed: a shape that is not ROWSxD with both
>= 1 or is given twice, a --rep not finite and > 0, a --device this machine lacks, an unknown
norm or a name without the reduce kernel is one line, exit 2.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


from normbench import strategies  # noqa: E402
from normbench.harness import measure, timing  # noqa: E402
from normbench.harness.config_fields import NORMS  # noqa: E402
from normbench.harness.inputs import errors, make_inputs, reference, tolerance  # noqa: E402
from normbench.strategies import _launch, _tuning, reduce  # noqa: E402
import tune  # noqa: E402  (bench/tune.py's parse_shapes)

SHAPES = "65536x1024,32768x3072,16384x4096,16384x8192,8192x12288,8192x16384"


def candidates(has_b: bool):
    """{} (the shipped parameters) first, then more columns' programs, more rows a step, more
    warps and, with a bias, both partials in one loop."""
    yield {}
    for bn, bg, warps in itertools.product((32, 64), (128, 256), (4, 8)):
        for paired in ((False, True) if has_b else (False,)):
            yield dict(BLOCK_N=bn, BLOCK_G=bg, num_warps=warps, PAIRED=paired)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--norms", default="layernorm,rmsnorm")
    ap.add_argument("--names", default="disjoint_block")
    ap.add_argument("--rep", type=float, default=20, help="do_bench repetition time, ms")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--device", default="cuda")
    a = ap.parse_args()
    # before anything is timed: ROWSxD, both >= 1, each once; --rep and --device
    if why := tune.shapes_problem(a.shapes) or tune.run_problem(a.rep, a.device):
        ap.error(why)
    shapes = [(text, *tune.parse_shapes(text)[0]) for text in a.shapes.split(",")]
    for norm in a.norms.split(","):
        if norm not in NORMS:
            ap.error(f"--norms: {norm!r} is not one of {', '.join(NORMS)}")
    gpu = a.device == "cuda"
    for name in a.names.split(","):     # before anything is timed: the override reaches only
        try:                            # a registered reduce kernel (`reduce_kernel`)
            e = strategies.get(name)
        except KeyError as err:
            ap.error(f"--names: {err.args[0]}")
        if not e.reduce_kernel:
            ap.error(f"--names {name}: its registration declares no separate reduce kernel "
                     "(reduce.reduce_partials): the candidates would time its own code unchanged")
    os.makedirs(a.out, exist_ok=True)
    fields = ["norm", "rows", "d", "name", "groups", "override", "call_us", "reduce_us", "err",
              "status"]
    f = open(os.path.join(a.out, "reduce.csv"), "w", newline="")
    w = csv.DictWriter(f, fieldnames=fields)
    w.writeheader()
    t0 = time.time()
    for (shape, rows, d), norm, name in itertools.product(shapes, a.norms.split(","),
                                                          a.names.split(",")):
        x, dy, wt, mean, rstd = make_inputs(norm, rows, d, "bf16", "bf16", seed=rows ^ d,
                                            device=a.device)
        ref = reference(x, dy, wt, mean, rstd)
        e = strategies.get(name)
        g = e.effective_groups(rows, d, None)
        best = None
        for ov in candidates(mean is not None):
            _tuning.OVERRIDE["reduce"] = ov
            try:
                out = e.backward(x, dy, wt, mean, rstd)
                err = max(v for v in errors(out, ref) if v is not None)
                again = e.backward(x, dy, wt, mean, rstd)
                same = all(measure.same_bits(o, p) for o, p in zip(out, again))
                call = timing.summarize(timing.bench(
                    lambda: e.backward(x, dy, wt, mean, rstd), 5, a.rep, gpu))["time_ms"]
                pw, pb = _launch.scratch(g, d, mean is not None, x.device)
                red = timing.summarize(timing.bench(
                    lambda: reduce.reduce_partials(pw, pb, wt), 5, a.rep, gpu))["time_ms"]
                status = ("ok" if err <= tolerance("bf16", "bf16") else "WRONG") + ("" if same else " NOT-REPEATED")
            except Exception as ex:     # record and go on
                call, red, err, status = float("nan"), float("nan"), float("nan"), f"{type(ex).__name__}: {str(ex)[:80]}"
            rec = dict(norm=norm, rows=rows, d=d, name=name, groups=g,
                       override=json.dumps(ov, sort_keys=True) if ov else "",
                       call_us=round(call * 1e3, 2), reduce_us=round(red * 1e3, 2), err=err,
                       status=status)
            w.writerow(rec)
            f.flush()
            if status == "ok" and (best is None or rec["call_us"] < best["call_us"]):
                best = rec
            if not ov:
                shipped = rec
        _tuning.OVERRIDE.pop("reduce", None)
        print(f"{norm} {shape} {name} G={g} ({time.time() - t0:.0f} s): shipped call "
              f"{shipped['call_us']} µs, reduce {shipped['reduce_us']} | best call "
              f"{best and best['call_us']} reduce {best and best['reduce_us']} "
              f"{best and best['override']}", flush=True)
    f.close()


if __name__ == "__main__":
    main()
