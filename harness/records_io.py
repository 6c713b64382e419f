"""Records on disk, part of the store (harness/store.py re-exports every name here; the store
is still the only code that reads or writes run directories, and nothing else imports this
module): a record checked and coerced into its schema row, its CSV line, the samples column's
two spellings, and reading records.csv / records.parquet back into one frame.

Columns and dtypes come from harness.schema.COLUMNS.  An empty string is stored as missing
(CSV cannot tell them apart), so CSV and parquet load the same frame.  Every timed sample of a
record is JSON text in the CSV and in memory (a "string" column) and list<double> in the
parquet file, so that pandas/pyarrow readers get numbers.
"""
from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from normbench.harness.rundir import LOCK_INFO, RECORDS_CSV, RECORDS_PARQUET, StoreError
from normbench.harness import schema
from normbench.harness.schema import COLUMNS, STATUSES, case_id as _case_id

# QUOTE_NONNUMERIC quotes every text field, so a bare "\r" inside an error message cannot be
# read back as a line break; numbers stay unquoted.
_CSV_OPTIONS = dict(index=False, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n")


def load_records(run_dir: str | os.PathLike, source: str = "auto",
                 torn_tail: bool | None = None) -> pd.DataFrame:
    """The records of a run, with the dtypes of harness.schema.COLUMNS, in that order.

    source: "csv", "parquet", or "auto" (the CSV, which is always current; the parquet file
    only when there is no CSV).  Columns the schema does not know (a newer writer) are kept
    after the known ones; known columns missing from the file are filled with NA.  A CSV
    that is cut short (a record of fewer fields than its header, no final newline) is
    refused, never read with the fields it lost as NA (_check_whole), and so is a record
    whose status or samples the store never writes (_bad_record) — except, with torn_tail,
    a last record cut short and nothing else wrong: the record a run was appending (still
    running, or killed mid-append), which is no record yet; the records before it are read.
    torn_tail None: where the run's lock note is there (a run holds the directory, or died
    holding it; a finished run leaves none), as the store's appends need (whole_length).
    """
    run_dir = Path(run_dir)
    if source not in ("auto", "csv", "parquet"):
        raise ValueError(f"source must be 'auto', 'csv' or 'parquet', not {source!r}")
    path = records_path(run_dir, source)
    source = "csv" if path.name == RECORDS_CSV else "parquet"
    if not path.exists():
        raise StoreError(f"{run_dir} holds no records ({path.name} not found)")
    if torn_tail is None:
        torn_tail = (run_dir / LOCK_INFO).exists()
    src: Any = path
    if source == "csv":
        try:
            _check_whole(path)
        except StoreError:
            src = _whole_records(path, torn_tail)
    # a value out of its dtype's range (rows = 1e30 read as Int64) is refused in one line, but
    # numpy warned of its cast first, once per read of the column (8 to 16 lines before it)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            try:
                frame = (pd.read_csv(src, dtype=dict(COLUMNS), **_READ_CSV) if source == "csv"
                         else _read_parquet(path))
            except Exception:   # a quoted field left open at the end ("EOF inside string")
                data = path.read_bytes() if source == "csv" and src is path and torn_tail \
                    else None
                cut = None if data is None else whole_length(path, data)
                if cut is None:
                    raise
                frame = pd.read_csv(io.BytesIO(data[:cut]), dtype=dict(COLUMNS), **_READ_CSV)
        except Exception as e:  # parser errors, bad values, a file that is not parquet ...
            where = _bad_cell(path) if source == "csv" else None
            raise StoreError(f"cannot read {path}: {where or f'{type(e).__name__}: {e}'}") from e
    missing = [c for c in ("case_id", "status", *schema.KEY) if c not in frame.columns]
    if missing:
        raise StoreError(f"cannot read {path}: no {', '.join(map(repr, missing))} column "
                         "(every record has its case's key and status)")
    try:
        frame = _conform(frame)
    except Exception as e:
        raise StoreError(f"cannot read {path}: {type(e).__name__}: {e}") from e
    where = _bad_record(frame)
    if where:
        raise StoreError(f"cannot read {path}: {where}")
    return frame


def records_path(run_dir: str | os.PathLike, source: str = "auto") -> Path:
    """The file load_records reads: records.csv, or records.parquet where source says so or
    ("auto") where there is no CSV."""
    run_dir = Path(run_dir)
    csv_path, pq_path = run_dir / RECORDS_CSV, run_dir / RECORDS_PARQUET
    if source == "auto":
        source = "csv" if csv_path.exists() or not pq_path.exists() else "parquet"
    return csv_path if source == "csv" else pq_path


# "NA", "nan", "None" are text; only an empty field is missing
_READ_CSV = dict(keep_default_na=False, na_values=[""], encoding="utf-8")


def _whole_records(path: Path, torn_tail: bool) -> io.BytesIO:
    """records.csv up to its last whole record, where torn_tail allows it and all that is
    wrong is the end (whole_length); else the error _check_whole gives (re-raised)."""
    data = path.read_bytes()
    cut = whole_length(path, data) if torn_tail else None
    if cut is None:
        _check_whole(path)          # raises what it raised: the file is damaged, not torn
        raise StoreError(f"cannot read {path}: the file is cut short" + _recover(path, True))
    return io.BytesIO(data[:cut])


def whole_length(path: Path, data: bytes | None = None) -> int | None:
    """How many bytes of records.csv (`data`, else read) end with its last whole record, where
    all that is wrong with it is a last record cut short: fewer fields than the header, a
    quoted field left open, no final newline — an append its writer (RunStore.append) had not
    finished, still running or killed.  None where the file is whole, or wrong elsewhere too
    (a record in the middle damaged: _check_whole names it)."""
    if data is None:
        data = path.read_bytes()
    pieces = data.split(b"\n")        # the last: what follows the final newline ("" if none)
    state = {"pos": 0, "ended": True}

    def lines():                     # each physical line, its end counted in pos
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            if last and not piece:
                return
            state["pos"] += len(piece) + (not last)
            state["ended"] = not last
            yield piece.decode("utf-8", "replace") + ("" if last else "\n")
    good = None
    with _long_fields():
        rows = csv.reader(lines(), strict=True)
        try:
            header = next(rows, None)
            if header is None or not state["ended"]:
                return None
            good = state["pos"]
            for row in rows:
                if row and (len(row) != len(header) or not state["ended"]):
                    break
                good = state["pos"]
        except csv.Error:
            pass
    if good is None or good == len(data):
        return None
    # what follows the last whole record must be one record cut short, not several (a record
    # damaged in the middle): read leniently, a quoted field left open runs to the end as one
    try:
        with _long_fields():
            rest = io.StringIO(data[good:].decode("utf-8", "replace"), newline="")
            later = sum(1 for r in csv.reader(rest) if r)
    except csv.Error:
        return None
    return good if later <= 1 else None


def _check_whole(path: Path) -> None:
    """StoreError unless every record of records.csv has as many fields as its header and the
    file ends with a newline, as the store writes it (a whole file at a time, each line
    ended): pandas reads a record cut short with its lost fields as NA, so a copy or download
    cut off mid-record read as a record without its verdict.  Blank lines are skipped, as
    pandas skips them; a file the csv module cannot parse is left to pandas to refuse."""
    try:
        with _long_fields(), open(path, newline="", encoding="utf-8", errors="replace") as f:
            rows = csv.reader(f)
            header = next(rows, None)
            if header is None:
                return                          # an empty file: pandas says so
            n, i = len(header), 0
            for row in rows:
                if not row:
                    continue
                i += 1
                if len(row) != n:
                    last = not any(rows)        # the last record: where a cut file ends
                    has = (f"{len(row)} of {n} fields" if len(row) < n else
                           f"{len(row)} fields, its header {n}")
                    raise StoreError(f"cannot read {path}: record {i} has {has} — the file is "
                                     f"{'cut short' if last else 'damaged'}"
                                     + _recover(path, last))
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            ended = f.read(1) == b"\n"
    except (OSError, csv.Error):
        return                                  # pandas reads it or says why not
    if not ended:
        what = f"record {i}" if i else "its header"
        raise StoreError(f"cannot read {path}: {what} does not end with a newline — the file is cut "
                         "short" + _recover(path, True))


_FIELD_LIMIT = 2**31 - 1


@contextlib.contextmanager
def _long_fields():
    """The csv module reading fields of any length (a record's samples may be a long field),
    its limit as it was after."""
    limit = csv.field_size_limit()
    try:
        csv.field_size_limit(_FIELD_LIMIT)
        yield
    finally:
        csv.field_size_limit(limit)


def _recover(path: Path, cut: bool) -> str:
    """Where a cut records.csv can be recovered from: its records.parquet, if there is one."""
    if cut and (path.parent / RECORDS_PARQUET).exists():
        return (f"; {RECORDS_PARQUET} beside it may hold the record whole (move "
                f"{RECORDS_CSV} away and it is read instead)")
    return ""


def _bad_cell(path: Path) -> str | None:
    """Where records.csv holds a value its column's dtype cannot: "column 'time_ms', record 3:
    'fast' is not a Float64", or None (the fault is elsewhere).  Only on the error
    path: one column read at a time, the record found by halving."""
    try:
        header = pd.read_csv(path, nrows=0, **_READ_CSV).columns
        for col in (c for c in header if c in COLUMNS):
            def reads(n=None, col=col):
                try:
                    pd.read_csv(path, usecols=[col], dtype={col: COLUMNS[col]}, nrows=n,
                                **_READ_CSV)
                    return True
                except Exception:
                    return False
            if reads():
                continue
            text = pd.read_csv(path, usecols=[col], dtype=str, **_READ_CSV)[col]
            lo, hi = 1, len(text)               # the first n records that do not read
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (mid + 1, hi) if reads(mid) else (lo, mid)
            return f"column {col!r}, record {lo}: {_short(text.iloc[lo - 1])} is not a {COLUMNS[col]}"
    except Exception:
        return None
    return None


def _bad_record(frame: pd.DataFrame) -> str | None:
    """The first record (edited by hand: the store writes none such) whose status is not one of
    STATUSES or whose samples are not the JSON list of finite numbers the store writes, as
    "column 'status', record 2: 'OK' is not one of ok, ...", or None: such a record made a
    resume or a merge a traceback (a status that append refuses, samples that the parquet
    rewrite cannot parse)."""
    status = frame["status"]
    odd = [i for i, ok in enumerate(status.isin(STATUSES).fillna(False)) if not ok]
    if odd:
        v = status.iloc[odd[0]]
        what = "an empty field" if pd.isna(v) else _short(v)
        return f"column 'status', record {odd[0] + 1}: {what} is not one of {', '.join(STATUSES)}"
    for i, v in enumerate(frame[SAMPLES]):
        if not pd.isna(v) and _samples_list(v) is None:
            return (f"column {SAMPLES!r}, record {i + 1}: {_short(v)} is not a JSON list of "
                    "finite numbers")
    return None


def _empty_frame() -> pd.DataFrame:
    return pd.DataFrame({c: pd.array([], dtype=t) for c, t in COLUMNS.items()})


def _conform(frame: pd.DataFrame) -> pd.DataFrame:
    """Known columns first, in schema order and dtype (missing ones NA); unknown ones after."""
    n = len(frame)
    out = {}
    for col, dtype in COLUMNS.items():
        if col in frame.columns:
            out[col] = frame[col].astype(dtype).array
        else:
            out[col] = pd.array([pd.NA] * n, dtype=dtype)
    for col in frame.columns:
        if col not in COLUMNS:
            out[col] = frame[col].array
    return pd.DataFrame(out)


def _row_values(record: dict) -> dict:
    """One record as {column: value or pd.NA} in schema order (ValueError if it does not fit)."""
    if not isinstance(record, dict):
        raise TypeError(f"a record is a dict, not {type(record).__name__}")
    unknown = [k for k in record if k not in COLUMNS]
    if unknown:
        raise ValueError(f"unknown record keys: {', '.join(map(str, unknown))}")
    record = {**record, SAMPLES: _samples_text(record.get(SAMPLES))}
    values = {col: _coerce(col, dtype, record.get(col)) for col, dtype in COLUMNS.items()}
    if values["case_id"] is pd.NA:
        try:
            values["case_id"] = _case_id(record)
        except KeyError as e:
            raise ValueError(f"record has no case_id and no {e.args[0]!r} to compute it from") from None
    if not isinstance(values["status"], str) or values["status"] not in STATUSES:
        raise ValueError(f"record status must be one of {', '.join(STATUSES)}, not {record.get('status')!r}")
    return values


def check_record(record: dict) -> None:
    """ValueError (TypeError) where RunStore.append would refuse `record` itself (a case_id
    already recorded is the store's to refuse): merge checks every shard's records before it
    makes its output directory."""
    _row_values(record)


def _csv_line(values: list) -> bytes:
    """One CSV line as pandas writes it with _CSV_OPTIONS: text quoted, numbers bare, NA empty."""
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").writerow(values)
    return buf.getvalue().encode("utf-8")


_INT64 = (-(2**63), 2**63 - 1)


def fit(col: str, value: Any) -> Any:
    """value as column col of a record holds it (ValueError if it cannot): for values an
    implementation supplies (its model functions, its notes), checked where they are made."""
    return _coerce(col, COLUMNS[col], value)


def _coerce(col: str, dtype: str, value: Any) -> Any:
    # numpy scalars, 0-d arrays and 0-d tensors become Python scalars.
    if isinstance(value, np.generic) or (getattr(value, "shape", None) == () and hasattr(value, "item")):
        value = value.item()
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return pd.NA
    is_bool = isinstance(value, bool)
    if dtype == "string":
        if isinstance(value, str):
            if value == "":
                return pd.NA
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # lone surrogates: keep them visible, not fatal
                value = value.encode("utf-8", "backslashreplace").decode("utf-8")
            return value
        if isinstance(value, (int, float)):
            return str(value)
    elif dtype == "Int64":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, int) and not is_bool:
            if not _INT64[0] <= value <= _INT64[1]:
                raise ValueError(f"column {col!r}: {value} does not fit in int64")
            return value
    elif dtype == "Float64":
        if isinstance(value, (int, float)) and not is_bool:
            return float(value)
    elif dtype == "boolean":
        if is_bool:
            return value
    else:  # pragma: no cover - a dtype the schema gained without this function
        return value
    raise ValueError(f"column {col!r} ({dtype}) cannot hold {type(value).__name__} {_short(value)}")


