"""The answer per shape — the one place that says what competes, what a shape is and which
record is best.  Pure pandas; the report's answer section, its README table and the
end-of-run terminal tables all call it."""
from __future__ import annotations

import numpy as np
import pandas as pd

# What identifies a shape, in the order tables sort by.
SHAPE = ("norm", "rows", "d", "dtype", "weight_dtype")


def is_true(v) -> bool:
    """A boolean cell that is True: Python or numpy bool, or the text 'true' (a CSV column of
    a run with failed records loads as text)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return isinstance(v, str) and v.strip().lower() == "true"


def is_false(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return not bool(v)
    return isinstance(v, str) and v.strip().lower() == "false"


def times(df: pd.DataFrame, col: str = "time_ms") -> pd.Series:
    """A numeric column as float64 with NaN for missing (from any loader's dtype)."""
    if col not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype="float64")
    return pd.Series(pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64",
                                                                         na_value=np.nan),
                     index=df.index)


def competing(df: pd.DataFrame) -> pd.DataFrame:
    """Records that compete: status ok, a correct result, a positive finite median time."""
    if df.empty:
        return df
    t = times(df)
    ok = (df["status"].astype("object") == "ok").to_numpy(dtype=bool) \
        & df["correct"].map(is_true).to_numpy(dtype=bool) & np.isfinite(t.to_numpy()) \
        & (t.to_numpy() > 0)
    return df[ok]


def _fastest(frame: pd.DataFrame) -> pd.Series | None:
    if frame.empty:
        return None
    return frame.loc[times(frame).idxmin()]


def best_groups(df: pd.DataFrame) -> pd.DataFrame:
    """Per shape and implementation, the fastest competing record (over its GROUPS values)."""
    good = competing(df)
    if good.empty:
        return good
    idx = times(good).groupby([good[k] for k in (*SHAPE, "implementation")],
                              dropna=False).idxmin()
    return good.loc[idx.dropna().values]


def best_per_shape(df: pd.DataFrame) -> pd.DataFrame:
    """One row per shape: fastest (implementation, groups, time), fastest deterministic, cost %.

    'Deterministic' means measured so: every repeat gave the same bits."""
    rows = []
    good = competing(df)
    for shape, g in good.groupby(list(SHAPE), sort=True, dropna=False):
        fast = _fastest(g)
        row = dict(zip(SHAPE, shape))
        row.update(fastest=fast["implementation"], fastest_groups=fast["groups"],
                   fastest_ms=float(fast["time_ms"]))
        d = _fastest(g[g["deterministic"].map(is_true)])
        if d is not None:
            row.update(fastest_deterministic=d["implementation"],
                       fastest_deterministic_groups=d["groups"],
                       fastest_deterministic_ms=float(d["time_ms"]),
                       determinism_cost_pct=100.0 * (float(d["time_ms"]) / row["fastest_ms"] - 1.0))
        else:
            row.update(fastest_deterministic=None, fastest_deterministic_groups=None,
                       fastest_deterministic_ms=None, determinism_cost_pct=None)
        rows.append(row)
    return pd.DataFrame(rows)
