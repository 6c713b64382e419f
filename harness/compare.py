"""Compare a candidate run with one or several baseline runs: regressions, improvements, flags.

    result = compare([base_dir, ...], candidate_dir, threshold=0.05)  # CompareError: exit 2
    print(render(result, "markdown"))                                 # table | markdown | json
    sys.exit(exit_code(result))                                       # 0 clean, 1 regression(s)

What is gated, and how, comes from the column declaration in harness/schema.py (no column is
named here); the statistics live in harness.stats (pure); rendering in harness/compare_render.py.
Runs are read through harness.store only.  method_text() is what `compare --help` and the JSON
quote.
"""
from __future__ import annotations

import math
import numbers
import os

from dataclasses import dataclass, field

from normbench.harness import baselines, schema, stats
from normbench.harness.compare_rules import (BOTH_NOT_OK, CompareError, Run, baseline_mix,
                                             check_comparable, check_gates_something,
                                             check_judges_something,
                                             expand_dirs, gpu_change,
                                             host_bound, index, isna, key_label, method_text,
                                             no_time_hint, num, select, timer_kind)

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_INCOMPARABLE = 2
MISSING = "missing"          # cand_status of a baseline case the candidate run does not hold
FORMATS = ("table", "markdown", "json")
NO_TIME_JUDGED = "no gated case judged on time"     # noise_rule where no rule judged a case
METHOD = method_text("call")
parse_threshold = stats.parse_threshold
__all__ = ["BOTH_NOT_OK", "CompareError", "CompareResult", "CaseResult", "compare",
           "compare_records", "exit_code", "render", "render_error", "run_cli", "METHOD",
           "method_text", "parse_threshold", "FORMATS"]


@dataclass
class CaseResult:
    case_id: str
    key: dict
    base_status: str
    cand_status: str
    gated: bool = True                   # judged by the gate (--only / --exclude)
    base_runs: int = 1                   # baseline runs that hold this case
    base_ms: float | None = None         # the metric: baseline (geomean over runs) ...
    cand_ms: float | None = None         # ... and candidate
    ratio: float | None = None
    verdict: str = stats.NOT_COMPARED    # time verdict (harness.stats constants)
    method: str = "-"
    p_value: float | None = None
    detail: str = ""
    rule: str = ""                       # how between-run noise was handled
    threshold: float | None = None       # the threshold applied to this case
    spread: float | None = None          # between-run spread of the baseline runs
    values: dict = field(default_factory=dict)       # gated column -> {baseline, candidate}
    regressions: list[str] = field(default_factory=list)   # non-time regressions (if gated)
    flags: list[str] = field(default_factory=list)         # reported, not regressions

    @property
    def is_regression(self) -> bool:
        return self.gated and (self.verdict == stats.REGRESSION or bool(self.regressions))

    @property
    def is_improvement(self) -> bool:
        return self.gated and self.verdict == stats.IMPROVEMENT

    @property
    def shown_verdict(self) -> str:
        """The time verdict as the table and the JSON print it: a gated case that regressed
        otherwise (status, correctness, determinism) is a regression however fast, as the
        summary and markdown count it, so its time is never printed as an improvement."""
        if self.verdict == stats.IMPROVEMENT and self.is_regression:
            return stats.REGRESSION
        return self.verdict

    @property
    def label(self) -> str:
        return key_label(self.key)


