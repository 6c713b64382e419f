"""Run directories on disk: what makes a directory one (the marker in meta.json, format 1
recognised), whether a run may write into a path, and the atomic file write every file of a run
goes through.  harness/store.py re-exports all of it; nothing outside the store (store.py,
records_io.py) imports this module."""
from __future__ import annotations

import errno
import json
import os
import re
import select
import stat
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from normbench.harness.text import one_line

RECORDS_CSV = "records.csv"
RECORDS_PARQUET = "records.parquet"
META_JSON = "meta.json"
LOCK_FILE = ".normbench.lock"          # format 1's lock file: only recognised, never written
LOCK_INFO = ".normbench.lock.json"
FORMAT = "normbench-run"
FORMAT_VERSION = 2

_DATA_FILES = (RECORDS_CSV, RECORDS_PARQUET, META_JSON, LOCK_INFO)


class StoreError(Exception):
    """A run directory cannot be used or read.  The message is one line."""

    def __init__(self, message: str):
        super().__init__(one_line(message))


def cannot_read(where, e: BaseException) -> str:
    """'cannot read WHERE: why' on one line, or `e`'s own message where it already names the
    file it could not read (a StoreError from records_io or load_meta): never doubled."""
    why = one_line(_reason(e) if isinstance(e, OSError) else str(e)) or type(e).__name__
    return why if why.startswith("cannot read ") else f"cannot read {where}: {why}"


class StoreWriteError(StoreError):
    """Writing a run's file failed (a full disk, a directory gone read-only): a fault of the
    machine, not of the input (the CLI exits 1, not 2)."""


def run_dir_version(path: str | os.PathLike) -> int | None:
    """The format version of the run directory at `path`, or None when it is not one.

    2: meta.json carries the marker ("format": "normbench-run", "format_version").
    1: written before the marker existed: a meta.json object with the keys every such run
       wrote (device_name and config_hash), or a records.csv whose header names the key
       columns (a run stopped before its meta.json was complete)."""
    p = Path(path)
    try:
        if not stat.S_ISDIR(os.stat(p).st_mode):
            return None
    except OSError:
        return None
    meta = _read_json(p / META_JSON)
    if meta is not None:
        if meta.get("format") == FORMAT:
            v = meta.get("format_version")
            return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else 1
        if "format" not in meta and {"device_name", "config_hash"} <= meta.keys():
            return 1
    try:
        with open(p / RECORDS_CSV, encoding="utf-8", errors="replace") as f:
            header = f.readline(1 << 16)
    except OSError:
        return None
    fields = {h.strip().strip('"') for h in header.split(",")}
    return 1 if {"case_id", "implementation", "status"} <= fields else None


def is_run_dir(path: str | os.PathLike) -> bool:
    """True when `path` is a run directory (see run_dir_version)."""
    return run_dir_version(path) is not None


def check_run_dir(path: str | os.PathLike) -> None:
    """Raise StoreError (one line) unless `path` is a run directory."""
    p = Path(path)
    try:
        st = os.stat(p)
    except OSError as e:
        raise StoreError(f"{p}: {'does not exist' if e.errno == errno.ENOENT else _reason(e)}") from e
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{p} is not a directory")
    if run_dir_version(p) is None:
        raise StoreError(f"{p} is not a run directory (no meta.json with normbench's run "
                         "marker, no records.csv); refusing to write into it")


