"""The answer per shape: fastest implementation, fastest bitwise-deterministic one, and what
determinism costs.  Pure pandas; used by the end-of-run table and the report."""
from __future__ import annotations

import pandas as pd

SHAPE = ["norm", "dtype", "weight_dtype", "rows", "d"]


def usable(df: pd.DataFrame) -> pd.DataFrame:
    """Records that may compete: measured, correct, with a time."""
    ok = (df["status"] == "ok") & (df["correct"] == True) & df["time_ms"].notna()  # noqa: E712
    return df[ok.fillna(False).astype(bool)]


def best_per_shape(df: pd.DataFrame) -> pd.DataFrame:
    """One row per shape: fastest (implementation, groups, time), fastest deterministic, cost %.

    'Deterministic' means measured so: every repeat gave the same bits."""
    rows = []
    good = usable(df)
    for shape, g in good.groupby(SHAPE, sort=True, dropna=False):
        fast = g.loc[g["time_ms"].idxmin()]
        det = g[g["deterministic"] == True]  # noqa: E712
        row = dict(zip(SHAPE, shape))
        row.update(fastest=fast["implementation"], fastest_groups=fast["groups"],
                   fastest_ms=float(fast["time_ms"]))
        if len(det):
            d = det.loc[det["time_ms"].idxmin()]
            row.update(fastest_deterministic=d["implementation"],
                       fastest_deterministic_groups=d["groups"],
                       fastest_deterministic_ms=float(d["time_ms"]),
                       determinism_cost_pct=100.0 * (float(d["time_ms"]) / row["fastest_ms"] - 1.0))
        else:
            row.update(fastest_deterministic=None, fastest_deterministic_groups=None,
                       fastest_deterministic_ms=None, determinism_cost_pct=None)
        rows.append(row)
    return pd.DataFrame(rows)


def best_groups(df: pd.DataFrame) -> pd.DataFrame:
    """Per shape and implementation, the fastest usable record (over its GROUPS values)."""
    good = usable(df)
    if good.empty:
        return good
    idx = good.groupby(SHAPE + ["implementation"], dropna=False)["time_ms"].idxmin()
    return good.loc[idx.values]
