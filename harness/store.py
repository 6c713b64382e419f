"""Run directories: the only code that reads or writes them.

A run directory holds

    records.csv       one row per (case, implementation); the source of truth, current after
                      every append
    records.parquet   the same rows; rewritten by append at most every `parquet_interval_s`
                      (5 s) and no sooner than PARQUET_SPACING (20) times its last rewrite took
                      after it, so rewriting it costs a growing run at most about 1/21 (5 %)
                      of its time; always by flush() and close()
    meta.json         what the run was (config, device, versions ...); its first keys,
                      "format": "normbench-run" and "format_version": 2, mark the directory as
                      a run directory (a meta.json without them is format 1 and still read)
    .normbench.lock.json   who holds the lock (pid, host, since), for the error message; removed
                      by close()

The lock is a flock on the run directory itself (not on a file a user could delete): the
kernel releases it when its holder dies, and a finished run leaves nothing behind.  Where the
filesystem takes no flock of a directory (NFS, Lustre without -o flock) it is a POSIX lock on
LOCK_FILE in the directory instead, removed as it is released.  Before every
write the store checks that the directory it locked is still the one at its path.  normbench
writes only into a directory that is new, empty, or already a run directory; any other
non-empty directory is refused (`check_out_dir`, `check_run_dir`).

Every file is written whole to a temporary file in the same directory, fsynced and moved into
place with os.replace, so a `kill -9` at any moment leaves each file either the old version or
the new one, never a torn one — except records.csv's appends: once it holds records, each new
one is appended and fsynced (O(record); a whole rewrite per record was quadratic in the run),
so a `kill -9` or a power loss mid-append can leave its last record cut short.  That record
is no record (its append never returned): where the run's lock note is there (a run holds the
directory or died holding it) readers read the records before it, and a resume drops it and
measures its case again (records_io.whole_length).  A records.csv cut short otherwise (a copy
stopped mid-record) is refused as it is read (records_io._check_whole), and opening a run never
rewrites a records.parquet that holds more than the records.csv it read
(_check_parquet_behind).  append_many (merge) writes a batch of records with one write, into
an empty store whole (all or nothing).

Records are read and encoded by harness/records_io.py, part of the store (load_records and the
row/CSV/parquet helpers, re-exported here); harness/rundir.py holds the directory marker and
the atomic write.  Columns and dtypes come from harness.schema.COLUMNS.
"""
from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable

import pandas as pd

from normbench.harness.interrupt import held
from normbench.harness.records_io import (  # noqa: F401  (re-exported: the store's public names)
    SAMPLES, _CSV_OPTIONS, _INT64, _bad_samples, _coerce, _conform, _csv_line, _empty_frame,
    _read_parquet, _row_values, _samples_as_lists, _samples_text, _short, check_record,
    load_records, records_path)
from normbench.harness.rundir import (  # noqa: F401  (re-exported: the store's public names)
    FORMAT, FORMAT_VERSION, LOCK_FILE, LOCK_INFO, META_JSON, RECORDS_CSV, RECORDS_PARQUET,
    StoreError, StoreWriteError, _DATA_FILES, _atomic_write, _read_json, _reason, cannot_read,
    check_out_dir, check_meta_types, check_run_dir, check_writable, is_run_dir, meta_format_version,
    run_dir_version, write_all, write_file_atomic)
from normbench.harness.schema import COLUMNS
from normbench.harness.text import count

# append waits at least this many times the last records.parquet rewrite's duration before the
# next one: a rewrite is O(rows), and at 10,000 records (~1 s each) every 5 s was a quarter of
# a 1.2 s case's time; so spaced, rewriting takes at most about 1/(PARQUET_SPACING + 1)
PARQUET_SPACING = 20


# --------------------------------------------------------------------------- module level


