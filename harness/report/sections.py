"""The report's text sections: failures, host contention, environment, the bandwidth-bound
prediction and the table of all records (the answer is answer.py's)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from normbench.harness import hostload, model, schema, summary
from normbench.harness.cells import sig
from normbench.harness.text import count

from .document import Report
from .fmt import (SHAPE, ceiling_sources, differ, finite, fmt_bytes, fmt_int, impl_label,
                  measured_against, ms_to_us, na, no_ceiling, one_copy_ceiling, show_weight)

META_ORDER = ("config_name", "config_path", "config_hash", "device_name", "sm_count",
              "peak_tbps", "copy_ceiling_gbps", "timer", "interpreted", "driver_version",
              "cuda_version", "torch_version", "triton_version", "python_version", "git_commit",
              "git_dirty", "hostname", "started_at", "ended_at")
SEED_CONFIG = "seed-worked-example"


# ---------------------------------------------------------------------------------------------
# failures

def failures_section(rep: Report, df: pd.DataFrame, incomplete: bool = False) -> None:
    """incomplete: the run holds part of its plan (coverage.py); a case it never recorded
    has neither failed nor passed, and "none" must not read as "none in the run"."""
    # every record that does not compete (summary.competing): a failure, an unchecked
    # result, or an ok and correct one without a positive finite time (a hand-edited CSV);
    # and one deterministic by design whose repeats differed, which competes as
    # nondeterministic but fails `run --strict`
    bad = df[~df.index.isin(summary.competing(df).index)
             | df.apply(summary.not_repeatable, axis=1).astype(bool)]
    rep.h(2, f"Failures, incorrect or unrepeatable results, timeouts and skips ({len(bad)})",
          "failures")
    if bad.empty:
        rep.p(("No records." if not len(df) else
               "None: every record has status ok and a correct result, repeatable where "
               "its implementation is deterministic by design.")
              + (" The run is incomplete: the cases it did not record were not checked (see "
                 "the warning at the top)." if incomplete else ""))
        return
    counts = bad.assign(what=bad.apply(_failure_kind, axis=1))["what"].value_counts()
    rep.p(", ".join(f"{v} {k}" for k, v in counts.items()) + ".")
    rows = []
    priority = {"error": 0, "timeout": 1, "incorrect": 2, NOT_REPEATABLE: 3, NO_TIME: 4,
                "correctness not checked": 5, "skipped": 6}
    for _, r in bad.iterrows():
        rows.append({"implementation": impl_label(r["implementation"], r["groups"], r["groups_effective"]),
                     "norm": r["norm"], "rows": fmt_int(r["rows"]), "d": fmt_int(r["d"]), "dtype": r["dtype"],
                     "weight dtype": r["weight_dtype"], "status": _failure_kind(r),
                     "error": _failure_text(r)})
    rows.sort(key=lambda x: priority.get(x["status"], 0))      # stable: run order within a kind
    rep.table(pd.DataFrame(rows), cls="failures")


NO_TIME = "no positive finite time"
NOT_REPEATABLE = summary.NOT_REPEATABLE


def _failure_kind(r) -> str:
    if r["status"] != "ok":
        return str(r["status"] or "no status")
    if r["correct"] is False:
        return "incorrect"
    if summary.is_true(r["correct"]) and summary.not_repeatable(r):
        return NOT_REPEATABLE
    if r["correct"] is True:           # ok and correct, yet it does not compete
        return NO_TIME
    return "correctness not checked"


def _over_tolerance(r) -> str:
    """Which outputs were past their tolerance, by how much ("dγ 0.05 > 0.0001"): each output
    has its own (dx the activations' dtype's, dγ/dβ the weight's; a run without
    tolerance_dw held one, the coarser, for all)."""
    over, within = [], []
    for c, k in schema.SHOWN.items():
        t = schema.tolerance_of(r, c)
        if na(r.get(c)) or na(t):
            continue
        e, t = float(r[c]), float(t)
        if e <= t:
            within.append(f"{k} {e:.3g}")
        else:
            over.append(f"{k} {e:.3g} > {t:.3g}")
    if not over:
        return "result incorrect"
    return "past its tolerance: " + ", ".join(over) + (f" ({', '.join(within)} within)" if within else "")


def _failure_text(r) -> str:
    err = "" if na(r["error"]) else str(r["error"])
    if r["status"] == "ok" and r["correct"] is False:
        detail = _over_tolerance(r)
        return f"{detail}; {err}" if err else detail
    if r["status"] == "ok" and r["correct"] is None:
        return err or "the record carries no correctness verdict"
    if r["status"] == "ok" and summary.is_true(r["correct"]) and summary.not_repeatable(r):
        n, rep = r.get("distinct_results"), r.get("repeats")
        among = ("its repeats" if na(rep) else
                 schema.compared_calls(int(rep), r.get("last_call_compared")))
        detail = ("other bits when repeated" if na(n) else
                  f"{int(n)} distinct results in {among}") + \
            ", though its implementation is deterministic by design"
        return f"{detail}; {err}" if err else detail
    if r["status"] == "ok" and r["correct"] is True:
        t = "empty" if na(r["time_ms"]) else f"{float(r['time_ms']):g} ms"
        detail = f"median time {t}: not positive and finite, so the answer leaves it out"
        return f"{detail}; {err}" if err else detail
    return err or "(no error text recorded)"


# ---------------------------------------------------------------------------------------------
# environment

def environment_section(rep: Report, meta: dict, interp: bool) -> None:
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
    _merge_differs(rep, meta.get("merge") if isinstance(meta.get("merge"), dict) else {})
    workers = meta.get("workers_differ")
    if isinstance(workers, list) and workers:
        rep.p(f"The workers' facts differ in {', '.join(f'`{k}`' for k in map(str, workers))}: "
              "those are empty above; each worker's own is in `gpus`.")
    if meta.get("config_text"):
        rep.pre(str(meta["config_text"]),
                f"Config `{meta.get('config_name') or ''}` as run (verbatim)")


def _merge_differs(rep: Report, merge: dict) -> None:
    """What the shards of a merge did not share (merge.differs, merge.environment_differs):
    empty in the table above, each shard's own in merged_from."""
    differs, env = merge.get("differs") or [], merge.get("environment_differs") or []
    if differs:
        rep.p(f"The merged shards' meta.json differ in {', '.join(f'`{k}`' for k in differs)}: "
              "those are empty above; each shard's own is in `merged_from`.")
    if env:
        rep.warn("the shards ran with environment variables set differently: "
                 + ", ".join(f"`{k}`" for k in env) + " (each shard's `environment` is in "
                 "`merged_from`); one that steers Triton's, CUDA's or PyTorch's code or "
                 "timing makes the shards' records not alike.")


