"""The what-if widget (HTML only): the records it matches against, embedded as JSON; the page
part is templates/widget.html.j2 with static/widget.js."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from normbench.harness.schema import COLUMNS
from normbench.harness.stats import is_time

from .document import Report
from .fmt import _NUMERIC, competing, finite, na


# ---------------------------------------------------------------------------------------------
# interactive widget (HTML only)

_WIDGET_FIELDS = ("norm", "implementation", "kind", "deterministic_by_design", "rows", "d", "dtype", "weight_dtype", "groups",
                  "groups_effective", "status", "correct", "deterministic", "distinct_results",
                  "repeats", "time_ms", "workspace_bytes", "writers_per_slot")


def _widget_records(df: pd.DataFrame) -> list[dict]:
    out = []
    for _, r in df.iterrows():
        rec = {}
        for k in _WIDGET_FIELDS:
            v = r[k]
            if k == "time_ms":      # no time where it is none to judge (0 or less: a broken
                v = float(v) if is_time(v) else None    # record), as the answer has it
            elif COLUMNS[k] in _NUMERIC:
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


# The grid the registry's contention model is evaluated over (plus every rows, d and GROUPS
# this run measured): powers of two.
GRID_ROWS = tuple(2 ** k for k in range(0, 21))
GRID_D = tuple(2 ** k for k in range(4, 17))
GRID_GROUPS = tuple(2 ** k for k in range(0, 11))


def _grid(df: pd.DataFrame, defaults) -> dict[str, list[int]]:
    def values(base, col, extra):
        run = [int(v) for v in df[col] if finite(v) and float(v) >= 1] if len(df) else []
        return sorted({*base, *run, extra})
    rows, d, g, _ = defaults
    return {"rows": values(GRID_ROWS, "rows", rows), "d": values(GRID_D, "d", d),
            "groups": values(GRID_GROUPS, "groups_effective", g)}


def _evaluate(entry, grid) -> dict:
    """One registered entry's contention model over the grid, through its own functions:
    writers[ri][di][gi], workspace (with dβ: LayerNorm / without: RMSNorm) and the GROUPS it
    would use; gi runs over the GROUPS grid only for entries that use GROUPS.  Every value is
    checked as a record's is (measure.model_value): one that fails (inf writers at 2^20 rows,
    a negative workspace) is this entry's error, naming the value and the point of the grid —
    the page, whose data must be JSON, is still written.  An entry not available on this
    machine (a Gluon strategy on a CPU, a peer whose package is missing) is evaluated where it
    declared its model as data (`Contention`: host arithmetic, the same on any machine); else
    its error says plainly that it has no model here and why — never that it is unavailable
    to the run, whose records may come from a machine where it ran."""
    groups = grid["groups"] if entry.uses_groups else [None]
    out = {"name": entry.name, "kind": entry.kind, "available": bool(entry.available),
           "reason": entry.reason or "", "doc": entry.doc or "",
           "deterministic_by_design": bool(entry.deterministic_by_design),
           "uses_groups": bool(entry.uses_groups), "error": None}
    if not entry.available and entry.contention is None:
        out["error"] = (f"no model: {entry.name} is not available on the machine that wrote "
                        f"this report ({entry.reason})")
        return out
    from normbench.harness.measure import model_value

    # A value's check depends on the column and the value alone: an int or None passed once
    # is not checked again (the grid gives the same few counts and sizes thousands of times);
    # a value that fails is checked, and raises, at every point that gives it, as before
    checked: dict = {}

    def value(col, source, r, d, g, f, *args):
        """One value of the model, checked as a record's is (an int a record can hold, inf
        and -5 bytes not), named with the point of the grid that gave it."""
        try:
            v = f(r, d, g, *args)
            key = (col, v) if v is None or type(v) is int else None
            if key is not None and key in checked:
                return checked[key]
            out = model_value(col, source, v)
        except ValueError as e:
            at = f", GROUPS={g}" if entry.uses_groups else ""
            raise ValueError(f"{e} (at rows={r}, d={d}{at})") from None
        if key is not None:
            checked[key] = out
        return out

    # Entry.writers_per_slot and workspace_bytes (no weight dtype: none is checked) are their
    # models at the effective GROUPS, which each works out again: worked out once a point here
    # (the grid is some 3,000 points an entry, and the checks cost more than the models); the
    # writers model takes rows and the effective GROUPS only (no d): worked out once a pair
    effective: dict = {}
    per_pair: dict = {}

    def groups_at(r, d, g):
        key = (r, d, g)
        if key not in effective:        # what it raises is raised at each call, as before
            effective[key] = entry.effective_groups(r, d, g)
        return effective[key]

    def writers(r, d, g):
        ge = groups_at(r, d, g)
        try:
            key = (r, type(ge), ge)
            return per_pair[key]
        except KeyError:
            per_pair[key] = out = entry.writers_at(r, ge)    # raises at each call, as before
            return out
        except TypeError:               # an effective GROUPS that is no key: asked each time
            return entry.writers_at(r, ge)

    def workspace(r, d, g, has_bias):
        return entry.workspace_at(r, d, groups_at(r, d, g), has_bias)

    try:
        w, ln, rms, geff = [], [], [], []
        for r in grid["rows"]:
            w.append([]), ln.append([]), rms.append([]), geff.append([])
            for d in grid["d"]:
                w[-1].append([value("writers_per_slot", "writers", r, d, g, writers)
                              for g in groups])
                ln[-1].append([value("workspace_bytes", "workspace", r, d, g, workspace, True)
                               for g in groups])
                rms[-1].append([value("workspace_bytes", "workspace", r, d, g, workspace, False)
                                for g in groups])
                geff[-1].append([value("groups_effective", "effective_groups", r, d, g,
                                       groups_at) for g in groups])
        out.update(writers=w, workspace_ln=ln, workspace_rms=rms, groups_effective=geff)
    except Exception as e:                  # a model that needs a GPU, say: shown as such
        out["error"] = f"model not evaluable here: {type(e).__name__}: {e}"
    return out


def model_entries(grid) -> list[dict]:
    """Every registered entry's model, in display order (strategies not deterministic by design
    first, then the deterministic ones, then baselines; registration order within each)."""
    from normbench import strategies
    reg = strategies.entries()
    rank = {e.name: k for k, e in enumerate(reg)}
    reg.sort(key=lambda e: (e.kind != "strategy", bool(e.deterministic_by_design), rank[e.name]))
    return [_evaluate(e, grid) for e in reg]


def widget_section(rep: Report, df: pd.DataFrame) -> None:
    rep.h(2, "What-if: writers per slot, workspace, determinism", "widget")
    defaults = _widget_defaults(df)
    grid = _grid(df, defaults)
    try:
        entries, problem = model_entries(grid), ""
    except Exception as e:                  # the registry itself failed (a broken plugin)
        entries, problem = [], f"the registry could not be read: {type(e).__name__}: {e}"
    payload = {"grid": grid, "entries": entries, "records": _widget_records(df),
               "defaults": dict(zip(("rows", "d", "groups", "norm"), defaults)),
               "problem": problem}
    data = json.dumps(payload, allow_nan=False, separators=(",", ":"),
                      default=lambda o: o.item() if hasattr(o, "item") else str(o)).replace("<", "\\u003c")
    from .assets import render_widget
    rep.raw_html(
        render_widget(data=data),
        md_alternative="The interactive contention model (writers per slot, workspace and "
                       "determinism of every registered implementation over rows × d × GROUPS, "
                       "beside the measured times) is in `report.html`.")
