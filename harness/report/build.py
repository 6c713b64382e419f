"""Assemble one run directory's report: load through harness.store, build the document,
write report.html, report.md and plots/*.png (and report-table.md: write_table, or kept
current by write_report where it exists)."""
from __future__ import annotations

import fcntl
import os
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pandas as pd

from normbench.harness import summary
from normbench.harness.schema import COLUMNS
from normbench.harness.text import count

from .document import PlotFigure, Report  # noqa: F401  (PlotFigure re-exported for callers)
from .fmt import (PLOTS_DIR, REPORT_HTML, REPORT_MD, REPORT_TABLE, interpreted, plain,
                  safe_name)
from .plots import plots_section
from .answer import answer_section, markdown_table
from .coverage import coverage, duplicates_warning, last_of_each_key
from .fmt import SHAPE
from .sections import (contention_section, environment_section, failures_section,
                       prediction_section, records_section)
from .widget import widget_section


INTERPRETER_WARNING = ("these timings are **CPU wall-clock under the Triton interpreter** "
                       "(TRITON_INTERPRET=1), not GPU time: they check that the pipeline runs "
                       "and say nothing about which implementation is faster on a GPU.")


class ReportError(Exception):
    """A run directory the report cannot be written into, or a bad argument: one line."""


def _inside(folder: Path, stem: str, ext: str) -> Path:
    """FOLDER/STEM.EXT, refusing any stem that would leave FOLDER (stems are sanitised before
    they get here: this is the second lock on the door).  The stem is checked, not the whole
    name: a stem of safe_name's full length plus its extension is longer than safe_name cuts."""
    name = f"{stem}{ext}"
    path = folder / name
    if stem != safe_name(stem) or path.resolve().parent != folder.resolve():
        raise ReportError(f"refusing to write {name!r} outside {folder}")
    return path


def write_table(run_dir) -> str:
    """RUN_DIR/report-table.md: the README's results table from this run; returns its text."""
    from normbench.harness import store
    run_dir = Path(run_dir)
    store.check_run_dir(run_dir)     # StoreError, one line: a run's own directory only
    plots_dir = run_dir / PLOTS_DIR
    # after a report being written (which rewrites report-table.md where it is there), not
    # beside it; no plots/ yet: no report to wait for, and none made for a table
    with _one_report_at_a_time(plots_dir) if plots_dir.is_dir() else nullcontext():
        text = _table_text(store.load_records(run_dir), store.load_meta(run_dir) or {},
                           live=store.in_use(run_dir))
        _refuse_directory(run_dir / REPORT_TABLE)
        store.write_file_atomic(run_dir / REPORT_TABLE, text)
    return text


@contextmanager
def _one_report_at_a_time(plots_dir: Path):
    """Hold the flock of `plots_dir` (an existing directory): one report of a run directory is
    written at a time, the others wait.  Two at once (`report RUN` begun while the run measured,
    and the run's own report at its end) interleaved their files: the earlier one's
    "still running" pages could land last over the complete ones, or its clean-up delete the
    plots the other's pages link.  Where the file system takes no flock (NFS), none is held."""
    from normbench.harness import store
    while True:
        fd = os.open(plots_dir, os.O_RDONLY | os.O_DIRECTORY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:
            os.close(fd)
            if e.errno not in store.NO_FLOCK:
                raise
            yield
            return
        try:        # the directory locked is still the one at its path (not one removed)
            st, now = os.fstat(fd), os.stat(plots_dir)
        except OSError:
            st = now = None
        if st is not None and (st.st_dev, st.st_ino) == (now.st_dev, now.st_ino):
            break
        os.close(fd)
        plots_dir.mkdir(exist_ok=True)
    try:
        yield
    finally:
        os.close(fd)              # releases the lock


def _table_text(records: pd.DataFrame, meta: dict, live: bool,
                load_error: str | None = None) -> str:
    """report-table.md's text: the table, below the warnings report.md opens with (an
    incomplete run, duplicates set aside, a load error, timings under the interpreter) and a
    note naming the peers recorded at a shape without competing there (summary.peers_out:
    "vs best peer" is against those that passed)."""
    df, dups = last_of_each_key(plain(records))
    cov = coverage(df, meta, live=live)
    notes = ([f"Incomplete run: {cov.warning}."] if cov.incomplete else []) + \
        ([duplicates_warning(dups)] if dups else []) + ([load_error] if load_error else []) + \
        ([INTERPRETER_WARNING] if interpreted(meta, df) else [])
    out = summary.peers_out(summary.answer(df)) if not df.empty else ""
    return ("".join(f"> **Warning:** {n}\n\n" for n in notes)
            + (f"> **Note:** {out}\n\n" if out else "") + markdown_table(df))


def _refuse_directory(path: Path) -> None:
    if path.is_dir():
        raise ReportError(f"{path} is a directory")


def write_report(run_dir, baseline: str | None = None) -> dict[str, Path]:
    """Write report.html, report.md and plots/*.png into run_dir, and report-table.md where
    one is there already; return {relative name: path} of every file written.  Works on any
    run: only errors, one implementation, NaNs, no GROUPS, Triton-interpreter timings.  One
    report of a run directory is written at a time (_one_report_at_a_time): another waits,
    then reads the run as it is then."""
    from normbench.harness import store

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"not a run directory: {run_dir}")
    try:        # a run's own directory only: its plots/*.png are replaced below
        store.check_run_dir(run_dir)
    except store.StoreError as e:
        raise ReportError(str(e)) from None
    plots_dir = run_dir / PLOTS_DIR
    if plots_dir.exists() and (plots_dir.is_symlink() or not plots_dir.is_dir()):
        raise ReportError(f"{plots_dir} is not a directory")
    for name in (REPORT_HTML, REPORT_MD):
        _refuse_directory(run_dir / name)
    made = not plots_dir.exists()
    plots_dir.mkdir(exist_ok=True)
    # what the report reads is read once no other report of the run is being written: the
    # last report written is of the records as they are then
    with _one_report_at_a_time(plots_dir):
        try:
            written = _write_report(run_dir, plots_dir, baseline)
        except BaseException:
            if made:                  # a report refused (--baseline) leaves no plots/ of its own
                try:
                    plots_dir.rmdir()
                except OSError:
                    pass
            raise
    return written


