"""The rules `harness/compare.py` applies, apart from the case loop: loading and checking runs,
the gate's selection (--only / --exclude), the host-bound test, and the METHOD text generated
from the column declaration in harness/schema.py.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from normbench.harness import schema, stats
from normbench.harness.cells import is_missing, num  # noqa: F401 (num re-exported)

BOTH_NOT_OK = "not ok on both sides"      # the same status: an unchanged failure or skip
# One baseline run, --metric call, no GPU time recorded: a case whose baseline median is below
# this is taken as host-bound (do_bench's L2 flush hides about this much host time per sample;
# below it the host's speed can decide a sample, and it moves between runs).
HOST_BOUND_MS = 0.1
HOST_FRACTION = 0.5      # with GPU time recorded: host-bound when host time >= this of the call


class CompareError(Exception):
    """The runs cannot be compared (CLI exit code 2).  The message is one line."""


@dataclass
class Run:
    dir: str
    records: object          # pandas DataFrame with harness.schema columns
    meta: dict


def _load(path: Path) -> Run:
    from normbench.harness import store
    unreadable = (OSError, ValueError, getattr(store, "StoreError", OSError))
    try:
        return Run(str(path), store.load_records(path), store.load_meta(path) or {})
    except unreadable as e:
        raise CompareError(store.cannot_read(path, e)) from e


def expand_dirs(path) -> list[Run]:
    """A run directory -> [it]; a directory of run directories -> each of them, by name (a
    subdirectory that cannot be read is an error: it may be a run)."""
    from normbench.harness.store import is_run_dir
    path = Path(os.fsdecode(path))         # bytes too
    try:
        if not path.is_dir():
            raise CompareError(f"not a run directory: {path}")
        if is_run_dir(path):
            return [_load(path)]
        runs = []
        for p in sorted(q for q in path.iterdir() if q.is_dir()):
            if is_run_dir(p):
                runs.append(p)
            elif why := _unreadable(p):
                # skipped, it would drop its runs from the baseline without a word
                raise CompareError(f"cannot read {p} in the directory of runs {path}: {why} "
                                   "(whether it is a run directory cannot be told)")
    except OSError as e:                # a name too long, a directory that cannot be listed
        raise CompareError(f"cannot read {path}: {e.strerror or e}") from None
    if not runs:
        raise CompareError(f"not a run directory, and holds none: {path}")
    return [_load(p) for p in runs]


def _unreadable(path: Path) -> str | None:
    """Why a subdirectory that is no run directory to is_run_dir cannot be read (it cannot be
    listed, or it holds a meta.json or records.csv that cannot be opened); None: it can, and
    is none."""
    from normbench.harness.rundir import META_JSON, RECORDS_CSV
    try:
        names = set(os.listdir(path))
        for name in (META_JSON, RECORDS_CSV):
            if name in names:
                with open(path / name, "rb"):
                    pass
    except OSError as e:
        return e.strerror or str(e)
    return None


def timer_kind(meta: dict, records) -> str | None:
    """"cpu_wall" (Triton interpreter) or "cuda_event"; None when unknown."""
    if meta.get("timer"):
        return str(meta["timer"])
    if meta.get("interpreted") is not None:
        return "cpu_wall" if bool(meta["interpreted"]) else "cuda_event"
    return _only_value(records, "timer")


def no_time_hint(col: schema.Column, metric: str, timer: str | None, verb: str) -> str:
    """Why a run has none of a metric's times, and what `verb` ("compare", "export") can do
    instead ("" for `call`): the interpreter's CPU timer never measures GPU time, so no
    harness records it there; a run on a GPU without it predates the harness that records it
    (not the hardware)."""
    if metric == "call":
        return ""
    if timer == "cpu_wall":
        return ("GPU time is measured on a GPU only: this run timed the Triton interpreter; "
                f"{verb} with --metric call")
    return (f"the run recorded no {col.name}: {verb} with --metric call, or re-run on a "
            "harness that records it")


def _only_value(records, col: str) -> str | None:
    if col in records.columns:
        values = {str(t) for t in records[col].dropna().unique()}
        if len(values) == 1:
            return values.pop()
    return None


def device_of(meta: dict, records=None) -> str | None:
    if meta.get("device_name"):
        return str(meta["device_name"])
    return None if records is None else _only_value(records, "device")


def _check_pair(base: Run, cand: Run, common: bool, notes: list[str]) -> None:
    bd, cd = device_of(base.meta, base.records), device_of(cand.meta, cand.records)
    if bd and cd and bd != cd:
        raise CompareError(f"different devices: {base.dir} ran on {bd!r}, {cand.dir} on {cd!r}")
    if not (bd and cd):
        notes.append(f"device model unknown for {base.dir if not bd else cand.dir}: not checked")
    bc, cc = base.meta.get("config_name"), cand.meta.get("config_name")
    if bc and cc and bc != cc:
        if not common:
            raise CompareError(f"different configs: {base.dir} {bc!r}, {cand.dir} {cc!r} "
                               "(--common compares the cases they share)")
        notes.append(f"different configs ({bc!r} vs {cc!r}): compared on the cases they share")
    else:
        bh, ch = base.meta.get("config_hash"), cand.meta.get("config_hash")
        if bh and ch and bh != ch:
            notes.append(f"config {cc or bc!r} has the same name but different text in "
                         f"{base.dir} (hash {str(bh)[:12]} vs {str(ch)[:12]})")
    bt, ct = timer_kind(base.meta, base.records), timer_kind(cand.meta, cand.records)
    if bt and ct and bt != ct:
        raise CompareError(f"timer mismatch: {base.dir} timed with {bt}, {cand.dir} with {ct} "
                           "(Triton-interpreter CPU wall-clock cannot be compared with GPU time)")
    changed = version_changes(base.meta, cand.meta)
    if changed:
        notes.append(f"measured with other versions than {base.dir}: {', '.join(changed)}")


NOT_LOADED = "not loaded"


def version_changes(a: dict, b: dict) -> list[str]:
    """The package and plugin versions that differ between two runs' meta ("torch 2.11.0 ->
    2.12.0", "plugin h5plug 0.0.1 -> 0.0.2"); a plugin only one of them loaded, where both say
    which they loaded, too ("plugin h5plug not loaded -> 0.0.1")."""
    from normbench.harness.merge import plugin_versions, version_name, versions
    bv, cv = versions(a), versions(b)
    bp, cp = plugin_versions(a), plugin_versions(b)
    if bp is not None and cp is not None:
        for n in set(bp) ^ set(cp):
            bv.setdefault(f"plugins.{n}", NOT_LOADED)
            cv.setdefault(f"plugins.{n}", NOT_LOADED)
    # a package named both at the top ("torch_version": "2.11.0+cu130") and in
    # package_versions ("torch": "2.11.0") is one change, said once: the top-level spelling
    changes: dict[str, str] = {}
    for k in sorted(set(bv) & set(cv), key=lambda k: (k.startswith("package_versions."), k)):
        name = version_name(k)
        if bv[k] != cv[k] and bv[k] is not None and cv[k] is not None:
            changes.setdefault(name, f"{name} {bv[k]} -> {cv[k]}")
        elif bv[k] == cv[k] and not k.startswith("package_versions."):
            changes.setdefault(name, "")       # the same build at the top: no change to say
    return [c for _, c in sorted(changes.items()) if c]


def _commit(run: Run) -> str | None:
    c = run.meta.get("git_commit")
    return str(c)[:7] if c else None          # git's short hash: a full or a short one alike


def baseline_mix(base_runs: list[Run]) -> dict[str, str]:
    """What besides noise differs between the baseline runs: {"commits" | "configs" |
    "versions": which runs hold what}; {} for one run, or runs alike.  Their envelope then
    spans that change too."""
    first, mix = base_runs[0], {}
    commits = {c: r.dir for r in base_runs if (c := _commit(r))}
    if len(commits) > 1:
        mix["commits"] = ", ".join(f"{c} in {d}" for c, d in commits.items())
    configs = {(r.meta.get("config_name"), str(r.meta.get("config_hash") or "")[:12]): r.dir
               for r in base_runs}
    if len(configs) > 1:
        mix["configs"] = ", ".join(f"{n or '?'} (hash {h or '?'}) in {d}"
                                  for (n, h), d in configs.items())
    changed = [f"{c} in {r.dir}" for r in base_runs[1:] for c in version_changes(first.meta,
                                                                                r.meta)]
    if changed:
        mix["versions"] = ", ".join(changed)
    return mix


def check_comparable(base_runs: list[Run], cand: Run, common: bool = False,
                     mixed_baselines: bool = False,
                     coverage: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """Raise CompareError when the runs cannot be compared; return run-level notes otherwise.
    Baseline runs of different commits are refused unless `mixed_baselines`: their envelope
    would take the code change between them for between-run noise.  `coverage`, where given,
    receives each run's coverage_notes by its directory (the caller reads them again)."""
    notes: list[str] = []
    mix = baseline_mix(base_runs)
    if "commits" in mix and not mixed_baselines:
        raise CompareError(f"the baseline runs were measured at different commits "
                           f"({mix['commits']}): their envelope would count the change between "
                           "them as between-run noise; re-run the baseline at one commit, or "
                           "pass --mixed-baselines to compare with that envelope")
    if mix:
        notes.append("the baseline runs differ in "
                     + "; ".join(f"{k} ({v})" for k, v in mix.items())
                     + ": their between-run envelope includes that change, not only noise")
    unknown = [r.dir for r in base_runs if not _commit(r)]
    if len(base_runs) > 1 and unknown:
        notes.append(f"git_commit unknown for {', '.join(unknown)}: whether the baseline runs "
                     "share a commit is not checked")
    for b in base_runs:
        _check_pair(b, cand, common, notes)
    if all(timer_kind(r.meta, r.records) == "cpu_wall" for r in base_runs + [cand]):
        notes.append("every run is CPU wall-clock timing under the Triton interpreter: "
                     "it says nothing about GPU speed")
    for role, r in [("baseline", b) for b in base_runs] + [("candidate", cand)]:
        said = coverage_notes(r)
        if coverage is not None:
            coverage[r.dir] = said
        notes += [f"{role} {r.dir}: {n}" for n in said]
    for r in base_runs + [cand]:
        if r.meta.get("git_dirty"):
            notes.append(f"{r.dir} was run from a dirty tree (git_commit {r.meta.get('git_commit')})")
    if len(base_runs) == 1:
        notes.append("one baseline run: between-run noise is unknown, so the conservative "
                     "single-run rule applies (see the method); pass several baseline runs "
                     "to measure it")
    return list(dict.fromkeys(notes))


