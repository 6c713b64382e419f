"""Assemble one run directory's report: load through harness.store, build the document,
write report.html, report.md and plots/*.png."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from normbench.harness.schema import COLUMNS

from .document import PlotFigure, Report  # noqa: F401  (PlotFigure re-exported for callers)
from .fmt import PLOTS_DIR, interpreted, plain
from .plots import plots_section
from .sections import (SHAPE, answer_section, environment_section, failures_section,
                       prediction_section, records_section)
from .widget import widget_section


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


def build_report(records: pd.DataFrame, meta: dict, baseline: str = "torch",
                 run_name: str = "", load_error: str | None = None) -> Report:
    """The whole report (text blocks and figures) from loaded records and meta."""
    df = plain(records)
    meta = dict(meta or {})
    interp = interpreted(meta, df)
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

    answer_section(rep, df)
    failures_section(rep, df)
    environment_section(rep, meta, interp)
    prediction_section(rep, df, meta, interp)
    plots_section(rep, df, meta, baseline, interp)
    widget_section(rep, df)
    records_section(rep, df)
    return rep