def load_meta(run_dir: str | os.PathLike) -> dict:
    """The run's meta.json as a dict; {} when the run has none."""
    path = Path(run_dir) / META_JSON
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except OSError as e:
        raise StoreError(f"cannot read {path}: {_reason(e)}") from e
    except UnicodeDecodeError as e:
        raise StoreError(f"cannot read {path}: not UTF-8 text (bad byte at offset {e.start})") from e
    try:
        meta = json.loads(text)
    except ValueError as e:
        raise StoreError(f"cannot read {path}: not valid JSON ({e})") from e
    except RecursionError:
        raise StoreError(f"cannot read {path}: nested too deeply") from None
    if not isinstance(meta, dict):
        raise StoreError(f"cannot read {path}: expected a JSON object, found {type(meta).__name__}")
    if meta_format_version(meta) > FORMAT_VERSION:
        raise StoreError(f"cannot read {path}: format_version {meta_format_version(meta)} is "
                         f"newer than this normbench reads ({FORMAT_VERSION}); upgrade it")
    check_meta_types(meta, str(path))   # a hand-edited field of another type: one line
    return meta


def records_a_run(meta: dict) -> bool:
    """meta.json says which config and device a run was measured with: a run's, from its
    start on (a store opened and nothing more has only the marker)."""
    return bool(meta.get("device_name") and meta.get("config_hash"))


def unrecorded_run(run_dir: str | os.PathLike) -> str | None:
    """What a directory holding no record holds all the same, which a new run or a merge
    must not write over: the run its meta.json records ('shard 8/10, finished with no
    record' — a shard that got no case; a run stopped before its first record, which
    --resume takes), or None (no meta.json, or only the marker).  StoreError: meta.json
    cannot be read."""
    meta = load_meta(run_dir)
    if not records_a_run(meta):
        return None
    shard = meta.get("shard")
    what = (f"shard {shard['spec']}" if isinstance(shard, dict) and shard.get("spec")
            else "a merge of shards" if isinstance(meta.get("merge"), dict) else "a run")
    return f"{what}, {'finished' if meta.get('completed') is True else 'stopped'} with no record"


def stored_records(run_dir: str | os.PathLike, torn_tail: bool | None = None) -> pd.DataFrame:
    """The records of `run_dir` as a store opening it reads them: empty where it holds none
    (no records.csv, no records.parquet); StoreError where the store refuses them (a
    records.csv cut short or damaged, a records.parquet holding what it lacks) — for what
    is told before the store is opened (run's plan, --dry-run's too).  torn_tail: as
    load_records (a last record cut short by a run killed mid-append is no record)."""
    run_dir = Path(run_dir)
    if not ((run_dir / RECORDS_CSV).exists() or (run_dir / RECORDS_PARQUET).exists()):
        return _empty_frame()
    frame = load_records(run_dir, torn_tail=torn_tail)
    _check_parquet_behind(run_dir, frame)
    return frame


def _check_parquet_behind(run_dir: Path, frame: pd.DataFrame) -> None:
    """StoreError unless records.parquet is at most as full as `frame`, read from
    records.csv, which RunStore._open rewrites it from.  The store keeps the parquet file at
    most as current as the CSV (after a crash it lags: fewer records, each the same), so a
    record there that the CSV lacks, or with a value its CSV row lacks, means the CSV lost
    it (cut short, damaged, edited by hand): refused, naming both files, rather than
    overwriting the only whole copy.  No parquet file beside the CSV, or one that cannot be
    read (it is rewritten from the CSV), is not checked."""
    csv_path, pq_path = run_dir / RECORDS_CSV, run_dir / RECORDS_PARQUET
    if not (csv_path.exists() and pq_path.exists()):
        return
    try:
        other = load_records(run_dir, source="parquet")
    except StoreError:
        return
    mine = frame.dropna(subset=["case_id"]).drop_duplicates("case_id").set_index("case_id")
    theirs = other.dropna(subset=["case_id"]).drop_duplicates("case_id").set_index("case_id")
    extra = theirs.index.difference(mine.index, sort=False)
    both = theirs.index.intersection(mine.index, sort=False)
    cols = [c for c in COLUMNS if c != "case_id"]
    lost = mine.loc[both, cols].isna() & theirs.loc[both, cols].notna()
    fuller = lost.index[lost.any(axis=1)]
    if len(extra):
        what = f"case {extra[0]} ({count(len(extra), 'case')} in all), which {csv_path} lacks"
    elif len(fuller):
        names = list(lost.columns[lost.loc[fuller[0]]])
        what = (f"{', '.join(names[:3])}{' …' if len(names) > 3 else ''} of case "
                f"{fuller[0]} ({count(len(fuller), 'such case')}), which {csv_path} lacks")
    else:
        return
    raise StoreError(f"{pq_path} holds {what}: the CSV was cut short or edited, and "
                     f"{RECORDS_PARQUET} is not rewritten from it — move {RECORDS_CSV} away "
                     f"to go on from {RECORDS_PARQUET}, or delete {RECORDS_PARQUET} to go on "
                     f"from {RECORDS_CSV} as it is")


