"""Render one run directory into a report a person can read.

    write_report(run_dir, baseline="torch") -> {"report.html": Path, "report.md": Path,
                                                "plots/<name>.png": Path, ...}

RUN_DIR/report.html  self-contained: plots inline as base64 data URIs, inline CSS and JS (the
                     what-if widget), no network; opens offline from a file:// URL
RUN_DIR/report.md    the same text; plots referenced by relative path (plots/*.png)
RUN_DIR/plots/*.png  seaborn / matplotlib (Agg) figures

The report opens with the answer: per shape, the fastest implementation, the fastest bitwise-
deterministic one and what determinism costs.  Only records with status ok AND correct compete;
every other record is listed, with its error text, in its own section.  Records are read through
harness.store only; build_report() takes already-loaded records for tests and notebooks.
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from normbench.harness import model
from normbench.harness.schema import COLUMNS

SHAPE = ("norm", "rows", "d", "dtype", "weight_dtype")
PLOTS_DIR = "plots"
# Display order: strategies from most to least contended, then baselines; others after.
ORDER = ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "disjoint_fused",
         "torch", "liger", "quack")
META_ORDER = ("config_name", "config_path", "config_hash", "device_name", "sm_count",
              "peak_tbps", "copy_ceiling_gbps", "timer", "interpreted", "driver_version",
              "cuda_version", "torch_version", "triton_version", "python_version", "git_commit",
              "git_dirty", "hostname", "started_at", "ended_at")
SEED_CONFIG = "seed-worked-example"
_NUMERIC = ("Int64", "Float64")


# =============================================================================================
# entry point

def write_report(run_dir, baseline: str = "torch") -> dict[str, Path]:
    """Write report.html, report.md and plots/*.png into run_dir; return {relative name: path}
    of every file written.  Works on any run: only errors, one implementation, NaNs, no
    GROUPS, Triton-interpreter timings."""
    from normbench.harness import store

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"not a run directory: {run_dir}")
    try:
        records = store.load_records(run_dir)
    except Exception as e:                       # no records yet, unreadable file: say so
        records = pd.DataFrame({c: pd.array([], dtype=t) for c, t in COLUMNS.items()})
        load_error = f"records could not be loaded: {e}"
    else:
        load_error = None
    try:
        meta = store.load_meta(run_dir) or {}
    except Exception as e:                       # a torn or hand-edited meta.json
        meta = {}
        load_error = "; ".join(x for x in (load_error, f"meta.json could not be loaded: {e}") if x)
    report = build_report(records, meta, baseline=baseline, run_name=run_dir.name,
                          load_error=load_error)

    plots_dir = run_dir / PLOTS_DIR
    plots_dir.mkdir(parents=True, exist_ok=True)
    for old in plots_dir.glob("*.png"):          # plots of an earlier report of this run
        old.unlink()
    written: dict[str, Path] = {}
    for fig in report.figures:
        path = plots_dir / f"{fig.name}.png"
        path.write_bytes(fig.png)
        written[f"{PLOTS_DIR}/{fig.name}.png"] = path
    html_path, md_path = run_dir / "report.html", run_dir / "report.md"
    html_path.write_text(report.html(), encoding="utf-8")
    md_path.write_text(report.markdown(), encoding="utf-8")
    written["report.html"] = html_path
    written["report.md"] = md_path
    return written


# =============================================================================================
# document model: blocks rendered to both markdown and HTML

@dataclass
class PlotFigure:
    name: str        # file stem under plots/
    title: str
    png: bytes
    caption: str = ""


@dataclass
class Report:
    title: str
    blocks: list = field(default_factory=list)
    figures: list[PlotFigure] = field(default_factory=list)

    # -- building
    def h(self, level: int, text: str, anchor: str = "") -> None:
        self.blocks.append(("h", level, text, anchor))

    def p(self, text: str) -> None:
        self.blocks.append(("p", text))

    def warn(self, text: str) -> None:
        self.blocks.append(("warn", text))

    def bullets(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("ul", list(items)))

    def table(self, df: pd.DataFrame, cls: str = "", html_only: bool = False,
              summary: str = "") -> None:
        """summary: put the table in a collapsed <details> (HTML) under this text."""
        self.blocks.append(("table", df, cls, html_only, summary))

    def figure(self, fig: PlotFigure) -> None:
        self.figures.append(fig)
        self.blocks.append(("fig", fig))

    def pre(self, text: str, summary: str) -> None:
        self.blocks.append(("pre", text, summary))

    def raw_html(self, text: str, md_alternative: str = "") -> None:
        self.blocks.append(("html", text, md_alternative))

    # -- rendering
    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                out += ["#" * b[1] + " " + b[2], ""]
            elif kind == "p":
                out += [b[1], ""]
            elif kind == "warn":
                out += [f"> **Warning:** {b[1]}", ""]
            elif kind == "ul":
                out += [f"- {x}" for x in b[1]] + [""]
            elif kind == "table":
                if not b[3]:
                    out += _md_table(b[1]) + [""]
            elif kind == "fig":
                f = b[1]
                out += [f"![{f.title}]({PLOTS_DIR}/{f.name}.png)", ""]
                if f.caption:
                    out += [f"*{f.caption}*", ""]
            elif kind == "pre":
                out += [f"<details><summary>{b[2]}</summary>", "", "```", b[1].rstrip("\n"),
                        "```", "", "</details>", ""]
            elif kind == "html":
                if b[2]:
                    out += [b[2], ""]
        return "\n".join(out).rstrip("\n") + "\n"

    def html(self) -> str:
        body = []
        for b in self.blocks:
            kind = b[0]
            if kind == "h":
                anchor = f' id="{html.escape(b[3])}"' if b[3] else ""
                body.append(f"<h{b[1]}{anchor}>{_inline(b[2])}</h{b[1]}>")
            elif kind == "p":
                body.append(f"<p>{_inline(b[1])}</p>")
            elif kind == "warn":
                body.append(f'<div class="warn"><strong>Warning:</strong> {_inline(b[1])}</div>')
            elif kind == "ul":
                body.append("<ul>" + "".join(f"<li>{_inline(x)}</li>" for x in b[1]) + "</ul>")
            elif kind == "table":
                t = _html_table(b[1], b[2])
                if b[4]:
                    t = f"<details><summary>{_inline(b[4])}</summary>{t}</details>"
                body.append(t)
            elif kind == "fig":
                f = b[1]
                data = base64.b64encode(f.png).decode("ascii")
                cap = f"<figcaption>{_inline(f.caption)}</figcaption>" if f.caption else ""
                body.append(f'<figure id="plot-{html.escape(f.name)}"><img alt="{html.escape(f.title)}'
                            f' ({PLOTS_DIR}/{html.escape(f.name)}.png)" '
                            f'src="data:image/png;base64,{data}">{cap}</figure>')
            elif kind == "pre":
                body.append(f"<details><summary>{_inline(b[2])}</summary>"
                            f"<pre>{html.escape(b[1])}</pre></details>")
            elif kind == "html":
                body.append(b[1])
        return _PAGE.format(title=html.escape(self.title), css=_CSS, body="\n".join(body))


def _inline(text: str) -> str:
    """Escape, then `code` and **bold**."""
    s = html.escape(str(text), quote=False)
    s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
    return re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)


def _md_table(df: pd.DataFrame) -> list[str]:
    if df is None or df.empty:
        return ["(none)"]

    def cell(v) -> str:
        return ("" if _na(v) else str(v)).replace("|", "\\|").replace("\n", " ")

    out = ["| " + " | ".join(cell(c) for c in df.columns) + " |",
           "|" + "---|" * len(df.columns)]
    for row in df.itertuples(index=False):
        out.append("| " + " | ".join(cell(v) for v in row) + " |")
    return out


def _html_table(df: pd.DataFrame, cls: str = "") -> str:
    if df is None or df.empty:
        return "<p><em>(none)</em></p>"
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in df.columns)
    rows = []
    for row in df.itertuples(index=False):
        rows.append("<tr>" + "".join(f"<td>{'' if _na(v) else html.escape(str(v))}</td>"
                                     for v in row) + "</tr>")
    return (f'<div class="scroll"><table class="{html.escape(cls)}"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table></div>')


# =============================================================================================
# small helpers

def _na(v) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _finite(v) -> bool:
    try:
        return not _na(v) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _i(v) -> str:
    return "" if not _finite(v) else f"{int(round(float(v))):d}"


def _ms(v) -> str:
    return "" if not _finite(v) else f"{float(v):.4g}"


def _short(v) -> str:
    """A time for a small heatmap cell: 3 significant digits, never scientific below 1e5."""
    if not _finite(v):
        return ""
    v = float(v)
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _bytes(v) -> str:
    if not _finite(v):
        return ""
    b = float(v)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(b) < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} GiB"


def _plain(records: pd.DataFrame) -> pd.DataFrame:
    """Schema columns as plain numpy-friendly values: numbers float64 (NaN for missing),
    booleans and text as Python objects (None for missing).  Robust to any loader."""
    df = pd.DataFrame(index=range(len(records)))
    for col, dtype in COLUMNS.items():
        s = records[col].reset_index(drop=True) if col in records.columns else \
            pd.Series([None] * len(records), dtype="object")
        if dtype in _NUMERIC:
            df[col] = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        elif dtype == "boolean":
            df[col] = pd.Series([None if _na(v) else bool(v) for v in s], dtype="object")
        else:
            df[col] = pd.Series([None if _na(v) else str(v) for v in s], dtype="object")
    return df


def _order(impls) -> list[str]:
    impls = [x for x in dict.fromkeys(impls) if not _na(x)]
    known = [x for x in ORDER if x in impls]
    return known + sorted(x for x in impls if x not in ORDER)


def _uses_groups(groups) -> bool:
    return not _na(groups) and str(groups) not in ("-", "", "None")


def _label(impl, groups, geff) -> str:
    """Implementation with the GROUPS it ran with: 'grouped_atomic (G=64)', '… (G=auto→264)'."""
    if not _uses_groups(groups):
        return str(impl)
    g = str(groups)
    if g == "auto":
        return f"{impl} (G=auto→{_i(geff)})" if _finite(geff) else f"{impl} (G=auto)"
    return f"{impl} (G={g})"


def _shape_label(row, many_wdtypes: bool) -> str:
    norm = {"layernorm": "LN", "rmsnorm": "RMS"}.get(str(row["norm"]), str(row["norm"]))
    s = f"{norm} {_i(row['rows'])}×{_i(row['d'])} {row['dtype']}"
    return s + (f"/{row['weight_dtype']}" if many_wdtypes else "")


def _competing(df: pd.DataFrame) -> pd.DataFrame:
    """Records that compete: status ok, correct, with a positive finite median time."""
    ok = (df["status"] == "ok") & (df["correct"].map(lambda v: v is True)) & \
         np.isfinite(df["time_ms"]) & (df["time_ms"] > 0)
    return df[ok]


def _best_per_impl(comp: pd.DataFrame, extra: tuple = ()) -> pd.DataFrame:
    """Per (implementation, shape): the record of the fastest GROUPS."""
    if comp.empty:
        return comp
    keys = ["implementation", *SHAPE, *extra]
    idx = comp.groupby(keys, dropna=False)["time_ms"].idxmin()
    return comp.loc[idx.dropna().astype(int)].reset_index(drop=True)


def _interpreted(meta: dict, df: pd.DataFrame) -> bool:
    if meta.get("interpreted") is True or meta.get("timer") == "cpu_wall":
        return True
    return bool(len(df)) and (df["timer"] == "cpu_wall").any()


# =============================================================================================
# the report

def build_report(records: pd.DataFrame, meta: dict, baseline: str = "torch",
                 run_name: str = "", load_error: str | None = None) -> Report:
    """The whole report (text blocks and figures) from loaded records and meta."""
    df = _plain(records)
    meta = dict(meta or {})
    interp = _interpreted(meta, df)
    title = f"normbench report — {meta.get('config_name') or run_name or 'run'}"
    rep = Report(title=title)

    bits = [f"device **{meta.get('device_name') or 'unknown'}**",
            f"{len(df)} records, {df['implementation'].nunique()} implementations, "
            f"{df.groupby(list(SHAPE), dropna=False).ngroups if len(df) else 0} shapes",
            f"timer `{meta.get('timer') or ('cpu_wall' if interp else 'unknown')}`"]
    if meta.get("git_commit"):
        bits.append(f"git `{str(meta['git_commit'])[:10]}`{' (dirty tree)' if meta.get('git_dirty') else ''}")
    if meta.get("started_at"):
        bits.append(f"started {meta['started_at']}")
    rep.p(" · ".join(bits))
    if load_error:
        rep.warn(load_error)
    if interp:
        rep.warn("these timings are **CPU wall-clock under the Triton interpreter** "
                 "(TRITON_INTERPRET=1), not GPU time: they check that the pipeline runs and say "
                 "nothing about which implementation is faster on a GPU.")

    _answer_section(rep, df)
    _failures_section(rep, df)
    _environment_section(rep, meta, interp)
    _prediction_section(rep, df, meta, interp)
    _plots_section(rep, df, meta, baseline, interp)
    _widget_section(rep, df)
    _records_section(rep, df)
    return rep


# ---------------------------------------------------------------------------------------------
# the answer

def _answer_section(rep: Report, df: pd.DataFrame) -> None:
    rep.h(2, "The answer: fastest, and fastest bitwise-deterministic, per shape", "answer")
    if df.empty:
        rep.p("This run holds no records.")
        return
    comp = _competing(df)
    rows, costs, det_winners, fastest_is_det, lucky = [], [], {}, 0, 0
    for shape, group in df.groupby(list(SHAPE), dropna=False, sort=True):
        c = comp.loc[comp.index.intersection(group.index)]
        norm, r, d, dt, wdt = shape
        row = {"norm": norm, "rows": _i(r), "d": _i(d), "dtype": dt, "weight dtype": wdt}
        n_impl = group["implementation"].nunique()
        passing = c["implementation"].nunique()
        if c.empty:
            row.update({"fastest": "none passed", "fastest ms": "",
                        "fastest deterministic": "none passed", "deterministic ms": "",
                        "cost of determinism": "n/a"})
        else:
            f = c.loc[c["time_ms"].idxmin()]
            row["fastest"] = _label(f["implementation"], f["groups"], f["groups_effective"])
            row["fastest ms"] = _ms(f["time_ms"])
            det = c[c["deterministic"].map(lambda v: v is True)]
            if det.empty:
                row.update({"fastest deterministic": "none (no passing result was deterministic)",
                            "deterministic ms": "",
                            "cost of determinism": "n/a (no deterministic implementation passed)"})
            else:
                t = det.loc[det["time_ms"].idxmin()]
                name = _label(t["implementation"], t["groups"], t["groups_effective"])
                if t["deterministic_by_design"] is False:
                    name += " (†)"
                row["fastest deterministic"] = name
                row["deterministic ms"] = _ms(t["time_ms"])
                cost = (float(t["time_ms"]) / float(f["time_ms"]) - 1) * 100
                costs.append(cost)
                fastest_is_det += cost == 0
                det_winners[t["implementation"]] = det_winners.get(t["implementation"], 0) + 1
                row["cost of determinism"] = ("0% (the fastest is deterministic)" if cost == 0
                                              else f"+{cost:.1f}%")
                if t["deterministic_by_design"] is False:
                    lucky += 1
                    guaranteed = det[det["deterministic_by_design"].map(lambda v: v is True)]
                    if guaranteed.empty:
                        row["deterministic by design"] = "none passed"
                    else:
                        u = guaranteed.loc[guaranteed["time_ms"].idxmin()]
                        ucost = (float(u["time_ms"]) / float(f["time_ms"]) - 1) * 100
                        row["deterministic by design"] = (
                            f"{_label(u['implementation'], u['groups'], u['groups_effective'])}: "
                            f"{_ms(u['time_ms'])} ms, +{ucost:.1f}%")
        row["passing"] = f"{passing}/{n_impl}"
        rows.append(row)
    table = pd.DataFrame(rows)
    if "deterministic by design" in table.columns:     # only when a (†) winner needs it
        table["deterministic by design"] = table["deterministic by design"].fillna("")
        col = table.pop("deterministic by design")
        table.insert(len(table.columns) - 1, "deterministic by design", col)
    n = len(table)
    lines = []
    if comp.empty:
        lines.append("**No implementation passed (status ok and correct) on any shape** — "
                     "see the failures below.")
    else:
        if costs:
            lines.append(f"Bitwise determinism costs a median **{np.median(costs):+.1f}%** over the "
                         f"fastest implementation (range {min(costs):+.1f}% to {max(costs):+.1f}%, "
                         f"{len(costs)} of {n} shapes with a deterministic winner); the fastest "
                         f"is itself deterministic on {fastest_is_det} of them.")
        else:
            lines.append("No deterministic implementation passed on any shape.")
        if det_winners:
            best = max(det_winners, key=det_winners.get)
            lines.append(f"Fastest deterministic implementation most often: `{best}` "
                         f"({det_winners[best]} of {n} shapes).")
        if lucky:
            lines.append(f"On {lucky} shape(s) the fastest deterministic result (†) came from an "
                         "implementation that is not deterministic by design: its repeats "
                         "happened to agree. The column \"deterministic by design\" gives the "
                         "fastest implementation that guarantees it, and its cost.")
    rep.bullets(lines)
    rep.table(table, cls="answer")
    rep.p("Only records with status ok and a correct result compete; a grouped implementation "
          "competes with its best GROUPS. \"Deterministic\" means measured: every repeat gave "
          "bitwise-identical dx, dγ, dβ. (†) marks a winner that is not deterministic by design "
          "(identical in the repeats measured, without a guarantee). Cost of determinism = "
          "(t_deterministic / t_fastest − 1)·100. \"passing\" counts implementations that "
          "passed out of those recorded for the shape.")


# ---------------------------------------------------------------------------------------------
# failures

def _failures_section(rep: Report, df: pd.DataFrame) -> None:
    bad = df[(df["status"] != "ok") | df["correct"].map(lambda v: v is not True)]
    rep.h(2, f"Failures, incorrect results, timeouts and skips ({len(bad)})", "failures")
    if bad.empty:
        rep.p("None: every record has status ok and a correct result." if len(df)
              else "No records.")
        return
    counts = bad.assign(what=bad.apply(_failure_kind, axis=1))["what"].value_counts()
    rep.p(", ".join(f"{v} {k}" for k, v in counts.items()) + ".")
    rows = []
    priority = {"error": 0, "timeout": 1, "incorrect": 2, "correctness not checked": 3, "skipped": 4}
    for _, r in bad.iterrows():
        rows.append({"implementation": _label(r["implementation"], r["groups"], r["groups_effective"]),
                     "norm": r["norm"], "rows": _i(r["rows"]), "d": _i(r["d"]), "dtype": r["dtype"],
                     "weight dtype": r["weight_dtype"], "status": _failure_kind(r),
                     "error": _failure_text(r)})
    rows.sort(key=lambda x: priority.get(x["status"], 0))      # stable: run order within a kind
    rep.table(pd.DataFrame(rows), cls="failures")


def _failure_kind(r) -> str:
    if r["status"] != "ok":
        return str(r["status"] or "no status")
    if r["correct"] is False:
        return "incorrect"
    return "correctness not checked"


def _failure_text(r) -> str:
    err = "" if _na(r["error"]) else str(r["error"])
    if r["status"] == "ok" and r["correct"] is False:
        detail = (f"max_rel_err {float(r['max_rel_err']):.3g} > tolerance {float(r['tolerance']):.3g}"
                  if _finite(r["max_rel_err"]) and _finite(r["tolerance"]) else "result incorrect")
        parts = [f"{k} {float(r[c]):.3g}" for k, c in (("dx", "err_dx"), ("dγ", "err_dw"),
                                                      ("dβ", "err_db")) if _finite(r[c])]
        if parts:
            detail += f" ({', '.join(parts)})"
        return f"{detail}; {err}" if err else detail
    if r["status"] == "ok" and r["correct"] is None:
        return err or "the record carries no correctness verdict"
    return err or "(no error text recorded)"


# ---------------------------------------------------------------------------------------------
# environment

def _environment_section(rep: Report, meta: dict, interp: bool) -> None:
    rep.h(2, "Environment", "environment")
    if not meta:
        rep.p("This run has no meta.json.")
        return
    if interp:
        rep.p("Timer: **CPU wall-clock under the Triton interpreter** — kernels ran on the CPU.")
    keys = [k for k in META_ORDER if k in meta] + sorted(
        k for k in meta if k not in META_ORDER and k != "config_text")
    rows = [{"key": k, "value": "" if meta[k] is None else
             (json.dumps(meta[k]) if isinstance(meta[k], (dict, list)) else str(meta[k]))}
            for k in keys]
    rep.table(pd.DataFrame(rows), cls="env")
    if meta.get("config_text"):
        rep.pre(str(meta["config_text"]),
                f"Config `{meta.get('config_name') or ''}` as run (verbatim)")


# ---------------------------------------------------------------------------------------------
# bandwidth-bound prediction

def _prediction_section(rep: Report, df: pd.DataFrame, meta: dict, interp: bool) -> None:
    copy = meta.get("copy_ceiling_gbps")
    copy = float(copy) if _finite(copy) and float(copy) > 0 else None
    peak = model.peak_tbps(str(meta.get("device_name") or ""),
                           float(meta["peak_tbps"]) if _finite(meta.get("peak_tbps")) else None)
    seed = meta.get("config_name") == SEED_CONFIG
    if not (seed or copy or _finite(meta.get("peak_tbps"))):
        return
    rep.h(2, "Measured time against the bandwidth bound", "prediction")
    if not (copy or peak):
        rep.p("meta.json holds no copy ceiling and the device has no datasheet peak: "
              "no prediction can be made.")
        return
    rep.p("The floor a pass cannot beat by much: bytes_moved (every input read once, every "
          "output written once; workspace traffic excluded) divided by the bandwidth — "
          + (f"the measured device-to-device copy ceiling {copy:.0f} GB/s" if copy else "")
          + (" and " if copy and peak else "")
          + (f"the datasheet peak {peak:g} TB/s" if peak else "") + ". "
          "measured / floor is how many times slower than the floor (the copy-ceiling floor "
          "when known) the record ran.")
    if interp:
        rep.warn("measured times are CPU wall-clock under the Triton interpreter: the ratio to "
                 "a GPU bandwidth floor is meaningless here.")
    timed = df[(df["status"] == "ok") & np.isfinite(df["time_ms"]) & np.isfinite(df["bytes_moved"])]
    if timed.empty:
        rep.p("No record has a measured time.")
        return
    rows = []
    timed = timed.sort_values(list(SHAPE) + ["time_ms"])
    for _, r in timed.iterrows():
        nb = float(r["bytes_moved"])
        fc = model.bandwidth_bound_ms(nb, copy / 1000) if copy else None
        fp = model.bandwidth_bound_ms(nb, peak) if peak else None
        rows.append({"implementation": _label(r["implementation"], r["groups"], r["groups_effective"]),
                     "norm": r["norm"], "rows": _i(r["rows"]), "d": _i(r["d"]),
                     "dtype": r["dtype"], "bytes moved": _bytes(nb),
                     "measured ms": _ms(r["time_ms"]),
                     "floor @ copy ceiling ms": _ms(fc),
                     "floor @ datasheet peak ms": _ms(fp),
                     "measured / floor": (f"{float(r['time_ms']) / (fc or fp):.2f}×"
                                          if (fc or fp) else ""),
                     "correct": "" if r["correct"] is None else str(r["correct"])})
    rep.table(pd.DataFrame(rows), cls="prediction")


# ---------------------------------------------------------------------------------------------
# plots

def _palette(impls: list[str]) -> dict:
    import seaborn as sns
    colors = sns.color_palette("tab10", 10) + sns.color_palette("Dark2", 8)
    return {impl: colors[i % len(colors)] for i, impl in enumerate(_order(impls))}


def _new_figure(w: float, h: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(min(w, 40), min(h, 40)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _heatmap(fig, ax, values: pd.DataFrame, annot, cmap, norm, label: str | None,
             fontsize: int = 8):
    """Annotated heatmap (imshow + text; NaN cells grey).  seaborn.heatmap redraws the whole
    figure to check label overlap, which costs about a second per panel on a small CPU."""
    import matplotlib as mpl
    data = np.ma.masked_invalid(values.to_numpy(dtype=float))
    cm = (mpl.colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad="#dddddd")
    im = ax.imshow(data, cmap=cm, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(values.shape[1]), labels=[str(c) for c in values.columns])
    ax.set_yticks(range(values.shape[0]), labels=[str(r) for r in values.index])
    ax.grid(False)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            t = annot[i][j]
            if not t:
                continue
            v = data[i, j]
            if np.ma.is_masked(v):
                color = "0.3"
            else:
                r, g, b, _ = cm(norm(v))
                color = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
            ax.text(j, i, t, ha="center", va="center", fontsize=fontsize, color=color)
    if label is not None:
        fig.colorbar(im, ax=ax, label=label)
    return im


def _plots_section(rep: Report, df: pd.DataFrame, meta: dict, baseline: str, interp: bool) -> None:
    import matplotlib as mpl
    import seaborn as sns
    with mpl.rc_context():                   # the theme must not leak into the caller's matplotlib
        sns.set_theme(style="whitegrid", context="notebook")
        _plots(rep, df, meta, baseline, interp)


def _plots(rep: Report, df: pd.DataFrame, meta: dict, baseline: str, interp: bool) -> None:
    rep.h(2, "Plots", "plots")
    comp = _competing(df)
    if interp:
        rep.p("Timings below are CPU wall-clock under the Triton interpreter.")
    palette = _palette(list(df["implementation"].dropna().unique()))
    for section in (_plot_bandwidth, _plot_group_heatmaps, _plot_determinism, _plot_speedup,
                    _plot_workspace):
        try:
            section(rep, df, comp, meta, palette, baseline, interp)
        except Exception as e:                # one bad plot must not cost the whole report
            rep.warn(f"{section.__name__[6:]} plot failed: {type(e).__name__}: {e}")


def _plot_bandwidth(rep, df, comp, meta, palette, baseline, interp):
    from matplotlib.lines import Line2D
    import seaborn as sns
    rep.h(3, "Achieved bandwidth against rows")
    copy = meta.get("copy_ceiling_gbps")
    copy = float(copy) if _finite(copy) and float(copy) > 0 else None
    best = _best_per_impl(comp)
    if not best.empty:
        best = best.copy()
        missing = ~np.isfinite(best["gbps"])
        best.loc[missing, "gbps"] = best.loc[missing, "bytes_moved"] / (best.loc[missing, "time_ms"] * 1e-3) / 1e9
        best = best[np.isfinite(best["gbps"])]
    if best.empty:
        rep.p("Skipped: no record passed (status ok and correct) with a bandwidth.")
        return
    rep.p("GB/s = bytes_moved / median time, best GROUPS per implementation; one line per "
          "implementation, one panel per d (columns) and dtype/weight dtype (rows)."
          + (f" Right axis: % of this run's copy ceiling ({copy:.0f} GB/s, dashed)." if copy
             else " No copy ceiling in meta.json: the % axis is left out."))
    for norm in sorted(best["norm"].dropna().unique()):
        sub = best[best["norm"] == norm].assign(
            dtypes=lambda x: x["dtype"].astype(str) + "/" + x["weight_dtype"].astype(str))
        ds, dts = sorted(sub["d"].unique()), sorted(sub["dtypes"].unique())
        fig = _new_figure(4.2 * len(ds) + 2.2, 3.3 * len(dts) + 0.6)
        axes = fig.subplots(len(dts), len(ds), squeeze=False, sharey="row")
        impls = _order(sub["implementation"].unique())
        for i, dt in enumerate(dts):
            for j, d in enumerate(ds):
                ax = axes[i][j]
                cell = sub[(sub["dtypes"] == dt) & (sub["d"] == d)].sort_values("rows")
                present = [x for x in impls if x in set(cell["implementation"])]
                if present:
                    sns.lineplot(data=cell, x="rows", y="gbps", hue="implementation",
                                 hue_order=present, palette={k: palette[k] for k in present},
                                 marker="o", ax=ax, legend=False, estimator=None)
                if cell["rows"].nunique() > 1:
                    ax.set_xscale("log", base=2)
                    ax.set_xticks(sorted(cell["rows"].unique()))
                    ax.set_xticklabels([_i(v) for v in sorted(cell["rows"].unique())], rotation=30)
                if copy and not interp:
                    ax.axhline(copy, ls="--", color="0.4", lw=1)
                if copy and j == len(ds) - 1:      # rows share y: one % axis per row
                    sec = ax.secondary_yaxis("right", functions=(lambda g, c=copy: g / c * 100,
                                                                 lambda p, c=copy: p * c / 100))
                    sec.set_ylabel("% of copy ceiling")
                ax.set_title(f"{norm}, d={_i(d)}, {dt}", fontsize=10)
                ax.set_xlabel("rows" if i == len(dts) - 1 else "")
                ax.set_ylabel("GB/s" if j == 0 else "")
        for i, dt in enumerate(dts):             # shared y per row: limits once all are drawn
            top = float(sub.loc[sub["dtypes"] == dt, "gbps"].max())
            if copy and not interp:
                top = max(top, copy)
            axes[i][0].set_ylim(0, top * 1.06 if top > 0 else 1)
        handles = [Line2D([], [], color=palette[k], marker="o", label=k) for k in impls]
        fig.legend(handles=handles, loc="outside right center", frameon=False)
        fig.suptitle(f"{norm}: achieved bandwidth" + (" (CPU wall-clock, interpreter)" if interp else ""))
        rep.figure(PlotFigure(f"bandwidth_{norm}", f"{norm}: achieved GB/s and % of copy ceiling",
                              _png(fig)))


def _plot_group_heatmaps(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    rep.h(3, "Time over GROUPS × rows")
    grouped = comp[np.isfinite(comp["groups_effective"])]
    impls = _order(df.loc[df["groups"].map(_uses_groups) | np.isfinite(df["groups_effective"]),
                          "implementation"].unique())
    if not impls:
        rep.p("Skipped: no implementation in this run uses GROUPS.")
        return
    many_w = df["weight_dtype"].nunique() > 1
    notes = []
    for impl in impls:
        sub = grouped[grouped["implementation"] == impl]
        gvals = sorted(sub["groups_effective"].unique())
        if len(gvals) < 2:
            notes.append(f"`{impl}`: skipped — " + (
                f"only one GROUPS value ({_i(gvals[0])}) measured and passing" if gvals
                else "no passing record with a GROUPS value"))
            continue
        # One axes: a row per GROUPS, a column per shape with rows varying fastest, so
        # neighbouring columns show how the best GROUPS moves with rows.
        sub = sub.sort_values(["norm", "dtype", "weight_dtype", "d", "rows"])
        sub = sub.assign(col=[_shape_label(r, many_w) for _, r in sub.iterrows()])
        cols = sub["col"].drop_duplicates().tolist()
        piv = (sub.pivot_table(index="groups_effective", columns="col", values="time_ms",
                               aggfunc="min").reindex(columns=cols))
        rel = piv / piv.min(axis=0)
        annot = piv.map(_short).to_numpy()
        rel.index = [_i(v) for v in piv.index]
        hi = max(float(np.nanmax(rel.to_numpy())), 1.01)
        fig = _new_figure(0.95 * len(cols) + 3.2, max(4.0, 0.42 * len(gvals) + 2.6))
        ax = fig.subplots()
        _heatmap(fig, ax, rel, annot, "rocket_r", mcolors.Normalize(vmin=1, vmax=hi),
                 "÷ best GROUPS")
        ax.set_xlabel("shape (norm rows×d dtype)")
        ax.set_ylabel("GROUPS (effective)")
        _slant_xticks(ax)
        fig.suptitle(f"{impl}: median ms per GROUPS and shape")
        rep.figure(PlotFigure(f"groups_{impl}", f"{impl}: time over GROUPS × rows", _png(fig),
                              "Numbers are median ms; colour is the time relative to the best "
                              "GROUPS for the same shape (1 = best; grey = not measured or not "
                              "passing). Passing records only."))
    rep.bullets(notes)


def _slant_xticks(ax) -> None:
    """Long shape labels at 45°, anchored at their right end under the tick."""
    ax.tick_params(axis="x", labelrotation=45)
    for lab in ax.get_xticklabels():
        lab.set_horizontalalignment("right")
        lab.set_rotation_mode("anchor")


def _plot_determinism(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    rep.h(3, "Determinism: distinct results out of R repeats")
    if df.empty:
        rep.p("Skipped: no records.")
        return
    many_w = df["weight_dtype"].nunique() > 1
    multi_g = df.groupby("implementation")["groups"].nunique()
    d2 = df.assign(
        row=[(_label(r.implementation, r.groups, r.groups_effective)
              if multi_g.get(r.implementation, 0) > 1 else str(r.implementation))
             for r in df.itertuples()],
        col=[_shape_label(r, many_w) for _, r in df.iterrows()])
    rows_order = []
    for impl in _order(d2["implementation"].unique()):
        labels = d2.loc[d2["implementation"] == impl, ["row", "groups_effective"]].drop_duplicates("row")
        rows_order += list(labels.sort_values("groups_effective", na_position="first")["row"])
    shape_order = (d2.sort_values(list(SHAPE), key=lambda s: s.map(str) if s.dtype == object else s)
                   ["col"].drop_duplicates().tolist())
    val = pd.DataFrame(np.nan, index=rows_order, columns=shape_order)
    txt = pd.DataFrame("", index=rows_order, columns=shape_order)
    for _, r in d2.iterrows():
        if r["status"] == "ok" and _finite(r["distinct_results"]):
            k = float(r["distinct_results"])
            if np.isnan(val.at[r["row"], r["col"]]) or k > val.at[r["row"], r["col"]]:
                val.at[r["row"], r["col"]] = k
                txt.at[r["row"], r["col"]] = f"{_i(k)}/{_i(r['repeats'])}"
        elif not txt.at[r["row"], r["col"]]:
            txt.at[r["row"], r["col"]] = "–" if r["status"] == "ok" else str(r["status"])
    if val.isna().all().all():
        rep.p("Skipped: no record measured determinism (distinct_results).")
        return
    vmax = max(2.0, float(np.nanmax(val.to_numpy())))
    cmap = mcolors.LinearSegmentedColormap.from_list("det", ["#1a9850", "#fee08b", "#d73027"])
    fig = _new_figure(1.0 * len(shape_order) + 3.5, 0.42 * len(rows_order) + 1.8)
    ax = fig.subplots()
    _heatmap(fig, ax, val, txt.to_numpy(), cmap, mcolors.Normalize(vmin=1, vmax=vmax),
             "distinct results (1 = bitwise deterministic)")
    ax.set_xlabel("shape")
    ax.set_ylabel("")
    _slant_xticks(ax)
    fig.suptitle("Distinct bit patterns of (dx, dγ, dβ) among the repeats")
    nondet_design = df[(df["deterministic"].map(lambda v: v is False))
                       & (df["deterministic_by_design"].map(lambda v: v is True))]
    rep.figure(PlotFigure("determinism", "Determinism matrix", _png(fig),
                          "k/R: k distinct results out of R repeats; a row per GROUPS where an "
                          "implementation ran with several; grey: not measured "
                          "(error/skip/timeout)."))
    if not nondet_design.empty:
        rep.warn("implementations deterministic by design gave differing results: "
                 + ", ".join(sorted({_label(r['implementation'], r['groups'], r['groups_effective'])
                                     for _, r in nondet_design.iterrows()})) + ".")


def _plot_speedup(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    rep.h(3, f"Speedup against `{baseline}`")
    impls = set(df["implementation"].dropna())
    if baseline not in impls:
        rep.p(f"Skipped: the baseline `{baseline}` is not in this run "
              f"(implementations: {', '.join(_order(impls)) or 'none'}).")
        return
    best = _best_per_impl(comp)
    base = best[best["implementation"] == baseline]
    if base.empty:
        rep.p(f"Skipped: `{baseline}` is in this run but never passed (status ok and correct); "
              "see the failures section.")
        return
    others = best[best["implementation"] != baseline]
    if others.empty:
        rep.p(f"Skipped: no other implementation passed to compare with `{baseline}`.")
        return
    many_w = df["weight_dtype"].nunique() > 1
    bt = {tuple(r[k] for k in SHAPE): float(r["time_ms"]) for _, r in base.iterrows()}
    cols = (best.sort_values(list(SHAPE)).apply(lambda r: _shape_label(r, many_w), axis=1)
            .drop_duplicates().tolist())
    rows_order = _order(others["implementation"].unique())
    sp = pd.DataFrame(np.nan, index=rows_order, columns=cols)
    for _, r in others.iterrows():
        t0 = bt.get(tuple(r[k] for k in SHAPE))
        if t0:
            sp.at[r["implementation"], _shape_label(r, many_w)] = t0 / float(r["time_ms"])
    if sp.isna().all().all():
        rep.p(f"Skipped: `{baseline}` passed on no shape where another implementation passed.")
        return
    lg = np.log2(sp)
    lim = max(0.25, float(np.nanmax(np.abs(lg.to_numpy()))))
    annot = sp.map(lambda v: f"{v:.2f}×" if _finite(v) else "")
    fig = _new_figure(1.0 * len(cols) + 3.5, 0.45 * len(rows_order) + 1.8)
    ax = fig.subplots()
    _heatmap(fig, ax, lg, annot.to_numpy(), "RdYlGn", mcolors.Normalize(vmin=-lim, vmax=lim),
             f"log2 speedup vs {baseline}")
    ax.set_xlabel("shape")
    _slant_xticks(ax)
    fig.suptitle(f"Speedup = t({baseline}) / t(implementation), best GROUPS each; >1 is faster")
    rep.figure(PlotFigure(f"speedup_vs_{re.sub(r'[^A-Za-z0-9_-]', '_', baseline)}",
                          f"Speedup against {baseline}", _png(fig),
                          "Grey: no passing result for that implementation or for the baseline."))


def _plot_workspace(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    import matplotlib.ticker as mticker
    rep.h(3, "Workspace against writers per slot")
    pts = comp[np.isfinite(comp["workspace_bytes"]) & (comp["workspace_bytes"] > 0)
               & np.isfinite(comp["writers_per_slot"]) & (comp["writers_per_slot"] > 0)]
    left_out = sorted(set(comp["implementation"]) - set(pts["implementation"]))
    if pts.empty:
        rep.p("Skipped: no passing record has both a workspace and a writers-per-slot model.")
        return
    fastest = comp.groupby(list(SHAPE), dropna=False)["time_ms"].min()
    rel = [float(r["time_ms"]) / float(fastest.loc[tuple(r[k] for k in SHAPE)])
           for _, r in pts.iterrows()]
    pts = pts.assign(rel=rel)
    lo, hi = float(pts["rel"].min()), float(pts["rel"].max())
    norm = mcolors.LogNorm(vmin=lo, vmax=max(hi, lo * 1.01))
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
    fig = _new_figure(7.5, 5.0)
    ax = fig.subplots()
    sc = None
    for k, impl in enumerate(_order(pts["implementation"].unique())):
        s = pts[pts["implementation"] == impl]
        sc = ax.scatter(s["writers_per_slot"], s["workspace_bytes"], c=s["rel"], cmap="viridis",
                        norm=norm, marker=markers[k % len(markers)], s=60, edgecolors="0.2",
                        linewidths=0.6, label=impl)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("writers per dγ slot (contention model)")
    ax.set_ylabel("fp32 workspace bytes")
    cb = fig.colorbar(sc, ax=ax, label="time ÷ fastest passing time of the same shape")
    times = mticker.FuncFormatter(lambda v, _: f"{v:.3g}×")
    cb.ax.yaxis.set_major_formatter(times)
    cb.ax.yaxis.set_minor_formatter(times)
    leg = fig.legend(loc="outside right center", frameon=False)
    for h in leg.legend_handles:
        h.set_color("0.5")
    fig.suptitle("Workspace against contention, time as colour")
    rep.figure(PlotFigure("workspace_vs_writers", "Workspace against writers per slot", _png(fig),
                          "Each point is one passing record; colour is its time relative to the "
                          "fastest passing record of the same shape (1 = fastest), so shapes of "
                          "different sizes share one scale."
                          + (f" Not drawn (no workspace or no writers model): "
                             f"{', '.join(left_out)}." if left_out else "")))


# ---------------------------------------------------------------------------------------------
# interactive widget (HTML only)

_WIDGET_FIELDS = ("norm", "implementation", "rows", "d", "dtype", "weight_dtype", "groups",
                  "groups_effective", "status", "correct", "deterministic", "distinct_results",
                  "repeats", "time_ms", "workspace_bytes", "writers_per_slot")


def _widget_records(df: pd.DataFrame) -> list[dict]:
    out = []
    for _, r in df.iterrows():
        rec = {}
        for k in _WIDGET_FIELDS:
            v = r[k]
            if COLUMNS[k] in _NUMERIC:
                v = (int(v) if COLUMNS[k] == "Int64" else float(v)) if _finite(v) else None
            elif _na(v):
                v = None
            rec[k] = v
        out.append(rec)
    return out


def _widget_defaults(df: pd.DataFrame) -> tuple[int, int, int, str]:
    comp = _competing(df)
    pick = comp[np.isfinite(comp["groups_effective"])]
    for frame in (pick, comp, df):
        frame = frame[np.isfinite(frame["rows"]) & np.isfinite(frame["d"])]
        if not frame.empty:
            r = frame.iloc[0]
            g = int(r["groups_effective"]) if _finite(r["groups_effective"]) else 64
            return int(r["rows"]), int(r["d"]), g, str(r["norm"] or "layernorm")
    return 16384, 4096, 64, "layernorm"


def _widget_section(rep: Report, df: pd.DataFrame) -> None:
    rep.h(2, "What-if: writers per slot, workspace, determinism", "widget")
    rows, d, g, norm = _widget_defaults(df)
    data = json.dumps(_widget_records(df), allow_nan=False).replace("<", "\\u003c")
    sel = {n: " selected" if n == norm else "" for n in ("layernorm", "rmsnorm")}
    rep.raw_html(
        _WIDGET_HTML.format(rows=rows, d=d, g=g, sel_ln=sel["layernorm"], sel_rms=sel["rmsnorm"],
                            data=data, js=_WIDGET_JS),
        md_alternative="The interactive model (writers per slot, workspace and determinism for "
                       "any rows, d and GROUPS, beside the measured times) is in `report.html`.")


# ---------------------------------------------------------------------------------------------
# all records (HTML only, collapsed)

def _records_section(rep: Report, df: pd.DataFrame) -> None:
    if df.empty:
        return
    rep.h(2, "All records", "records")
    t = pd.DataFrame({
        "implementation": df["implementation"], "norm": df["norm"], "rows": df["rows"].map(_i),
        "d": df["d"].map(_i), "dtype": df["dtype"], "weight dtype": df["weight_dtype"],
        "groups": df["groups"], "G eff": df["groups_effective"].map(_i), "status": df["status"],
        "median ms": df["time_ms"].map(_ms), "p20 ms": df["time_p20_ms"].map(_ms),
        "p80 ms": df["time_p80_ms"].map(_ms), "GB/s": df["gbps"].map(lambda v: _ms(v)),
        "% copy": df["pct_copy"].map(lambda v: f"{v:.1f}" if _finite(v) else ""),
        "correct": df["correct"].map(lambda v: "" if v is None else str(v)),
        "max rel err": df["max_rel_err"].map(lambda v: f"{v:.2g}" if _finite(v) else ""),
        "deterministic": df["deterministic"].map(lambda v: "" if v is None else str(v)),
        "distinct/R": [f"{_i(a)}/{_i(b)}" if _finite(a) else "" for a, b in
                       zip(df["distinct_results"], df["repeats"])],
        "writers/slot": df["writers_per_slot"].map(_i),
        "workspace": df["workspace_bytes"].map(_bytes),
        "error": df["error"]})
    rep.p(f"{len(df)} records; the markdown report leaves this table out (see records.csv).")
    rep.table(t, cls="records", html_only=True, summary=f"Show all {len(df)} records")


# =============================================================================================
# page template, CSS, widget

_PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<main>
<h1>{title}</h1>
{body}
</main>
</body>
</html>
"""

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
       color: #1d1d1f; background: #fafafa; line-height: 1.45; }
main { max-width: 1400px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.6rem; margin-bottom: .3rem; }
h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; padding-bottom: .2rem; }
code { background: #eef; padding: 0 .25em; border-radius: 3px; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: .85rem; margin: .6rem 0; background: #fff; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: left; vertical-align: top; }
th { background: #f0f0f5; position: sticky; top: 0; }
tbody tr:nth-child(even) { background: #f8f8fb; }
table.answer td:nth-child(6), table.answer td:nth-child(8) { font-weight: 600; }
table.failures td:last-child { font-family: ui-monospace, monospace; font-size: .8rem; }
.warn { background: #fff4e5; border-left: 4px solid #f0a020; padding: .6rem .9rem; margin: .8rem 0; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; background: #fff; border: 1px solid #eee; }
figcaption { font-size: .85rem; color: #555; }
pre { background: #f4f4f4; padding: .8rem; overflow-x: auto; }
details > summary { cursor: pointer; color: #225; margin: .4rem 0; }
#widget-box { background: #fff; border: 1px solid #ddd; border-radius: 6px; padding: 1rem 1.2rem; }
#widget-box label { margin-right: 1.2rem; }
#widget-box input { width: 7rem; }
.det-yes { color: #1a7f37; font-weight: 600; }
.det-no { color: #b42318; font-weight: 600; }
.det-maybe { color: #9a6700; font-weight: 600; }
.muted { color: #666; font-size: .85rem; }
"""

_WIDGET_HTML = """<div id="widget-box">
<p>Change rows, d or GROUPS: the contention and workspace model below follows, and any measured
record of this run that matches (same norm, rows, d and, for schemes that use GROUPS, the GROUPS
actually used) shows its median time beside the model.</p>
<p>
<label>rows <input id="w-rows" type="number" min="1" step="1" value="{rows}"></label>
<label>d <input id="w-d" type="number" min="1" step="1" value="{d}"></label>
<label>GROUPS <input id="w-groups" type="number" min="1" step="1" value="{g}"></label>
<label>norm <select id="w-norm"><option value="layernorm"{sel_ln}>LayerNorm (dγ and dβ)</option>
<option value="rmsnorm"{sel_rms}>RMSNorm (dγ only)</option></select></label>
</p>
<p id="w-status" class="muted"></p>
<table id="w-model">
<thead><tr><th>scheme</th><th>writers per dγ slot</th><th>fp32 workspace</th><th>determinism</th>
<th>measured median (this run)</th></tr></thead>
<tbody>
<tr><td><code>atomic</code></td><td id="w-atomic-writers"></td><td id="w-atomic-workspace"></td>
<td id="w-atomic-det"></td><td id="w-meas-atomic"></td></tr>
<tr><td><code>grouped_atomic</code></td><td id="w-grouped-writers"></td><td id="w-grouped-workspace"></td>
<td id="w-grouped-det"></td><td id="w-meas-grouped_atomic"></td></tr>
<tr><td><code>spin_lock</code></td><td id="w-spin-writers"></td><td id="w-spin-workspace"></td>
<td id="w-spin-det"></td><td id="w-meas-spin_lock"></td></tr>
<tr><td><code>disjoint_block</code> / <code>disjoint_fused</code></td><td id="w-disjoint-writers"></td>
<td id="w-disjoint-workspace"></td><td id="w-disjoint-det"></td><td id="w-meas-disjoint"></td></tr>
</tbody></table>
<p>Two-pass workspace (<code>grouped_atomic</code>, <code>spin_lock</code>,
<code>disjoint_block</code>): <strong id="w-workspace"></strong> = <span id="w-workspace-formula"></span></p>
<p class="muted">Model assumptions: writers per slot — atomic: every row adds into the one fp32 [d]
buffer (rows writers); grouped schemes: row r goes to partial r mod GROUPS (⌈rows/GROUPS⌉ writers);
disjoint: each program owns its partial row (1 writer). Workspace counts only the fp32 partial rows,
GROUPS·d·4 B per reduced parameter — ×2 for LayerNorm, whose dβ is reduced alongside dγ, ×1 for
RMSNorm; atomic's is d·4 B per parameter. spin_lock's lock and count words (a few bytes per group)
and disjoint_fused's two 4-byte counters are left out. The GROUPS a scheme actually uses is
min(GROUPS, rows).</p>
<h4>Measured records matching these inputs: <span id="w-measured-count"></span></h4>
<table id="w-measured-table"><thead><tr><th>implementation</th><th>norm</th><th>dtype / weight</th>
<th>GROUPS used</th><th>status</th><th>median ms</th><th>deterministic (measured)</th></tr></thead>
<tbody id="w-measured"></tbody></table>
</div>
<script type="application/json" id="w-data">{data}</script>
<script>{js}</script>
"""

_WIDGET_JS = r"""
(function () {
  "use strict";
  var records = JSON.parse(document.getElementById("w-data").textContent);
  function $(id) { return document.getElementById(id); }
  function posInt(id) {
    var v = Number($(id).value);
    return (isFinite(v) && v >= 1) ? Math.floor(v) : null;
  }
  function fmtInt(n) { return n.toLocaleString("en-US"); }
  function fmtBytes(b) {
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], i = 0;
    while (b >= 1024 && i < units.length - 1) { b /= 1024; i++; }
    return (i === 0 ? b.toFixed(0) : b.toPrecision(4)) + " " + units[i];
  }
  function fmtMs(v) { return (v === null || v === undefined) ? "—" : Number(v).toPrecision(4) + " ms"; }
  function setDet(id, cls, text) { var el = $(id); el.className = cls; el.textContent = text; }
  function text(id, t) { $(id).textContent = t; }
  var GROUPED = { grouped_atomic: true, spin_lock: true, disjoint_block: true, disjoint_fused: true };

  function matches(r, norm, rows, d, g) {
    if (r.norm !== norm || r.rows !== rows || r.d !== d) { return false; }
    if (r.groups_effective !== null && r.groups_effective !== undefined) {
      return r.groups_effective === Math.min(g, rows);
    }
    return true;
  }
  function measuredCell(list, names) {
    var hits = list.filter(function (r) { return names.indexOf(r.implementation) >= 0 &&
                                                   r.status === "ok" && r.time_ms !== null; });
    if (!hits.length) { return "not measured"; }
    return hits.map(function (r) {
      return r.implementation + " " + fmtMs(r.time_ms) + " (" + r.dtype + ")";
    }).join("; ");
  }

  function update() {
    var rows = posInt("w-rows"), d = posInt("w-d"), g = posInt("w-groups");
    var norm = $("w-norm").value;
    var ids = ["w-atomic-writers", "w-grouped-writers", "w-spin-writers", "w-disjoint-writers",
               "w-atomic-workspace", "w-grouped-workspace", "w-spin-workspace",
               "w-disjoint-workspace", "w-workspace", "w-workspace-formula"];
    if (rows === null || d === null || g === null) {
      ids.forEach(function (id) { text(id, "—"); });
      text("w-status", "Enter positive integers for rows, d and GROUPS.");
      return;
    }
    text("w-status", "");
    var params = norm === "layernorm" ? 2 : 1;
    var gUsed = Math.min(g, rows);
    var perGroup = Math.ceil(rows / gUsed);
    var twoPass = gUsed * d * 4 * params;
    text("w-atomic-writers", fmtInt(rows));
    text("w-grouped-writers", fmtInt(perGroup));
    text("w-spin-writers", fmtInt(perGroup));
    text("w-disjoint-writers", "1");
    text("w-atomic-workspace", fmtBytes(d * 4 * params));
    text("w-grouped-workspace", fmtBytes(twoPass));
    text("w-spin-workspace", fmtBytes(twoPass) + " + locks");
    text("w-disjoint-workspace", fmtBytes(twoPass));
    text("w-workspace", fmtBytes(twoPass));
    text("w-workspace-formula", fmtInt(gUsed) + " GROUPS × " + fmtInt(d) + " × 4 B" +
         (params === 2 ? " × 2 (dγ and dβ)" : " (dγ only)") + " = " + fmtInt(twoPass) + " B");
    if (rows === 1) {
      setDet("w-atomic-det", "det-maybe", "one writer: order cannot vary here (nondeterministic in general)");
    } else {
      setDet("w-atomic-det", "det-no", "nondeterministic: " + fmtInt(rows) +
             " fp32 atomic adds per slot land in run-dependent order");
    }
    if (perGroup === 1) {
      setDet("w-grouped-det", "det-maybe", "one writer per partial here (rows ≤ GROUPS): order cannot vary");
      setDet("w-spin-det", "det-maybe", "one writer per partial here (rows ≤ GROUPS): order cannot vary");
    } else {
      setDet("w-grouped-det", "det-no", "nondeterministic: the order of the " + fmtInt(perGroup) +
             " atomic adds within a group varies (the reduce over groups is fixed-order)");
      setDet("w-spin-det", "det-no", "nondeterministic: the " + fmtInt(perGroup) +
             " writers of a group accumulate in lock-arrival order");
    }
    setDet("w-disjoint-det", "det-yes", "bitwise deterministic: one writer per slot, fixed-order reduce");

    var hits = records.filter(function (r) { return matches(r, norm, rows, d, g); });
    text("w-meas-atomic", measuredCell(hits, ["atomic"]));
    text("w-meas-grouped_atomic", measuredCell(hits, ["grouped_atomic"]));
    text("w-meas-spin_lock", measuredCell(hits, ["spin_lock"]));
    text("w-meas-disjoint", measuredCell(hits, ["disjoint_block", "disjoint_fused"]));
    var body = $("w-measured");
    while (body.firstChild) { body.removeChild(body.firstChild); }
    hits.forEach(function (r) {
      var tr = document.createElement("tr");
      [r.implementation, r.norm, r.dtype + " / " + r.weight_dtype,
       (r.groups_effective === null ? "—" : String(r.groups_effective)), r.status,
       (r.status === "ok" ? fmtMs(r.time_ms) : "—"),
       (r.deterministic === null ? "—" : (r.deterministic ? "yes" : "no") +
        (r.distinct_results !== null ? " (" + r.distinct_results + "/" + r.repeats + " distinct)" : ""))
      ].forEach(function (v) {
        var td = document.createElement("td"); td.textContent = v; tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    text("w-measured-count", hits.length ? String(hits.length) :
         "none (this run measured no case with these rows, d" + " and GROUPS)");
  }
  ["w-rows", "w-d", "w-groups", "w-norm"].forEach(function (id) {
    $(id).addEventListener("input", update);
    $(id).addEventListener("change", update);
  });
  update();
})();
"""
