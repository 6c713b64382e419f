"""One run's records in the formats continuous-benchmarking trackers read.

    text, left_out = export(run_dir, "github-action-benchmark")   # or "bencher"

* github-action-benchmark, tool `customSmallerIsBetter`: a top-level JSON array of
  {name, unit, value, range?, extra?} -- one entry per case key (the case label), unit "us",
  value the median, range "± x" (x = half the p20-p80 width), extra a text with GB/s, % of the
  copy ceiling (to at least 3 significant digits: _figure) and the determinism verdict (the
  action shows it in the chart's tooltip).
* Bencher Metric Format (BMF): {benchmark: {measure: {value, lower_value?, upper_value?}}} --
  one benchmark per case key with the built-in `latency` measure in nanoseconds (the median,
  p20 and p80 as bounds), the built-in `throughput` measure in calls per second (its bounds
  from p80 and p20), and a `bandwidth` measure in GB/s (harness.model's minimal bytes).  A
  case label past BENCHER_NAME_MAX characters, which Bencher refuses as a name, is refused.
The GB/s and % of copy follow the exported time: under `--metric gpu` they are the records'
(call-time) figures scaled by call time / GPU time.  A metric other than `call` is a series of
its own (series()): its entries are named "<case> [gpu]", its measures `gpu-latency`,
`gpu-throughput` and `gpu-bandwidth` (Bencher creates a measure the first time a slug comes),
so a tracker fed both never joins two clocks in one chart; `call`'s names stay as they were.

Only records with status ok, a result not found incorrect and a time are exported: a tracker
has no place for a failure or a wrong result (its time would chart as an ordinary point;
`compare` gates those); a time past float's range in ns or calls/s (a broken record) is left
out too: the JSON is strict, never Infinity.  Bounds (range, lower/upper_value) are written
only where they are finite and hold the value (p20 <= median <= p80).  The count export() returns says how many were left out, and its
note() why.  Which time is exported follows `compare --metric` (harness.schema.metrics()).
A case recorded more than once (a hand-joined records file) is exported once, from its last
record, as `compare` and `report` take it; the count's `notes` say so.

The caveats `report` and `compare` print go with it: the notes say where the run holds less
than its plan (stopped early, one shard, still running: harness/report/coverage.py's warning)
and how many exported records were timed under the Triton interpreter or are host-bound calls
measured next to other cases (harness/hostload.py); a github-action-benchmark entry's extra
says the last two of its own record.
"""
from __future__ import annotations

import json
import math
from collections import Counter

from normbench.harness import schema, stats
from normbench.harness.cells import num as _num
from normbench.harness.compare_rules import (isna, key_label, key_tuple, no_time_hint,
                                             timer_kind)

FORMATS = ("github-action-benchmark", "bencher")
BENCHER_NAME_MAX = 1024      # characters in a Bencher benchmark name (BMF's reference)


def series(metric: str) -> tuple[str, str]:
    """(the suffix of a github-action-benchmark entry's name, the prefix of a Bencher measure's
    slug) of `metric`'s series: none for `call` (the names trackers have held since export
    began), " [gpu]" and "gpu-" for `gpu`."""
    return ("", "") if metric == "call" else (f" [{metric}]", f"{metric}-")


class ExportError(Exception):
    """The run cannot be exported (CLI exit code 2).  The message is one line."""


class LeftOut(int):
    """How many records were left out (an int, for callers that only count), and why:
    `reasons` maps "not ok" / "incorrect" / "without a <time column> > 0" to a count — of
    the last record of each case key; `notes`: other lines for the user (the earlier records
    of a case recorded again, set aside and not counted here)."""
    reasons: dict
    notes: tuple

    def __new__(cls, reasons: Counter, notes: tuple = ()) -> "LeftOut":
        n = super().__new__(cls, sum(reasons.values()))
        n.reasons, n.notes = dict(reasons), tuple(notes)
        return n

    def __reduce__(self):           # copy and pickle rebuild it from its reasons and notes
        return (LeftOut, (Counter(self.reasons), self.notes))

    def why(self) -> str:
        """`10 incorrect, 2 not ok` ("" when none was)."""
        return ", ".join(f"{n} {r}" for r, n in self.reasons.items() if n)

    def note(self) -> str:
        """`12 record(s) left out: 10 incorrect, 2 not ok` ("" when none was)."""
        return f"{int(self)} record(s) left out: {self.why()}" if self else ""