def check_out_dir(path: str | os.PathLike) -> None:
    """Raise StoreError (one line) unless a run may write into `path`: a path that does not
    exist yet, an empty directory, or a run directory.  Any other directory is someone
    else's and is left alone."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        _no_dangling_link(p)
        return _check_new(p)
    except OSError as e:        # a name too long, a component that is a file ...
        if e.errno == errno.ENOTDIR:
            return _check_new(p)
        raise StoreError(f"cannot use {p} as output directory: {_reason(e)}") from e
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"cannot use {p} as output directory: it exists and is not a directory")
    _check_dir(p, p)


def _no_dangling_link(p: Path) -> None:
    """StoreError where `p` or a directory on its way is a symbolic link that leads nowhere:
    mkdir cannot make through it ("File exists"), so --dry-run must not pass it either."""
    whole = Path(os.path.abspath(p))
    for a in (*reversed(whole.parents), whole):
        if os.path.islink(a) and not os.path.exists(a):
            raise StoreError(f"cannot use {p} as output directory: {a} is a symbolic link "
                             f"that leads nowhere (to {os.readlink(a)})")


def _check_dir(p: Path, real: Path) -> None:
    """`real`, the existing directory `p` names: empty (but for our own files) or a run's,
    and one that files can be made in."""
    try:
        names = [n for n in os.listdir(real) if not _ours(n)]
    except OSError as e:
        raise StoreError(f"cannot use {p} as output directory: {_reason(e)}") from e
    if names and run_dir_version(real) is None:
        raise StoreError(f"{p} is not empty and is not a normbench run directory; choose a new "
                         "or empty output directory")
    check_writable(p, real)


def check_writable(p: Path, real: Path | None = None) -> None:
    """Raise StoreError unless a directory can be made in the existing directory `real`
    (what `p` names; `p` itself by default) — tried, as _check_creatable tries a new path's
    parent, so that --dry-run refuses what the run's first write would, and says why in the
    system's words (a read-only file system, permission denied)."""
    try:
        _probe(p if real is None else real)
    except OSError as e:
        raise StoreError(f"cannot write to output directory {p}: {_reason(e)}") from e


_PROBE = ".normbench-probe-"


def _probe(base: Path) -> None:
    """Make a directory in `base` and remove it at once; OSError where none can be made."""
    os.rmdir(tempfile.mkdtemp(prefix=_PROBE, dir=base))


def _check_new(p: Path) -> None:
    """A path that does not exist yet — but may name an existing directory once its missing
    parts are made (`new/..`, which mkdir -p makes and which is then `.`): that directory is
    checked as such; else whether one can be made there."""
    real = _named(p)
    if real.is_dir():
        return _check_dir(p, real)
    _check_creatable(real, p)


def _named(p: Path) -> Path:
    """The absolute path `p` will name once its missing parts are made: its longest existing
    prefix resolved (links followed, as the OS does), the rest taken as written ('..' of a
    part yet to be made is the part before it)."""
    parts = Path(os.getcwd(), p).parts          # '..' kept: a link's parent is not lexical
    i = len(parts)
    while i > 1 and not os.path.lexists(os.path.join(*parts[:i])):
        i -= 1
    return Path(os.path.normpath(os.path.join(os.path.realpath(os.path.join(*parts[:i])),
                                              *parts[i:])))


def _check_creatable(real: Path, p: Path) -> None:
    """Raise StoreError unless a directory can be made at the new path `real` (what `p`
    names): its nearest existing ancestor is a directory a directory can be made in — tried,
    with a probe removed at once, so that --dry-run refuses what the run's mkdir would (a
    file on the path, a read-only or pseudo file system such as /proc)."""
    base = next((a for a in real.parents if os.path.lexists(a)), None)
    if base is None:
        return
    if not base.is_dir():
        raise StoreError(f"cannot create output directory {p}: Not a directory ({base} is not one)")
    try:
        _probe(base)
    except OSError as e:
        raise StoreError(f"cannot create output directory {p}: {_reason(e)}") from e


def _ours(name: str) -> bool:
    """Files a run leaves that do not make a directory anyone else's (and the probe another
    command's check makes there for a moment)."""
    return name in (LOCK_FILE, LOCK_INFO) or name.startswith(_PROBE) or (
        name.startswith(".") and name.endswith(".tmp")
        and any(name.startswith(f".{n}.") for n in _DATA_FILES))