def coverage_notes(run: Run) -> tuple[str, ...]:
    """The caveat report and export print where a run holds less than its plan (stopped
    early, one shard, a partial merge, still running): export.coverage_note, one line."""
    from normbench.harness.export import coverage_note
    from normbench.harness.rundir import StoreError
    try:
        return coverage_note(run.dir, run.records, run.meta)
    except StoreError as e:          # a meta field of the wrong type (compare_records' meta)
        raise CompareError(" ".join(f"cannot read {run.dir}'s meta: {e}".split())) from None


isna = is_missing           # harness/cells.py (compare.py and export.py import it from here)


def key_tuple(row) -> tuple:
    return tuple("" if isna(row[k]) else str(row[k]) for k in schema.KEY)


def index(records) -> tuple[dict, int]:
    out, dups = {}, 0
    for row in records.to_dict("records"):
        k = key_tuple(row)
        dups += k in out
        out[k] = row                  # last one wins (a resumed run re-measured it)
    return out, dups


key_label = schema.case_label


def _names(arg) -> list[str]:
    """The names of --only/--exclude, blanks stripped (`kind: strategy` is kind:strategy)."""
    if arg is None:
        return []
    items = arg.split(",") if isinstance(arg, str) else [x for a in arg for x in str(a).split(",")]
    return [_name(x) for x in items if x.strip()]


