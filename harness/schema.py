"""The record format: one row per (case, implementation), long format, declared once.

Every column is declared here, once, with what each reader needs to know about it:

    Column(name, dtype, unit, label, fmt, gate, doc, ...)

* `dtype`  the pandas dtype (nullable, so that an errored row can leave numbers empty);
* `unit`, `label`, `fmt`  how a table shows it (`column_format(name, value)`);
* `table`  whether the report's table of all records shows it (a new column does by default);
* `derive` a column computed from a record's others where it is shown, never stored: not in
           COLUMNS or KEY, never gated (`value(rec, name)` gives any column's value);
* `gate`   how `harness/compare.py` judges a change between two runs:
    SLOWER        a time: larger is worse; judged by the threshold and the noise rules of
                  harness/stats.py.  `metric` names the `compare --metric` choice it belongs to,
                  `p20` / `p80` / `samples` its spread columns;
    TRUE_TO_FALSE a property: True -> False is a regression, False -> True a flag.  With
                  `only_if`, only where that boolean column is True; a flag elsewhere;
    STATUS_OK     the record status: ok -> anything else is a regression;
    None          not gated (reported only where a renderer chooses to show it).

`COLUMNS` (name -> pandas dtype of the stored columns, in order) and `KEY` are derived from the
declaration for the callers that only need those.  `harness/store.py` is the only code that
reads or writes the columns to disk.  A new column is one `Column(...)` line in `DECLARATION`:
the store writes it, `compare` reports and gates it (its JSON and METHOD text are generated
from here); a derived one (`derive`) the report's table of all records computes and shows.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from normbench.harness.cells import is_missing

STATUSES = ("ok", "error", "skipped", "timeout")
FAILED = ("error", "timeout")      # the statuses of a case that ran and failed (skipped: not run)

# How compare judges a column (Column.gate).
SLOWER = "slower-is-worse"
TRUE_TO_FALSE = "true-to-false"
STATUS_OK = "ok-to-not-ok"
GATES = (SLOWER, TRUE_TO_FALSE, STATUS_OK)


@dataclass(frozen=True)
class Column:
    name: str
    dtype: str                      # pandas dtype: string | Int64 | Float64 | boolean
    unit: str = ""                  # "ms", "B", "GB/s", "%" ...; "" when unitless
    label: str = ""                 # short column heading; the name when empty
    fmt: str = ""                   # format spec for a number (".4g"); str() when empty
    gate: str | None = None         # SLOWER | TRUE_TO_FALSE | STATUS_OK | None
    doc: str = ""
    key: bool = False               # part of the case key
    metric: str | None = None       # SLOWER: the `compare --metric` choice it is
    p20: str | None = None          # SLOWER: the columns holding its spread ...
    p80: str | None = None
    samples: str | None = None      # ... and its samples (JSON list), when recorded
    only_if: str | None = None      # TRUE_TO_FALSE: gated only where this column is True
    context: tuple = ()             # columns quoted with a change (compare's flag texts)
    table: bool = True              # a column of the report's records table (when it holds a value)
    derive: Callable | None = None  # record -> value: shown, never stored (see the docstring)

    @property
    def heading(self) -> str:
        """The label with its unit: "median (ms)"."""
        text = self.label or self.name
        return f"{text} ({self.unit})" if self.unit else text


def _c(name, dtype, doc="", **kw) -> Column:
    return Column(name, dtype, doc=doc, **kw)


_T = dict(unit="ms", fmt=".4g")

# In record order.  KEY columns are marked key=True, in KEY order.
DECLARATION: list[Column] = [
    _c("case_id", "string", '"|".join of KEY values: unique within a run', label="case",
       table=False),
    _c("norm", "string", "layernorm | rmsnorm", key=True),
    _c("implementation", "string", key=True, label="impl"),
    _c("kind", "string", "strategy | baseline", table=False),
    _c("rows", "Int64", key=True),
    _c("batch", "Int64", "given when the config used batch/seq, else empty", table=False),
    _c("seq", "Int64", table=False),
    _c("d", "Int64", key=True),
    _c("dtype", "string", "bf16 | fp16 | fp32", key=True),
    _c("weight_dtype", "string", key=True, label="weight"),
    _c("groups", "string", 'as requested: an integer, "auto", or "-" (not used)', key=True),
    _c("groups_effective", "Int64", "GROUPS actually used (empty when not used)", label="GROUPS"),
    _c("status", "string", "ok | error | skipped | timeout", gate=STATUS_OK,
       context=("error",)),
    _c("error", "string", "one line; empty when ok"),
    _c("time_ms", "Float64", "median call time (host included)", label="median", gate=SLOWER,
       metric="call", p20="time_p20_ms", p80="time_p80_ms", samples="time_samples_ms", **_T),
    _c("time_p20_ms", "Float64", label="p20", **_T),
    _c("time_p80_ms", "Float64", label="p80", **_T),
    _c("time_samples_ms", "string", "JSON list of every timed sample, in order", label="samples",
       table=False),
    _c("timer", "string", "cuda_event (GPU) | cpu_wall (Triton interpreter)", table=False),
    _c("bytes_moved", "Int64", "minimal model: harness.model.bytes_moved", unit="B",
       label="bytes"),
    _c("workspace_bytes", "Int64", "fp32 workspace (partials, locks, counters)", unit="B",
       label="workspace"),
    _c("gbps", "Float64", "bytes_moved / time", unit="GB/s", label="bandwidth", fmt=".0f"),
    _c("pct_peak", "Float64", "of the device's datasheet peak", unit="%", label="of peak",
       fmt=".1f"),
    _c("pct_copy", "Float64", "of the device-to-device copy ceiling of this run", unit="%",
       label="of copy", fmt=".1f"),
    _c("correct", "boolean", "every output of every distinct result within its dtype's "
       "tolerance of the fp64 reference", gate=TRUE_TO_FALSE,
       context=("max_rel_err", "tolerance", "tolerance_dw")),
    # the table's one error column: each output judged by its own tolerance (a max error beside
    # dx's tolerance read as far over it where dγ's, judged by the weight's dtype, was worst)
    _c("err_over_tolerance", "string", "derived: the worst output's error over its own "
       "tolerance, and which output ('0.29 dγ'; at most 1: within)", label="worst err ÷ tol",
       derive=lambda rec: worst_over_tolerance(rec)),
    _c("max_rel_err", "Float64", "max over dx, dw, db (and the distinct results) of "
       "max|out-ref| / max|ref| (dx's and LayerNorm dγ's divisor at least a tenth of "
       "their terms' size; a 16-bit output's at least its dtype's smallest normal number)",
       label="max rel err", fmt=".2g", table=False),
    _c("err_dx", "Float64", fmt=".2g", table=False),
    _c("err_dw", "Float64", fmt=".2g", table=False),
    _c("err_db", "Float64", fmt=".2g", table=False),
    _c("tolerance", "Float64", "dx's, by the activations' dtype (in a run without "
       "tolerance_dw: the coarser dtype's, for every output)", fmt=".2g", table=False),
    _c("tolerance_dw", "Float64", "dγ's and dβ's, by the weight's dtype", label="tolerance dγ",
       fmt=".2g", table=False),
    _c("deterministic", "boolean", "all repeats bitwise identical, and the last timed call "
       "where last_call_compared", gate=TRUE_TO_FALSE,
       only_if="deterministic_by_design", context=("distinct_results", "repeats")),
    _c("distinct_results", "Int64", "distinct (dx, dw, db) bit patterns among the repeats, and "
       "the last timed call where last_call_compared (at most repeats + 1)", label="distinct"),
    _c("repeats", "Int64"),
    # records before session 43 (empty here) compared the repeats only
    _c("last_call_compared", "boolean", "the last timed call's output compared bit for bit with "
       "the repeats' and judged (records since session 43)", table=False),
    _c("writers_per_slot", "Int64", "contention model: writers into one dγ slot",
       label="writers/slot"),
    _c("deterministic_by_design", "boolean", label="det. by design", table=False),
    _c("device", "string", table=False),
    _c("seed", "Int64", table=False),
    _c("started_at", "string", "ISO-8601 UTC", table=False),
    _c("duration_s", "Float64", "wall time spent on this record", unit="s", fmt=".1f"),
    # fair (CONTRACTS.md): the GPU clock apart from the call's clock.
    _c("gpu_time_ms", "Float64", "median GPU busy time per call", label="GPU time",
       gate=SLOWER, metric="gpu", p20="gpu_time_p20_ms", p80="gpu_time_p80_ms", **_T),
    _c("gpu_time_p20_ms", "Float64", label="GPU p20", **_T),
    _c("gpu_time_p80_ms", "Float64", label="GPU p80", **_T),
    _c("host_overhead_ms", "Float64", "time_ms - gpu_time_ms", label="host overhead", **_T),
    _c("gpu_time_note", "string", "how GPU time was measured, or why it is empty", table=False),
    _c("compile_s", "Float64", "wall time of the first, compiling call; never in a sample",
       unit="s", label="compile", fmt=".2f"),
    _c("notes", "string", "free text per record"),
    # scaleout (CONTRACTS.md): where a record was measured.
    _c("hostname", "string"),
    _c("gpu_index", "Int64", label="GPU"),
    _c("gpu_uuid", "string", table=False),
    _c("concurrent_cases", "Int64", "most cases measured at once on its host during it "
       "(itself included; harness/hostload.py)", label="concurrent"),
]

# Each output's error column and the tolerance column it is judged by: dx by the activations'
# dtype, dγ and dβ by the weight's (harness/inputs.output_tolerances).
ERRORS = {"err_dx": "tolerance", "err_dw": "tolerance_dw", "err_db": "tolerance_dw"}
# and the output's name as reports and error messages show it
SHOWN = {"err_dx": "dx", "err_dw": "dγ", "err_db": "dβ"}


def compared_calls(repeats, last_call_compared) -> str:
    """What a record's distinct_results counts among: 'R repeats and the last timed call'
    where last_call_compared is True, else 'R repeats' (a record from before it compared
    only the repeats)."""
    judged = str(last_call_compared).lower() == "true"     # Python or numpy bool, or CSV text
    return f"{repeats} repeats" + (" and the last timed call" if judged else "")


def tolerance_of(rec, err: str):
    """The tolerance a record's error column `err` is judged by (ERRORS); a record without
    tolerance_dw (a run from before it) held one, the coarser dtype's, in `tolerance`."""
    t = rec.get(ERRORS[err])
    return rec.get("tolerance") if is_missing(t) else t