def _left_out_why(r: dict, col: schema.Column) -> str | None:
    from normbench.harness.summary import is_false
    if r.get("status") != "ok":
        return "not ok"
    if is_false(r.get("correct")):      # its time is real, but of a wrong result
        return "incorrect"
    # a time that is no time (0 or negative: a hand-edited or broken record) is left out as
    # one without a time is: a tracker would take it as infinitely fast
    if not stats.is_time(r.get(col.name)):
        return f"without a {col.name} > 0"
    ns = float(r[col.name]) * 1e6        # the formats' units: us, ns, calls/s (1e9 / ns)
    if not (math.isfinite(ns) and math.isfinite(1e9 / ns)):
        return f"with a {col.name} not finite in ns or calls/s"
    return None


def _ordered(value: float, lower: float | None, upper: float | None) -> bool:
    """Bounds a tracker can draw: finite and 0 < lower <= value <= upper (a broken or
    hand-edited record's p20 above its median is no band around it)."""
    return (lower is not None and upper is not None
            and all(math.isfinite(v) for v in (value, lower, upper))
            and 0 < lower <= value <= upper)


INTERPRETED = "CPU wall-clock under the Triton interpreter: not GPU performance"


def _interpreted(r: dict, timer: str | None) -> bool:
    """The record was timed under the interpreter (its `timer`, else the run's)."""
    own = r.get("timer")
    return (timer if isna(own) else str(own)) == "cpu_wall"


def _caveats(r: dict, timer: str | None) -> list[str]:
    """What a record's time must be read with (its extra's last lines): timed under the
    interpreter, measured next to other cases on its host."""
    from normbench.harness.hostload import contention_note
    lines = [INTERPRETED] if _interpreted(r, timer) else []
    return lines + [n for n in (contention_note(r),) if n]


def _caveat_counts(rows: list[tuple[str, dict, schema.Column]], timer: str | None) -> tuple:
    """The notes counting the exported records with each caveat (none where none has it)."""
    from normbench.harness.hostload import contention_note
    slow = sum(_interpreted(r, timer) for _, r, _ in rows)
    busy = sum(contention_note(r) is not None for _, r, _ in rows)
    of = f" of the {len(rows)} exported record(s)"
    return tuple(n for n in (
        slow and f"{slow}{of} are CPU wall-clock timing under the Triton interpreter: they say "
                 "nothing about GPU speed",
        busy and f"{busy}{of} are host-bound calls measured while other cases ran on their "
                 "host: they may be inflated by host contention (time them with nothing else "
                 "measuring on the host; --exclusive-below-us keeps a --gpus/--scheduler "
                 "run's own cases apart)") if n)


def coverage_note(run_dir, records, meta: dict) -> tuple[str, ...]:
    """report's top warning where the directory holds less than its plan: stopped early
    (meta.json `completed: false`), one shard of a sharded run, a partial merge, a run still
    measuring (its lock held)."""
    from normbench.harness import store
    from normbench.harness.report.coverage import coverage, last_of_each_key
    from normbench.harness.report.fmt import plain
    cov = coverage(last_of_each_key(plain(records))[0], meta, live=store.in_use(run_dir))
    return (f"incomplete run: {cov.warning}",) if cov.incomplete else ()


def _last_of_each_key(records, source: str) -> tuple[list[dict], tuple[str, ...]]:
    """The last record of each case key, in the order the keys first appear (as compare's
    index takes them), and a note where earlier ones were set aside."""
    last, first_dup, dups = {}, None, 0
    for r in records.to_dict("records"):
        k = key_tuple(r)
        if k in last:
            dups += 1
            first_dup = first_dup or key_label(r)
        last[k] = r
    note = (f"{source} holds {dups} earlier record(s) of a case recorded again later (the "
            f"first: {first_dup}): each case is exported once, from its last record, as "
            "compare and report use it")
    return list(last.values()), ((note,) if dups else ())