# ---------------------------------------------------------------------------------------------
# bandwidth-bound prediction

def prediction_section(rep: Report, df: pd.DataFrame, meta: dict, interp: bool) -> None:
    copy = one_copy_ceiling(df, meta)
    meta_copy = float(meta["copy_ceiling_gbps"]) if finite(meta.get("copy_ceiling_gbps")) else None
    mixed = copy is None and meta_copy is not None
    peaks = _row_peaks(df, meta)
    seed = meta.get("config_name") == SEED_CONFIG
    if not (seed or copy or mixed or finite(meta.get("peak_tbps")) or peaks.notna().any()):
        return
    rep.h(2, "Measured time against the bandwidth bound", "prediction")
    if mixed:
        rep.p(f"{no_ceiling(meta)}: each record's % of copy is against the ceiling measured "
              "with it, and no single ceiling is drawn or predicted from here.")
    t = summary.times(df)          # a median that is not positive and finite is no time
    has_time = (df["status"] == "ok") & np.isfinite(t) & (t > 0)
    timed = df[has_time & np.isfinite(df["bytes_moved"])]
    used = sorted({float(f"{v:.4g}") for v in peaks[timed.index].dropna()})
    if not (copy or peaks.notna().any()):
        rep.p(("The device" if mixed else f"{no_ceiling(meta)} and the device")
              + " has no datasheet peak: no prediction can be made.")
        return
    if timed.empty or not (copy or used):
        rep.p(_no_floor(int(has_time.sum()), len(timed)))
        return
    peak_text = ("" if not used else f"the datasheet peak {used[0]:g} TB/s" if len(used) == 1
                 else "each record's own GPU's datasheet peak ("
                 + ", ".join(f"{p:g}" for p in used) + " TB/s)")
    rep.p("The floor a pass cannot beat by much: bytes_moved (every input read once, every "
          "output written once; workspace traffic excluded) divided by the bandwidth — "
          + (f"the measured device-to-device copy ceiling {sig(copy, 4)} GB/s" if copy else "")
          + (f" (the one the records were measured against, not meta.json's "
             f"{sig(meta_copy, 4)} GB/s: {ceiling_sources(meta)})"
             if differ(meta_copy, copy) else "")
          + (" and " if copy and peak_text else "") + peak_text + ". "
          "measured / floor is how many times slower than the floor (the copy-ceiling floor "
          "when known) the record ran.")
    if interp:
        rep.warn("measured times are CPU wall-clock under the Triton interpreter: the ratio to "
                 "a GPU bandwidth floor is meaningless here.")
    rows = []
    show_w = show_weight(timed)        # dtype/weight: two rows must not read as one
    timed = timed.sort_values(list(SHAPE) + ["time_ms"])
    for k, r in timed.iterrows():
        nb, peak = float(r["bytes_moved"]), peaks[k]
        fc = model.bandwidth_bound_ms(nb, copy / 1000) if copy else None
        fp = model.bandwidth_bound_ms(nb, peak) if finite(peak) else None
        rows.append({"implementation": impl_label(r["implementation"], r["groups"], r["groups_effective"]),
                     "norm": r["norm"], "rows": fmt_int(r["rows"]), "d": fmt_int(r["d"]),
                     "dtype": f"{r['dtype']}/{r['weight_dtype']}" if show_w else r["dtype"],
                     "bytes moved": fmt_bytes(nb),
                     "measured µs": ms_to_us(r["time_ms"]),
                     "floor @ copy ceiling µs": ms_to_us(fc),
                     "floor @ datasheet peak µs": ms_to_us(fp),
                     "measured / floor": (f"{float(r['time_ms']) / (fc or fp):.2f}×"
                                          if (fc or fp) else ""),
                     "correct": "" if r["correct"] is None else str(r["correct"])})
    rep.table(pd.DataFrame(rows), cls="prediction")