def _write_report(run_dir: Path, plots_dir: Path, baseline: str | None) -> dict[str, Path]:
    from normbench.harness import store
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
    live = store.in_use(run_dir)
    report = build_report(records, meta, baseline=baseline, run_name=run_dir.name,
                          load_error=load_error, live=live)

    # The new plots first, then the pages that link them, and only then the plots of an
    # earlier report that this one no longer has: a signal (or a full disk) at any moment
    # leaves every plot that report.md (old or new) links in place.
    written: dict[str, Path] = {}
    for fig in report.figures:
        path = _inside(plots_dir, fig.name, ".png")
        store.write_file_atomic(path, fig.png)
        written[f"{PLOTS_DIR}/{fig.name}.png"] = path
    texts = [(REPORT_HTML, report.html()), (REPORT_MD, report.markdown())]
    # report-table.md is written on request only (report --markdown-table), but one written
    # earlier, while the run was still going say, is rewritten with the rest: never stale
    table = run_dir / REPORT_TABLE
    if table.is_file():
        texts.append((REPORT_TABLE, _table_text(records, meta, live, load_error)))
    for name, text in texts:
        store.write_file_atomic(run_dir / name, text)
        written[name] = run_dir / name
    new = {path.name for path in written.values() if path.parent == plots_dir}
    for old in plots_dir.glob("*.png"):          # plots of an earlier report of this run
        if old.name not in new and old.is_file() and not old.is_symlink():
            old.unlink()
    return written


def build_report(records: pd.DataFrame, meta: dict, baseline: str | None = None,
                 run_name: str = "", load_error: str | None = None,
                 live: bool = False) -> Report:
    """The whole report (text blocks and figures) from loaded records and meta.

    baseline: the implementation the speedup plot compares against; None: `torch` where the
    run has it.  A baseline named explicitly must be one of the run's implementations.
    live: a run still holds the directory (store.in_use): the report says it is running."""
    every = plain(records)
    df, dups = last_of_each_key(every)
    impls = set(df["implementation"].dropna())
    if baseline is not None and len(df) and baseline not in impls:
        raise ReportError(f"--baseline: {baseline!r} is not an implementation of this run "
                          f"(it has: {', '.join(sorted(impls))})")
    baseline = baseline or "torch"
    meta = dict(meta or {})
    interp = interpreted(meta, df)
    cov = coverage(df, meta, live=live)
    title = f"normbench report — {meta.get('config_name') or run_name or 'run'}"
    rep = Report(title=title)

    bits = [f"device **{meta.get('device_name') or 'unknown'}**",
            f"{count(len(df), 'record')}"
            f"{f' of {cov.planned} planned' if cov.planned is not None else ''}, "
            f"{count(df['implementation'].nunique(), 'implementation')}, "
            f"{count(df.groupby(list(SHAPE), dropna=False).ngroups if len(df) else 0, 'shape')}",
            f"timer `{meta.get('timer') or ('cpu_wall' if interp else 'unknown')}`"]
    if meta.get("git_commit"):
        bits.append(f"git `{str(meta['git_commit'])[:10]}`{' (dirty tree)' if meta.get('git_dirty') else ''}")
    if meta.get("started_at"):
        bits.append(f"started {meta['started_at']}")
    rep.p(" · ".join(bits))
    if cov.incomplete:
        rep.warn(f"**Incomplete run** — {cov.warning}. Every figure below is of the records "
                 "here only.")
    if dups:
        rep.warn(duplicates_warning(dups))
    if load_error:
        rep.warn(load_error)
    if interp:
        rep.warn(INTERPRETER_WARNING)

    answer_section(rep, df, cov)
    failures_section(rep, df, cov.incomplete)
    contention_section(rep, df)
    environment_section(rep, meta, interp)
    prediction_section(rep, df, meta, interp)
    plots_section(rep, df, meta, baseline, interp)
    widget_section(rep, df)
    records_section(rep, every)          # every record, a set-aside duplicate too
    return rep
