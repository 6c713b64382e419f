"""Rendering of a `harness/compare.py` result: "table" (rich, plain text), "markdown" (a PR
comment / job summary) or "json"; and of the reason for exit code 2 in each of them.
The JSON's per-case values are those of every gated column of harness/schema.py.
"""
from __future__ import annotations

import io
import json
import math

from normbench.harness import stats
from normbench.harness.cells import md_cell as _md_cell, md_table as _md_table
from normbench.harness.compare_rules import BOTH_NOT_OK, isna, method_text

TIME_HEADER = ["case", "baseline ms", "candidate ms", "change", "noise test", "detail"]
FLAG_HEADER = ["case", "kind", "what"]
SIDED_HEADER = ["case", "only in"]
SIDED_NOTE = "--common: listed, not judged"
PROSE = {"case", "noise test", "detail", "what"}   # the table's columns that fold; the others
                                                   # (verdicts, numbers) are never cut


def _fmt(v, spec: str = ".4g") -> str:
    if v is None or isna(v):
        return "-"
    return format(v, spec) if isinstance(v, float) else str(v)


def _pct(ratio) -> str:
    return "-" if ratio is None else f"{(ratio - 1) * 100:+.1f}%"


def _time_rows(cases) -> list[list[str]]:
    return [[c.label, _fmt(c.base_ms), _fmt(c.cand_ms), _pct(c.ratio),
             f"{c.rule}: {c.method}" if c.rule else c.method, c.detail] for c in cases]


def _flag_rows(result) -> list[list[str]]:
    rows = []
    for c in result.cases:
        rows += [[c.label, "regression" if c.gated else "not gated", t] for t in c.regressions]
        rows += [[c.label, "flag", t] for t in c.flags]
    if not result.common_only:      # (only_baseline is empty here: those are cases, missing)
        # a new case that failed by itself is one of the cases above: not listed again
        rows += [[cid, "flag", "only in candidate"] for cid in result.listed_new]
    return rows


def _one_sided(result) -> list[list[str]]:
    """Under --common, the cases one side holds: not flags (nothing is judged of them) but
    listed, so the summary's counts name their cases.  [] without --common, where the flags
    and the missing cases say it."""
    if not result.common_only:
        return []
    return ([[cid, "baseline"] for cid in result.only_baseline]
            + [[cid, "candidate"] for cid in result.only_candidate])


def render(result, fmt: str = "table", width: int = 160, encoding: str = "utf-8") -> str:
    """The result as "table", "markdown" or "json" (ValueError for another format).  The
    table is drawn `width` columns wide (the CLI: its terminal's, 160 into a pipe or a file)
    for a stream of `encoding` (one that is not UTF-8 gets ASCII borders, as every other
    table of the CLI does)."""
    if fmt == "json":
        return _render_json(result)
    if fmt == "markdown":
        return _render_markdown(result)
    if fmt == "table":
        return _render_table(result, width, encoding)
    raise ValueError(f"unknown format {fmt!r}; expected one of table, markdown, json")


def render_error(message: str, fmt: str = "table", code: int = 2) -> str:
    """The reason the runs were not compared (exit `code`), in the chosen format."""
    if fmt == "json":
        return json.dumps({"summary": message, "exit_code": code, "error": message,
                           "method": method_text()}, indent=2)
    if fmt == "markdown":
        return f":warning: **normbench compare** — exit {code}: {_md_cell(message)}\n"
    return f"{message}\n"


def _meta_line(meta: dict) -> str:
    bits = [str(meta.get(k)) for k in ("device_name", "config_name") if meta.get(k)]
    if meta.get("git_commit"):
        bits.append(f"git {str(meta['git_commit'])[:10]}{'+dirty' if meta.get('git_dirty') else ''}")
    return ", ".join(bits) or "no meta"


def _bases_line(result) -> str:
    return "; ".join(f"`{d}` ({_meta_line(m)})"
                     for d, m in zip(result.baseline_dirs, result.baseline_metas))


def _details(title: str, body: list[str]) -> list[str]:
    return [f"<details><summary>{title}</summary>", "", *body, "", "</details>", ""]


