"""Compare two run directories case by case: regressions, improvements, and flags.

    result = compare(baseline_dir, candidate_dir, threshold=0.05)   # CompareError if incomparable
    print(render(result, "markdown"))                                # table | markdown | json
    sys.exit(exit_code(result))                                      # 0 clean, 1 regression(s)

Runs are read through harness.store only; the statistics live in harness.stats (pure).
METHOD below is the one-paragraph description the CLI's --help quotes.
"""
from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from normbench.harness import stats
from normbench.harness.schema import KEY

METHOD = (
    "Records of the two runs are joined on the case key (norm, implementation, rows, d, dtype, "
    "weight_dtype, groups) and, for every case that is ok on both sides, the ratio "
    "candidate/baseline of the median times is computed.  A case is a REGRESSION when the "
    "candidate is slower by more than the threshold (ratio > 1 + threshold) AND the difference "
    "stands outside run-to-run noise: when both sides recorded at least 5 timed samples "
    "(time_samples_ms) a one-sided Mann-Whitney U test (scipy.stats.mannwhitneyu) must find the "
    "candidate slower at alpha = 0.01; with fewer samples the recorded p20-p80 intervals must not "
    "overlap (candidate p20 above baseline p80); with neither, the threshold alone decides "
    "('threshold-only').  An IMPROVEMENT is the mirror image (ratio < 1 - threshold, test "
    "'less', candidate p80 below baseline p20).  A change beyond the threshold but inside the "
    "noise is reported as 'noise', never as a verdict.  Independently of time, a case regresses "
    "when its status goes ok -> error/timeout/skipped, correct True -> False, or deterministic "
    "True -> False (the reverse changes are reported as flags); cases present on one side only "
    "are listed but are not regressions by themselves.  Exit code 0: no regression; 1: "
    "regression(s); 2: the runs cannot be compared (different device model, different config "
    "name, Triton-interpreter CPU timings against GPU timings, or no common case)."
)

EXIT_OK = 0
EXIT_REGRESSION = 1
EXIT_INCOMPARABLE = 2

FORMATS = ("table", "markdown", "json")
BOTH_NOT_OK = "not ok on both sides"


class CompareError(Exception):
    """The two runs cannot be compared (CLI exit code 2).  The message is one line."""


parse_threshold = stats.parse_threshold


@dataclass
class CaseResult:
    case_id: str
    key: dict
    base_status: str
    cand_status: str
    base_ms: float | None = None
    cand_ms: float | None = None
    ratio: float | None = None
    verdict: str = stats.NOT_COMPARED     # time verdict (harness.stats constants)
    method: str = "-"
    p_value: float | None = None
    detail: str = ""
    regressions: list[str] = field(default_factory=list)  # non-time regressions
    flags: list[str] = field(default_factory=list)        # reported, not regressions

    @property
    def is_regression(self) -> bool:
        return self.verdict == stats.REGRESSION or bool(self.regressions)

    @property
    def is_improvement(self) -> bool:
        return self.verdict == stats.IMPROVEMENT


@dataclass
class CompareResult:
    baseline_dir: str
    candidate_dir: str
    threshold: float
    alpha: float
    cases: list[CaseResult]
    only_baseline: list[str]
    only_candidate: list[str]
    notes: list[str]                       # run-level remarks (config text changed, ...)
    baseline_meta: dict
    candidate_meta: dict

    @property
    def regressions(self) -> list[CaseResult]:
        return [c for c in self.cases if c.is_regression]

    @property
    def improvements(self) -> list[CaseResult]:
        return [c for c in self.cases if c.is_improvement and not c.is_regression]

    @property
    def flagged(self) -> list[CaseResult]:
        return [c for c in self.cases if c.flags or c.regressions]

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.cases)

    def geomean_ratio(self) -> float | None:
        return stats.geomean(c.ratio for c in self.cases if c.ratio is not None)

    def summary(self) -> str:
        n_reg, n_imp = len(self.regressions), len(self.improvements)
        head = ("REGRESSION" if n_reg else "OK")
        parts = [f"{n_reg} regression{'s' if n_reg != 1 else ''}",
                 f"{n_imp} improvement{'s' if n_imp != 1 else ''}",
                 f"{self.count(stats.NOISE)} within noise",
                 f"{self.count(stats.UNCHANGED)} unchanged"]
        not_timed = self.count(stats.NOT_COMPARED)
        if not_timed:
            parts.append(f"{not_timed} without a time on a side")
        g = self.geomean_ratio()
        geo = f"; geomean time ratio {g:.3f}" if g is not None else ""
        one_side = ""
        if self.only_baseline or self.only_candidate:
            one_side = (f"; {len(self.only_baseline)} case(s) only in baseline, "
                        f"{len(self.only_candidate)} only in candidate")
        return (f"{head}: {', '.join(parts)} of {len(self.cases)} common cases "
                f"(threshold {self.threshold:.1%}, noise: Mann-Whitney U one-sided alpha "
                f"{self.alpha:g} or p20-p80 overlap){geo}{one_side}.")


