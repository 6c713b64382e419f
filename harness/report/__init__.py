"""Render one run directory into a report a person can read.

    write_report(run_dir, baseline="torch") -> {"report.html": Path, "report.md": Path,
                                                "plots/<name>.png": Path, ...}

RUN_DIR/report.html  self-contained: plots inline as base64 data URIs, inline CSS and JS (the
                     what-if widget), no network; opens offline from a file:// URL
RUN_DIR/report.md    the same text; plots referenced by relative path (plots/*.png)
RUN_DIR/plots/*.png  seaborn / matplotlib (Agg) figures

The package, one module per part:
    build.py     write_report / build_report: load (through harness.store), assemble, write
    coverage.py  the records it reads (the last of each case key) and how much of the plan
                 they are (interrupted, one shard, a partial merge): the top warning
    document.py  the document model (blocks) and its markdown and HTML renderers
    sections.py  the text sections: answer, failures, environment, prediction, all records
    plots.py     the figures
    widget.py    the what-if widget's data
    assets.py    templates/*.j2 and static/* (CSS, JS), inlined into report.html
    fmt.py       small formatting helpers
The answer itself (what competes, the best per shape) is harness/summary.py's.
"""
from __future__ import annotations

from .build import ReportError, build_report, write_report, write_table
from .document import PlotFigure, Report

__all__ = ["PlotFigure", "Report", "ReportError", "build_report", "write_report", "write_table"]