def _name(text: str) -> str:
    head, sep, kind = text.partition(":")
    return f"kind:{kind.strip()}" if sep and head.strip() == "kind" else text.strip()


def select(cand_idx: dict, bases: list[dict], only, exclude):
    """(predicate key -> gated?, description).  A name is an implementation or kind:KIND
    (strategy | baseline); a name no run holds is an error (a typo would gate nothing)."""
    only_n, excl_n = _names(only), _names(exclude)
    for opt, arg, names in (("--only", only, only_n), ("--exclude", exclude, excl_n)):
        if arg is not None and not names:
            raise CompareError(f"{opt}: no implementation named in {arg!r}")
    impl_at = schema.KEY.index("implementation")
    records = {**{k: r for b in bases for k, r in b.items()}, **cand_idx}
    impls = {k[impl_at] for k in records}
    kinds = {str(r.get("kind")) for r in records.values()}
    for opt, names in (("--only", only_n), ("--exclude", excl_n)):
        for n in names:
            ok = n[5:] in kinds if n.startswith("kind:") else n in impls
            if not ok:
                raise CompareError(f"{opt}: no case has {'kind' if n.startswith('kind:') else 'implementation'} "
                                   f"{n.split(':', 1)[-1]!r}; the runs hold {', '.join(sorted(impls))} "
                                   f"(kinds {', '.join(sorted(kinds))})")

    def matches(k, names) -> bool:
        kind = str(records[k].get("kind"))
        return any(kind == n[5:] if n.startswith("kind:") else k[impl_at] == n for n in names)

    def wanted(k) -> bool:
        return (not only_n or matches(k, only_n)) and not matches(k, excl_n)

    bits = ([f"--only {','.join(only_n)}"] if only_n else []) + \
           ([f"--exclude {','.join(excl_n)}"] if excl_n else [])
    return wanted, " ".join(bits)


