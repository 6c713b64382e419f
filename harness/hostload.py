"""How many cases a host measured at once, and which records that may have distorted.

Two runs on two GPUs of one host inflate host-bound records (quack RMSNorm 16384 × 4096 on an
H200 host: 298 µs next to another run, 128 µs alone): the CPU, its caches and the PCIe root are
shared.  So every record says how many cases ran on its host while it was measured
(`concurrent_cases`: the most cases that ran at one moment of its measurement, itself
included), counted exactly, across processes and across runs:

* a case being measured holds a file `busy/<token>` (its start time and pid) in a host-local
  directory (`$NORMBENCH_HOSTLOAD_DIR`, default `<tmp>/normbench-hostload`);
* when it ends it appends `start end token` to `log` and only then drops its busy file;
* at its end a case lists the busy files first, then reads the log: a case that overlapped it
  either is still busy (seen in the listing) or finished, in which case its log line was
  written before its busy file went away, so the read that follows the listing sees it.  A case
  missing from both started after this one ended.

Times are CLOCK_MONOTONIC, which every process of a Linux host shares.  Busy files of dead
processes (kill -9) are ignored and removed.  The log keeps the last hour.
"""
from __future__ import annotations

import fcntl
import os
import tempfile
import time
from pathlib import Path

from normbench.harness.cells import is_missing, num as _num

KEEP_S = 3600.0               # log entries older than this cannot overlap a live case
PRUNE_BYTES = 1 << 20
HOST_BOUND_MS = 0.2           # without a GPU time: calls this short are decided on the host


def directory() -> Path:
    d = Path(os.environ.get("NORMBENCH_HOSTLOAD_DIR") or
             Path(tempfile.gettempdir()) / "normbench-hostload")
    (d / "busy").mkdir(parents=True, exist_ok=True)
    return d


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class track:
    """Context manager around one measurement; `count` is set on exit.

        with hostload.track() as t:
            rec = measure(...)
        rec["concurrent_cases"] = t.count
    """

    def __init__(self, root: Path | None = None):
        self.root = root
        self.count: int | None = None

    def __enter__(self) -> "track":
        try:
            self.root = Path(self.root) if self.root else directory()
            (self.root / "busy").mkdir(parents=True, exist_ok=True)
            self.start = time.monotonic()
            self.token = f"{os.getpid()}-{time.monotonic_ns()}"
            self._busy = self.root / "busy" / self.token
            self._busy.write_text(f"{self.start!r} {os.getpid()}\n")
        except OSError:                    # no writable tmp: the count stays unknown
            self.root = None
        return self

    def __exit__(self, *exc) -> None:
        if self.root is None:
            return
        end = time.monotonic()
        try:
            _append(self.root / "log", f"{self.start!r} {end!r} {self.token}\n")
            self.count = _overlapping(self.root, self.start, end, self.token) + 1
        except OSError:
            self.count = None
        finally:
            try:
                self._busy.unlink()
            except OSError:
                pass


def _append(log: Path, line: str) -> None:
    with open(log, "a+", encoding="utf-8") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(line)
        f.flush()
        if f.tell() > PRUNE_BYTES:
            f.seek(0)
            keep = [ln for ln in f.read().splitlines(keepends=True)
                    if _parse(ln) and _parse(ln)[1] > time.monotonic() - KEEP_S]
            f.seek(0)
            f.truncate()
            f.writelines(keep)


def _parse(line: str):
    parts = line.split()
    if len(parts) != 3:
        return None
    try:
        return float(parts[0]), float(parts[1]), parts[2]
    except ValueError:
        return None