@dataclass
class CompareResult:
    baseline_dirs: list[str]
    candidate_dir: str
    threshold: float
    alpha: float
    metric: str
    cases: list[CaseResult]
    only_baseline: list[str]
    only_candidate: list[str]            # every case only the candidate holds ...
    notes: list[str]
    baseline_metas: list[dict]
    candidate_meta: dict
    selection: str = ""                  # what the gate judges (--only / --exclude), "" = all
    common_only: bool = False            # --common
    baseline_mix: dict = field(default_factory=dict)   # compare_rules.baseline_mix: what
    # besides noise differs between the baseline runs (commit, config, versions)
    only_candidate_listed: list[str] | None = None   # ... of them, those not among `cases`
    # (a new case that failed by itself is one of the cases: judged, or reported where not
    # gated); None: all of them

    @property
    def new_cases(self) -> list[CaseResult]:
        """The cases only the candidate holds that are among `cases` (they failed by
        themselves, without --common): counted with the cases, listed there, not again."""
        return [c for c in self.cases if c.base_runs == 0]

    @property
    def listed_new(self) -> list[str]:
        """The cases only the candidate holds that are listed only (not among `cases`)."""
        return (list(self.only_candidate) if self.only_candidate_listed is None
                else self.only_candidate_listed)

    @property
    def baseline_dir(self) -> str:
        return " ".join(self.baseline_dirs)

    @property
    def baseline_meta(self) -> dict:
        return self.baseline_metas[-1] if self.baseline_metas else {}

    @property
    def method(self) -> str:
        return method_text(self.metric)

    @property
    def regressions(self) -> list[CaseResult]:
        return [c for c in self.cases if c.is_regression]

    @property
    def improvements(self) -> list[CaseResult]:
        return [c for c in self.cases if c.is_improvement and not c.is_regression]

    @property
    def ungated(self) -> list[CaseResult]:
        return [c for c in self.cases if not c.gated]

    def counted(self, verdict: str) -> list[CaseResult]:
        """Gated cases with this time verdict that did not regress otherwise: a case that
        regressed (its time, status, correctness, or missing) counts as a regression only, so
        the counts add up to the gated cases.  Every count and list of a verdict reads this."""
        return [c for c in self.cases
                if c.gated and c.verdict == verdict and not c.is_regression]

    def count(self, verdict: str) -> int:
        return len(self.counted(verdict))

    @property
    def missing(self) -> list[CaseResult]:
        return [c for c in self.cases if c.cand_status == MISSING]

    def geomean_ratio(self) -> float | None:
        return stats.geomean(c.ratio for c in self.cases if c.gated and c.ratio is not None)

    def rule_counts(self) -> tuple[int, int]:
        """The gated cases judged against a between-run envelope, and those judged against
        one baseline run (_rule_counts)."""
        return _rule_counts(self.cases)

    def noise_rule(self) -> str:
        """How between-run noise was handled, as the summary and the JSON say it."""
        runs = len(self.baseline_dirs)
        env, one = self.rule_counts()
        if not env and not one:          # every gated case failed, went missing, or is new
            return NO_TIME_JUDGED
        if runs == 1:
            return "one baseline run: between-run noise unknown, conservative rule"
        envelope = f"between-run envelope of {runs} baseline runs"
        if self.baseline_mix:
            envelope += (f" of different {' and '.join(self.baseline_mix)}: the envelope "
                         "includes that change")
        if not one:
            return envelope
        if not env:
            return (f"{runs} baseline runs, each case held by one of them: between-run noise "
                    "unknown, conservative rule")
        return (f"{envelope}, for {env} case(s); one baseline run, conservative rule, for "
                f"{one}")

    def summary(self) -> str:
        n_reg, n_imp = len(self.regressions), len(self.improvements)
        gated = [c for c in self.cases if c.gated]
        # a gated case missing from the candidate is one of the regressions; an ungated one
        # is among the cases reported, not gated
        gone = sum(c.is_regression for c in self.missing)
        parts = [f"{n_reg} regression{'s' if n_reg != 1 else ''}"
                 + (f" ({gone} missing from the candidate)" if gone else ""),
                 f"{n_imp} improvement{'s' if n_imp != 1 else ''}",
                 f"{self.count(stats.NOISE)} within noise",
                 f"{self.count(stats.UNCHANGED)} unchanged"]
        if self.count(stats.FLAG):
            parts.append(f"{self.count(stats.FLAG)} flagged (call and GPU time moved apart)")
        if self.count(stats.NOT_COMPARED):
            parts.append(f"{self.count(stats.NOT_COMPARED)} without a time on a side")
        g = self.geomean_ratio()
        noise = self.noise_rule()
        text = (f"{'REGRESSION' if n_reg else 'OK'}: {', '.join(parts)} of {len(gated)} gated "
                f"cases ({self.metric} time, threshold {self.threshold:.1%}, {noise})")
        if g is not None:
            text += f"; geomean time ratio {g:.3f}"
        if self.ungated:
            text += f"; {len(self.ungated)} more case(s) reported, not gated ({self.selection})"
        # under --common a one-sided case is listed, not judged (only_baseline); without it,
        # a baseline case the candidate lacks is judged (missing), and only_baseline is empty
        gone, where = ((len(self.only_baseline), "case(s) only in baseline") if self.common_only
                       else (len(self.missing), "case(s) missing from the candidate"))
        # a new case that failed by itself is one of the cases counted above: said so, once
        judged = len(self.new_cases)
        if gone or self.only_candidate:
            text += (f"; {gone} {where}, {len(self.only_candidate)} only in candidate"
                     + (" (listed, not judged)" if self.common_only else
                        f" ({judged} failed by themselves, counted above; "
                        f"{len(self.listed_new)} listed, not judged)" if judged else ""))
        return text + "."