# ---------------------------------------------------------------------------------------------
# comparison

def _timer_kind(meta: dict, records) -> str | None:
    """"cpu_wall" (Triton interpreter) or "cuda_event"; None when unknown."""
    if meta.get("timer"):
        return str(meta["timer"])
    if meta.get("interpreted") is not None:
        return "cpu_wall" if bool(meta["interpreted"]) else "cuda_event"
    if "timer" in records.columns:
        timers = {str(t) for t in records["timer"].dropna().unique()}
        if len(timers) == 1:
            return timers.pop()
    return None


def _device(meta: dict, records) -> str | None:
    if meta.get("device_name"):
        return str(meta["device_name"])
    if "device" in records.columns:
        devices = {str(t) for t in records["device"].dropna().unique()}
        if len(devices) == 1:
            return devices.pop()
    return None


def check_comparable(base_meta: dict, cand_meta: dict, base_records, cand_records) -> list[str]:
    """Raise CompareError when the runs cannot be compared; return run-level notes otherwise."""
    notes = []
    bd, cd = _device(base_meta, base_records), _device(cand_meta, cand_records)
    if bd and cd and bd != cd:
        raise CompareError(f"different devices: baseline ran on {bd!r}, candidate on {cd!r}")
    if not (bd and cd):
        notes.append("device model unknown on one side: not checked")
    bc, cc = base_meta.get("config_name"), cand_meta.get("config_name")
    if bc and cc and bc != cc:
        raise CompareError(f"different configs: baseline {bc!r}, candidate {cc!r}")
    bh, ch = base_meta.get("config_hash"), cand_meta.get("config_hash")
    if bh and ch and bh != ch:
        notes.append(f"config {cc or bc!r} has the same name but different text "
                     f"(hash {str(bh)[:12]} vs {str(ch)[:12]})")
    bt, ct = _timer_kind(base_meta, base_records), _timer_kind(cand_meta, cand_records)
    if bt and ct and bt != ct:
        raise CompareError(f"timer mismatch: baseline timed with {bt}, candidate with {ct} "
                           "(Triton-interpreter CPU wall-clock cannot be compared with GPU time)")
    if bt == ct == "cpu_wall":
        notes.append("both runs are CPU wall-clock timings under the Triton interpreter: "
                     "they say nothing about GPU speed")
    for name, meta in (("baseline", base_meta), ("candidate", cand_meta)):
        if meta.get("git_dirty"):
            notes.append(f"{name} was run from a dirty tree (git_commit {meta.get('git_commit')})")
    return notes


def _key_tuple(row) -> tuple:
    return tuple("" if _isna(row[k]) else str(row[k]) for k in KEY)


def _isna(v) -> bool:
    if v is None:
        return True
    try:
        return bool(v != v)        # NaN, pd.NA raises TypeError in bool()
    except TypeError:
        return True


def _num(v) -> float | None:
    return float(v) if stats.finite(v) else None


def _bool(v) -> bool | None:
    return None if _isna(v) else bool(v)


def _index(records) -> tuple[dict, int]:
    out, dups = {}, 0
    for row in records.to_dict("records"):
        k = _key_tuple(row)
        dups += k in out
        out[k] = row                  # last one wins (a resumed run re-measured it)
    return out, dups


