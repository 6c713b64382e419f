"""Launch parameters timed in turn, round after round: is a difference the configuration's, or
the moment's?

    python bench/ab_repeat.py --name disjoint_strided --norm layernorm --shapes 32768x3072
        --dtype bf16 [--weight-dtype same] --configs '{"num_warps": 16}' '{"num_warps": 8}'
        [--rounds 6] [--fresh-inputs] [--rep MS] [--out DIR]

A configuration may carry a "reduce" entry — the partial rows' reduce kernel's parameters
(`strategies/reduce.py`'s BLOCK_G, BLOCK_N, num_warps, PAIRED, through
`OVERRIDE["reduce"]`): '{"reduce": {"BLOCK_G": 256, "BLOCK_N": 16}}' times the strategy's
rule with that reduce; a "groups" entry, the GROUPS it is called with ('{"groups": 128}';
none: its auto); a "raw_groups" entry, the GROUPS its kernel is launched with as given, past
the registry's cap (`Entry.effective_groups`: the kernel called as before the cap — '{"raw_groups":
264}' against the capped rule, where a cap binds); an "inputs" entry, "alike", times it on rows
drawn alike (the recipe `make_inputs` had until c55c96a: x ~ N(0,1)·2 + 0.5, dy ~ N(0,1)), made
beside the default inputs each round (whether an input's values move a timing); and a "strategy"
entry, another registered strategy (or peer) to call instead of --name with the rest of the
configuration as its OVERRIDE ('{"strategy": "disjoint_fused", "interleave": true}'):
strategies timed in turn against each other.

Every configuration is checked before anything is timed (`check_configs`): one that is not a
JSON object, names an unknown tuning key (`_tuning.params` refuses it: a typo would time the
rule twice) or one that would time nothing or the wrong kernel, carries "groups" for a
strategy that takes none, or "reduce" for a strategy whose registration declares no reduce
kernel (atomic; disjoint_fused, which sums its partial rows in-kernel) or with a key or value
the reduce does not take (`reduce.check_override`) is refused in one line,
`ab_repeat: config N (JSON): <why>`, exit 2.  So is, at any of the shapes, a configuration
that launches what an earlier one does, or one with a key set to a value other than its
rule's that changes nothing that launches there (`check_launches`: each call captured by
`strategies._launch.capture` without running a kernel — on a GPU the compiled kernels'
code is compared, on a CPU their constexpr parameters).

With --gpu-time each timing also takes the harness's GPU time (`harness.timing.gpu_time`: the
call captured in a CUDA graph and replayed, the L2 flushed before each replay — what the
targets' speed ratios count beside the call time) into ab.csv's gpu_us and the summary.
On a GPU each timing also takes the host's time of one call (bench/host.py's `host_us`: 20
calls queued without waiting for the GPU, a few dozen launches that never fill the launch
queue) into ab.csv's host_us and the summary ("host"): configurations whose host times differ
differ in call time by what the L2 flush does not hide (round 50 on an H200, session 54: an
override's parameters worked out again at every call read 2-7 µs slower by call time, 1 µs
faster by GPU time).

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
rounds.  A timing that raises (a failure at run time, not bad input) is recorded as its row's
status, "error: <type>: <message>", with no time, and the sweep goes on; the summary leaves
such rows out of its figures and counts them ("ERROR xN").  The exit status is 1 where any
timing was an error or WRONG (every row written all the same), 0 where all were ok.

The arguments are checked before anything is timed or written, one line and exit 2 where
they cannot run: each shape ROWSxD with both >= 1 and none given twice, --rounds >= 1, --rep
finite and > 0, --norm layernorm or rmsnorm, a --device this machine has (no CUDA here:
--device cpu), and no configuration text given twice.
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
import host  # noqa: E402  (bench/host.py's host_us; after normbench, which sets up Triton)
import tune  # noqa: E402  (bench/tune.py's parse_shapes)
from normbench.harness.config_fields import NORMS  # noqa: E402
import torch  # noqa: E402

from normbench.harness.inputs import (DTYPES, EPS, make_inputs, reference,  # noqa: E402
                                      within_tolerances)
from normbench.strategies import _device, _launch, _tuning, reduce  # noqa: E402


def alike_inputs(norm: str, rows: int, d: int, dtype: str, weight_dtype: str, *, seed: int,
                 device):
    """x, dy, weight, mean, rstd with every row drawn alike: `make_inputs`' recipe until
    c55c96a (x ~ N(0, 1)·2 + 0.5, dy ~ N(0, 1), weight 1 + N(0, 0.5²)), for a timing whose
    only difference is the inputs' values."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    dt, wdt = DTYPES[dtype], DTYPES[weight_dtype]
    x = (torch.randn(rows, d, generator=g) * 2.0 + 0.5).to(dt).to(device)
    dy = torch.randn(rows, d, generator=g).to(dt).to(device)
    weight = (1.0 + 0.5 * torch.randn(d, generator=g)).to(wdt).to(device)
    xf = x.float()
    mean = xf.mean(dim=1) if norm == "layernorm" else None
    var = xf.var(dim=1, unbiased=False) if mean is not None else (xf * xf).mean(dim=1)
    return x, dy, weight, mean, torch.rsqrt(var + EPS)