# Every timed sample of a record: JSON text in the CSV and in memory (a "string" column),
# list<double> in the parquet file, so that pandas/pyarrow readers get numbers.
SAMPLES = "time_samples_ms"


def _samples_text(value: Any) -> Any:
    """A record's samples as JSON text of floats: a list of numbers is dumped; text must hold
    one (ValueError otherwise)."""
    if isinstance(value, (list, tuple, np.ndarray)):
        value = [float(v) for v in value]
        return json.dumps(value) if all(math.isfinite(v) for v in value) else _bad_samples(value)
    if isinstance(value, str) and value:
        parsed = _samples_list(value)
        # one spelling (floats), as parquet reads it back
        return _bad_samples(value) if parsed is None else json.dumps(parsed)
    return value


def _samples_list(text: str) -> list[float] | None:
    """The samples JSON text holds, as floats, or None unless it is a list of finite numbers."""
    try:
        parsed = json.loads(text)
        if isinstance(parsed, list) and all(type(v) in (int, float) for v in parsed):  # no bool
            parsed = [float(v) for v in parsed]
            return parsed if all(map(math.isfinite, parsed)) else None
    except (ValueError, OverflowError, RecursionError):
        pass
    return None


def _bad_samples(value: Any):
    raise ValueError(f"column {SAMPLES!r} holds a JSON list of finite numbers, not {_short(value)}")


