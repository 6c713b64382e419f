"""SIGINT/SIGTERM as an exception, so that a sweep stops between two stores, never mid-write."""
from __future__ import annotations

import atexit
import enum
import os
import signal
import sys
import threading
import time
import weakref
import _weakrefset


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; `signum` says which.  A BaseException, like
    KeyboardInterrupt, so that no `except Exception` records it as the case's failure."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


_first: list[int] = []    # the signal being handled, once one arrived
_held = {"depth": 0, "signum": None}   # the main thread's open held() blocks; a signal they hold


# Where an exception raised by the handler cannot unwind: Python's enum module, which C++
# extensions call to turn a native enum value into its Python member (nanobind does, in
# Triton's libtriton) — an exception there becomes a C++ exception that std::terminate ends
# (CI saw a SIGINT abort a sweep with "terminate called after throwing an instance of
# 'nanobind::python_error'", the handler's frame in EnumType.__call__).
# And weakref's callbacks (a WeakKeyDictionary's `remove`, run as the garbage collector frees
# a key, matplotlib's figures while a report is drawn): Python reports an exception there as
# "Exception ignored in …" and drops it — the stop lost, the command on to exit 0.  Any other
# such place (a finalizer, `__del__`) is caught by _unraisable, which sends the signal again.
_NO_UNWIND = (enum.__file__, weakref.__file__, _weakrefset.__file__)
RETRY_S = 0.01
# Nor into a module being imported: torch's import runs Python called from its C++ through
# pybind11, where the exception became 'pybind11::error_already_set' and std::terminate (a
# SIGINT at 1.4 s into a run aborted it, exit -6, torch/autograd/__init__.py under
# torch.distributed.rpc's import); and one that torch's numpy initialisation swallowed left
# numpy half imported.  Held off while an import runs, up to IMPORT_WAIT_S: an import that
# hangs (a plugin's) is still stopped then.
_IMPORTING = "<frozen importlib._bootstrap"
IMPORT_WAIT_S = 15.0
_deferred: list[float] = []     # when the first signal held off arrived


def _no_unwind(frame) -> bool:
    """The handler must not raise in `frame`: its code is enum's (innermost), or an import is
    under way on its stack (for IMPORT_WAIT_S since the first such signal)."""
    if frame is None:
        return False
    if frame.f_code.co_filename in _NO_UNWIND:
        return True
    f = frame
    while f is not None:
        if f.f_code.co_filename.startswith(_IMPORTING):
            if not _deferred:
                _deferred.append(time.monotonic())
            return time.monotonic() - _deferred[0] < IMPORT_WAIT_S
        f = f.f_back
    return False


def raise_interrupted(signum, frame):
    # Only the first signal raises: more of them (Ctrl-C pressed again and again) while the
    # sweep saves its records and prints the resume hint would interrupt that cleanup itself.
    # A first one whose Interrupted was swallowed still stops the sweep: raise_if_stopping.
    if _first:
        return
    if _held["depth"]:          # inside held(): raised when its block ends
        _held["signum"] = _held["signum"] or signum
        return
    if _no_unwind(frame):
        # not here: the same signal again in a moment, when the code has moved on
        threading.Timer(RETRY_S, os.kill, (os.getpid(), signum)).start()
        return
    _first.append(signum)
    raise Interrupted(signum)


class held:
    """`with held(): ...` — a signal that install()'s handler receives inside the block is
    raised as Interrupted when the block ends, not in its middle: for a step whose parts must
    all happen or none (the store replacing records.csv and then updating what it holds in
    memory — an Interrupted between the two left a record on disk that the run's memory, and
    so records.parquet, lacked).  Nests; only the main thread's blocks hold (the handler runs
    there).  Only for short steps: a signal waits for the block to end."""

    def __enter__(self) -> "held":
        self.main = threading.current_thread() is threading.main_thread()
        if self.main:
            _held["depth"] += 1
        return self

    def __exit__(self, *exc) -> bool:
        if self.main:
            _held["depth"] -= 1
            if not _held["depth"] and _held["signum"] is not None:
                signum, _held["signum"] = _held["signum"], None
                if not _first:
                    _first.append(signum)
                    raise Interrupted(signum)
        return False


def stopping() -> int | None:
    """The signal that is stopping this process, None while none has arrived."""
    return _first[0] if _first else None


def raise_if_stopping() -> None:
    """Raise Interrupted where a signal has arrived: for the points a sweep may stop at (a
    record kept).  Its Interrupted may never have got out — caught where it landed, by a
    plugin's bare `except:` or a library's `except BaseException` — and every later signal
    is ignored (raise_interrupted): the run went on to its end, Ctrl-C and SIGTERM unheard,
    and exited 0."""
    if _first:
        raise Interrupted(_first[0])


def _forget() -> None:
    """No stop noted: a fresh start."""
    _first.clear()
    _held["signum"] = None