INPUTS = {"default": make_inputs, "alike": alike_inputs}


def blank_inputs(norm, rows, d, dtype, weight_dtype, device):
    """Inputs of the case's shapes and dtypes, uninitialised: what a call under
    `_launch.capture` needs (it runs no kernel, so reads no value)."""
    dt, wd = DTYPES[dtype], DTYPES[weight_dtype]
    x = torch.empty(rows, d, dtype=dt, device=device)
    stat = torch.empty(rows, dtype=torch.float32, device=device)
    return (x, torch.empty_like(x), torch.empty(d, dtype=wd, device=device),
            stat if norm == "layernorm" else None, torch.empty_like(stat))


def launched(config: dict, name: str, inputs, code: bool) -> tuple:
    """What one call under `config` launches at `inputs` (`_launch.capture`: the kernels,
    grids, run-time scalars and constexpr parameters — with `code`, the compiled kernels'
    PTX in place of the constexprs), or None where its strategy cannot run here.  Leaves
    `_tuning.OVERRIDE` as it found it."""
    saved = dict(_tuning.OVERRIDE)
    try:
        who, g, raw, _ = apply(config, name)
        e = strategies.get(who)
        if not e.available:
            return None
        with _launch.capture(code) as got:
            e.fn(*inputs, groups=g) if raw else e.backward(*inputs, groups=g)
        return who, tuple(got)
    finally:
        _tuning.OVERRIDE.clear()
        _tuning.OVERRIDE.update(saved)


def _without(config: dict, key: tuple) -> dict:
    """`config` less one of its keys: ("reduce", k) one of the reduce's, (k,) any other."""
    c = {k: (dict(v) if k == "reduce" else v) for k, v in config.items()}
    if key[0] == "reduce" and len(key) == 2:
        del c["reduce"][key[1]]
        if not c["reduce"]:
            del c["reduce"]
    else:
        del c[key[0]]
    return c


def _tried_keys(config: dict, who: str, d: int, has_b: bool, mine: tuple) -> list[tuple]:
    """The keys of `config` that set an option to a value other than its rule's own at d
    (a key equal to the rule's value pins it: no change, and none claimed): each of the
    strategy's launch options, and each of the reduce's (its rule's values read at the G
    partial rows `mine`'s reduce launch took).  Not GROUPS (the registry's cap, recorded as
    groups_effective), "inputs" nor "strategy"."""
    rule = _tuning.RULES[who].params(d) if who in _tuning.RULES else {}
    keys = [(k,) for k, v in config.items()
            if k not in ("reduce", "groups", "raw_groups", "inputs", "strategy")
            and not (k in rule and rule[k] == v)]
    red = config.get("reduce", {})
    if red:
        g = next((int(call[2][0]) for call in mine[1] if call[0] == "_reduce_kernel"), None)
        saved = _tuning.OVERRIDE.pop("reduce", None)
        try:
            own = reduce.reduce_params(g, d, has_b) if g else {}
        finally:
            if saved is not None:
                _tuning.OVERRIDE["reduce"] = saved
        keys += [("reduce", k) for k, v in red.items() if own.get(k, not v) != v]
    return keys


