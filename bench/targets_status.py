"""Issue 16's table of targets, checked against committed runs.

    python bench/targets_status.py RUN_DIR[:KEY=VALUE,...] [RUN_DIR ...]
    python bench/targets_status.py --readme [README.md]

A run named with KEY=VALUE pairs after a colon gives only its lines that match them all
(keys: norm, rows, d, dtype, weight_dtype; rows and d compared as numbers) — for a run whose
other lines a later one replaces, or whose lines of one class a rule has since taken back to
the code an earlier run measured (the README says which and why).  A pair that matches no
record of its run (a typo: dtype=fp61) is refused, one line naming the values the run has.

--readme takes the run directories from the README's "Issue 16's targets" paragraph (the
command it quotes, in its order): the runs the README's figures come from.

For each of the issue's eight shapes, both norms and every dtype mix found in the runs, the
fastest bitwise-deterministic normbench strategy (harness.summary's "det" role) against the
fastest peer at the same weight dtype ("peer"), both as the runs recorded them (do_bench
median call time, L2 flushed; % of the copy ceiling measured in the same run).  A shape found
in several runs is taken from the last one named that has a record there of every peer it has
a record of anywhere (a run cut short can lack the fastest peer at its last line, and a run
whose peers' packages were not installed records them as skipped: neither measured them);
where none did, from the last one named, its missing peers listed ("peers missing") and its
speed target not met: it cannot be judged without them.  Likewise a line where no run named
has any peer ("no peer in any run"), where no peer passed (status ok, result correct), or
where none of ours did ("no deterministic strategy of ours ..."): marked so, its speed target
not met (and without ours its copy target), its missing figures printed as "—".  Where the
runs recorded GPU time, the speed target must hold by it too: ours against the peer with the
least GPU time (`vs_peer_gpu`), so a peer's call time inflated by a burst of host time cannot
meet it for us; in such a run a line where ours (the record shown) or a peer that passed has
no GPU time (not measured: its note says why) cannot be judged by it — the peer with the least
GPU time is not known — and is marked so ("no GPU time of ..."), its speed target not met.  The targets (issue 16):

* bf16 and fp16 activations: ≥ 1.10× faster than the fastest peer, and ≥ 88 % of the copy
  ceiling for RMSNorm, ≥ 85 % for LayerNorm;
* fp32 activations (fp32 weights): ≥ 80 % of the copy ceiling and at least as fast as every
  peer;
* (target 3) a width that is not a power of two within 5 % of the ceiling fraction of the
  nearest power of two: each such line's % of copy against the line of the same norm and
  dtype mix at the power of two nearest in log2 (3072 → 4096, 7168 → 8192, 12288 → 16384:
  1.5 × 2^k is nearer 2^(k+1)), with the same rows where the table has them, else the nearest rows × d — each
  fraction from its own line's run (so two runs, two days, where the lines came from two).

Prints a markdown table (one line per norm × shape × dtype mix, the run it came from) and
the count met, then target 3's lines and their count.  Exit status 0 whatever the outcome:
this reads, it gates nothing (2, one line, where a run cannot be read or holds no line of the
table).
"""
from __future__ import annotations

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from normbench.harness import store, summary  # noqa: E402
from normbench.harness.report.fmt import plain  # noqa: E402

SHAPES = [(16384, 4096), (16384, 8192), (65536, 1024), (8192, 16384), (4096, 16384),
          (8192, 12288), (16384, 7168), (32768, 3072)]


def targets(norm: str, dtype: str) -> tuple[float, float]:
    """(speed-up over the fastest peer, % of the copy ceiling) the issue asks for."""
    if dtype == "fp32":
        return 1.0, 80.0
    return 1.10, 88.0 if norm == "rmsnorm" else 85.0


FILTER_KEYS = ("norm", "rows", "d", "dtype", "weight_dtype")