def check_gates_something(selection: str, gated: list[bool], common: bool) -> None:
    """A selection that gates none of the judged cases (common, missing from the candidate,
    failed new ones) would pass whatever the runs hold: refused, as a typo is.  A selected
    case only in the candidate and ok is listed, never judged, so it gates nothing."""
    if selection and not any(gated):
        why = ("--common judges no case only one side holds" if common else
               "a case only in the candidate is listed, not judged, unless it failed")
        raise CompareError(f"{selection} leave no case to gate ({why})")


def check_judges_something(cases) -> None:
    """Gated cases none of which was judged -- none with a time on both sides (a noise rule,
    `CaseResult.rule`), none that regressed otherwise -- would pass whatever the runs hold:
    every one missing from a candidate that never planned it (a config that dropped them),
    failed or skipped on both sides, or without a time on a side.  Refused, as a selection
    that gates nothing is: an OK there would be a gate that looked at nothing."""
    gated = [c for c in cases if c.gated]
    if not gated or any(c.rule or c.is_regression for c in gated):
        return
    missing = sum(c.cand_status == "missing" for c in gated)
    why = ", ".join(p for p in (
        f"{missing} missing from the candidate, flags (not in its plan, or not in every "
        "baseline run's)" if missing else "",
        f"{len(gated) - missing} without a time on a side (failed, skipped or timed on "
        "one side only)" if len(gated) > missing else "") if p)
    raise CompareError(f"no gated case was judged: of {len(gated)} gated case(s), {why}; "
                       "the gate would pass whatever the runs hold")


def host_bound(base_recs: list[dict]) -> bool:
    """Host time dominates the call in the baseline: by the GPU time where the baseline
    recorded it (host time >= HOST_FRACTION of the call), else by the baseline median (below
    HOST_BOUND_MS).  Never by the candidate: host time it adds must not loosen its own gate."""
    metrics = schema.metrics()
    call, gpu = metrics.get("call"), metrics.get("gpu")
    # a time of 0 or less is no time (stats.is_time): it must not make a case host-bound
    if gpu is not None and all(stats.is_time(r.get(gpu.name)) and stats.is_time(r.get(call.name))
                               for r in base_recs):
        return any(1 - float(r[gpu.name]) / float(r[call.name]) >= HOST_FRACTION
                   for r in base_recs)
    times = [float(r[call.name]) for r in base_recs if stats.is_time(r.get(call.name))]
    return bool(times) and min(times) < HOST_BOUND_MS