# why a baseline run counted has no time of a case (Baselines.without, and _no_time_why)
_WITHOUT = {"lack": "lack {n} of them (shards, a run stopped early, cases added since)",
            "failed": "failed {n}",
            "incorrect": "got a wrong result (correct False) in {n}",
            "unrepeatable": "did not repeat the bits of {n} though deterministic by design",
            "untimed": "did not time {n}",
            "own": "hold only the candidate's own measurement of {n} (no baseline)",
            "shared": "hold another run's measurement of {n} (counted once)"}


def _no_time_why(b: dict, mcol: schema.Column) -> str | None:
    """Why a baseline run's record of a case gives no time to judge (a key of _WITHOUT): not
    ok, a time of no speed (_unsound: wrong, or not repeatable though deterministic by
    design), no time of the metric; None where it gives one."""
    from normbench.harness.summary import is_false, not_repeatable
    if b.get("status") != "ok":
        return "failed"
    if is_false(b.get("correct")):
        return "incorrect"
    if not_repeatable(b):
        return "unrepeatable"
    return None if stats.is_time(b.get(mcol.name)) else "untimed"


def _one_run_note(cases: list[CaseResult], base: baselines.Baselines,
                  mcol: schema.Column) -> str:
    """Of several baseline runs, the gated cases judged against one run's time, and why the
    others gave none, by cause ("" where there are none)."""
    one = [c for c in cases if c.gated and c.rule and c.rule != stats.ENVELOPE]
    if not one:
        return ""
    why: dict[str, int] = dict.fromkeys(_WITHOUT, 0)
    for c in one:
        key = tuple(c.key[k] for k in schema.KEY)
        causes = set(base.without(key)) | {w for b in base.records(key)
                                           if (w := _no_time_why(b, mcol))}
        for cause in causes:
            why[cause] += 1
    said = ", ".join(_WITHOUT[k].format(n=n) for k, n in why.items() if n)
    return (f"{len(one)} gated case(s) are judged against one baseline run's time: the other "
            f"baseline run(s) {said}; between-run noise is unknown for them, so the "
            "conservative single-run rule applies")


def _rule_counts(cases: list[CaseResult]) -> tuple[int, int]:
    """The gated cases judged against a between-run envelope, and those judged against one
    baseline run (the conservative rule): each case by the baseline runs that hold it (shards,
    a partial run or cases added since leave a case to one run of several)."""
    judged = [c for c in cases if c.gated and c.rule]
    env = sum(c.rule == stats.ENVELOPE for c in judged)
    return env, len(judged) - env


# ---------------------------------------------------------------------------------------------
# comparison

