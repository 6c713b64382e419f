"""Launch parameters timed in turn, round after round: is a difference the configuration's, or
the moment's?

    python bench/ab_repeat.py --name disjoint_strided --norm layernorm --shapes 32768x3072
        --dtype bf16 [--weight-dtype same] --configs '{"num_warps": 16}' '{"num_warps": 8}'
        [--rounds 6] [--fresh-inputs] [--rep MS] [--out DIR]

A configuration may carry a "reduce" entry — the partial rows' reduce kernel's parameters
(`strategies/reduce.py`'s BLOCK_G, BLOCK_N, num_warps, PAIRED, through
`OVERRIDE["reduce"]`): '{"reduce": {"BLOCK_G": 256, "BLOCK_N": 16}}' times the strategy's
rule with that reduce; a "groups" entry, the GROUPS it is called with ('{"groups": 128}';
none: its auto); and a "strategy" entry, another registered strategy (or peer) to call instead
of --name with the rest of the configuration as its OVERRIDE ('{"strategy": "disjoint_fused",
"interleave": true}'): strategies timed in turn against each other.

With --gpu-time each timing also takes the harness's GPU time (`harness.timing.gpu_time`: the
call captured in a CUDA graph and replayed, the L2 flushed before each replay — what the
targets' speed ratios count beside the call time) into ab.csv's gpu_us and the summary.

bench/tune.py times each configuration once, one after the other; round 22 (docs/PERF_NOTES.md)
saw the same configuration read 150 µs in one process and 186-210 µs in another, and the
rule's own two timings of one process differ by 28 % once.  Here every configuration (a
`strategies._tuning.OVERRIDE` for --name, JSON) is timed once a round, in an order rotated
each round (so none is always first after the inputs are made), for --rounds rounds —
with --fresh-inputs on newly allocated inputs each round (other addresses: whether the
reading follows the allocation) — do_bench median with the L2 flushed, as tune.py times.
Each configuration's answer is checked against the fp64 reference (each output within its
dtype's tolerance) the first time it runs on each set of inputs.  Writes ab.csv (one row a
timing) to --out and prints, per shape and configuration, the median, min and max over the
rounds.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from normbench import strategies  # noqa: E402
from normbench.harness import model, timing  # noqa: E402
from normbench.harness.inputs import make_inputs, reference, within_tolerances  # noqa: E402
from normbench.strategies import _tuning  # noqa: E402


def apply(config: dict, name: str) -> tuple[str, int | None]:
    """Set `strategies._tuning.OVERRIDE` to `config`: its "reduce" entry for the reduce kernel,
    the rest for its "strategy" (default `name`; an empty rest: the strategy's rule) but
    "groups" — the GROUPS to call it with (None: its auto). Returns (strategy, groups)."""
    rest = dict(config)
    red = rest.pop("reduce", None)
    groups = rest.pop("groups", None)
    name = rest.pop("strategy", name)
    _tuning.OVERRIDE.clear()
    _tuning.OVERRIDE[name] = rest
    if red is not None:
        _tuning.OVERRIDE["reduce"] = dict(red)
    return name, groups


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", default="disjoint_strided",
                    help="the strategy whose parameters are timed")
    ap.add_argument("--norm", default="layernorm", help="layernorm or rmsnorm")
    ap.add_argument("--shapes", default="32768x3072", help="ROWSxD,...")
    ap.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32 (x, dy)")
    ap.add_argument("--weight-dtype", default="same", help="same, bf16, fp16 or fp32")
    ap.add_argument("--configs", nargs="+", default=["{}"],
                    help="OVERRIDE dicts, JSON ({} = the rule)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--fresh-inputs", action="store_true",
                    help="new inputs (allocations) each round")
    ap.add_argument("--rep", type=float, default=25, help="do_bench repetition time, ms")
    ap.add_argument("--gpu-time", action="store_true",
                    help="also the GPU time of each timing (CUDA graph replays; none on CPU)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test under the interpreter")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    configs = [json.loads(c) for c in args.configs]
    wd = args.dtype if args.weight_dtype == "same" else args.weight_dtype
    gpu = args.device == "cuda"
    entries = {n: strategies.get(n) for n in {c.get("strategy", args.name) for c in configs}}
    for name, e in entries.items():
        if not e.available:     # nothing to time here: say why in one line
            print(f"ab_repeat: {name} is not available on this machine: {e.reason}",
                  file=sys.stderr)
            return 2
    copy = timing.copy_ceiling_gbps(args.device, gpu)
    os.makedirs(args.out, exist_ok=True)
    rows_out = []
    with open(os.path.join(args.out, "ab.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["shape", "round", "slot", "config", "us", "pct_copy",
                                          "gpu_us", "status"])
        w.writeheader()
        for shape in args.shapes.split(","):
            rows, d = map(int, shape.split("x"))
            nbytes = model.bytes_moved(args.norm, rows, d, args.dtype, wd)
            inputs = ref = None
            for r in range(args.rounds):
                if inputs is None or args.fresh_inputs:
                    inputs = make_inputs(args.norm, rows, d, args.dtype, wd, seed=rows ^ d ^ r,
                                         device=args.device)
                    ref, checked = reference(*inputs), set()
                order = [(k + r) % len(configs) for k in range(len(configs))]
                for slot, k in enumerate(order):
                    name, g = apply(configs[k], args.name)

                    def call():
                        return entries[name].backward(*inputs, groups=g)
                    status = "ok"
                    if k not in checked:
                        checked.add(k)
                        if not within_tolerances(call(), ref, args.dtype, wd):
                            status = "WRONG"
                    ms = timing.summarize(timing.bench(call, 5, args.rep, gpu))["time_ms"]
                    gms = (timing.gpu_time(call, time_ms=ms, rep_ms=args.rep, on_gpu=gpu)
                           ["gpu_time_ms"] if args.gpu_time else None)
                    rec = dict(shape=shape, round=r, slot=slot, config=args.configs[k],
                               us=round(ms * 1e3, 2),
                               pct_copy=round(model.pct(model.gbps(nbytes, ms), copy), 1),
                               gpu_us=None if gms is None else round(gms * 1e3, 2),
                               status=status)
                    w.writerow(rec)
                    f.flush()
                    rows_out.append(rec)
            _tuning.OVERRIDE.clear()
    who = args.name + (" (or a configuration's strategy)" if any("strategy" in c for c in configs)
                       else "")
    print(f"{who} {args.norm} {args.dtype}/{wd}, {args.rounds} rounds"
          f"{', fresh inputs each' if args.fresh_inputs else ''}; µs median [min, max]; copy "
          f"ceiling {copy:.0f} GB/s")
    for shape in args.shapes.split(","):
        for c in args.configs:
            mine = [x for x in rows_out if x["shape"] == shape and x["config"] == c]
            us = [x["us"] for x in mine]
            bad = sum(x["status"] != "ok" for x in mine)
            gus = [x["gpu_us"] for x in mine if x["gpu_us"] is not None]
            gpu_part = f"  GPU {statistics.median(gus):.1f} [{min(gus):.1f}, {max(gus):.1f}]" \
                if gus else ""
            print(f"  {shape} {c:40s} {statistics.median(us):8.1f} [{min(us):.1f}, {max(us):.1f}]"
                  f"  {' '.join(f'{u:.0f}' for u in us)}{gpu_part}"
                  f"{f'  WRONG x{bad}' if bad else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