def _render_markdown(result) -> str:
    icon = ":x:" if result.regressions else ":white_check_mark:"
    lines = [f"{icon} **normbench compare** — {result.summary()}", "",
             f"Baseline {_bases_line(result)} vs candidate `{result.candidate_dir}` "
             f"({_meta_line(result.candidate_meta)}).", ""]
    slow = [c for c in result.regressions if c.verdict == stats.REGRESSION]
    lines += [f"### Regressions ({len(result.regressions)})", ""]
    if slow:
        lines += _md_table(TIME_HEADER, _time_rows(slow)) + [""]
    other = [c for c in result.regressions if c.regressions]
    if other:
        lines += _md_table(FLAG_HEADER, [[c.label, "regression", "; ".join(c.regressions)]
                                         for c in other]) + [""]
    if not result.regressions:
        lines += ["None.", ""]
    lines += [f"### Improvements ({len(result.improvements)})", ""]
    lines += (_md_table(TIME_HEADER, _time_rows(result.improvements)) if result.improvements
              else ["None."]) + [""]
    flag_rows = [r for r in _flag_rows(result) if r[1] != "regression"]
    still_bad = [r for r in flag_rows if r[2].startswith(BOTH_NOT_OK)]
    flag_rows = [r for r in flag_rows if not r[2].startswith(BOTH_NOT_OK)]
    lines += [f"### Flags ({len(flag_rows)})", ""]
    lines += (_md_table(FLAG_HEADER, flag_rows) if flag_rows else ["None."]) + [""]
    if still_bad:
        lines += _details(f"{len(still_bad)} case(s) not ok on both sides, the same status "
                          "(unchanged failures, skips)", _md_table(FLAG_HEADER, still_bad))
    noise = result.counted(stats.NOISE)           # the summary's "within noise", case by case
    if noise:
        lines += _details(f"{len(noise)} change(s) beyond the threshold but inside the noise",
                          _md_table(TIME_HEADER, _time_rows(noise)))
    ungated = [c for c in result.ungated if c.verdict not in (stats.UNCHANGED, stats.NOT_COMPARED)]
    if ungated:
        lines += _details(f"{len(ungated)} time change(s) of cases not gated "
                          f"({result.selection})", _md_table(["verdict"] + TIME_HEADER, [
                              [c.verdict] + r for c, r in zip(ungated, _time_rows(ungated))]))
    sided = _one_sided(result)
    if sided:
        lines += _details(f"{len(result.only_baseline)} case(s) only in baseline, "
                          f"{len(result.only_candidate)} only in candidate ({SIDED_NOTE})",
                          _md_table(SIDED_HEADER, sided))
    lines += [f"> note: {n}" for n in result.notes] + ([""] if result.notes else [])
    lines.append(f"<details><summary>Method</summary>\n\n{result.method}\n\n</details>")
    return "\n".join(lines) + "\n"


class _Buffer(io.StringIO):
    """The table's text, drawn for a stream of `encoding` (rich picks its borders by it)."""

    def __init__(self, encoding: str):
        super().__init__()
        self._encoding = encoding

    @property
    def encoding(self) -> str:
        return self._encoding


def _render_table(result, width: int = 160, encoding: str = "utf-8") -> str:
    from rich.console import Console

    from normbench.harness import tables

    buf = _Buffer(encoding)
    console = Console(file=buf, width=width, color_system=None, force_terminal=False,
                      highlight=False, soft_wrap=False, markup=False)   # paths, errors: text

    def say(text: str) -> None:          # a line of text is never wrapped: a path stays whole
        console.print(text, soft_wrap=True)

    def table(header: list, rows: list, title: str) -> None:   # one record a line if narrow
        tables.show(console, [(h, h in PROSE) for h in header], [list(map(str, r)) for r in rows],
                    title)

    say(result.summary())
    for d, m in zip(result.baseline_dirs, result.baseline_metas):
        say(f"baseline:  {d} ({_meta_line(m)})")
    say(f"candidate: {result.candidate_dir} ({_meta_line(result.candidate_meta)})")
    shown = [c for c in result.cases if c.verdict not in (stats.UNCHANGED, stats.NOT_COMPARED)]
    if shown:
        table(["verdict"] + TIME_HEADER,
              [[c.shown_verdict if c.gated else f"{c.verdict} (not gated)", *_time_rows([c])[0]]
               for c in shown], "Time changes beyond the threshold")
    flags = _flag_rows(result)
    if flags:
        table(FLAG_HEADER, flags, "Status, correctness and determinism changes; one-sided cases")
    sided = _one_sided(result)
    if sided:
        table(SIDED_HEADER, sided, f"One-sided cases ({SIDED_NOTE})")
    say(f"{result.count(stats.UNCHANGED)} gated case(s) unchanged (not listed; use "
        "--format json for every case).")
    for n in result.notes:
        say(f"note: {n}")
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
    if isna(v):
        return None
    if hasattr(v, "item"):                  # numpy scalars
        return _json_safe(v.item())
    return str(v)