def meta_format_version(meta: dict) -> int:
    """The format version of a loaded meta.json (1 for one without the marker)."""
    v = meta.get("format_version") if meta.get("format") == FORMAT else None
    return v if isinstance(v, int) and not isinstance(v, bool) else 1


NUMBER = (int, float)          # a JSON number; true and false are not numbers

# the meta.json fields that coverage, merge, compare, report and --resume read, by type (run,
# run --shard and merge write them so); a hand-edited one of another type is refused by name,
# never read as something else (a copy ceiling of "fast" made every resumed case an error)
META_TYPES = {"completed": bool, "shard": dict, "shard.spec": str, "shard.plan_keys": list,
              "shard.keys": list, "merge": dict, "merge.plan_size": int, "merge.missing": int,
              "merge.missing_keys": list, "merge.finished": bool, "merged_from": list,
              "resumes": list, "plan_implementations": list, "copy_ceiling_gbps": NUMBER,
              "peak_tbps": NUMBER, "invocations": list, "argv": list, "gpus": list,
              "workers": int, "workers_differ": list, "merge.differs": list, "merge.environment_differs": list,
              "plugins": list, "config_name": str, "started_at": str, "ended_at": str,
              "hostname": str}
# the lists of META_TYPES whose items a reader uses as such, by the items' type
META_ITEMS = {"plan_implementations": str, "invocations": dict, "argv": str, "gpus": dict,
              "workers_differ": str,
              "merge.differs": str, "merge.environment_differs": str, "plugins": dict}
# the fields of those items that a reader uses (compare, merge: a plugin's version; the
# plan a stopped run's report rebuilds, harness/replan.py: an invocation's argv and only)
META_ITEM_FIELDS = {"plugins": {"source": str, "module": str, "entry_point": str,
                                "distribution": str, "version": str},
                    "invocations": {"argv": list, "only": list}}


def _type_name(typ) -> str:
    return "number" if typ == NUMBER else typ.__name__


def _is(v, typ) -> bool:
    """v is of `typ` (a type or NUMBER); a bool is an int to Python, not to meta.json."""
    return isinstance(v, typ) and not (isinstance(v, bool) and typ is not bool)


def check_meta_types(meta: dict, where: str = "meta.json") -> None:
    """StoreError (one line, naming `where` and the field) unless each field of META_TYPES is
    absent, null or of its type, each item of a META_ITEMS list of its type, and each field
    of such an item that META_ITEM_FIELDS names absent, null or of its type."""
    for name, typ in META_TYPES.items():
        outer, _, inner = name.partition(".")
        v = meta.get(outer)
        if inner:
            v = v.get(inner) if isinstance(v, dict) else None
        if v is not None and not _is(v, typ):
            raise StoreError(f"{where}: {name}: expected {_type_name(typ)}, got "
                             f"{type(v).__name__}")
        item = META_ITEMS.get(name)
        bad = [x for x in v if not _is(x, item)] if item and v else []
        if bad:
            raise StoreError(f"{where}: {name}: expected a list of {_type_name(item)}, got "
                             f"an item of {type(bad[0]).__name__}")
        for i, x in enumerate(v if name in META_ITEM_FIELDS and v else []):
            for key, typ in META_ITEM_FIELDS[name].items():
                if x.get(key) is not None and not _is(x[key], typ):
                    raise StoreError(f"{where}: {name}[{i}].{key}: expected {_type_name(typ)} "
                                     f"or null, got {type(x[key]).__name__}")


def write_file_atomic(path: str | os.PathLike, data: bytes | str) -> None:
    """Write `data` to `path` whole or not at all: a temporary file in the same directory,
    fsynced, then os.replace -- except into a target written through (_through): there
    straight in.  Text is written as UTF-8 (a lone surrogate as a backslash escape).  OSError
    propagates."""
    if isinstance(data, str):
        data = data.encode("utf-8", "backslashreplace")
    path = Path(path)
    fd = _own_descriptor(path)
    if fd is not None:             # before _through: a closed one must not be replaced
        flush_std()                # what was printed before comes first
        write_all(fd, data)        # at its own offset: `>> log` appends, a socket takes it
        return
    if _FD_NAME.fullmatch(os.path.abspath(path)) or _through(path):
        with open(path, "wb") as f:   # a FIFO, a terminal, another process's descriptor
            f.write(data)
        return
    _atomic_write(path, lambda f: f.write(data))