# --------------------------------------------------------------------------- the store


class RunStore:
    """Writer of one run directory; holds its lock from construction until close().

    RunStore(run_dir)               a new run; refuses a directory that already holds records
    RunStore(run_dir, resume=True)  continue a run: its records are loaded, done_keys() says
                                    which cases to skip
    RunStore(run_dir, replaces=f)   a new run that writes over what a directory holds where
                                    f(its meta.json) is true (merge: a merge that stopped
                                    before it finished, a copy of its shards' records)

    append rewrites records.parquet once `parquet_interval_s` has passed since the last
    rewrite and PARQUET_SPACING times that rewrite's duration too (whichever is longer);
    flush() and close() write it whenever it lags records.csv.
    """

    def __init__(self, run_dir: str | os.PathLike, resume: bool = False, *, parquet_interval_s: float = 5.0,
                 occupied_hint: str = "use --resume to finish it or choose another --out",
                 replaces: Callable[[dict], bool] | None = None):
        self.run_dir = Path(run_dir)
        self._occupied_hint = occupied_hint     # what to do about a directory with records
        self._replaces = replaces               # which directory's records it may write over
        self.parquet_interval_s = float(parquet_interval_s)
        self._parquet_wait = self.parquet_interval_s   # after the last rewrite (_write_parquet)
        # Previous holder's pid/host/since when it died without close() (kill -9, power loss).
        self.stale_lock: dict | None = None
        self._mutex = threading.RLock()
        self._csv_file = None       # records.csv's (device, inode, size) as this store wrote it
        self._closed = True
        self._lock = None

        made = not os.path.lexists(self.run_dir)
        try:
            with held():        # a SIGINT/SIGTERM between mkdir and flock: once it is held
                self._make_dir()
                self._lock = _lock_dir(self.run_dir)
            self._identity = _identity(os.fstat(self._lock.fd))
            self._claim_lock()
            self._closed = False
            self._remove_temp_files()
            self._open(resume)
        except BaseException:
            if not self._closed:
                self._drop_lock_info()
            self._closed = True
            self._unmake(made)
            self._release_lock()
            raise

    def _unmake(self, made: bool) -> None:
        """Remove the directory this store made, empty, when opening it failed or was
        interrupted (a Ctrl-C or SIGTERM in the moment between mkdir and records.csv): it
        would be left holding nothing, which report and compare refuse as no run.  Only while
        this store holds its lock: a store that saw the path as new too but lost the race to
        lock it leaves it to the one that won (it removed it between the winner's flock and
        its first write, and the winner failed as well, its directory gone)."""
        if made and self._lock is not None:
            try:
                if self._lock.file is not None:     # the POSIX lock's file (no flock here)
                    os.unlink(self._lock.path)
                os.rmdir(self.run_dir)
            except OSError:
                pass

    # -- opening

    def _make_dir(self) -> None:
        check_out_dir(self.run_dir)
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create output directory {self.run_dir}: {_reason(e)}") from e
        check_writable(self.run_dir)

    def _claim_lock(self) -> None:
        """Write the lock's sidecar (who holds it, for another run's error message).  The
        lock itself is a flock on the directory (_lock_dir): nothing a user deletes by
        reflex, released by the kernel when the holder dies, nothing left by a finished run."""
        # A sidecar present now was left by a holder that never reached close(): the kernel
        # released its lock when it died, so the lock is ours; remember whose it was.
        self.stale_lock = _read_json(self.run_dir / LOCK_INFO)
        info = {"pid": os.getpid(), "host": socket.gethostname(), "since": _now_iso()}
        self._write(LOCK_INFO, lambda f: f.write(json.dumps(info).encode()))

    def _remove_temp_files(self) -> None:
        # Temporaries of a writer killed mid-write; we hold the lock, so nobody else writes here.
        for name in _DATA_FILES:
            for tmp in self.run_dir.glob(f".{name}.*.tmp"):
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def _open(self, resume: bool) -> None:
        # judged under the lock: a directory another process is writing is refused above
        replacing = (not resume and self._replaces is not None
                     and self._replaces(load_meta(self.run_dir)))
        if replacing:
            self._drop_records()
        # the lock note is this store's now: a record cut short at the end is the one a run
        # that died holding the directory was appending (stale_lock), and no record; a file
        # cut short otherwise (a copy stopped mid-record) is refused
        frame = stored_records(self.run_dir, torn_tail=self.stale_lock is not None)
        if len(frame) and not resume:
            raise StoreError(f"{self.run_dir} already holds {count(len(frame), 'record')}; "
                             f"{self._occupied_hint}")
        run = None if resume or replacing or len(frame) else unrecorded_run(self.run_dir)
        if run:
            raise StoreError(f"{self.run_dir} already holds {run}; {self._occupied_hint}")
        extra = [c for c in frame.columns if c not in COLUMNS]
        if extra:
            raise StoreError(
                f"{self.run_dir} was written with other columns ({', '.join(extra)}); cannot resume it"
            )
        if not resume:
            frame = _empty_frame()
        self._frame = frame
        self._pending: list[dict] = []  # appended rows not yet in self._frame
        self._ids: set[str] = set(frame["case_id"].dropna())
        self._done: set[str] = set(frame["case_id"].dropna())
        self._meta: dict = load_meta(self.run_dir) if resume else {}
        self.write_meta(self._meta)     # the marker from the start (a format-1 meta gains it)
        # Rewrite both files from what was loaded: the parquet file may lag the CSV after a crash.
        # records.csv's text, kept in memory (grown in place: a copy per record was O(run))
        self._csv = bytearray(frame.to_csv(**_CSV_OPTIONS).encode("utf-8"))
        self._write_csv(b"", append=False)
        self._parquet_dirty = True
        self._write_parquet()

    def _drop_records(self) -> None:
        """Remove the records this new store writes over (`replaces`): records.parquet first,
        so that a signal between the two leaves records.csv, and meta.json still saying what
        `replaces` took it for, to be written over again; _open then writes all three anew."""
        self._check_owner()
        for name in (RECORDS_PARQUET, RECORDS_CSV):
            try:
                (self.run_dir / name).unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                raise StoreWriteError(f"cannot remove {self.run_dir / name}: {_reason(e)}") from e

    # -- records

    def append(self, record: dict) -> None:
        """Add one record; it is on disk (records.csv, fsynced) when this returns.

        Unknown keys, a value that does not fit its column, a status outside
        harness.schema.STATUSES, or a case_id already present raise ValueError.  A missing
        case_id is computed from the KEY columns; other missing keys are left empty.
        """
        self.append_many([record])

    def append_many(self, records: Iterable[dict]) -> None:
        """Add several records as append() would one after another, with the same checks
        (and a case_id given twice among them raises ValueError too), but records.csv is
        written once for all of them: appending N records one by one rewrites the file N
        times, O(N²) bytes (a merge of 7,500 records took minutes).  Every record is checked
        before anything is written, so one that is refused leaves none of them recorded."""
        with self._mutex:
            self._check_open()
            rows, lines, new_ids = [], [], set()
            for record in records:      # in order: the first refused is the one named
                row = _row_values(record)
                rows.append(row)
                lines.append(_csv_line([None if v is pd.NA else v for v in row.values()]))
                cid = row["case_id"]
                if cid in self._ids:
                    raise ValueError(f"case_id {cid!r} is already recorded in {self.run_dir}")
                if cid in new_ids:
                    raise ValueError(f"case_id {cid!r} is given twice among the records to "
                                     f"append to {self.run_dir}")
                new_ids.add(cid)
            if not rows:
                return
            added = b"".join(lines)
            # records.csv replaced and the memory updated in one step: a signal between the two
            # (during the directory's fsync) left a record on disk that records.parquet, written
            # from memory, lacked — and that a rewrite from memory deleted
            with held():
                self._write_csv(added, append=bool(self._ids))
                self._csv += added
                self._pending.extend(rows)
                self._ids |= new_ids
                self._done |= new_ids
                self._parquet_dirty = True
            if time.monotonic() - self._parquet_time >= self._parquet_wait:
                self._write_parquet()

    def done_keys(self) -> set[str]:
        """case_id of every record with a final status (all of them: append demands one)."""
        with self._mutex:
            return set(self._done)

    def records(self) -> pd.DataFrame:
        """A copy of every record so far (loaded on resume plus appended)."""
        with self._mutex:
            return self._materialize().copy()

    def __len__(self) -> int:
        with self._mutex:
            return len(self._ids)

    def flush(self) -> None:
        """Write records.parquet now if it lags records.csv."""
        with self._mutex:
            self._check_open()
            self._write_parquet()

    # -- meta

    @property
    def meta(self) -> dict:
        with self._mutex:
            return json.loads(json.dumps(self._meta, default=str))

    def write_meta(self, meta: dict) -> None:
        """Replace meta.json (atomic), always with the run-directory marker as its first keys
        (format, format_version).  Values JSON cannot hold are written as str(); text that is
        not valid Unicode (a path of undecodable bytes) as JSON escapes, so it reads back."""
        if not isinstance(meta, dict):
            raise TypeError(f"meta must be a dict, not {type(meta).__name__}")
        meta = {"format": FORMAT, "format_version": FORMAT_VERSION,
                **{k: v for k, v in meta.items() if k not in ("format", "format_version")}}
        with self._mutex:
            self._check_open()
            text = json.dumps(meta, indent=2, default=str, ensure_ascii=False) + "\n"
            data = text.encode("utf-8", "backslashreplace")
            new = json.loads(data.decode("utf-8"))
            with held():        # as append: the next update_meta builds on what is on disk
                self._write(META_JSON, lambda f: f.write(data))
                self._meta = new

    def update_meta(self, **fields: Any) -> None:
        """Merge `fields` into meta.json (atomic)."""
        with self._mutex:
            self.write_meta({**self._meta, **fields})

    # -- closing

    def close(self) -> None:
        """Write the parquet file and release the lock.  Idempotent."""
        with self._mutex:
            if self._closed:
                return
            try:
                self._write_parquet()
                self._drop_lock_info()
            finally:
                self._closed = True
                self._release_lock()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"RunStore({str(self.run_dir)!r}, {len(self)} records, {state})"

    # -- internals

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"the store of {self.run_dir} is closed")

    def _drop_lock_info(self) -> None:
        try:
            (self.run_dir / LOCK_INFO).unlink()
        except OSError:
            pass

    def _release_lock(self) -> None:
        if self._lock is not None:
            try:
                self._lock.close()        # closing the descriptor releases the flock
            finally:
                self._lock = None

    def _check_owner(self) -> None:
        """The directory at run_dir is still the one this store locked (not removed and
        recreated, which would let a second run lock the new one)."""
        try:
            same = _identity(os.stat(self.run_dir)) == self._identity
        except OSError:
            same = False
        if not same:
            raise StoreError(f"{self.run_dir} was removed or replaced while this run held it; "
                             "nothing more is written there")

    def _materialize(self) -> pd.DataFrame:
        if self._pending:
            new = pd.DataFrame(
                {c: pd.array([r[c] for r in self._pending], dtype=t) for c, t in COLUMNS.items()}
            )
            self._frame = pd.concat([self._frame, new], ignore_index=True) if len(self._frame) else new
            self._pending = []
        return self._frame

    def _write_parquet(self) -> None:
        """Rewrite records.parquet if it lags records.csv; the next periodic rewrite (append)
        waits parquet_interval_s or PARQUET_SPACING times this one's duration, the longer."""
        if self._parquet_dirty:
            import pyarrow as pa
            import pyarrow.parquet as pq

            start = time.monotonic()
            table = _samples_as_lists(pa.Table.from_pandas(self._materialize(), preserve_index=False))
            self._write(RECORDS_PARQUET, lambda f: pq.write_table(table, f))
            self._parquet_dirty = False
            self._parquet_wait = max(self.parquet_interval_s,
                                     PARQUET_SPACING * (time.monotonic() - start))
        self._parquet_time = time.monotonic()

    def _write_csv(self, added: bytes, append: bool) -> None:
        """records.csv as what it held (self._csv) and `added`: appended and fsynced where
        `append` and the file is the one this store last wrote, unchanged — O(record): a whole
        rewrite per record cost 40 ms an append at 5,000 records, quadratic in the run — else
        written whole through a fsynced temporary (at open, and the first records: merge's one
        batch is all or nothing).  An append that fails (a full disk) cuts the file back to what it held; one
        cut short by kill -9 or a power loss leaves a last record cut short, which readers and a
        resume take for the unfinished record it is (records_io.whole_length)."""
        path = self.run_dir / RECORDS_CSV
        if append and self._csv_file is not None:
            self._check_owner()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            except OSError:
                fd = None               # gone or a link: written whole, as it was
            if fd is not None:
                try:
                    st = os.fstat(fd)
                    if (st.st_dev, st.st_ino, st.st_size) == self._csv_file:
                        try:
                            write_all(fd, added)
                            os.fsync(fd)
                        except OSError as e:
                            try:
                                os.ftruncate(fd, st.st_size)
                            except OSError:
                                pass
                            raise StoreWriteError(f"cannot write {path}: {_reason(e)}") from e
                        self._csv_file = (st.st_dev, st.st_ino, st.st_size + len(added))
                        return
                finally:
                    os.close(fd)
        self._csv_file = None
        self._write(RECORDS_CSV, lambda f: (f.write(self._csv), f.write(added)))
        try:
            st = os.stat(path, follow_symlinks=False)
            self._csv_file = (st.st_dev, st.st_ino, st.st_size)
        except OSError:
            pass

    def _write(self, name: str, write: Callable[[Any], Any]) -> None:
        path = self.run_dir / name
        self._check_owner()
        try:
            _atomic_write(path, write)
        except OSError as e:
            raise StoreWriteError(f"cannot write {path}: {_reason(e)}") from e