def compare_records(base_records, cand_records, base_meta: dict, cand_meta: dict, *,
                    threshold: float = 0.05, alpha: float = stats.ALPHA,
                    baseline_dir: str = "", candidate_dir: str = "") -> CompareResult:
    """compare() on already-loaded records (pandas DataFrames with harness.schema columns)."""
    notes = check_comparable(base_meta, cand_meta, base_records, cand_records)
    base, bdup = _index(base_records)
    cand, cdup = _index(cand_records)
    for name, n in (("baseline", bdup), ("candidate", cdup)):
        if n:
            notes.append(f"{name} has {n} duplicate case key(s): the last record of each is used")
    common = [k for k in base if k in cand]
    if not common:
        raise CompareError(f"no common case: baseline has {len(base)} case(s), candidate "
                           f"{len(cand)}, none with the same key {KEY}")
    cases = [_compare_case(k, base[k], cand[k], threshold, alpha) for k in common]
    cases.sort(key=lambda c: (not c.is_regression, not c.is_improvement,
                              -(c.ratio or 0) if c.is_regression else (c.ratio or 0)))
    return CompareResult(
        baseline_dir=baseline_dir, candidate_dir=candidate_dir, threshold=threshold, alpha=alpha,
        cases=cases,
        only_baseline=[_key_label(dict(zip(KEY, k))) for k in base if k not in cand],
        only_candidate=[_key_label(dict(zip(KEY, k))) for k in cand if k not in base],
        notes=notes, baseline_meta=dict(base_meta), candidate_meta=dict(cand_meta))


def _compare_case(key: tuple, b: dict, c: dict, threshold: float, alpha: float) -> CaseResult:
    bs, cs = str(b.get("status") or "?"), str(c.get("status") or "?")
    res = CaseResult(case_id="|".join(key), key=dict(zip(KEY, key)), base_status=bs, cand_status=cs,
                     base_ms=_num(b.get("time_ms")), cand_ms=_num(c.get("time_ms")))
    if bs == "ok" and cs != "ok":
        err = str(c.get("error") or "").strip()
        res.regressions.append(f"status ok -> {cs}" + (f": {err}" if err else ""))
    elif bs != "ok" and cs == "ok":
        res.flags.append(f"status {bs} -> ok")
    elif bs != "ok" and cs != "ok":
        res.flags.append(f"{BOTH_NOT_OK} ({bs} / {cs})")
    if bs == "ok" and cs == "ok":
        bc, cc = _bool(b.get("correct")), _bool(c.get("correct"))
        if bc is True and cc is False:
            res.regressions.append(f"correct True -> False (max_rel_err {_fmt(c.get('max_rel_err'))}"
                                   f" > tolerance {_fmt(c.get('tolerance'))})")
        elif bc is False and cc is True:
            res.flags.append("correct False -> True")
        elif bc is False and cc is False:
            res.flags.append("incorrect on both sides")
        bd, cd = _bool(b.get("deterministic")), _bool(c.get("deterministic"))
        if bd is True and cd is False:
            res.regressions.append(f"deterministic True -> False ({_fmt(c.get('distinct_results'))}"
                                   f" distinct results of {_fmt(c.get('repeats'))} repeats)")
        elif bd is False and cd is True:
            res.flags.append("deterministic False -> True")
        j = stats.judge(
            res.base_ms, res.cand_ms, threshold,
            base_samples=stats.parse_samples(b.get("time_samples_ms")),
            cand_samples=stats.parse_samples(c.get("time_samples_ms")),
            base_interval=(_num(b.get("time_p20_ms")), _num(b.get("time_p80_ms"))),
            cand_interval=(_num(c.get("time_p20_ms")), _num(c.get("time_p80_ms"))),
            alpha=alpha)
        res.ratio, res.verdict, res.method, res.p_value, res.detail = (
            j.ratio, j.verdict, j.method, j.p_value, j.detail)
    return res


def compare(baseline_dir, candidate_dir, threshold: float = 0.05,
            alpha: float = stats.ALPHA) -> CompareResult:
    """Compare two run directories (read through harness.store).  See METHOD.
    Raises CompareError when the runs cannot be compared."""
    from normbench.harness import store
    for d in (baseline_dir, candidate_dir):
        if not Path(d).is_dir():
            raise CompareError(f"not a run directory: {d}")
    unreadable = (OSError, ValueError, getattr(store, "StoreError", OSError))
    try:
        base_records, cand_records = store.load_records(baseline_dir), store.load_records(candidate_dir)
        base_meta, cand_meta = store.load_meta(baseline_dir) or {}, store.load_meta(candidate_dir) or {}
    except unreadable as e:
        raise CompareError(" ".join(f"cannot read runs: {e}".split())) from e
    return compare_records(base_records, cand_records, base_meta, cand_meta,
                           threshold=threshold, alpha=alpha,
                           baseline_dir=str(baseline_dir), candidate_dir=str(candidate_dir))