def gpu_change(base_recs: list[dict], cand: dict) -> stats.GpuChange | None:
    """The candidate's GPU time against the baseline's recorded one (the nearest where the
    baseline records differ), or, where the baseline recorded none, against its call time, an
    upper bound of its GPU time (`bound`); None where the candidate recorded no GPU time (a
    GPU time of 0 or less is none) or the baseline neither."""
    metrics = schema.metrics()
    call, gpu = metrics.get("call"), metrics.get("gpu")
    if gpu is None or not stats.is_time(cand.get(gpu.name)):
        return None
    c = float(cand[gpu.name])
    ref = [float(r[gpu.name]) for r in base_recs if stats.is_time(r.get(gpu.name))]
    if ref:
        nearest = max(ref) if c > max(ref) else min(ref) if c < min(ref) else c
        return stats.GpuChange(c / nearest)
    bound = [float(r[call.name]) for r in base_recs if stats.is_time(r.get(call.name))]
    return stats.GpuChange(c / max(bound), bound=True) if bound else None


def method_text(metric: str = "call") -> str:
    """The method, generated from the declaration (compare --help, the JSON, the markdown)."""
    mcols = schema.metrics()
    col = mcols.get(metric) or next(iter(mcols.values()))
    others = ", ".join(f"{m} ({c.name})" for m, c in mcols.items())
    status = schema.gated(schema.STATUS_OK)
    bools = schema.gated(schema.TRUE_TO_FALSE)
    bool_text = "; ".join(
        f"{c.name} True -> False" + (f" (only where {c.only_if} is True; elsewhere a flag)"
                                     if c.only_if else "") for c in bools)
    new_text = ", ".join(f"{c.name} False" + (f" where {c.only_if} is True" if c.only_if else "")
                         for c in bools)
    return (
        f"Records are joined on the case key ({', '.join(schema.KEY)}).  Time: --metric "
        f"{metric} gates on {col.name} ({col.doc or col.label}); the choices are {others}.  "
        "With several baseline runs (BASE_DIR... or a directory of run directories; one of "
        "its subdirectories that cannot be read is an error) the "
        "baseline medians of a case span an envelope [lo, hi], its measured between-run spread "
        "(one measurement seen twice counts once, noted: a run given twice, a copy of a run "
        "directory, shards beside their merge; a record of the same case, start time, host, "
        "GPU, status, duration and time samples is the same measurement; the candidate's own "
        "measurements are no baseline: a baseline run of only those -- a copy of the "
        "candidate, the shards of a merged candidate -- is refused, one that holds some loses "
        "them, noted); a case that only one baseline run holds with a time (shards, a run "
        "stopped early, a case another run failed or whose record there is the candidate's "
        "own) is judged by the one-run rule below, a note says why by cause, and the summary "
        "and the JSON's noise (envelope_cases, one_run_cases; rule 'none' and 'no gated case "
        "judged on time' where no gated case had a time on both sides) count the cases of "
        "each rule; "
        "the candidate is a REGRESSION only when its median exceeds hi by more than the "
        "threshold (cand > hi x (1 + threshold)) and a one-sided Mann-Whitney U test "
        f"(alpha {stats.ALPHA:g}, at least {stats.MIN_SAMPLES} samples a side; else non-overlap "
        "of the p20-p80 intervals; else the threshold alone) finds it slower than the run at hi.  "
        "With one baseline run between-run noise is unknown and a conservative rule applies: "
        f"a case whose p20-p80 spans more than {stats.WIDE:.0%} of its median on either side is "
        "UNSTEADY: its threshold is widened by that span (threshold + the wider side's p20-p80 "
        "as a fraction of its median), so only a change beyond the unsteadiness is judged, and "
        "a change whose candidate GPU time stays within the threshold of the baseline's is "
        "host time in a disturbed run: noise (so is a slowdown whose candidate GPU time stays "
        "within the threshold of the baseline's call time where the baseline recorded no GPU "
        "time); a change whose GPU time moved the other way beyond the threshold (call time "
        "faster, GPU time slower, or the reverse) is a FLAG: host and GPU disagree, neither a "
        "regression nor an improvement; a "
        "HOST-BOUND case (host time at least "
        f"{HOST_FRACTION:.0%} of the baseline's call where GPU time is recorded; otherwise a "
        f"baseline median under {HOST_BOUND_MS * 1000:.0f} us, where do_bench's L2 flush no longer "
        f"hides the host) is judged at {stats.HOST_FACTOR:g} x the threshold (--metric gpu "
        "takes the host out); any other case at the threshold, with the same test.  An "
        "IMPROVEMENT is the mirror image (faster by the same factor: under 1 / (1 + threshold) of "
        "the baseline).  A change beyond the threshold but inside the noise "
        "is reported as 'noise', never as a verdict.  Independently of time, a case regresses "
        f"on {', '.join(f'{c.name} ok -> not ok' for c in status)} (ok in every baseline run), "
        f"or -> {' / '.join(schema.FAILED)} where no baseline run failed (skipped -> error); "
        f"{bool_text} (True in every baseline run; the reverse changes and mixed baselines are "
        "flags; where the condition holds in the candidate and in no baseline record, the "
        "candidate's value is judged as a new case's); a candidate ok record where no baseline record is ok is judged as a case "
        "only in the candidate is (below).  The time of a wrong result is no speed, nor is that "
        "of a result that did not repeat where deterministic_by_design is True: where the "
        "candidate's result is incorrect or so not repeatable, or every ok baseline run's, the "
        "time is not judged (neither a change nor in the geomean; the correctness or "
        "determinism regression or flag says why).  Only the "
        "implementations chosen by --only/--exclude (names, or kind:strategy / kind:baseline) "
        "are gated; the others are reported (a selection that gates no case is refused, and "
        "so is a comparison that judges none of its gated cases: none with a time on both "
        "sides, none that regressed).  "
        "A gated case of the baseline (ok in every baseline "
        "run that holds it) that the candidate lacks is a regression (a strategy that dropped "
        "out of the plan, an interrupted run) -- a baseline run that holds less than its plan "
        "(a shard, one stopped early) says nothing of a case it lacks, a complete one that "
        "lacks it did not plan it (a flag then), as a complete candidate whose own config text or "
        "--only never planned it; an ok candidate record without the gated time (none, or "
        "one of 0 or less) where the baseline has one is a regression too, and so is one without "
        f"{' or '.join(c.name for c in bools)} where the baseline has it (a flag where a change "
        "of it is one; where no ok baseline record has it, a run before the column, the "
        "candidate's is judged as a new case's); "
        "cases only in the "
        "candidate are listed, and "
        f"one that failed by itself (error or timeout, {new_text}) is a regression (one of "
        "the cases then, counted and listed with them, and not listed again as only in the "
        "candidate; the JSON's only_candidate and counts.only_candidate hold every case only "
        "in the candidate, counts.only_candidate_judged how many of them are among its cases, "
        "with baseline_runs 0).  "
        "--common compares two different configs on the cases they share (one-sided cases "
        "listed, not judged).  "
        "Baseline runs of different commits are refused unless --mixed-baselines (their "
        "envelope would count the change between them as noise); baseline runs of different "
        "configs or versions, or of different commits so accepted, are named in the summary: "
        "their envelope includes that change.  "
        "Exit code 0: no regression; 1: regression(s); 2: the runs cannot be compared "
        "(different device model, different config without --common, interpreter CPU timings "
        "against GPU timings, baseline runs of different commits without --mixed-baselines, "
        "no common case, or none left once the candidate's own measurements are taken out "
        "of the baselines, no GPU time for --metric gpu, no gated case judged, a bad "
        "argument); "
        "every exit code prints its explanation in the chosen --format."
    )