def flush_std() -> None:
    """Flush sys.stdout and sys.stderr, waiting where one is a non-blocking descriptor that
    is full (a write failing for any other reason is left to the caller's next write)."""
    for stream in (sys.stdout, sys.stderr):
        for _ in range(10000):
            try:
                if stream is not None:
                    stream.flush()
                break
            except BlockingIOError:
                _wait_writable(stream)
            except (OSError, ValueError):
                break


def _wait_writable(stream_or_fd) -> None:
    """Wait until a full non-blocking descriptor (or a stream's) takes more: a second at most,
    the caller tries its write again."""
    try:
        fd = stream_or_fd if isinstance(stream_or_fd, int) else stream_or_fd.fileno()
        select.select([], [fd], [], 1.0)
    except (OSError, ValueError, AttributeError):
        time.sleep(0.01)


def write_all(fd: int, data: bytes) -> None:
    """os.write until all of `data` is written, waiting (select) while a non-blocking
    descriptor is full: its reader may read only after the writer is done, and a short or
    refused write must neither cut the output nor count as a failure.  OSError (EBADF for a
    descriptor not open, EPIPE, ENOSPC) propagates."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            _wait_writable(fd)


def _own_descriptor(path: Path) -> int | None:
    """The descriptor of this process that a descriptor's name stands for (/dev/stdout -> 1,
    /dev/fd/N, /proc/self/fd/N, /proc/<our pid>/fd/N -> N): written to as it is, since opening
    the name anew would truncate a file the shell opened to append to (`>> log`), start at its
    beginning over what the shell wrote before, or fail on a socket -- and where it is not
    open, the name is no file to make (EBADF).  None for anything else (a FIFO or terminal
    named directly, another process's descriptor: opened)."""
    m = _FD_NAME.fullmatch(os.path.abspath(path))
    if m is None:
        return None
    name = m.group(0)
    std = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}
    head, _, n = name.rpartition("/")
    if name in std:
        fd = std[name]
    elif head == "/dev/fd" or head in ("/proc/self/fd", f"/proc/{os.getpid()}/fd"):
        fd = int(n)
    else:
        return None
    try:
        os.fstat(fd)
    except OSError as e:
        raise OSError(errno.EBADF, f"descriptor {fd} is not open", str(path)) from e
    return fd


def _through(path: Path) -> bool:
    """An existing target that is no regular file (a FIFO, a process substitution's
    /dev/fd/N, a terminal), or a descriptor's name that leads to one (/dev/stdout, /dev/fd/N,
    /proc/PID/fd/N redirected to a file): a temporary beside it renamed over it would replace
    the pipe or the link, which its reader never sees (or fail: no file can be made in
    /dev/fd).  A regular file anywhere else (/dev/shm too) is replaced whole."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return True
    except (OSError, RuntimeError):
        return False                 # a new path: the atomic write makes it (or says why not)
    return _FD_NAME.fullmatch(os.path.abspath(path)) is not None


_FD_NAME = re.compile(r"/dev/(fd/\d+|std(in|out|err))|/proc/[^/]+/fd/\d+")


def _read_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def _atomic_write(path: Path, write: Callable[[Any], Any]) -> None:
    """Write `path` through a fsynced temporary in its directory and os.replace."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)      # mkstemp makes 0600; results are for sharing
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    # The rename itself is durable only once the directory is.
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _reason(e: OSError) -> str:
    return e.strerror or str(e) or type(e).__name__