# --------------------------------------------------------------------------- helpers


# flock's errors where the filesystem does not take it (NFS emulates it as a POSIX lock, which
# an exclusive one needs a descriptor open for writing for: EBADF on a directory; Lustre
# mounted without -o flock: ENOSYS; some FUSE filesystems: EOPNOTSUPP, EINVAL)
NO_FLOCK = {errno.EBADF, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOLCK}


# the LOCK_FILEs this process holds, by (device, inode): a POSIX lock is the process's, so
# another descriptor of the file here would take it again, and its close release ours
_HELD_FILES: set = set()


class _Lock:
    """A run directory's lock: `fd`, a descriptor of the directory, holds its flock — or, on a
    filesystem that takes no flock of a directory (NFS), `file`'s POSIX lock (LOCK_FILE,
    removed as the lock is released)."""

    def __init__(self, fd: int, file: int | None = None, path: Path | None = None):
        self.fd, self.file, self.path = fd, file, path
        if file is not None:
            _HELD_FILES.add(_identity(os.fstat(file)))

    def close(self) -> None:
        try:
            if self.file is not None:
                mine = _identity(os.fstat(self.file))
                _HELD_FILES.discard(mine)
                try:                # before its lock goes (a later run makes its own), and
                    if _identity(os.stat(self.path)) == mine:   # only the file it locked
                        os.unlink(self.path)
                except OSError:
                    pass
                os.close(self.file)
        finally:
            os.close(self.fd)