def compare_runs(base_runs: list[Run], cand: Run, *, threshold: float = 0.05,
                 alpha: float = stats.ALPHA, metric: str = "call", only=None, exclude=None,
                 common: bool = False, mixed_baselines: bool = False) -> CompareResult:
    """Compare loaded runs (see method_text).  Raises CompareError when they cannot be
    (baseline runs of different commits unless `mixed_baselines`)."""
    if not base_runs:
        raise CompareError("no baseline run")
    same = [r.dir for r in base_runs if baselines.same_dir(r.dir, cand.dir)]
    if same:
        raise CompareError(f"the candidate {cand.dir} is also a baseline run ({same[0]}): it "
                           "would widen the baselines' envelope to hold itself")
    metrics = schema.metrics()
    if metric not in metrics:
        raise CompareError(f"--metric must be one of {', '.join(metrics)}, got {metric!r}")
    # the API takes fractions (the CLI parses "5%"): a NaN threshold would pass every case
    if not (isinstance(threshold, numbers.Real) and not isinstance(threshold, bool)
            and math.isfinite(threshold) and threshold >= 0):
        raise CompareError(f"threshold must be a finite fraction >= 0 (0.05 for 5 %), got "
                           f"{threshold!r}")
    if not (isinstance(alpha, numbers.Real) and 0 < alpha < 1):
        raise CompareError(f"alpha must be in (0, 1), got {alpha!r}")
    # one measurement twice (a run given twice, a copy, shards beside their merge) would be
    # an envelope of no spread: each counts once (harness/baselines.py)
    try:
        base = baselines.distinct(base_runs, cand)
    except baselines.CandidateCopy as e:
        raise CompareError(str(e)) from None
    base_runs = base.runs
    # a run that holds less than its plan is noted, and says nothing of a case it lacks
    coverage: dict[str, tuple[str, ...]] = {}
    notes = check_comparable(base_runs, cand, common=common, mixed_baselines=mixed_baselines,
                             coverage=coverage)
    notes += base.notes
    mcol = metrics[metric]
    for run in base_runs + [cand]:
        recs = run.records
        # a run without one ok record (every case failed) has nothing to say about the
        # metric: the case loop judges its statuses (regressions), it is not refused
        ok = recs[recs["status"] == "ok"] if "status" in recs.columns else recs
        if len(ok) and (mcol.name not in ok.columns
                        or not any(stats.is_time(v) for v in ok[mcol.name])):
            hint = (no_time_hint(mcol, metric, timer_kind(run.meta, recs), "compare")
                    or "re-run on a harness that records it")
            raise CompareError(f"--metric {metric}: {run.dir} has no {mcol.name} > 0 "
                               f"({mcol.doc or mcol.label}) in any ok record; {hint}")
    bases = base.indexes
    for run, dups in zip(base_runs, base.dup_keys):
        if dups:
            notes.append(f"{run.dir} has {dups} duplicate case key(s): the last of each is used")
    cand_idx, dups = index(cand.records)
    if dups:
        notes.append(f"{cand.dir} has {dups} duplicate case key(s): the last of each is used")
    base_keys = list(dict.fromkeys(k for b in bases for k in b))
    common_keys = [k for k in base_keys if k in cand_idx]
    if not common_keys and any(k in cand_idx for k in base.own):
        raise CompareError("every case the baseline shares with the candidate is the "
                           f"candidate's own measurement ({'; '.join(base.own_in)}); nothing "
                           "left to compare")
    if not common_keys:
        raise CompareError(f"no common case: baseline has {len(base_keys)} case(s), candidate "
                           f"{len(cand_idx)}, none with the same key {schema.KEY}")
    wanted, selection = select(cand_idx, bases, only, exclude)
    cases = [_compare_case(k, base.records(k), cand_idx[k], threshold, alpha, mcol, wanted(k))
             for k in common_keys]
    missing = [k for k in base_keys if k not in cand_idx]
    new = [k for k in cand_idx if not any(k in b for b in bases)]
    if not common:               # a case the candidate lacks is judged; under --common, listed
        # a baseline run that holds less than its plan (a shard, one stopped early) says
        # nothing about a case it lacks; a complete one that lacks it did not plan it
        whole = [h for r, h in zip(base_runs, base.held) if not coverage[r.dir]]
        # nor did a complete candidate lose a case that its own config or --only never
        # planned (overrides: the same config name, other text): a flag, not a regression
        plan = None if coverage[cand.dir] else _changed_plan(cand, cand_idx, base_runs,
                                                             base_keys)
        cases += [_missing_case(k, base.records(k), base.holders(k), wanted(k),
                                sum(k not in h for h in whole),
                                plan is not None and "|".join(k) not in plan)
                  for k in missing]
        # a case new in the candidate has no time to judge, but a failure of its own
        cases += [r for k in new if (r := _failed_new_case(k, cand_idx[k], wanted(k)))]
    judged_new = {c.case_id for c in cases if c.base_runs == 0}
    check_gates_something(selection, [c.gated for c in cases], common)
    check_judges_something(cases)
    if len(base_runs) > 1 and (note := _one_run_note(cases, base, mcol)):
        notes.append(note)
    cases.sort(key=lambda c: (not c.is_regression, not c.is_improvement, not c.gated,
                              -(c.ratio or 0) if c.is_regression else (c.ratio or 0)))
    if common:
        notes.append(f"--common: only the {len(common_keys)} case(s) both sides hold are compared")
    return CompareResult(
        baseline_dirs=[r.dir for r in base_runs], candidate_dir=cand.dir, threshold=threshold,
        alpha=alpha, metric=metric, cases=cases,
        only_baseline=[key_label(dict(zip(schema.KEY, k))) for k in missing] if common else [],
        only_candidate=[key_label(dict(zip(schema.KEY, k))) for k in new],
        only_candidate_listed=[key_label(dict(zip(schema.KEY, k))) for k in new
                               if "|".join(k) not in judged_new],
        notes=notes, baseline_metas=[dict(r.meta) for r in base_runs],
        candidate_meta=dict(cand.meta), selection=selection, common_only=common,
        baseline_mix=baseline_mix(base_runs))