def split_run(arg: str) -> tuple[str, dict]:
    """RUN_DIR[:KEY=VALUE,...] -> (the directory, {key: value}); ValueError (one line) for a
    key that is not one of FILTER_KEYS or a pair without '='."""
    path, sep, spec = arg.rpartition(":")
    if not sep or "=" not in spec:
        return arg, {}
    filt = {}
    for pair in spec.split(","):
        key, eq, value = pair.partition("=")
        if not eq or key not in FILTER_KEYS or not value:
            raise ValueError(f"{arg}: '{pair}' is not KEY=VALUE with KEY one of "
                             f"{', '.join(FILTER_KEYS)}")
        if key in ("rows", "d") and not (value.isdigit() and int(value) >= 1):
            raise ValueError(f"{arg}: '{pair}': {key} must be a whole number ≥ 1")
        filt[key] = value
    return path, filt


def status(run_dirs: list[str]) -> pd.DataFrame:
    rows = {}
    loaded = []
    for arg in run_dirs:
        run, filt = split_run(arg)
        loaded.append((run, _filtered(run, plain(store.load_records(run)), filt)))
    # every peer any of the runs knew of (measured, or recorded as skipped): a line of a run
    # that lacks one of them cannot replace a line that has it
    tried = [_peers(recs, skipped=True) for _, recs in loaded]
    all_peers = set().union(*(p for t in tried for p in t.values()))
    for run, recs in loaded:
        ans = summary.answer(recs)
        gpu = summary.has_gpu_time(recs)
        no_gpu = _no_gpu_time(recs) if gpu else {}
        peers = _peers(recs)
        for _, r in ans.iterrows():
            if (int(r["rows"]), int(r["d"])) not in SHAPES:
                continue
            key = tuple(r[k] for k in summary.SHAPE)
            missing = sorted(all_peers - peers.get(key, set()))
            if missing and key in rows and not rows[key]["peers_missing"]:
                continue        # an earlier run holds this line with every peer
            notes = _unjudged(r, missing, bool(all_peers))
            speed, copy = targets(r["norm"], r["dtype"])
            ratio, pct = r["peer_over_det"], r["det_pct_copy"]
            # the peers' least GPU time, unknown (NaN) where one that passed has none
            gpu_ratio = _ratio(r.get("peer_gpu_best_us", np.nan), r.get("det_gpu_us", np.nan))
            unmeasured = sorted(n for n in no_gpu.get(key, ())
                                if n == r["det_impl"] or n in peers.get(key, ()))
            if unmeasured and not notes:
                notes.append(f"no GPU time of {', '.join(unmeasured)}")
            rows[key] = dict(norm=r["norm"], rows=int(r["rows"]), d=int(r["d"]),
                             dtype=f"{r['dtype']}/{r['weight_dtype']}", ours_us=r["det_us"],
                             ours=r["det_impl"], pct_copy=pct, copy_target=copy,
                             peer=r["peer_impl"], peer_us=r["peer_us"], vs_peer=ratio,
                             vs_peer_gpu=gpu_ratio, speed_target=speed,
                             speed_met=bool(np.isfinite(ratio) and ratio >= speed and not notes
                                            and not (np.isfinite(gpu_ratio) and gpu_ratio < speed)),
                             peers_missing=", ".join(missing), notes="; ".join(notes),
                             copy_met=bool(np.isfinite(pct) and pct >= copy),
                             run=os.path.basename(os.path.normpath(run)))
    df = pd.DataFrame(rows.values())
    if df.empty:
        return df
    order = {s: i for i, s in enumerate(SHAPES)}
    df["_o"] = [order[(a, b)] for a, b in zip(df["rows"], df["d"])]
    return df.sort_values(["dtype", "norm", "_o"]).drop(columns="_o").reset_index(drop=True)


def _filtered(run: str, recs: pd.DataFrame, filt: dict) -> pd.DataFrame:
    """The records of `run` that match every KEY=VALUE of `filt` (rows and d compared as
    numbers: the records hold them as floats); ValueError (one line) for a pair that matches
    no record of the run, naming the values it has."""
    for key, value in filt.items():
        if key not in recs:
            raise ValueError(f"{run}: {key}={value} matches no record (no {key} column there)")
        if key in ("rows", "d"):
            col = pd.to_numeric(recs[key], errors="coerce")
            have = sorted({int(v) for v in col.dropna()})
            keep = col == int(value)
        else:
            have = sorted(set(recs[key].dropna().astype(str)))
            keep = recs[key].astype(str) == value
        if not keep.any():
            raise ValueError(f"{run}: {key}={value} matches no record "
                             f"({key} there: {', '.join(map(str, have)) or 'none'})")
        recs = recs[keep]
    return recs