def exit_code(result: CompareResult) -> int:
    """0 when no case regressed, 1 otherwise.  (2, incomparable runs, is CompareError.)"""
    return EXIT_REGRESSION if result.regressions else EXIT_OK


def run_cli(baseline_dir, candidate_dir, threshold="5%", fmt: str = "table") -> tuple[str, int]:
    """Everything the `compare` verb does, minus printing: (text, exit code).  An incomparable
    pair gives ("cannot compare: <reason>", 2)."""
    try:
        result = compare(baseline_dir, candidate_dir, parse_threshold(threshold))
    except CompareError as e:
        return f"cannot compare: {e}", EXIT_INCOMPARABLE
    return render(result, fmt), exit_code(result)


# ---------------------------------------------------------------------------------------------
# rendering

def _fmt(v, spec: str = ".4g") -> str:
    if v is None or _isna(v):
        return "-"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def _pct(ratio: float | None) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def _key_label(k: dict) -> str:
    g = "" if k["groups"] in ("-", "") else f" G={k['groups']}"
    return f"{k['implementation']}{g} {k['norm']} {k['rows']}x{k['d']} {k['dtype']}/{k['weight_dtype']}"


def _case_label(c: CaseResult) -> str:
    return _key_label(c.key)


def _time_rows(cases: list[CaseResult]) -> list[list[str]]:
    return [[_case_label(c), _fmt(c.base_ms), _fmt(c.cand_ms), _pct(c.ratio), c.method,
             c.detail] for c in cases]


def _flag_rows(result: CompareResult) -> list[list[str]]:
    rows = []
    for c in result.cases:
        for text in c.regressions:
            rows.append([_case_label(c), "regression", text])
        for text in c.flags:
            rows.append([_case_label(c), "flag", text])
    for cid in result.only_baseline:
        rows.append([cid, "flag", "only in baseline"])
    for cid in result.only_candidate:
        rows.append([cid, "flag", "only in candidate"])
    return rows


TIME_HEADER = ["case", "baseline ms", "candidate ms", "change", "noise test", "detail"]
FLAG_HEADER = ["case", "kind", "what"]


def render(result: CompareResult, fmt: str = "table") -> str:
    """The result as "table" (rich, plain text), "markdown" (a PR comment) or "json"."""
    if fmt == "json":
        return _render_json(result)
    if fmt == "markdown":
        return _render_markdown(result)
    if fmt == "table":
        return _render_table(result)
    raise ValueError(f"unknown format {fmt!r}; expected one of {FORMATS}")


def _md_cell(s) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_md_cell(x) for x in r) + " |" for r in rows]
    return out


def _time_slowdown_regs(result: CompareResult) -> list[CaseResult]:
    return [c for c in result.regressions if c.verdict == stats.REGRESSION]


def _render_markdown(result: CompareResult) -> str:
    icon = ":x:" if result.regressions else ":white_check_mark:"
    lines = [f"{icon} **normbench compare** — {result.summary()}", ""]
    lines.append(f"Baseline `{result.baseline_dir}` ({_meta_line(result.baseline_meta)}) vs "
                 f"candidate `{result.candidate_dir}` ({_meta_line(result.candidate_meta)}).")
    lines.append("")
    slow = _time_slowdown_regs(result)
    lines.append(f"### Regressions ({len(result.regressions)})")
    lines.append("")
    if slow:
        lines += _md_table(TIME_HEADER, _time_rows(slow))
        lines.append("")
    other = [c for c in result.regressions if c.regressions]
    if other:
        lines += _md_table(FLAG_HEADER, [[_case_label(c), "regression", "; ".join(c.regressions)]
                                         for c in other])
        lines.append("")
    if not result.regressions:
        lines += ["None.", ""]
    lines.append(f"### Improvements ({len(result.improvements)})")
    lines.append("")
    lines += (_md_table(TIME_HEADER, _time_rows(result.improvements)) if result.improvements
              else ["None."])
    lines.append("")
    flag_rows = [r for r in _flag_rows(result) if r[1] == "flag"]
    still_bad = [r for r in flag_rows if r[2].startswith(BOTH_NOT_OK)]
    flag_rows = [r for r in flag_rows if not r[2].startswith(BOTH_NOT_OK)]
    noise = [c for c in result.cases if c.verdict == stats.NOISE]
    lines.append(f"### Flags ({len(flag_rows)})")
    lines.append("")
    lines += _md_table(FLAG_HEADER, flag_rows) if flag_rows else ["None."]
    lines.append("")
    if still_bad:
        lines.append(f"<details><summary>{len(still_bad)} case(s) not ok on both sides "
                     "(unchanged failures, skips)</summary>")
        lines.append("")
        lines += _md_table(FLAG_HEADER, still_bad)
        lines += ["", "</details>", ""]
    if noise:
        lines.append(f"<details><summary>{len(noise)} change(s) beyond the threshold but inside "
                     "run-to-run noise</summary>")
        lines.append("")
        lines += _md_table(TIME_HEADER, _time_rows(noise))
        lines += ["", "</details>", ""]
    for n in result.notes:
        lines.append(f"> note: {n}")
    if result.notes:
        lines.append("")
    lines.append(f"<details><summary>Method</summary>\n\n{METHOD}\n\n</details>")
    return "\n".join(lines) + "\n"