def _lock_dir(run_dir: Path) -> _Lock:
    """The lock of `run_dir`, held; StoreError when another run holds it."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise StoreError(f"cannot open output directory {run_dir}: {_reason(e)}") from e
    try:
        taken = _flock(fd)
    except OSError as e:
        if e.errno in NO_FLOCK:
            return _lock_file(run_dir, fd, e)
        os.close(fd)
        raise StoreError(f"cannot lock output directory {run_dir}: {_reason(e)}") from e
    if not taken:
        os.close(fd)
        raise StoreError(_in_use(run_dir, _read_json(run_dir / LOCK_INFO) or {})) from None
    return _Lock(fd)


def _lock_file(run_dir: Path, fd: int, why: OSError) -> _Lock:
    """Where the directory takes no flock (`why`): a POSIX lock on LOCK_FILE in it (NFS takes
    those, through its lock manager).  A file a user could delete while a run holds it (a
    second run would then lock a new one), so only where a flock cannot be had."""
    path = run_dir / LOCK_FILE
    if _held_here(path):
        os.close(fd)
        raise StoreError(_in_use(run_dir, _read_json(run_dir / LOCK_INFO) or {}))
    try:
        f = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        os.close(fd)
        raise StoreError(f"cannot lock output directory {run_dir}: {_reason(why)}, and cannot "
                         f"open {LOCK_FILE} there instead: {_reason(e)}") from e
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        os.close(f)
        os.close(fd)
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise StoreError(_in_use(run_dir, _read_json(run_dir / LOCK_INFO) or {})) from None
        try:                    # no lock of any kind here: nobody holds it, nothing left
            os.unlink(path)
        except OSError:
            pass
        raise StoreError(f"cannot lock output directory {run_dir}: its filesystem takes "
                         f"neither a flock ({_reason(why)}) nor a POSIX lock ({_reason(e)}); "
                         "write the run to a local disk, or mount this one with locks "
                         "(Lustre: -o flock)") from e
    return _Lock(fd, f, path)


def _held_here(path: Path) -> bool:
    """Whether this process holds the POSIX lock of the LOCK_FILE at `path`."""
    try:
        return _identity(os.stat(path)) in _HELD_FILES
    except OSError:
        return False


def _file_locked(path: Path) -> bool:
    """Whether a live process holds the POSIX lock of the LOCK_FILE at `path` (a look: the
    lock is taken and let go at once, never where this process holds it)."""
    if _held_here(path):
        return True
    try:
        f = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        return e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES)
    finally:
        os.close(f)
    return False


def _in_use(run_dir: Path, info: dict) -> str:
    """Why `run_dir`'s lock is not to be had: the holder its sidecar names — this very
    process where that is its pid and host (a store it opened earlier holds the lock: a
    sweep still running in another thread, or an execute() that failed without closing)."""
    since = info.get("since", "?")
    if info.get("pid") == os.getpid() and info.get("host") == socket.gethostname():
        return (f"{run_dir} is in use by this very process (pid {os.getpid()}, since {since}): "
                "a run store it opened earlier still holds it — a sweep still running in "
                "another thread, or an earlier execute() in this process that did not close")
    holder = (f"pid {info.get('pid', '?')} on {info.get('host', '?')} since {since}"
              if info else "holder unknown")
    return f"{run_dir} is in use by another run ({holder})"


def _flock(fd: int) -> bool:
    """Take the directory descriptor's flock: False where another holds it (OSError for any
    other failure)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


def check_not_in_use(run_dir: str | os.PathLike) -> None:
    """StoreError when a live run holds `run_dir` (a directory that does not exist is free).
    A look only: RunStore takes the lock for itself."""
    if Path(run_dir).is_dir():
        _lock_dir(Path(run_dir)).close()


def in_use(run_dir: str | os.PathLike) -> bool:
    """True when a live run or merge holds `run_dir` (a report of it then says it is still
    running).  A look only: without the lock's sidecar no holder can be alive, and the lock
    is tried only where one is there (a holder killed hard leaves its sidecar, not its lock)."""
    p = Path(run_dir)
    if not (p / LOCK_INFO).exists():
        return False
    try:
        fd = os.open(p, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        return not _flock(fd)
    except OSError as e:          # no flock here (NFS): the run's LOCK_FILE, if any
        return e.errno in NO_FLOCK and _file_locked(p / LOCK_FILE)
    finally:
        os.close(fd)              # releases the lock this look took


def _identity(st: os.stat_result) -> tuple[int, int]:
    return st.st_dev, st.st_ino


def _now_iso() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