def _unjudged(r, missing: list, any_peer: bool) -> list[str]:
    """Why a line's speed target cannot be judged (none: it can): peers missing from it, no
    peer in any run named, no peer or none of ours that passed (summary.answer's roles)."""
    notes = [f"peers missing: {', '.join(missing)}"] if missing else []
    if not any_peer:
        notes.append("no peer in any run")
    elif not missing and _absent(r["peer_impl"]):
        notes.append("no peer passed")
    if _absent(r["det_impl"]):
        notes.append("no deterministic strategy of ours "
                     + ("passed" if r.get("det_recorded", 0) else "recorded"))
    return notes


def _absent(v) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


def _ratio(a, b) -> float:
    a, b = float(a), float(b)
    return a / b if np.isfinite(a) and np.isfinite(b) and b > 0 else np.nan


def _peers(recs: pd.DataFrame, skipped: bool = False) -> dict:
    """Shape key -> the peers (implementation names) with a record there: a measured one,
    correct or not (an incorrect peer was run and is out of the race); with `skipped` also
    those recorded as skipped — a peer this run knew of but did not measure (its package not
    installed), which is missing from the line as much as a peer a cut run never reached."""
    if recs.empty:
        return {}
    recs = recs[recs.apply(summary.role, axis=1) == "peer"]
    if not skipped and "status" in recs:
        recs = recs[recs["status"] != "skipped"]
    return {k: set(v) for k, v in recs.groupby(list(summary.SHAPE))["implementation"]}


def _no_gpu_time(recs: pd.DataFrame) -> dict:
    """Shape key -> the implementations with a competing record there that has no usable GPU
    time (not measured: both GPU timers failed, its gpu_time_note says why)."""
    comp = summary.competing(recs)
    if comp.empty:
        return {}
    g = summary.times(comp, "gpu_time_ms").to_numpy()
    comp = comp[~(np.isfinite(g) & (g > 0))]
    return {k: set(v) for k, v in comp.groupby(list(summary.SHAPE))["implementation"]}