def _context(col: schema.Column, rec: dict) -> str:
    bits = [f"{n} {schema.column_format(n, rec.get(n)) or '-'}" for n in col.context]
    return f" ({', '.join(bits)})" if bits else ""


def _gate_status(res: CaseResult, col: schema.Column, bs: list, c: dict) -> None:
    """STATUS_OK: ok in every baseline run -> not ok is a regression; so is a failure
    (schema.FAILED: error, timeout) where no baseline run failed (each ok or skipped: a case
    that now runs and fails, as a new case that fails does).  The other changes are flags;
    BOTH_NOT_OK only where both sides hold the same status (an unchanged failure or skip).  A
    candidate ok where no baseline run was is judged as a new case (_compare_case)."""
    b = [str(x.get(col.name) or "?") for x in bs]
    cs = str(c.get(col.name) or "?")
    n_ok = b.count("ok")
    if cs == "ok":
        if not n_ok:
            res.flags.append(f"{col.name} {res.base_status} -> ok")
    elif n_ok == len(b):
        res.regressions.append(f"{col.name} ok -> {cs}{_context(col, c)}")
    elif cs in schema.FAILED and all(s in schema.STATUSES and s not in schema.FAILED for s in b):
        res.regressions.append(f"{col.name} {res.base_status} -> {cs}, failed in no baseline "
                               f"run{_context(col, c)}")
    elif n_ok:
        res.flags.append(f"{col.name} ok in {n_ok} of {len(b)} baseline runs -> {cs}")
    elif set(b) == {cs}:
        res.flags.append(f"{BOTH_NOT_OK} ({res.base_status} / {cs})")
    else:
        res.flags.append(f"{col.name} {res.base_status} -> {cs}")


def _gate_bool(res: CaseResult, col: schema.Column, bs: list, c: dict) -> None:
    """TRUE_TO_FALSE: True in every baseline run -> False is a regression (where only_if), and
    so is none in the candidate's ok record where the baseline has a value (as a missing time
    is).  Where no ok baseline record holds a value (none is ok, or the runs predate the
    column) the candidate's is judged as a new case's, and so is a False where only_if holds
    in the candidate and in no baseline record (a strategy deterministic by design now);
    none on both sides says nothing."""
    from normbench.harness.summary import as_bool as _bool    # records read as text too
    bv = [v for b in bs if (v := _bool(b.get(col.name))) is not None]
    if not bv:
        why = _false_by_itself(col, c)
        if why:
            where = (f"no ok baseline record (baseline {res.base_status})" if not bs else
                     f"no {col.name} in any ok baseline record")
            res.regressions.append(f"{why}: {where}, judged as a new case")
        return
    cv = _bool(c.get(col.name))
    applies = True
    if col.only_if:
        cond = _bool(c.get(col.only_if))
        applies = bool(_bool(bs[-1].get(col.only_if)) if cond is None else cond)
    if cv is False and col.only_if and applies and not any(
            _bool(b.get(col.only_if)) for b in bs):
        # no baseline record held the property where it was gated (deterministic False of
        # a strategy not deterministic by design then): said nothing of the candidate's
        # claim, judged as a new case's
        why = _false_by_itself(col, c)
        if why:
            res.regressions.append(f"{why}: no baseline record {col.only_if}, judged as a "
                                   "new case")
            return
    if cv is None:
        text = (f"{col.name}: none in the candidate's ok record (the baseline has "
                f"{'/'.join(sorted({str(v) for v in bv}))})")
        if applies:
            res.regressions.append(text)
        else:
            res.flags.append(f"{text}: not {col.only_if}, a flag")
        return
    if all(bv) and cv is False:
        text = f"{col.name} True -> False{_context(col, c)}"
        if applies:
            res.regressions.append(text)
        else:
            res.flags.append(f"{text}: not {col.only_if}, a flag")
    elif not any(bv) and cv is True:
        res.flags.append(f"{col.name} False -> True")
    elif not any(bv) and applies:
        res.flags.append(f"{col.name} False on both sides")
    elif any(bv) and not all(bv):
        res.flags.append(f"{col.name} True in {sum(bv)} of {len(bv)} baseline runs -> {cv}")