def worst_over_tolerance(rec) -> str | None:
    """'0.29 dγ': the largest of each output's error over its own tolerance (tolerance_of), and
    that output — at most 1 where every output is within, as `correct` judges; "0" where every
    error is 0; None where the record holds no error (not judged).  A record without the
    per-output errors (a run from before them) gives its max_rel_err over its `tolerance`,
    which then judged every output, with no output named."""
    worst = None
    for err, shown in SHOWN.items():
        e, t = rec.get(err), tolerance_of(rec, err)
        if not (is_missing(e) or is_missing(t)) and t > 0:
            if worst is None or e / t > worst[0]:
                worst = (e / t, shown)
    if worst is None:
        e, t = rec.get("max_rel_err"), rec.get("tolerance")
        if is_missing(e) or is_missing(t) or not t > 0:
            return None
        worst = (e / t, "")
    return "0" if worst[0] == 0 else f"{worst[0]:.2g} {worst[1]}".rstrip()


def value(rec, name: str):
    """A column's value in a record: the stored one, or a derived column's (Column.derive)."""
    col = BY_NAME.get(name)
    return col.derive(rec) if col is not None and col.derive is not None else rec.get(name)


# Derived (rebuild() refreshes them in place, so `from schema import COLUMNS` stays live).
COLUMNS: dict[str, str] = {}
KEY: tuple = ()
BY_NAME: dict[str, Column] = {}