def _overlapping(root: Path, start: float, end: float, own: str) -> int:
    """The most other cases that ran at one moment of [start, end]: the busy ones first, then
    the finished ones from the log."""
    others: dict[str, tuple[float, float]] = {}
    for p in (root / "busy").iterdir():        # 1. still running
        if p.name == own:
            continue
        try:
            s, pid = p.read_text().split()
            s, pid = float(s), int(pid)
        except (OSError, ValueError):
            continue                          # being written or just removed
        if not _alive(pid):
            try:
                p.unlink()
            except OSError:
                pass
            continue
        if s <= end:
            others[p.name] = (s, end)
    with open(root / "log", encoding="utf-8") as f:   # 2. finished
        fcntl.flock(f, fcntl.LOCK_SH)
        for line in f:
            e = _parse(line)
            if e and e[2] != own and e[0] <= end and e[1] >= start:
                others[e[2]] = (e[0], e[1])
    return most_at_once(list(others.values()), start, end)


def most_at_once(intervals: list[tuple[float, float]], start: float, end: float) -> int:
    """The largest number of `intervals` that overlap one moment of [start, end]."""
    events = []
    for s, e in intervals:
        s, e = max(s, start), min(e, end)
        if s <= e:
            events += [(s, 0), (e, 1)]          # at one instant a start counts before an end
    most = active = 0
    for _, kind in sorted(events):
        active += 1 if kind == 0 else -1
        most = max(most, active)
    return most


# --------------------------------------------------------------------------- the flag

def host_dominated(rec: dict) -> bool | None:
    """Whether host time decides this record's call time: more than half of it is host
    overhead (when the record has a GPU time), else a call shorter than HOST_BOUND_MS.
    None when the record has no time."""
    t = _num(rec.get("time_ms"))
    if t is None:
        return None
    gpu = _num(rec.get("gpu_time_ms"))
    if gpu is not None:
        return t - gpu > 0.5 * t
    return t < HOST_BOUND_MS


def contention_note(rec: dict, apart: bool = False) -> str | None:
    """The note for a record measured next to other cases on its host whose call time host
    time decides — such a time may be inflated by the neighbours; None otherwise.

    The count is the host's, whoever measured: it does not say whose the neighbours were.
    apart: the run measured no other case on that host meanwhile (a plain run measures one
    case at a time; a --gpus/--scheduler run's case measured alone, --exclusive-below-us),
    so they were another process's, which no flag of this run holds off: the note says to
    time it again with nothing else measuring there.  Otherwise (a --gpus/--scheduler run's
    case measured beside its own, or a record read back, where that is not known) they may
    be the run's own, which --exclusive-below-us keeps apart, or another process's."""
    n = _num(rec.get("concurrent_cases"))
    if n is None or n <= 1 or rec.get("status") != "ok" or not host_dominated(rec):
        return None
    host = rec.get("hostname")
    host = "its host" if is_missing(host) or not str(host) else str(host)
    said = f"host-bound call measured while {int(n)} cases ran on {host}"
    if apart:
        return (f"{said}, none of the others this run's: the time may be inflated by another "
                "process's load on the host; time it again with nothing else measuring there")
    return (f"{said}: the time may be inflated by host contention (--exclusive-below-us "
            "measures such cases of a --gpus/--scheduler run with none of its own beside them; "
            "another process's load it does not hold off: time it with nothing else measuring "
            "on the host)")


def flag_contended(df):
    """A boolean Series over a records frame: the records `contention_note` would flag."""
    import pandas as pd
    return pd.Series([contention_note(r) is not None for r in df.to_dict("records")],
                     index=df.index, dtype="boolean")


def annotate(rec: dict, where: dict, count: int | None, apart: bool = False) -> dict:
    """`rec` with where it ran (hostname, gpu_index, gpu_uuid), `concurrent_cases`, and the
    contention note in `notes` when the schema has that column (apart: the run measured no
    other case on its host meanwhile, contention_note)."""
    from normbench.harness.schema import COLUMNS
    rec.update(where, concurrent_cases=count)
    note = contention_note(rec, apart)
    if note and "notes" in COLUMNS:
        rec["notes"] = "; ".join(n for n in (rec.get("notes") or None, note) if n)
    return rec