def _rows(records, metric: str, meta: dict | None = None,
          source: str = "the records") -> tuple[list[tuple[str, dict, schema.Column]], LeftOut]:
    metrics = schema.metrics()
    if metric not in metrics:
        raise ExportError(f"--metric must be one of {', '.join(metrics)}, got {metric!r}")
    col = metrics[metric]
    out, left = [], Counter()
    rows, notes = _last_of_each_key(records, source)
    for r in rows:
        why = _left_out_why(r, col)
        if why:
            left[why] += 1
            continue
        key = {k: ("" if isna(r.get(k)) else str(r[k])) for k in schema.KEY}
        out.append((key_label(key), r, col))
    if not out:     # an empty document would pass a tracker's upload and gate nothing
        hint = left[f"without a {col.name} > 0"] and no_time_hint(
            col, metric, timer_kind(meta or {}, records), "export")
        raise ExportError(f"--metric {metric}: nothing to export — of {len(rows)} record(s), "
                          f"{LeftOut(left).why() or 'none'}" + (f" ({hint})" if hint else "")
                          + "".join(f"; {n}" for n in notes))
    names = Counter(n for n, _, _ in out)   # two keys, one label: "-" and an empty GROUPS
    if (twice := next((n for n, c in names.items() if c > 1), None)) is not None:
        raise ExportError(f"{source}: two different case keys read as {twice!r}")
    return out, LeftOut(left, notes + _caveat_counts(out, timer_kind(meta or {}, records)))


def _rates(r: dict, col: schema.Column) -> tuple[float | None, float | None]:
    """(GB/s, % of copy) at the exported time: the records' own (call time) for --metric call,
    scaled by call time / that time for another metric, so a tracker never sees a bandwidth of
    one clock beside a latency of the other."""
    gbps, pct = _num(r.get("gbps")), _num(r.get("pct_copy"))
    if col.name == "time_ms":
        return gbps, pct
    call, t = _num(r.get("time_ms")), _num(r.get(col.name))
    if call is None or t is None or t <= 0:
        return None, None
    scale = call / t                         # a product past float's range: none, not inf
    return (_num(gbps * scale) if gbps is not None else None), \
        (_num(pct * scale) if pct is not None else None)


def _count(v) -> str:
    """A count cell as a count: 4, not the 4.0 of a column pandas read as float (it holds
    NaN where a case failed)."""
    x = _num(v)
    return str(int(x)) if x is not None and x.is_integer() else str(v)


def _determinism(r: dict) -> str:
    """The record's determinism verdict, its cells read as the booleans they hold or spell
    (records read as text: bool("False") is True)."""
    from normbench.harness.summary import as_bool
    det, n, rep = as_bool(r.get("deterministic")), r.get("distinct_results"), r.get("repeats")
    if det is None:
        return "not measured"
    how = ("" if isna(n) or isna(rep) else
           f" ({_count(n)} distinct in "
           f"{schema.compared_calls(_count(rep), r.get('last_call_compared'))})")
    design = as_bool(r.get("deterministic_by_design"))
    by_design = "" if design is None else (
        ", deterministic by design" if design else ", not by design")
    return ("bitwise reproducible" if det else "not reproducible") + how + by_design


def _figure(name: str, v: float) -> str:
    """A rate as its column shows it, or to 3 significant digits where that shows fewer: the
    table's GB/s (".0f") wrote "GB/s: 0" for 8e-05 GB/s, and 1.4 as "1"."""
    text = schema.column_format(name, v)
    return text if len(text.lstrip("-").replace(".", "").lstrip("0")) >= 3 else f"{v:.3g}"