def install(previous: dict | None = None) -> dict:
    """Make SIGINT and SIGTERM raise Interrupted (the first one; later ones are ignored);
    returns the previous handlers — in `previous`, where given, filled before any handler
    changes (a signal landing mid-install still finds them there to restore).

    Off the main thread (a sweep run from a thread pool, a notebook's or a web app's
    worker thread) nothing is installed and {} returned: only the main thread may set a
    handler, and the signal is the main thread's anyway (its KeyboardInterrupt); the
    sweep in the thread runs to its end or its failure, and held() holds nothing there.  A
    stop an earlier sweep noted is forgotten there too, unless a handler of ours is installed
    (the process is stopping)."""
    previous = {} if previous is None else previous
    if threading.current_thread() is not threading.main_thread():
        if signal.getsignal(signal.SIGINT) is not raise_interrupted:
            # no handler of ours: a stop still noted is an earlier sweep's, which ended (a
            # notebook's Ctrl-C); kept, it stopped this one at its first record, "interrupted"
            _forget()
        return previous
    _deferred.clear()
    if signal.getsignal(signal.SIGINT) is not raise_interrupted:
        # a fresh start; under an outer install (the CLI's, from its first moment) a stop
        # that arrived before — its Interrupted swallowed where it landed, as torch's
        # import swallows one in numpy's — still stops: it was forgotten here, and the
        # sweep ran on through a half-imported numpy, each case its error
        _forget()
    previous.update({s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)})
    for s in previous:
        signal.signal(s, raise_interrupted)
    if sys.unraisablehook is not _unraisable:
        _hooks.append(sys.unraisablehook)
        sys.unraisablehook = _unraisable
    return previous


_hooks: list = []       # the unraisable hook _unraisable replaced


def _unraisable(args) -> None:
    """sys.unraisablehook: the Interrupted of the stop, raised where Python drops every
    exception (a finalizer, `__del__`, a weakref callback: "Exception ignored in …" and a
    traceback, the command going on to exit 0 with every later signal ignored, since only
    the first raises), is sent again a moment later, to land where it unwinds; other
    exceptions go to the hook it replaced."""
    e = args.exc_value
    if isinstance(e, Interrupted) and _first and _first[0] == e.signum:
        _first.clear()
        threading.Timer(RETRY_S, os.kill, (os.getpid(), e.signum)).start()
        return
    (_hooks[-1] if _hooks else sys.__unraisablehook__)(args)


def interruption(e: BaseException) -> BaseException | None:
    """The Interrupted (or KeyboardInterrupt) that `e` is or wraps, else None.

    A signal handler's exception can surface wrapped in another: Python turns an exception
    raised while a class body runs its descriptors' __set_name__ into a RuntimeError — as
    when SIGINT lands while a module (torch's FakeTensor, say) is first imported.  A broad
    `except Exception` would then record the interruption as a case's failure, or the CLI
    print a traceback.  Follows __cause__ and __context__.

    A KeyboardInterrupt while install()'s handler is in place came from no signal (that
    arrives as Interrupted): code raised it, a plugin say — its failure, not a stop.

    While the handler is in place and a stop has arrived, any failure is the stop's, told
    as an Interrupted of its signal: the one it raised may have been swallowed where it
    landed (torch's import clears an error in numpy's) and left a module half imported
    ("module 'numpy' has no attribute 'iterable'", numpy's "CPU dispatcher tracer already
    initlized" on its second import): a case's error or a traceback that the stop made."""
    seen = set()
    ours = signal.getsignal(signal.SIGINT) is raise_interrupted
    keyboard = stopping() is not None or not ours
    start = e
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, Interrupted) or (keyboard and isinstance(e, KeyboardInterrupt)):
            return e
        e = e.__cause__ or e.__context__
    if ours and _first and start is not None:
        return Interrupted(_first[0])
    return None


def reraise_if_interrupted(e: BaseException) -> None:
    """Raise the interruption `e` wraps, if any (see `interruption`)."""
    i = interruption(e)
    if i is not None:
        raise i


def _exit_now(signum, frame):
    for f in (sys.stdout, sys.stderr):
        try:
            f.flush()
        except Exception:
            pass
    os._exit(128 + signum)


def exit_quietly() -> None:
    """From here to the interpreter's end — its atexit hooks and finalizers, which a signal
    handler that raises would interrupt with a traceback ("Exception ignored in …") — SIGINT
    and SIGTERM end the process at once with 128 + the signal.  For the CLI once its command
    is done: what it measured is stored by then."""
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, _exit_now)


def _ignore_signals() -> None:
    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)


def quiet_after_exit_hooks() -> None:
    """Once every exit hook registered after this call has run (torch's, multiprocessing's
    joins of its children, Dask's), SIGINT and SIGTERM are ignored: Python's finalization
    then restores the default action of a signal it had a handler for, and a signal in that
    last stretch would kill the process (exit -2 / -15) after its command has finished.
    Call it first thing (the CLI's main): exit hooks run last registered, first run."""
    atexit.register(_ignore_signals)