def _samples_as_lists(table):
    import pyarrow as pa

    i = table.schema.get_field_index(SAMPLES)
    if i < 0:
        return table
    kind = pa.list_(pa.float64())
    values = [None if t is None else json.loads(t) for t in table.column(i).to_pylist()]
    table = table.set_column(i, pa.field(SAMPLES, kind), pa.array(values, type=kind))
    meta = json.loads((table.schema.metadata or {}).get(b"pandas", b"{}"))
    for col in meta.get("columns", []):       # pandas would cast the lists back to "string"
        if col.get("name") == SAMPLES:
            col.update(pandas_type="list[float64]", numpy_type="object", metadata=None)
    return table.replace_schema_metadata({**(table.schema.metadata or {}),
                                          b"pandas": json.dumps(meta).encode()})


def _read_parquet(path: Path) -> pd.DataFrame:
    """records.parquet as a frame, samples back to JSON text (files of older versions hold
    them as text already)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    i = table.schema.get_field_index(SAMPLES)
    if i >= 0 and pa.types.is_list(table.schema.field(i).type):
        text = [None if v is None else json.dumps([float(x) for x in v])
                for v in table.column(i).to_pylist()]
        table = table.set_column(i, pa.field(SAMPLES, pa.large_string()),
                                 pa.array(text, type=pa.large_string()))
    return table.to_pandas()



def _short(value: Any, n: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= n else text[: n - 3] + "..."

