"""Small formatting and selection helpers shared by the report modules (pure, no I/O)."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from normbench.harness.cells import is_finite, is_missing, sig
from normbench.harness.schema import COLUMNS
from normbench.harness.summary import SHAPE, competing
from normbench.harness.text import count

PLOTS_DIR = "plots"
# the report's files in a run directory (report/build.py writes them; export --out refuses them)
REPORT_HTML, REPORT_MD, REPORT_TABLE = "report.html", "report.md", "report-table.md"
_NUMERIC = ("Int64", "Float64")


na, finite = is_missing, is_finite       # harness/cells.py, under the report's short names


def fmt_int(v) -> str:
    return "" if not finite(v) else f"{int(round(float(v))):d}"


def fmt_g(v) -> str:
    """4 significant digits."""
    return "" if not finite(v) else f"{float(v):.4g}"


def fmt_us(v_us) -> str:
    """A time already in µs: 1 decimal from 10 µs (13.8, 117.5), 2 below, none from 10 ms."""
    if not finite(v_us):
        return ""
    v = float(v_us)
    return f"{v:.0f}" if abs(v) >= 10000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def ms_to_us(v) -> str:
    """A time in ms (as recorded) shown in µs."""
    return fmt_us(float(v) * 1000) if finite(v) else ""


def fmt_ratio(v) -> str:
    """A ratio with 3 significant digits: 1.29, 0.853, 0.00123 (a tiny ratio never reads 0.00)."""
    return sig(v, 3)


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
    # the columns built first and the frame made once: set one by one into a frame, the 50
    # columns cost a report or a compare some 0.1 s a frame
    cols = {}
    for col, dtype in COLUMNS.items():
        s = records[col].reset_index(drop=True) if col in records.columns else \
            pd.Series([None] * len(records), dtype="object")
        if col == "time_samples_ms":         # JSON text or a list (parquet): kept as loaded
            cols[col] = pd.Series(list(s), dtype="object")
        elif dtype in _NUMERIC:
            cols[col] = pd.Series(pd.to_numeric(s, errors="coerce").to_numpy(
                dtype="float64", na_value=np.nan))
        elif dtype == "boolean":
            cols[col] = pd.Series([None if na(v) else bool(v) for v in s], dtype="object")
        else:
            cols[col] = pd.Series([None if na(v) else str(v) for v in s], dtype="object")
    return pd.DataFrame(cols, index=range(len(records)))


# a file-name stem's most characters, a de-duplication suffix ("-2") included (document.figure
# cuts the stem to make room): with ".png", far below a file system's 255
STEM_MAX = 120


def safe_name(text) -> str:
    """A file-name stem from any text (an implementation name in records.csv may be anything):
    only [A-Za-z0-9._-], never a path separator, never '.' or '..' or a hidden name."""
    s = re.sub(r"[^A-Za-z0-9._-]", "_", str(text))
    s = re.sub(r"^\.", "_", s)
    return s[:STEM_MAX] or "_"


def registry_index() -> dict[str, int]:
    """Registration order of every implementation this installation knows (plugins last)."""
    try:
        from normbench import strategies
        return {n: k for k, n in enumerate(strategies.known())}
    except Exception:                       # a broken plugin must not cost the report
        return {}


def implementation_order(df: pd.DataFrame) -> list[str]:
    """Every implementation in the records, in display order, from what they say of themselves:
    strategies before baselines, strategies not deterministic by design first (the contended
    ones), then registration order, then name."""
    impls = [x for x in dict.fromkeys(df["implementation"]) if not na(x)] if len(df) else []
    reg = registry_index()
    first = df.drop_duplicates("implementation").set_index("implementation") if impls else None

    def key(n):
        kind = first.at[n, "kind"] if "kind" in first.columns else None
        det = first.at[n, "deterministic_by_design"] if "deterministic_by_design" in first.columns else None
        return ({"strategy": 0, "baseline": 1}.get(kind, 2), 1 if det is True else 0,
                reg.get(n, len(reg)), str(n))
    return sorted(impls, key=key)


def impl_order(impls, order) -> list[str]:
    """IMPLS in the display ORDER (implementation_order's list, or a palette dict)."""
    impls = set(impls)
    return [x for x in order if x in impls]


def uses_groups(groups) -> bool:
    return not na(groups) and str(groups) not in ("-", "", "None")


def impl_label(impl, groups, geff) -> str:
    """Implementation with the GROUPS it ran with: 'grouped_atomic (G=64)', '… (G=auto→264)',
    and '… (G=6→5)' where the strategy capped the GROUPS asked for (at most one per row):
    the label names what ran, and G=6 and G=5 that both ran 5 stay two labels."""
    if not uses_groups(groups):
        return str(impl)
    ran = groups_ran(groups, geff)
    return f"{impl} (G={groups}→{ran})" if ran else f"{impl} (G={groups})"


def groups_ran(groups, geff) -> str:
    """The GROUPS that ran where they are not the GROUPS asked for ('5' for 6 capped at 5,
    '264' for auto), else ''."""
    if not uses_groups(groups) or not finite(geff):
        return ""
    ran = fmt_int(geff)
    return ran if ran != _as_int(str(groups)) else ""


def _as_int(text: str) -> str:
    """GROUPS as asked, written as fmt_int writes the effective ones ("6.0" -> "6")."""
    try:
        return fmt_int(float(text))
    except ValueError:
        return text


def show_weight(df) -> bool:
    """Whether shape labels name the weight's dtype: where the run has several, or one that
    is not the activations' (bf16 with an fp32 weight is not "bf16")."""
    if df.empty or "weight_dtype" not in df.columns:
        return False
    return bool(df["weight_dtype"].nunique() > 1
                or (df["weight_dtype"].astype(str) != df["dtype"].astype(str)).any())


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




def no_ceiling(meta: dict) -> str:
    """Why no single copy ceiling is drawn (one_copy_ceiling gave None), as a sentence start."""
    if finite(meta.get("copy_ceiling_gbps")):
        return ("The records were measured against different copy ceilings ("
                + ceiling_sources(meta) + ")")
    return "meta.json has no copy ceiling"


def ceiling_sources(meta: dict) -> str:
    """What measured more than one copy ceiling in this run, from its meta.json: the shards
    merged (`merged_from`), several workers' GPUs (`gpus`), the `--resume`s (each measures
    its own: `resumes` entries with a ceiling, the run's or its shards')."""
    def listed(m: dict, key: str) -> list:
        return m.get(key) if isinstance(m.get(key), list) else []
    shards = [s for s in listed(meta, "merged_from") if isinstance(s, dict)]
    runs = [meta, *shards]
    found = []
    if len(shards) > 1:
        found.append(f"{len(shards)} merged shards measured one each")
    if any(len(listed(m, "gpus")) > 1 for m in runs):
        found.append("the workers measured one per GPU")
    again = sum(isinstance(e, dict) and finite(e.get("copy_ceiling_gbps"))
                for m in runs for e in listed(m, "resumes"))
    if again:
        found.append(f"{count(again, 'resume')} measured "
                     + ("a ceiling of its own" if again == 1 else "ceilings of their own"))
    return "; ".join(found) or "measured on other GPUs or at other times"


def one_copy_ceiling(df: pd.DataFrame, meta: dict) -> float | None:
    """The copy ceiling (GB/s) every record's % of copy was measured against, so that no
    figure drawn against it contradicts a record's own % of copy: the records' own ceiling
    (GB/s over % of copy) where they agree within 1 %; None where they differ more — shards
    merged from, or workers on, GPUs of different ceilings.  meta.json's only where no record
    carries one: a merge or cluster meta holds the median of its shards' or workers' ceilings,
    which may be one no record was measured against."""
    own = measured_against(df, "pct_copy")
    own = own[np.isfinite(own)]
    if len(own):
        return None if differ(own.min(), own.max()) else float(np.median(own))
    copy = meta.get("copy_ceiling_gbps")
    return float(copy) if finite(copy) and float(copy) > 0 else None


def measured_against(df: pd.DataFrame, pct: str) -> np.ndarray:
    """Each record's own reference bandwidth (GB/s) — the copy ceiling for pct "pct_copy",
    the datasheet peak for "pct_peak" — as its GB/s over that %; NaN where it has none."""
    if not len(df) or not {"gbps", pct} <= set(df.columns):
        return np.full(len(df), np.nan)
    g = pd.to_numeric(df["gbps"], errors="coerce").to_numpy(dtype=float)
    p = pd.to_numeric(df[pct], errors="coerce").to_numpy(dtype=float)
    ok = np.isfinite(g) & np.isfinite(p) & (g > 0) & (p > 0)
    return np.where(ok, g / np.where(ok, p, 1) * 100, np.nan)


def differ(a: float | None, b: float | None) -> bool:
    """Two reference bandwidths more than 1 % apart (not one ceiling or peak)."""
    return bool(a and b and max(a, b) > min(a, b) * 1.01)