def rebuild() -> None:
    """Derive COLUMNS, KEY and BY_NAME from DECLARATION (in place)."""
    global KEY
    names = [c.name for c in DECLARATION]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError(f"columns declared twice: {sorted(dup)}")
    COLUMNS.clear()
    COLUMNS.update((c.name, c.dtype) for c in DECLARATION if c.derive is None)
    BY_NAME.clear()
    BY_NAME.update((c.name, c) for c in DECLARATION)
    KEY = tuple(c.name for c in DECLARATION if c.key and c.derive is None)
    for c in DECLARATION:
        if c.derive is not None and (c.key or c.gate or c.context or not callable(c.derive)):
            raise ValueError(f"column {c.name}: a derived column is a function of a record, "
                             "never stored: no key, gate or context")
        if c.gate is not None and c.gate not in GATES:
            raise ValueError(f"column {c.name}: gate {c.gate!r} is not one of {GATES}")
        if c.gate == SLOWER and not c.metric:
            raise ValueError(f"column {c.name}: a {SLOWER} column needs a metric name")
        for ref in (c.p20, c.p80, c.samples, c.only_if, *c.context):
            if ref is not None and ref not in names:
                raise ValueError(f"column {c.name}: refers to undeclared column {ref!r}")


rebuild()


def column(name: str) -> Column:
    """The declaration of a column (KeyError when undeclared)."""
    return BY_NAME[name]


def gated(kind: str | None = None) -> list[Column]:
    """Columns compare judges, in record order (only those of one gate kind when given)."""
    return [c for c in DECLARATION if c.gate and (kind is None or c.gate == kind)]


def table_columns() -> list[Column]:
    """The columns of the report's table of all records, in record order."""
    return [c for c in DECLARATION if c.table]


def metrics() -> dict[str, Column]:
    """`compare --metric` choices: metric name -> its SLOWER column."""
    return {c.metric: c for c in gated(SLOWER)}


def column_format(name: str, value) -> str:
    """A value of a column as a table shows it ("" for missing)."""
    if is_missing(value):
        return ""
    col = BY_NAME.get(name)
    if col is not None and col.fmt and isinstance(value, (int, float)) and not isinstance(value, bool):
        return format(value, col.fmt)
    return str(value)


def case_label(row: dict) -> str:
    """A case as people read it, the one label every message uses:
    'grouped_atomic G=64 layernorm 8192x4096 bf16/fp32' (no G= where GROUPS is not used)."""
    g = row.get("groups")
    g = "" if g in ("-", "", None) or is_missing(g) else f" G={g}"
    return (f"{row.get('implementation')}{g} {row.get('norm')} {row.get('rows')}x{row.get('d')} "
            f"{row.get('dtype')}/{row.get('weight_dtype')}")


def case_id(row: dict) -> str:
    """The unique key string of a record or case (KEY values joined by '|')."""
    return "|".join(str(row[k]) for k in KEY)