def _false_by_itself(col: schema.Column, c: dict) -> str | None:
    """The new-case rule of a TRUE_TO_FALSE column: what to say where the record holds False
    and its only_if holds (correct False; deterministic False where deterministic by design),
    else None."""
    from normbench.harness.summary import is_false, is_true
    if not is_false(c.get(col.name)) or (col.only_if and not is_true(c.get(col.only_if))):
        return None
    return f"{col.name} False{_context(col, c)}" + (f" though {col.only_if}" if col.only_if
                                                    else "")


def _side(rec: dict, col: schema.Column) -> stats.Side:
    samples = stats.parse_samples(rec.get(col.samples)) if col.samples else []
    return stats.Side(num(rec.get(col.name)), num(rec.get(col.p20)) if col.p20 else None,
                      num(rec.get(col.p80)) if col.p80 else None, tuple(samples))


def _changed_plan(cand, cand_idx: dict, base_runs, base_keys) -> set[str] | None:
    """The case keys the candidate planned (harness/replan.py), where its plan was chosen
    otherwise than the baseline's — its config text differs from a baseline run's (the same
    config name with overrides) or an invocation narrowed it with --only — and can be
    rebuilt whole from its meta.json; else None (a case the candidate lacks then is judged
    as before: with the same config and no --only, a case missing from its plan is a
    strategy that dropped out of it, a regression)."""
    from normbench.harness import replan
    meta = dict(cand.meta)
    narrowed = replan.narrowed_only(meta) is not None
    if not narrowed and all(b.meta.get("config_hash") == meta.get("config_hash")
                            for b in base_runs):
        return None
    # planned with every implementation the baseline planned or holds, so that one missing
    # from the candidate's registry (a strategy that stopped registering, a peer not
    # installed) is in the plan rebuilt — its cases missing, regressions — and only the
    # config text or --only can leave a case out
    at = schema.KEY.index("implementation")
    names = [str(n) for b in base_runs for n in (b.meta.get("plan_implementations") or ())]
    names += [k[at] for k in base_keys]
    meta["plan_implementations"] = list(dict.fromkeys(
        [*(str(n) for n in meta.get("plan_implementations") or ()), *names]))
    plan = replan.rebuild(meta, {"|".join(k) for k in cand_idx},
                          also=["|".join(k) for k in base_keys])
    return set(plan.keys) if plan is not None and plan.whole else None


