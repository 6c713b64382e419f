"""The what-if widget (HTML only): the records it matches against, embedded as JSON; the page
part is templates/widget.html.j2 with static/widget.js."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from normbench.harness.schema import COLUMNS

from .document import Report
from .fmt import _NUMERIC, competing, finite, na


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
                v = (int(v) if COLUMNS[k] == "Int64" else float(v)) if finite(v) else None
            elif na(v):
                v = None
            rec[k] = v
        out.append(rec)
    return out


def _widget_defaults(df: pd.DataFrame) -> tuple[int, int, int, str]:
    comp = competing(df)
    pick = comp[np.isfinite(comp["groups_effective"])]
    for frame in (pick, comp, df):
        frame = frame[np.isfinite(frame["rows"]) & np.isfinite(frame["d"])]
        if not frame.empty:
            r = frame.iloc[0]
            g = int(r["groups_effective"]) if finite(r["groups_effective"]) else 64
            return int(r["rows"]), int(r["d"]), g, str(r["norm"] or "layernorm")
    return 16384, 4096, 64, "layernorm"


def widget_section(rep: Report, df: pd.DataFrame) -> None:
    rep.h(2, "What-if: writers per slot, workspace, determinism", "widget")
    rows, d, g, norm = _widget_defaults(df)
    data = json.dumps(_widget_records(df), allow_nan=False).replace("<", "\\u003c")
    sel = {n: " selected" if n == norm else "" for n in ("layernorm", "rmsnorm")}
    from .assets import render_widget
    rep.raw_html(
        render_widget(rows=rows, d=d, g=g, sel_ln=sel["layernorm"], sel_rms=sel["rmsnorm"],
                      data=data),
        md_alternative="The interactive model (writers per slot, workspace and determinism for "
                       "any rows, d and GROUPS, beside the measured times) is in `report.html`.")