def check_launches(configs: list[dict], texts: list[str], name: str,
                   shapes: list[tuple[int, int]], norm: str, dtype: str, weight_dtype: str,
                   device: str) -> None:
    """At every shape, what each configuration launches (`launched`), without running it:
    refused, `ab_repeat: config N (JSON): <why>` and SystemExit(2), where a configuration
    launches what an earlier one does (the same timing under two names: a GROUPS the cap
    brings back to another's, stages that shared memory caps back to the rule's), or where
    one of its keys set to a value other than its rule's changes nothing that runs there —
    the configuration without it launches the same (an option that path never reads).  A key
    equal to the rule's own value pins it and is let be.  On a GPU the kernels are compiled and their code compared,
    so a constexpr that no path of the kernel reads counts as no change too; on a CPU the
    constexpr values are compared, a weaker check."""
    code = device != "cpu" and torch.cuda.is_available() and not _device.interpreted()
    how = " (the same compiled code)" if code else (
        " on this machine (the Triton interpreter: constexprs compared, and pdl and l2_ahead "
        "are off here — on a GPU it may differ; --no-launch-check times it all the same)")
    for rows, d in shapes:
        inputs = blank_inputs(norm, rows, d, dtype, weight_dtype, device)
        at = f"{norm} {rows}x{d} {dtype}/{weight_dtype}"
        seen: dict = {}
        for n, (c, text) in enumerate(zip(configs, texts), 1):
            def refuse(why):
                print(f"ab_repeat: config {n} ({text}): {why}", file=sys.stderr)
                raise SystemExit(2)
            try:
                mine = launched(c, name, inputs, code)
            except Exception as err:        # a value of the wrong type, a kernel that fails
                refuse(f"at {at}: {type(err).__name__}: "     # to compile: one line, not a
                       f"{' '.join(str(err).split())[:300]}")  # traceback
            if mine is None:
                continue
            same = (c.get("inputs", "default"), mine)     # rows drawn otherwise: a change
            if same in seen:
                refuse(f"launches at {at} what config {seen[same]} does{how}: the same "
                       "kernels, grids and parameters would be timed twice under two names")
            seen[same] = n
            who = c.get("strategy", name)
            for key in _tried_keys(c, who, d, norm == "layernorm", mine):
                try:
                    other = launched(_without(c, key), name, inputs, code)
                except Exception:
                    continue        # without it the configuration is refused: it matters
                if other == mine:
                    label = f"reduce option {key[1]!r}" if len(key) == 2 else repr(key[0])
                    refuse(f"{label} changes nothing that launches at {at}{how}: without it "
                           "the same kernels, grids and parameters run")


def check_configs(configs: list[str], name: str, shapes: list[tuple[int, int]]) -> list[dict]:
    """Each --configs entry parsed and tried before anything is timed: JSON of an object;
    "groups"/"raw_groups" only for a strategy that takes GROUPS, "reduce" only for one whose
    registration declares the reduce kernel (`reduce_kernel`: not atomic, nor disjoint_fused,
    which sums its partial rows in-kernel) and only with the reduce's own keys
    (`reduce.check_override`); "groups" or "raw_groups" (not both) a whole number >= 1;
    "inputs" one of INPUTS; its "strategy" a registered one's name; no text twice; and
    `_tuning.params` under its override at every shape (which refuses unknown keys and those
    that would time nothing or the wrong kernel).  Returns the parsed configurations; raises
    SystemExit(2) after printing `ab_repeat: config N (JSON): <why>` for the first bad one."""
    out = []
    for n, text in enumerate(configs, 1):
        try:
            if text in configs[:n - 1]:
                raise ValueError(f"the same text as config {configs.index(text) + 1}: the "
                                 "summary and ab.csv could not tell their timings apart")
            c = json.loads(text)
            if not isinstance(c, dict):
                raise ValueError("not a JSON object")
            for key in ("strategy", "inputs"):
                if key in c and not isinstance(c[key], str):
                    raise ValueError(f"{key} {c[key]!r}: expected a string")
            who = c.get("strategy", name)
            e = strategies.get(who)
            if "groups" in c and "raw_groups" in c:
                raise ValueError("'groups' and 'raw_groups' together: give one GROUPS, "
                                 "through the registry's cap or past it")
            for key in ("groups", "raw_groups"):
                v = c.get(key, 1)
                if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                    raise ValueError(f"{key} {v!r}: expected a whole number >= 1")
            if ("groups" in c or "raw_groups" in c) and not e.uses_groups:
                raise ValueError(f"{who} takes no GROUPS: 'groups' does not apply to it")
            if "reduce" in c:
                if not e.reduce_kernel:
                    raise ValueError(f"{who} has no separate reduce kernel (its registration "
                                     "declares none): 'reduce' does not apply to it")
                reduce.check_override(c["reduce"])
            if c.get("inputs", "default") not in INPUTS:
                raise ValueError(f"inputs {c['inputs']!r}: one of {', '.join(INPUTS)}")
            rest = {k: v for k, v in c.items()
                    if k not in ("reduce", "groups", "raw_groups", "inputs", "strategy")}
            if rest and who in _tuning.RULES:
                saved = dict(_tuning.OVERRIDE)
                try:
                    _tuning.OVERRIDE.clear()
                    _tuning.OVERRIDE[who] = rest
                    for _, d in shapes:
                        _tuning.params(who, d)
                finally:
                    _tuning.OVERRIDE.clear()
                    _tuning.OVERRIDE.update(saved)
        except (ValueError, KeyError) as err:
            why = err.args[0] if isinstance(err, KeyError) else err
            print(f"ab_repeat: config {n} ({text}): {why}", file=sys.stderr)
            raise SystemExit(2) from None
        out.append(c)
    return out