def _no_floor(n_time: int, n_timed: int) -> str:
    """Why no floor is drawn: what the records lack (a time, bytes_moved, a bandwidth)."""
    if not n_time:
        return "No ok record has a positive finite measured time: no floor is compared."
    if not n_timed:
        return (f"No record has both a measured time and bytes_moved ({n_time} ok "
                f"record{'s have' if n_time != 1 else ' has'} a time, none of them "
                "bytes_moved): no floor can be drawn.")
    return ("No record with a measured time and bytes_moved has a copy ceiling or a datasheet "
            "peak to divide by: no floor can be drawn.")


def _row_peaks(df: pd.DataFrame, meta: dict) -> pd.Series:
    """Each record's datasheet peak (TB/s): the one its % of peak was measured against
    (gbps / pct_peak); else the run's — none for a run on GPUs of several models ("mixed:"),
    whose records were each measured against their own GPU's, so that no floor is another
    GPU's."""
    name = str(meta.get("device_name") or "")
    run = None if name.startswith(model.MIXED) else model.peak_tbps(
        name, float(meta["peak_tbps"]) if finite(meta.get("peak_tbps")) else None)
    own = pd.Series(measured_against(df, "pct_peak") / 1000, index=df.index)
    return own.where(own.notna(), run if run else np.nan)


# ---------------------------------------------------------------------------------------------
# host contention (harness/hostload.py)

