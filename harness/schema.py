"""The record format: one row per (case, implementation), long format.

This module only names the columns and their types; `harness/store.py` is the only code that
reads or writes them to disk.
"""
from __future__ import annotations

STATUSES = ("ok", "error", "skipped", "timeout")

# Columns that identify a measurement: two runs are compared on these.
KEY = ("norm", "implementation", "rows", "d", "dtype", "weight_dtype", "groups")

# name -> pandas dtype.  Nullable dtypes so that an errored row can leave numbers empty.
COLUMNS: dict[str, str] = {
    "case_id": "string",            # "|".join of KEY values: unique within a run
    "norm": "string",               # layernorm | rmsnorm
    "implementation": "string",
    "kind": "string",               # strategy | baseline
    "rows": "Int64",
    "batch": "Int64",               # given when the config used batch/seq, else empty
    "seq": "Int64",
    "d": "Int64",
    "dtype": "string",              # bf16 | fp16 | fp32
    "weight_dtype": "string",
    "groups": "string",             # as requested: an integer, "auto", or "-" (not used)
    "groups_effective": "Int64",    # GROUPS actually used (empty when not used)
    "status": "string",             # ok | error | skipped | timeout
    "error": "string",              # one line; empty when ok
    "time_ms": "Float64",           # median
    "time_p20_ms": "Float64",
    "time_p80_ms": "Float64",
    "time_samples_ms": "string",    # JSON list of every timed sample, in order
    "timer": "string",              # cuda_event (GPU) | cpu_wall (Triton interpreter)
    "bytes_moved": "Int64",         # minimal model: harness.model.bytes_moved
    "workspace_bytes": "Int64",     # fp32 workspace (partials, locks, counters)
    "gbps": "Float64",              # bytes_moved / time
    "pct_peak": "Float64",          # of the device's datasheet peak
    "pct_copy": "Float64",          # of the device-to-device copy ceiling of this run
    "correct": "boolean",
    "max_rel_err": "Float64",       # max over dx, dw, db of max|out-ref| / max|ref|
    "err_dx": "Float64",
    "err_dw": "Float64",
    "err_db": "Float64",
    "tolerance": "Float64",
    "deterministic": "boolean",     # all repeats bitwise identical
    "distinct_results": "Int64",    # distinct (dx, dw, db) bit patterns among the repeats
    "repeats": "Int64",
    "writers_per_slot": "Int64",    # contention model: writers into one dγ slot
    "deterministic_by_design": "boolean",
    "device": "string",
    "seed": "Int64",
    "started_at": "string",         # ISO-8601 UTC
    "duration_s": "Float64",        # wall time spent on this record
}


def case_id(row: dict) -> str:
    """The unique key string of a record or case (KEY values joined by '|')."""
    return "|".join(str(row[k]) for k in KEY)