def _missing_case(key: tuple, bs: list[dict], runs: int, gated: bool,
                  unplanned: int = 0, not_planned: bool = False) -> CaseResult:
    """A baseline case the candidate run does not hold: a regression where every baseline run
    that holds it holds it ok (a strategy that dropped out of the plan, an interrupted run) --
    a run of the `runs` that does not hold it because it holds less than its plan (a shard, a
    run stopped early) says nothing about it -- else a flag: a baseline run failed or skipped
    it, or `unplanned` complete baseline runs lack it too (baseline runs of different configs:
    the case is not in every plan), or `not_planned`: the candidate, complete, never planned
    it (its config text or --only differs from the baseline's: `_changed_plan`)."""
    statuses = sorted({str(b.get("status") or "?") for b in bs})
    res = CaseResult(case_id="|".join(key), key=dict(zip(schema.KEY, key)),
                     base_status="/".join(statuses), cand_status=MISSING, gated=gated,
                     base_runs=len(bs))
    if not_planned:
        res.flags.append("missing from the candidate run: not in its plan (its config text or "
                         "--only differs from the baseline's; the candidate is complete)")
        return res
    if statuses == ["ok"] and not unplanned:        # a regression only where gated
        held = "every baseline run" if len(bs) >= runs else \
            f"every baseline run that holds it, {len(bs)} of {runs}"
        res.regressions.append(f"missing from the candidate run (ok in {held})")
    else:
        res.flags.append(f"missing from the candidate run (baseline {res.base_status} in "
                         f"{len(bs)} of {runs} runs" + (
                             f"; {unplanned} complete baseline run(s) lack it too: not in "
                             "every baseline run's plan" if unplanned else "") + ")")
    return res


def _failed_new_case(key: tuple, c: dict, gated: bool) -> CaseResult | None:
    """A case only the candidate holds (a strategy new since the baseline): a regression
    where it failed by itself — an error or timeout, or an ok record with a property gated
    TRUE_TO_FALSE False (where its only_if holds: correct, deterministic where deterministic
    by design, and any column declared so since) — else None (listed only)."""
    status = str(c.get("status") or "?")
    why = []
    if status in schema.FAILED:
        err = " ".join(str(c.get("error") or "").split())[:200]
        why.append(f"status {status}" + (f" ({err})" if err else ""))
    elif status == "ok":
        # from the declaration, as _gate_bool: a new gated column is judged here too
        why += [t for col in schema.gated(schema.TRUE_TO_FALSE) if (t := _false_by_itself(col, c))]
    if not why:
        return None
    res = CaseResult(case_id="|".join(key), key=dict(zip(schema.KEY, key)), base_status=MISSING,
                     cand_status=status, gated=gated, base_runs=0)
    res.regressions.append(f"new in the candidate (in no baseline run) and {why[0]}")
    return res


def _unsound(r: dict) -> bool:
    """A record whose time is no speed: its result is wrong (correct False), or did not
    repeat though the strategy is deterministic by design (summary.not_repeatable)."""
    from normbench.harness.summary import is_false, not_repeatable
    return is_false(r.get("correct")) or not_repeatable(r)


def _compare_case(key: tuple, bs: list[dict], c: dict, threshold: float, alpha: float,
                  mcol: schema.Column, gated: bool) -> CaseResult:
    statuses = sorted({str(b.get("status") or "?") for b in bs})
    res = CaseResult(case_id="|".join(key), key=dict(zip(schema.KEY, key)),
                     base_status="/".join(statuses), cand_status=str(c.get("status") or "?"),
                     gated=gated, base_runs=len(bs))
    for col in schema.gated():
        res.values[col.name] = {"baseline": [b.get(col.name) for b in bs],
                                "candidate": c.get(col.name)}
    for col in schema.gated(schema.STATUS_OK):
        _gate_status(res, col, bs, c)
    ok_bs = [b for b in bs if b.get("status") == "ok"]
    if res.cand_status != "ok":
        return res
    for col in schema.gated(schema.TRUE_TO_FALSE):     # no ok baseline record: as a new case
        _gate_bool(res, col, ok_bs, c)
    # the time of a wrong result is no speed: judged neither as a change nor in the geomean
    # (as summary.competing and export leave it out) where the candidate's or every ok
    # baseline run's result is wrong — which _gate_bool has said already (a regression, or
    # "correct False on both sides").  So is the time of a result that did not repeat where
    # the strategy is deterministic by design (_unsound): it broke its own contract, and
    # _gate_bool has said so (the determinism regression or flag)
    ok_bs = [] if _unsound(c) else [b for b in ok_bs if not _unsound(b)]
    if not ok_bs:                                      # no time to judge
        return res
    sides = [_side(b, mcol) for b in ok_bs]
    cand = _side(c, mcol)
    hb = mcol.metric == "call" and host_bound(ok_bs)
    gpu = gpu_change(ok_bs, c) if mcol.metric == "call" else None
    j = stats.judge_case(sides, cand, threshold, host_bound=hb, gpu=gpu, alpha=alpha)
    res.base_ms = stats.geomean(s.median for s in sides if stats.finite(s.median))
    res.cand_ms = cand.median
    res.ratio, res.verdict, res.method, res.p_value, res.detail = (
        j.ratio, j.verdict, j.method, j.p_value, j.detail)
    res.rule, res.threshold, res.spread = j.rule, j.threshold, j.spread
    if j.flag:                           # host and GPU disagree: said among the flags too
        res.flags.append(f"{mcol.name}: {j.flag}")
    # a time of 0 or less is no time (stats.is_time), and shown as recorded
    if (j.verdict == stats.NOT_COMPARED and not stats.is_time(cand.median)
            and any(stats.is_time(s.median) for s in sides)):
        got = "" if cand.median is None else f" ({cand.median:g})"
        res.regressions.append(f"{mcol.name}: none > 0 in the candidate's ok record{got} (the "
                               "baseline has one)")
    # an ungated case keeps its regressions (is_regression is False): the renderers list each
    # once, as "not gated", and its time verdict in the time tables; a copy among the flags
    # would list it twice
    return res