def _key_doc(key: dict) -> dict:
    """A case's key fields as JSON: those the record format declares as integers (rows, d) as
    numbers, not the case key's text, so that a tracker reading the JSON gets the types
    records.csv has (groups stays text: "auto", "-" or a number as asked)."""
    from normbench.harness import schema
    return {k: int(v) if schema.BY_NAME[k].dtype == "Int64" and _integer(str(v)) else v
            for k, v in key.items()}


def _integer(text: str) -> bool:
    """Whether `text` is an integer in ASCII digits (str.isdigit takes '²', which int refuses)."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdecimal()


def _case_doc(c) -> dict:
    return {"case_id": c.case_id, **_key_doc(c.key), "gated": c.gated, "base_status": c.base_status,
            "cand_status": c.cand_status, "baseline_runs": c.base_runs, "base_ms": c.base_ms,
            "cand_ms": c.cand_ms, "ratio": c.ratio, "verdict": c.shown_verdict, "rule": c.rule,
            "threshold": c.threshold, "between_run_spread": c.spread, "method": c.method,
            "p_value": c.p_value, "detail": c.detail, "regression": c.is_regression,
            "regressions": c.regressions, "flags": c.flags, "values": c.values}


def _meta_subset(meta: dict) -> dict:
    keys = ("device_name", "config_name", "config_hash", "git_commit", "git_dirty", "timer",
            "interpreted", "started_at", "triton_version", "torch_version")
    return {k: meta.get(k) for k in keys if k in meta}


def _noise_token(result, env: int, one: int) -> str:
    """The JSON's noise.rule: "none" where no gated case was judged on time (envelope_cases
    and one_run_cases both 0: each failed, went missing or is new), the envelope where every
    gated case judged had one, the one-run rule where none had, else mixed (ENV
    envelope_cases and ONE one_run_cases)."""
    if not env and not one:
        return "none"
    if len(result.baseline_dirs) > 1 and not one:
        return stats.ENVELOPE
    if len(result.baseline_dirs) == 1 or not env:
        return "one baseline run: between-run noise unknown (conservative rule)"
    return "mixed: between-run envelope for envelope_cases, one baseline run for one_run_cases"


def _render_json(result) -> str:
    from normbench.harness.compare import exit_code
    env, one = result.rule_counts()
    doc = {
        "summary": result.summary(), "exit_code": exit_code(result),
        "metric": result.metric, "threshold": result.threshold, "alpha": result.alpha,
        "method": result.method,
        "noise": {"baseline_runs": len(result.baseline_dirs),
                  "rule": _noise_token(result, env, one), "text": result.noise_rule(),
                  "envelope_cases": env, "one_run_cases": one,
                  "baselines_differ_in": result.baseline_mix},
        "gate": {"selection": result.selection or "all", "common_only": result.common_only},
        "baseline": {"dir": result.baseline_dir, "meta": _meta_subset(result.baseline_meta)},
        "baselines": [{"dir": d, "meta": _meta_subset(m)}
                      for d, m in zip(result.baseline_dirs, result.baseline_metas)],
        "candidate": {"dir": result.candidate_dir, "meta": _meta_subset(result.candidate_meta)},
        "counts": {"regressions": len(result.regressions),
                   "improvements": len(result.improvements),
                   "noise": result.count(stats.NOISE),
                   "flagged": result.count(stats.FLAG),
                   "unchanged": result.count(stats.UNCHANGED),
                   "not_compared": result.count(stats.NOT_COMPARED),
                   "gated": sum(c.gated for c in result.cases),
                   "not_gated": len(result.ungated),
                   "common": sum(c.base_runs > 0 and c.cand_status != "missing"
                                 for c in result.cases),
                   "missing": len(result.missing),
                   "only_baseline": len(result.only_baseline),
                   "only_candidate": len(result.only_candidate),
                   "only_candidate_judged": len(result.new_cases)},
        "geomean_ratio": result.geomean_ratio(),
        "cases": [_case_doc(c) for c in result.cases],
        "only_baseline": result.only_baseline,
        "only_candidate": result.only_candidate,
        "notes": result.notes,
    }
    return json.dumps(_json_safe(doc), indent=2)