def _meta_line(meta: dict) -> str:
    bits = [str(meta.get(k)) for k in ("device_name", "config_name") if meta.get(k)]
    if meta.get("git_commit"):
        bits.append(f"git {str(meta['git_commit'])[:10]}{'+dirty' if meta.get('git_dirty') else ''}")
    return ", ".join(bits) or "no meta"


def _render_table(result: CompareResult) -> str:
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(file=buf, width=160, color_system=None, force_terminal=False,
                      highlight=False, soft_wrap=False)
    console.print(result.summary())
    console.print(f"baseline:  {result.baseline_dir} ({_meta_line(result.baseline_meta)})")
    console.print(f"candidate: {result.candidate_dir} ({_meta_line(result.candidate_meta)})")
    shown = [c for c in result.cases if c.verdict not in (stats.UNCHANGED, stats.NOT_COMPARED)]
    if shown:
        t = Table(title="Time changes beyond the threshold", show_lines=False)
        for h in ["verdict"] + TIME_HEADER:
            t.add_column(h, overflow="fold")
        for c in shown:
            t.add_row(c.verdict, *_time_rows([c])[0])
        console.print(t)
    flags = _flag_rows(result)
    if flags:
        t = Table(title="Status, correctness and determinism changes; one-sided cases")
        for h in FLAG_HEADER:
            t.add_column(h, overflow="fold")
        for r in flags:
            t.add_row(*r)
        console.print(t)
    unchanged = result.count(stats.UNCHANGED)
    console.print(f"{unchanged} case(s) unchanged within {result.threshold:.1%} (not listed; "
                  "use --format json for every case).")
    for n in result.notes:
        console.print(f"note: {n}")
    return buf.getvalue()


def _json_safe(v):
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    if _isna(v):
        return None
    return str(v)


def _render_json(result: CompareResult) -> str:
    doc = {
        "summary": result.summary(),
        "exit_code": exit_code(result),
        "threshold": result.threshold,
        "alpha": result.alpha,
        "method": METHOD,
        "baseline": {"dir": result.baseline_dir, "meta": _meta_subset(result.baseline_meta)},
        "candidate": {"dir": result.candidate_dir, "meta": _meta_subset(result.candidate_meta)},
        "counts": {"regressions": len(result.regressions),
                   "improvements": len(result.improvements),
                   "noise": result.count(stats.NOISE),
                   "unchanged": result.count(stats.UNCHANGED),
                   "not_compared": result.count(stats.NOT_COMPARED),
                   "common": len(result.cases),
                   "only_baseline": len(result.only_baseline),
                   "only_candidate": len(result.only_candidate)},
        "geomean_ratio": result.geomean_ratio(),
        "cases": [{"case_id": c.case_id, **c.key, "base_status": c.base_status,
                   "cand_status": c.cand_status, "base_ms": c.base_ms, "cand_ms": c.cand_ms,
                   "ratio": c.ratio, "verdict": c.verdict, "method": c.method,
                   "p_value": c.p_value, "detail": c.detail, "regression": c.is_regression,
                   "regressions": c.regressions, "flags": c.flags} for c in result.cases],
        "only_baseline": result.only_baseline,
        "only_candidate": result.only_candidate,
        "notes": result.notes,
    }
    return json.dumps(_json_safe(doc), indent=2)


def _meta_subset(meta: dict) -> dict:
    keys = ("device_name", "config_name", "config_hash", "git_commit", "git_dirty", "timer",
            "interpreted", "started_at", "triton_version", "torch_version")
    return {k: meta.get(k) for k in keys if k in meta}