def compare(baseline_dirs, candidate_dir, threshold: float = 0.05, alpha: float = stats.ALPHA,
            metric: str = "call", only=None, exclude=None, common: bool = False,
            mixed_baselines: bool = False) -> CompareResult:
    """Compare run directories (read through harness.store).  `baseline_dirs` is one directory
    (a str, bytes or any os.PathLike) or an iterable of them; a directory that holds run
    directories stands for all of them."""
    if isinstance(baseline_dirs, (str, bytes, os.PathLike)):
        baseline_dirs = [baseline_dirs]
    base_runs = [r for d in baseline_dirs for r in expand_dirs(d)]
    cand_runs = expand_dirs(candidate_dir)
    if len(cand_runs) != 1:
        raise CompareError("the candidate must be one run directory; "
                           f"{os.fsdecode(candidate_dir)} holds {len(cand_runs)}")
    return compare_runs(base_runs, cand_runs[0], threshold=threshold, alpha=alpha,
                        metric=metric, only=only, exclude=exclude, common=common,
                        mixed_baselines=mixed_baselines)


def compare_records(base_records, cand_records, base_meta: dict, cand_meta: dict, *,
                    baseline_dir: str = "baseline", candidate_dir: str = "candidate",
                    **kw) -> CompareResult:
    """compare() on already-loaded records (pandas DataFrames with harness.schema columns)."""
    return compare_runs([Run(str(baseline_dir), base_records, base_meta)],
                        Run(str(candidate_dir), cand_records, cand_meta), **kw)


def exit_code(result: CompareResult) -> int:
    """0 when no gated case regressed, 1 otherwise.  (2, incomparable runs, is CompareError.)"""
    return EXIT_REGRESSION if result.regressions else EXIT_OK


def render(result: CompareResult, fmt: str = "table", width: int = 160,
           encoding: str = "utf-8") -> str:
    """The result in `fmt`; the table `width` columns wide, for a stream of `encoding`."""
    from normbench.harness.compare_render import render as _render
    return _render(result, fmt, width, encoding)


def render_error(message: str, fmt: str = "table", code: int = EXIT_INCOMPARABLE) -> str:
    """Why the runs were not compared, in the chosen format (stdout: the job summary)."""
    from normbench.harness.compare_render import render_error as _render_error
    return _render_error(message, fmt, code)


def run_cli(baseline_dirs, candidate_dir, threshold="5%", fmt: str = "table",
            **kw) -> tuple[str, int]:
    """Everything the `compare` verb does, minus printing: (text, exit code).  Every exit code
    comes with its explanation in `fmt`; an incomparable pair gives ("cannot compare: ...", 2)."""
    try:
        result = compare(baseline_dirs, candidate_dir, parse_threshold(threshold), **kw)
    except (CompareError, ValueError) as e:
        return render_error(f"cannot compare: {e}", fmt), EXIT_INCOMPARABLE
    return render(result, fmt), exit_code(result)