def contention_section(rep: Report, df: pd.DataFrame) -> None:
    """Only for runs that measured cases side by side: which records host contention may
    have inflated (host-bound calls measured while other cases ran on their host)."""
    if "concurrent_cases" not in df.columns or not (df["concurrent_cases"] > 1).any():
        return
    rep.h(2, "Measured next to other cases", "contention")
    flagged = df[hostload.flag_contended(df).to_numpy(dtype=bool)]
    together = int((df["concurrent_cases"] > 1).sum())
    rep.p(f"{together} of {len(df)} records were measured while other cases ran on the same "
          f"host (concurrent_cases > 1); {len(flagged)} of them are host-bound — more than half "
          "of the call is host overhead, or, without a GPU time, the call is shorter than "
          f"{hostload.HOST_BOUND_MS * 1000:.0f} µs — so their time may be inflated by the "
          f"neighbours (marked {summary.CONTENDED_MARK} in the answer). The count is the "
          "host's, whoever measured: in a `--gpus`/`--scheduler` run, `--exclusive-below-us X` "
          "measures such cases with none of the run's own beside them; another process's "
          "cases (another run on the host) no flag holds off: time those with nothing else "
          "measuring on the host.")
    if flagged.empty:
        return
    rows = [{"implementation": impl_label(r["implementation"], r["groups"], r["groups_effective"]),
             "norm": r["norm"], "rows": fmt_int(r["rows"]), "d": fmt_int(r["d"]),
             "dtype": f"{r['dtype']}/{r['weight_dtype']}", "median µs": ms_to_us(r["time_ms"]),
             "GPU µs": ms_to_us(r["gpu_time_ms"]), "concurrent": fmt_int(r["concurrent_cases"]),
             "host": r["hostname"] or "", "GPU": fmt_int(r["gpu_index"])}
            for _, r in flagged.iterrows()]
    rep.table(pd.DataFrame(rows), cls="contention")


# ---------------------------------------------------------------------------------------------
# all records (HTML only, collapsed)

def records_section(rep: Report, df: pd.DataFrame) -> None:
    """Every column declared with table=True in harness/schema.py that holds a value in this
    run (a derived one computed from each record), headed by its label and unit; times (unit
    ms) in µs like the rest of the report, bytes in KiB/MiB, other numbers in the declared
    format."""
    if df.empty:
        return
    rep.h(2, "All records", "records")
    t = pd.DataFrame(index=df.index)
    for col in schema.table_columns():
        if col.derive is not None:
            values = pd.Series([col.derive(r) for _, r in df.iterrows()], index=df.index,
                               dtype=object)
        elif col.name in df.columns:
            values = df[col.name]
        else:
            continue
        if not col.key and values.map(na).all():
            continue
        t[_heading(col)] = values.map(lambda v, c=col: _cell(c, v))
    over = schema.column("err_over_tolerance")
    rep.p(f"{count(len(df), 'record')}; the markdown report leaves this table out (see "
          "records.csv). Columns as declared in harness/schema.py; a column no record fills is "
          f"left out. {over.label}: the largest of each output's error over its own tolerance "
          "(dx's by the activations' dtype, dγ's and dβ's by the weight's), and that output — "
          "at most 1 where every output is within; each error (err_dx, err_dw, err_db) and "
          "tolerance (tolerance, tolerance_dw) is in records.csv.")
    rep.table(t.reset_index(drop=True), cls="records", html_only=True,
              summary=f"Show all {len(df)} records" if len(df) > 1 else "Show the record")


def _heading(col: schema.Column) -> str:
    if col.unit == "ms":
        return f"{col.label or col.name} (µs)"
    return col.label or col.name if col.unit == "B" else col.heading


def _cell(col: schema.Column, v) -> str:
    if na(v):
        return ""
    if col.unit == "ms":
        return ms_to_us(v)
    if col.unit == "B":
        return fmt_bytes(v)
    if col.dtype == "Int64":
        return fmt_int(v)
    return schema.column_format(col.name, v)