def github_action_benchmark(records, metric: str = "call", meta: dict | None = None,
                            source: str = "the records") -> tuple[list[dict], LeftOut]:
    """The customSmallerIsBetter entries of a run, and how many records were left out (`meta`,
    the run's, says why where none has the metric's time; `source` names the records in
    notes and errors)."""
    rows, skipped = _rows(records, metric, meta, source)
    suffix, entries, timer = series(metric)[0], [], timer_kind(meta or {}, records)
    for name, r, col in rows:
        e = {"name": name + suffix, "unit": "us", "value": float(r[col.name]) * 1e3}
        p20, p80 = _num(r.get(col.p20)) if col.p20 else None, _num(r.get(col.p80)) if col.p80 else None
        band = _ordered(float(r[col.name]), p20, p80) and math.isfinite((p80 - p20) / 2 * 1e3)
        if band:
            e["range"] = f"± {(p80 - p20) / 2 * 1e3:.3g}"
        # what the value is, as its column declares it (compare words it the same way)
        extra = [(col.doc or col.label or col.name)
                 + (f"; p20-p80 {p20 * 1e3:.4g}-{p80 * 1e3:.4g} us" if band else "")]
        for c, text, v in zip(("gbps", "pct_copy"), ("GB/s", "% of copy"), _rates(r, col)):
            if v is not None:
                extra.append(f"{text}: {_figure(c, v)}")
        extra.append(f"determinism: {_determinism(r)}")
        e["extra"] = "\n".join(extra + _caveats(r, timer))
        entries.append(e)
    return entries, skipped


def _metric(value: float, lower: float | None, upper: float | None) -> dict:
    m = {"value": value}
    if _ordered(value, lower, upper):
        m["lower_value"], m["upper_value"] = lower, upper
    return m


def bencher(records, metric: str = "call", meta: dict | None = None,
            source: str = "the records") -> tuple[dict, LeftOut]:
    """The BMF document of a run, and how many records were left out (`meta`, `source` as
    above)."""
    rows, skipped = _rows(records, metric, meta, source)
    slug, doc = series(metric)[1], {}
    for name, r, col in rows:
        if len(name) > BENCHER_NAME_MAX:    # Bencher refuses it: the upload would fail
            impl = str(r["implementation"])
            raise ExportError(f"{source}: implementation {impl[:60]!r}"
                              f"{'...' if len(impl) > 60 else ''}: its case label is "
                              f"{len(name)} characters, past the "
                              f"{BENCHER_NAME_MAX} of a Bencher benchmark name (give the "
                              "implementation a shorter name)")
        med = float(r[col.name]) * 1e6                                   # ms -> ns
        p20 = _num(r.get(col.p20)) if col.p20 else None
        p80 = _num(r.get(col.p80)) if col.p80 else None
        p20 = p20 * 1e6 if p20 is not None else None
        p80 = p80 * 1e6 if p80 is not None else None
        measures = {f"{slug}latency": _metric(med, p20, p80),
                    f"{slug}throughput": _metric(1e9 / med, 1e9 / p80 if p80 and p80 > 0 else None,
                                                 1e9 / p20 if p20 and p20 > 0 else None)}
        gbps = _rates(r, col)[0]
        if gbps is not None:
            measures[f"{slug}bandwidth"] = {"value": gbps}
        doc[name] = measures
    return doc, skipped


def export(run_dir, fmt: str, metric: str = "call") -> tuple[str, LeftOut]:
    """(JSON text, records left out: a count with its note() and notes) of a run directory in
    `fmt` (one of FORMATS).  The text is ASCII (another character, the range's ±, a \\u
    escape): a stream of any encoding carries it unchanged."""
    from normbench.harness import store
    if fmt not in FORMATS:
        raise ExportError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if not store.is_run_dir(run_dir):
        raise ExportError(f"not a run directory: {run_dir}")
    try:
        meta = store.load_meta(run_dir) or {}   # refuses a format newer than this one reads
        records = store.load_records(run_dir)
        run_notes = coverage_note(run_dir, records, meta)
    except (OSError, ValueError, getattr(store, "StoreError", OSError)) as e:
        raise ExportError(store.cannot_read(run_dir, e)) from e
    make = github_action_benchmark if fmt == "github-action-benchmark" else bencher
    doc, skipped = make(records, metric, meta, str(store.records_path(run_dir)))
    skipped = LeftOut(Counter(skipped.reasons), run_notes + skipped.notes)
    # strict JSON: a number past float's range left out above, never written as Infinity
    return json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False), skipped