def apply(config: dict, name: str) -> tuple[str, int | None, bool, str]:
    """Set `strategies._tuning.OVERRIDE` to `config`: its "reduce" entry for the reduce kernel,
    the rest for its "strategy" (default `name`; an empty rest: the strategy's rule) but
    "groups" or "raw_groups" — the GROUPS to call it with (None: its auto), through the
    registry's cap or past it — and "inputs" (`INPUTS`' key). Returns (strategy, groups, raw,
    inputs)."""
    rest = dict(config)
    red = rest.pop("reduce", None)
    raw = "raw_groups" in rest
    groups = rest.pop("raw_groups") if raw else rest.pop("groups", None)
    kind = rest.pop("inputs", "default")
    if kind not in INPUTS:
        raise SystemExit(f"ab_repeat: inputs {kind!r}: one of {', '.join(INPUTS)}")
    name = rest.pop("strategy", name)
    _tuning.OVERRIDE.clear()
    _tuning.OVERRIDE[name] = rest
    if red is not None:
        _tuning.OVERRIDE["reduce"] = dict(red)
    return name, groups, raw, kind


def check_args(args) -> str:
    """Why the arguments cannot be timed (one line, naming the argument), or "": each shape
    ROWSxD with both >= 1 and none twice (the summary and ab.csv key on it), --rounds >= 1,
    --rep finite and > 0, a known --norm, and --device one this machine has."""
    if why := tune.shapes_problem(args.shapes):
        return why
    if args.rounds < 1:
        return f"--rounds {args.rounds}: at least 1"
    if args.norm not in NORMS:
        return f"--norm {args.norm!r}: one of {', '.join(NORMS)}"
    return tune.run_problem(args.rep, args.device)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", default="disjoint_strided",
                    help="the strategy whose parameters are timed")
    ap.add_argument("--norm", default="layernorm", help="layernorm or rmsnorm")
    ap.add_argument("--shapes", default="32768x3072", help="ROWSxD,...")
    ap.add_argument("--dtype", default="bf16", help="bf16, fp16 or fp32 (x, dy)")
    ap.add_argument("--weight-dtype", default="same", help="same, bf16, fp16 or fp32")
    ap.add_argument("--configs", nargs="+", default=["{}"],
                    help="OVERRIDE dicts, JSON ({} = the rule); each is checked before "
                         "anything is timed (an unknown key, one that would time nothing "
                         "or the wrong kernel, or a configuration that launches what another "
                         "does at a shape: one line, exit 2)")
    ap.add_argument("--no-launch-check", action="store_true",
                    help="time the configurations even where one launches what another does, "
                         "or a key changes nothing that launches (check_launches): a GPU "
                         "command rehearsed on a CPU, where the interpreter ignores pdl and "
                         "l2_ahead; the summary says the check was off")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--fresh-inputs", action="store_true",
                    help="new inputs (allocations) each round")
    ap.add_argument("--rep", type=float, default=25, help="do_bench repetition time, ms")
    ap.add_argument("--gpu-time", action="store_true",
                    help="also the GPU time of each timing (CUDA graph replays; none on CPU)")
    ap.add_argument("--device", default="cuda", help="cpu: a smoke test under the interpreter")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    why = check_args(args)
    if why:
        print(f"ab_repeat: {why}", file=sys.stderr)
        return 2
    shapes = tune.parse_shapes(args.shapes)
    try:
        configs = check_configs(args.configs, args.name, shapes)
        wd = args.dtype if args.weight_dtype == "same" else args.weight_dtype
        if args.dtype not in DTYPES or wd not in DTYPES:
            print(f"ab_repeat: --dtype/--weight-dtype {args.dtype}/{wd}: each one of "
                  f"{', '.join(DTYPES)}", file=sys.stderr)
            return 2
        if not args.no_launch_check:
            check_launches(configs, args.configs, args.name, shapes, args.norm, args.dtype, wd,
                           args.device)
    except SystemExit as e:
        return e.code
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
                                          "gpu_us", "host_us", "status"])
        w.writeheader()
        for shape, (rows, d) in zip(args.shapes.split(","), shapes):
            nbytes = model.bytes_moved(args.norm, rows, d, args.dtype, wd)
            kinds = {apply(c, args.name)[3] for c in configs}
            made = {}           # inputs kind -> (inputs, reference)
            for r in range(args.rounds):
                if not made or args.fresh_inputs:
                    made = {kind: INPUTS[kind](args.norm, rows, d, args.dtype, wd,
                                               seed=rows ^ d ^ r, device=args.device)
                            for kind in sorted(kinds)}
                    made = {kind: (inp, reference(*inp)) for kind, inp in made.items()}
                    checked = set()
                order = [(k + r) % len(configs) for k in range(len(configs))]
                for slot, k in enumerate(order):
                    name, g, raw, kind = apply(configs[k], args.name)
                    inputs, ref = made[kind]

                    def call():
                        if raw:
                            return entries[name].fn(*inputs, groups=g)
                        return entries[name].backward(*inputs, groups=g)
                    status = "ok"
                    try:
                        if k not in checked:
                            checked.add(k)
                            if not within_tolerances(call(), ref, args.dtype, wd):
                                status = "WRONG"
                        ms = timing.summarize(timing.bench(call, 5, args.rep, gpu))["time_ms"]
                        gms = (timing.gpu_time(call, time_ms=ms, rep_ms=args.rep, on_gpu=gpu)
                               ["gpu_time_ms"] if args.gpu_time else None)
                        hus = host.host_us(call, 20) if gpu else None
                    except Exception as err:    # a failure at run time: the row says so and
                        ms = gms = hus = None   # the sweep goes on
                        status = (f"error: {type(err).__name__}: "
                                  f"{' '.join(str(err).split())[:200]}")
                    rec = dict(shape=shape, round=r, slot=slot, config=args.configs[k],
                               us=None if ms is None else round(ms * 1e3, 2),
                               pct_copy=None if ms is None else
                               round(model.pct(model.gbps(nbytes, ms), copy), 1),
                               gpu_us=None if gms is None else round(gms * 1e3, 2),
                               host_us=None if hus is None else round(hus, 1), status=status)
                    w.writerow(rec)
                    f.flush()
                    rows_out.append(rec)
            _tuning.OVERRIDE.clear()
    who = args.name + (" (or a configuration's strategy)" if any("strategy" in c for c in configs)
                       else "")
    print(f"{who} {args.norm} {args.dtype}/{wd}, {args.rounds} rounds"
          f"{', fresh inputs each' if args.fresh_inputs else ''}; µs median [min, max]; copy "
          f"ceiling {copy:.0f} GB/s"
          f"{'; launch check off (--no-launch-check)' if args.no_launch_check else ''}")
    for shape in args.shapes.split(","):
        for c in args.configs:
            mine = [x for x in rows_out if x["shape"] == shape and x["config"] == c]
            failed = [x["status"] for x in mine if x["status"].startswith("error")]
            us = [x["us"] for x in mine if x["us"] is not None]     # not the error rows
            bad = sum(x["status"] == "WRONG" for x in mine)
            gus = [x["gpu_us"] for x in mine if x["gpu_us"] is not None]
            gpu_part = f"  GPU {statistics.median(gus):.1f} [{min(gus):.1f}, {max(gus):.1f}]" \
                if gus else ""
            hus = [x["host_us"] for x in mine if x["host_us"] is not None]
            gpu_part += f"  host {statistics.median(hus):.0f}" if hus else ""
            timed = (f"{statistics.median(us):8.1f} [{min(us):.1f}, {max(us):.1f}]"
                     f"  {' '.join(f'{u:.0f}' for u in us)}" if us else f"{'—':>8s}")
            print(f"  {shape} {c:40s} {timed}{gpu_part}"
                  f"{f'  WRONG x{bad}' if bad else ''}"
                  f"{f'  ERROR x{len(failed)} ({failed[0]})' if failed else ''}")
    return 1 if any(x["status"] != "ok" for x in rows_out) else 0


if __name__ == "__main__":
    sys.exit(main())
