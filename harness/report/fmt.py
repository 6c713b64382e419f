"""Small formatting and selection helpers shared by the report modules (pure, no I/O)."""
from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

from normbench.harness.schema import COLUMNS
from normbench.harness.summary import SHAPE, competing

PLOTS_DIR = "plots"
# Display order: strategies from most to least contended, then baselines; others after.
ORDER = ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "disjoint_fused",
         "torch", "liger", "quack")
_NUMERIC = ("Int64", "Float64")


def na(v) -> bool:
    if v is None:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def finite(v) -> bool:
    try:
        return not na(v) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def fmt_int(v) -> str:
    return "" if not finite(v) else f"{int(round(float(v))):d}"


def fmt_ms(v) -> str:
    return "" if not finite(v) else f"{float(v):.4g}"


def short(v) -> str:
    """A time for a small heatmap cell: 3 significant digits, never scientific below 1e5."""
    if not finite(v):
        return ""
    v = float(v)
    if abs(v) >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"


def fmt_bytes(v) -> str:
    if not finite(v):
        return ""
    b = float(v)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(b) < 1024 or unit == "GiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.3g} {unit}"
        b /= 1024
    return f"{b:.3g} GiB"


def plain(records: pd.DataFrame) -> pd.DataFrame:
    """Schema columns as plain numpy-friendly values: numbers float64 (NaN for missing),
    booleans and text as Python objects (None for missing).  Robust to any loader."""
    df = pd.DataFrame(index=range(len(records)))
    for col, dtype in COLUMNS.items():
        s = records[col].reset_index(drop=True) if col in records.columns else \
            pd.Series([None] * len(records), dtype="object")
        if dtype in _NUMERIC:
            df[col] = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
        elif dtype == "boolean":
            df[col] = pd.Series([None if na(v) else bool(v) for v in s], dtype="object")
        else:
            df[col] = pd.Series([None if na(v) else str(v) for v in s], dtype="object")
    return df


def impl_order(impls) -> list[str]:
    impls = [x for x in dict.fromkeys(impls) if not na(x)]
    known = [x for x in ORDER if x in impls]
    return known + sorted(x for x in impls if x not in ORDER)


def uses_groups(groups) -> bool:
    return not na(groups) and str(groups) not in ("-", "", "None")


def impl_label(impl, groups, geff) -> str:
    """Implementation with the GROUPS it ran with: 'grouped_atomic (G=64)', '… (G=auto→264)'."""
    if not uses_groups(groups):
        return str(impl)
    g = str(groups)
    if g == "auto":
        return f"{impl} (G=auto→{fmt_int(geff)})" if finite(geff) else f"{impl} (G=auto)"
    return f"{impl} (G={g})"


def shape_label(row, many_wdtypes: bool) -> str:
    norm = {"layernorm": "LN", "rmsnorm": "RMS"}.get(str(row["norm"]), str(row["norm"]))
    s = f"{norm} {fmt_int(row['rows'])}×{fmt_int(row['d'])} {row['dtype']}"
    return s + (f"/{row['weight_dtype']}" if many_wdtypes else "")


def best_per_impl(comp: pd.DataFrame, extra: tuple = ()) -> pd.DataFrame:
    """Per (implementation, shape): the record of the fastest GROUPS."""
    if comp.empty:
        return comp
    keys = ["implementation", *SHAPE, *extra]
    idx = comp.groupby(keys, dropna=False)["time_ms"].idxmin()
    return comp.loc[idx.dropna().astype(int)].reset_index(drop=True)


def interpreted(meta: dict, df: pd.DataFrame) -> bool:
    if meta.get("interpreted") is True or meta.get("timer") == "cpu_wall":
        return True
    return bool(len(df)) and (df["timer"] == "cpu_wall").any()