def markdown(df: pd.DataFrame) -> str:
    lines = ["| norm | rows × d | dtype | ours µs | % copy (target) | fastest peer µs | "
             "vs peer (target) | by GPU time | met | run |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for _, r in df.iterrows():
        met = ("both" if r.speed_met and r.copy_met else "speed" if r.speed_met
               else "copy" if r.copy_met else "neither")
        lines.append(
            f"| {_norm(r)} | {r['rows']} × {r['d']} | {r['dtype']} | "
            f"{_timed(r.ours_us, None if _absent(r.ours) else r.ours.replace('disjoint_', ''))} | "
            f"{_fmt(r.pct_copy, '.1f', ' %')} (≥ {r.copy_target:.0f}) | "
            f"{_timed(r.peer_us, r.peer)} | "
            f"{_fmt(r.vs_peer)} (≥ {r.speed_target:.2f}) | {_fmt(r.vs_peer_gpu)} | {met} | "
            f"{r.run}{f' ({r.notes})' if r.notes else ''} |")
    both = int((df.speed_met & df.copy_met).sum())
    lines.append("")
    lines.append(f"Both targets met at {both} of {len(df)}; the speed target at "
                 f"{int(df.speed_met.sum())}, the copy-ceiling target at {int(df.copy_met.sum())}.")
    return "\n".join(lines)


def pow2_gaps(df: pd.DataFrame) -> pd.DataFrame:
    """Target 3: each line at a width not a power of two against the line at the nearest power
    of two (in log2) of the same norm and dtype mix — the same rows where there
    is one, else the nearest rows × d.  `gap` is the relative shortfall of the fraction
    (1 − pct / pct at the power of two; negative: ahead), met where it is at most 5 %."""
    out = []
    if df.empty:
        return pd.DataFrame(out)
    for _, r in df.iterrows():
        d = int(r["d"])
        if d & (d - 1) == 0:
            continue
        ref_d = 1 << int(np.floor(np.log2(d) + 0.5))
        same = df[(df["norm"] == r["norm"]) & (df["dtype"] == r["dtype"]) & (df["d"] == ref_d)]
        if same.empty:
            continue
        ref = min((x for _, x in same.iterrows()),
                  key=lambda x: (x["rows"] != r["rows"], abs(x["rows"] * ref_d - r["rows"] * d)))
        gap = 1.0 - r["pct_copy"] / ref["pct_copy"]
        out.append(dict(norm=r["norm"], dtype=r["dtype"], rows=int(r["rows"]), d=d,
                        pct_copy=r["pct_copy"], ref_rows=int(ref["rows"]), ref_d=ref_d,
                        ref_pct_copy=ref["pct_copy"], gap=gap, met=bool(gap <= 0.05),
                        run=r["run"], ref_run=ref["run"]))
    return pd.DataFrame(out)


def markdown_pow2(gaps: pd.DataFrame) -> str:
    lines = ["| norm | rows × d | dtype | % copy | nearest power of two | its % copy | behind "
             "(≤ 5 %) | met | runs |", "|---|---|---|---|---|---|---|---|---|"]
    for _, g in gaps.iterrows():
        runs = g.run if g.run == g.ref_run else f"{g.run}, {g.ref_run}"
        lines.append(
            f"| {_norm(g)} | {g['rows']} × {g['d']} | "
            f"{g['dtype']} | {_fmt(g.pct_copy, '.1f', ' %')} | {g.ref_rows} × {g.ref_d} | "
            f"{_fmt(g.ref_pct_copy, '.1f', ' %')} | {_fmt(100 * g.gap, '.2f', ' %')} | "
            f"{'yes' if g.met else 'no'} | {runs} |")
    lines.append("")
    lines.append(f"Target 3 (not a power of two) met at {int(gaps['met'].sum()) if len(gaps) else 0}"
                 f" of {len(gaps)}.")
    return "\n".join(lines)


def _norm(r) -> str:
    return "LN" if r["norm"] == "layernorm" else "RMS"


def _fmt(v, spec: str = ".3f", unit: str = "") -> str:
    """A figure, or "—" where it is missing (no peer, none of ours)."""
    return f"{v:{spec}}{unit}" if v is not None and np.isfinite(v) else "—"


def _timed(us, impl) -> str:
    """'109.8 strided' — a line's time and who ran it; "—" where nobody did."""
    return "—" if _absent(impl) or not np.isfinite(us) else f"{us:.1f} {impl}"


README_MARK = "**Issue 16's targets**"
COMMAND = "`python bench/targets_status.py "


def readme_runs(path: str) -> list[str]:
    """The run directories that the README at `path` names in the command its "Issue 16's
    targets" paragraph quotes, in order, as paths from the README's folder.  ValueError
    (one line) where it has no such paragraph or command."""
    text = open(path, encoding="utf-8").read()
    at = text.find(README_MARK)
    start = text.find(COMMAND, at) if at >= 0 else -1
    end = text.find("`", start + 1) if start >= 0 else -1
    if end < 0:
        raise ValueError(f"no {README_MARK} paragraph quoting {COMMAND.strip()}...` in it")
    runs = re.findall(r"results/[\w.-]+(?::[\w=,.-]+)?", text[start:end])
    if not runs:
        raise ValueError(f"the command of its {README_MARK} paragraph names no results/ directory")
    return [os.path.join(os.path.dirname(os.path.abspath(path)), r) for r in runs]


def main(argv: list[str]) -> int:
    if not argv or any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] == "--readme":
        path = argv[1] if len(argv) > 1 else os.path.join(
            os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
        try:
            argv = readme_runs(path)
        except (OSError, ValueError) as e:
            print(f"targets_status.py: {path}: {e}", file=sys.stderr)
            return 2
    try:
        dirs = [split_run(a)[0] for a in argv]
    except ValueError as e:
        print(f"targets_status.py: {e}", file=sys.stderr)
        return 2
    missing = [a for a in dirs if not os.path.isdir(a)]
    if missing:
        print(f"targets_status.py: {missing[0]}: not a run directory", file=sys.stderr)
        return 2
    try:
        df = status(argv)
    except (OSError, ValueError, store.StoreError) as e:
        print(f"targets_status.py: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    if df.empty:
        print(f"targets_status.py: no line of the issue's table in {', '.join(argv)}",
              file=sys.stderr)
        return 2
    print(markdown(df))
    print()
    print(markdown_pow2(pow2_gaps(df)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
