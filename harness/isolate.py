"""Run a function in a worker process, with a timeout per call.

A GPU kernel that spins forever cannot be cancelled from inside its process: the only way out
is to kill the process.  `Worker` keeps one spawned process (CUDA cannot fork; importing
torch/Triton is slow, so the process is reused across calls), sends it payloads through a pipe,
and kills it when a call overruns; the next call starts a fresh one.

    w = Worker("normbench.harness.measure:measure_payload", env={"TRITON_INTERPRET": "1"},
               ready="normbench.harness.measure:prepare_worker")
    try:
        result = w.call(payload, timeout_s=60)   # measure_payload's: (case, settings) fields
    except WorkerTimeout: ...      # the worker was killed; next call gets a new one
    except WorkerStartError: ...   # it cannot start, or cannot get ready (a plugin it cannot load)
    except WorkerCrashed: ...      # segfault, os._exit, OOM kill (exit code / signal in message)
    except RuntimeError as e: ...  # target raised: "ExcType: message", e.remote_traceback
    finally:
        w.close()

A target that leaves its process unfit for another call (a CUDA context lost to an illegal
memory access: every later CUDA call of the process fails) calls `retire(why)` before it
returns: its result still comes back, then the worker exits and the next call gets a fresh one.

The worker ignores SIGINT (the parent handles Ctrl-C and closes its workers) and dies with its
parent: it exits when its pipe closes, and on Linux the kernel kills it (PR_SET_PDEATHSIG) if the
parent dies while it is busy.  NOTE: the kernel's notion of "parent" is the *thread* that started
the worker, so start workers (call `start()`/first `call()`) from a thread that outlives them,
normally the main thread.
"""
from __future__ import annotations

import atexit
import importlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.util  # registers its exit hook before ours: see _close_all
import os
import signal
import sys
import threading
import time
import traceback
import weakref
from contextlib import contextmanager
from typing import Any

from normbench.harness.text import describe_exception


class WorkerTimeout(Exception):
    """A call did not return in time; the worker was killed.  One-line message."""


class WorkerCrashed(Exception):
    """The worker process died (exit code or signal in the one-line message)."""


class WorkerStartError(WorkerCrashed):
    """The worker could not start: the target failed to import, or startup timed out.

    Every later call would fail the same way, so a runner should stop rather than record it
    against each case.  `remote_traceback` holds the worker's traceback when there is one.
    """

    remote_traceback: str = ""


_CTX = multiprocessing.get_context("spawn")
# Process.start() briefly changes os.environ and the SIGINT disposition of this process so the
# child inherits them from its very first instruction; one start at a time.
_START_LOCK = threading.Lock()
_LIVE: "weakref.WeakSet[Worker]" = weakref.WeakSet()


class Worker:
    """One worker process running `target` ("module:function") on payloads.

    env: variables added to os.environ for the worker (TRITON_INTERPRET, NORMBENCH_PLUGINS...).
    grace_s: after a timeout, SIGTERM, then SIGKILL if the worker is still alive after grace_s.
    ready: "module:function" the worker calls once, with no argument, after importing
        `target` and before it reports ready: whatever the first call would otherwise do
        inside its timeout_s (load the plugins) that is no payload's work.  An exception it
        raises (a plugin that cannot load here: PluginError) is the worker's failure to get
        ready: WorkerStartError, worded as a call's PluginError is.
    start_timeout_s: how long starting the worker (importing `target`, then `ready`) may take;
        it does not count against a call's timeout_s.
    """

    def __init__(
        self,
        target: str,
        env: dict[str, str] | None = None,
        *,
        grace_s: float = 2.0,
        start_timeout_s: float = 600.0,
        ready: str | None = None,
    ):
        _check_name("target", target)
        if ready is not None:
            _check_name("ready", ready)
        self.target = target
        self.ready = ready
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.grace_s = float(grace_s)
        self.start_timeout_s = float(start_timeout_s)
        self._proc = None
        self._conn = None
        self._finalizer = None
        self._closed = False
        self._mutex = threading.RLock()
        self.retired: str | None = None     # why the last worker retired itself (`retire`)
        self.partial: Any = None            # the last call's last `progress` value

    # -- public

    @property
    def pid(self) -> int | None:
        """The live worker's pid, None when there is none."""
        proc = self._proc
        return proc.pid if proc is not None and proc.is_alive() else None

    def start(self) -> None:
        """Start the worker now (otherwise the first call does).  No-op if one is running."""
        with self._mutex:
            if self._closed:
                raise RuntimeError(f"worker for {self.target} is closed")
            if self._proc is not None and self._proc.is_alive():
                return
            self._discard()
            self._spawn()

    def call(self, payload: Any, timeout_s: float | None) -> Any:
        """target(payload) in the worker; timeout_s None waits for ever.

        Raises WorkerTimeout, WorkerCrashed (WorkerStartError if the worker cannot start), or
        RuntimeError("ExcType: message") with `.remote_traceback` when the target raised; a
        WorkerTimeout or WorkerCrashed of the call carries as `.partial` the last value the
        target sent with `progress` (None where it sent none).
        Anything else that stops the call (Ctrl-C) kills the worker; where the worker had
        sent its reply already, the exception carries it as `reply`: a function that returns
        what this call would have (or raises its RuntimeError).
        """
        with self._mutex:
            self.partial = None     # before the start: a crash there carries no earlier call's
            self.start()
            proc, conn = self._proc, self._conn
            reading = False         # recv() begun: what is left in the pipe is no whole reply
            deadline = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
            try:
                try:
                    conn.send(("call", payload))
                except (BrokenPipeError, ConnectionResetError, EOFError):
                    raise self._crashed("died before the call") from None
                while True:
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    ready = _wait([conn, proc.sentinel], left)
                    if not ready:
                        pid = proc.pid
                        self._discard(kill=True)
                        late = WorkerTimeout(f"{self.target} did not return within "
                                             f"{timeout_s:g} s; worker pid {pid} killed")
                        late.partial = self.partial
                        raise late
                    # The reply may be in the pipe even if the worker exited just after
                    # sending it.
                    if not conn.poll():
                        raise self._crashed("died during the call")
                    reading = True
                    try:
                        reply = conn.recv()
                    except (EOFError, OSError):
                        raise self._crashed("died during the call") from None
                    reading = False
                    if not _is_progress(reply):
                        break
                    self.partial = reply[1]     # what the target has so far (`progress`)
            except (WorkerTimeout, WorkerCrashed):
                raise
            except BaseException as e:
                # Ctrl-C, or an error mid-exchange: the pipe's state is unknown, so start over
                # — keeping a reply the worker had sent before it (a signal landing as the call
                # ended: the result of a finished call, lost with the worker)
                try:
                    sent = None if reading else _sent_reply(conn)
                    if sent is not None:
                        e.reply = sent
                finally:
                    self._discard(kill=True)
                raise
            if reply[0] == "not_ready":
                # not this payload's failure: the worker's, and every later call's (a plugin
                # that cannot load stays so), so the caller stops as for a worker that cannot
                # start, rather than record it against each payload
                self._discard(kill=True)
                err = WorkerStartError(f"worker for {self.target} could not get ready: {reply[1]}")
                err.remote_traceback = reply[2]
                raise err
            if reply[0] == "ok" and len(reply) > 2:   # the target retired its process
                self.retired = reply[2]
                self._discard()
            return _unpack(reply)

    def close(self) -> None:
        """Stop the worker (politely, then by force after grace_s).  Idempotent."""
        with self._mutex:
            self._closed = True
            self._discard()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Worker({self.target!r}, pid={self.pid})"

    # -- internals

    def _spawn(self) -> None:
        parent_conn, child_conn = _CTX.Pipe(duplex=True)
        proc = _CTX.Process(
            target=_worker_main,
            args=(child_conn, self.target, self.env, os.getpid(), self.ready),
            name=f"normbench-worker {self.target}",
        )
        with _START_LOCK, _environment(self.env), _sigint_ignored():
            proc.start()
        child_conn.close()
        self._proc, self._conn = proc, parent_conn
        # Stops the worker if this object is dropped without close(); _close_all covers exit.
        self._finalizer = weakref.finalize(self, _shutdown, proc, parent_conn, self.grace_s, False)
        self._finalizer.atexit = False
        _LIVE.add(self)

        ready = _wait([parent_conn, proc.sentinel], self.start_timeout_s)
        if not ready:
            pid = proc.pid
            self._discard(kill=True)
            doing = f"import it, then run {self.ready}" if self.ready else "import it"
            raise WorkerStartError(f"worker for {self.target} did not start ({doing}) within "
                                   f"{self.start_timeout_s:g} s; worker pid {pid} killed")
        try:
            msg = parent_conn.recv()
        except (EOFError, OSError):
            raise self._crashed("died while starting", WorkerStartError) from None
        if msg[0] != "ready":
            self._discard(kill=True)
            if msg[0] == "not_ready":   # `ready` failed: worded as call() words a PluginError
                err = WorkerStartError(f"worker for {self.target} could not get ready: {msg[1]}")
            else:
                err = WorkerStartError(f"worker could not load {self.target}: {msg[1]}")
            err.remote_traceback = msg[2]
            raise err

    def _crashed(self, what: str, cls: type[WorkerCrashed] = WorkerCrashed) -> WorkerCrashed:
        """The worker died: reaped, and the exception that says so, carrying the call's last
        `progress` value as `partial`."""
        pid = self._proc.pid if self._proc is not None else "?"
        code = self._discard(kill=True)
        err = cls(f"worker pid {pid} running {self.target} {what}: {_describe_exit(code)}")
        err.partial = self.partial
        return err

    def _discard(self, kill: bool = False) -> int | None:
        """Stop and reap the current worker, if any; its exit code."""
        proc, conn, finalizer = self._proc, self._conn, self._finalizer
        self._proc = self._conn = self._finalizer = None
        if proc is None:
            return None
        if finalizer is not None:
            finalizer.detach()
        return _shutdown(proc, conn, self.grace_s, kill)


def _shutdown(proc, conn, grace_s: float, kill: bool) -> int | None:
    """Stop `proc`: ask it (unless kill), then SIGTERM, then SIGKILL; reap it; its exit code."""
    try:
        if conn is not None and not kill and proc.is_alive():
            try:
                conn.send(("stop", None))
            except (OSError, EOFError):
                pass
            proc.join(grace_s)
        if proc.is_alive():
            proc.terminate()
            proc.join(grace_s)
        if proc.is_alive():
            proc.kill()
            proc.join(max(grace_s, 5.0))
    except BaseException:
        # a signal in a wait above (Ctrl-C in the grace after SIGTERM): the worker is no one's
        # any more, and a live non-daemon child would hold the exit (multiprocessing joins it)
        if proc.is_alive():
            proc.kill()
        raise
    finally:
        if conn is not None:
            conn.close()
    code = proc.exitcode
    if code is not None:
        proc.close()
    return code


@atexit.register
def _close_all() -> None:
    # Registered after multiprocessing's own exit hook (imported above), so it runs before it:
    # that hook joins non-daemon children, which would wait for ever on an idle worker.
    for worker in list(_LIVE):
        try:
            worker._discard()
        except Exception:
            pass


def _is_progress(reply) -> bool:
    """Whether a message from the worker is a `progress` value, not a call's reply."""
    return isinstance(reply, tuple) and bool(reply) and reply[0] == "progress"


# in the worker: why the target said this process must serve no further call (`retire`), and
# the pipe to the parent (`progress`)
_RETIRING: str | None = None
_CONN = None


def progress(value: Any) -> None:
    """In a worker, from its target: `value` is what the call has so far.  Where the call then
    times out or the worker dies, the parent's WorkerTimeout / WorkerCrashed carries the last
    such value as `partial` (a record's fields measured before the case hung or crashed).
    Outside a worker, nothing; a value that cannot be sent is dropped."""
    if _CONN is None:
        return
    try:
        _CONN.send(("progress", value))
    except Exception:
        pass


def retire(why: str) -> None:
    """In a worker, from its target: this call's result is the last this process gives (the
    process is unfit for another: a lost CUDA context).  The reply is sent, the worker exits,
    the parent's next call starts a fresh one.  Outside a worker, nothing."""
    global _RETIRING
    _RETIRING = str(why)


_WAIT_CHUNK_S = 3600.0   # poll()/select() take at most ~2**31 ms: longer waits go in pieces


def _wait(objects: list, timeout_s: float | None) -> list:
    """multiprocessing.connection.wait for any timeout, however large (None: for ever)."""
    if timeout_s is None:
        return multiprocessing.connection.wait(objects, None)
    deadline = time.monotonic() + max(0.0, float(timeout_s))
    while True:
        left = deadline - time.monotonic()
        ready = multiprocessing.connection.wait(objects, min(max(left, 0.0), _WAIT_CHUNK_S))
        if ready or left <= _WAIT_CHUNK_S:
            return ready


def _check_name(what: str, name: str) -> None:
    module, sep, func = name.partition(":")
    if not sep or not module or not func:
        raise ValueError(f"{what} must be 'module:function', not {name!r}")


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running after SIGKILL (exit status unknown)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


def _sent_reply(conn):
    """The reply waiting unread in `conn`, as a function returning what call() returns (or
    raising its RuntimeError); None where there is none, it cannot be read, or it says the
    worker could not get ready (no call's result)."""
    try:
        while True:
            if not conn.poll(0):
                return None
            reply = conn.recv()
            if not _is_progress(reply):
                break
    except Exception:
        return None
    if not (isinstance(reply, tuple) and reply and reply[0] in ("ok", "error")):
        return None
    return lambda: _unpack(reply)


def _unpack(reply: tuple) -> Any:
    if reply[0] == "ok":
        return reply[1]
    _, message, remote_tb = reply
    err = RuntimeError(message)
    err.remote_traceback = remote_tb
    raise err


def _describe(exc: BaseException) -> str:
    return describe_exception(exc, limit=10_000)


@contextmanager
def _environment(env: dict[str, str]):
    """os.environ plus `env` for the duration (spawn hands os.environ to the new interpreter)."""
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextmanager
def _sigint_ignored():
    """Start children with SIGINT ignored: an ignored disposition survives exec, so Ctrl-C cannot
    reach the worker even while its interpreter boots.  SIGINT is blocked meanwhile, so a
    Ctrl-C in this window is delivered to us afterwards instead of lost."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may change handlers; the worker ignores SIGINT itself
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # installed outside Python: cannot be restored, leave it alone
        yield
        return
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


# --------------------------------------------------------------------------- in the worker


def _worker_main(conn, target: str, env: dict[str, str], parent_pid: int,
                 ready: str | None = None) -> None:
    global _CONN
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent(parent_pid)
    os.environ.update(env)
    try:
        func = _resolve(target)
    except Exception as e:
        conn.send(("start_error", _describe(e), traceback.format_exc()))
        return
    if ready:
        # before "ready": the parent's start_timeout_s bounds it, no call's timeout_s
        try:
            _resolve(ready)()
        except Exception as e:
            conn.send(("not_ready", _describe(e), _format_tb()))
            return
    conn.send(("ready", os.getpid()))
    _CONN = conn
    while True:
        try:
            kind, payload = conn.recv()
        except (EOFError, OSError):  # the parent closed the pipe or died
            return
        if kind == "stop":
            return
        try:
            reply = ("ok", func(payload))
        except BaseException as e:   # SystemExit or another BaseException of the target too
            reply = ("not_ready" if _not_ready(e) else "error", _describe(e), _format_tb())
        if _RETIRING is not None and reply[0] == "ok":
            reply = (*reply, _RETIRING)     # the parent discards this worker on reading it
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as e:  # the result does not pickle; nothing was written yet
            conn.send(("error", f"result of {target} cannot be sent back: {_describe(e)}", _format_tb()))
        if _RETIRING is not None:
            return


def _resolve(name: str):
    """The function "module:function" names, its module imported."""
    module, _, func = name.partition(":")
    return getattr(importlib.import_module(module), func)


def _not_ready(e: BaseException) -> bool:
    """Whether the target failed because this process cannot get ready, not because of the
    payload: the registry's PluginError (a plugin that loads in the parent but not here — a
    module on another path, an import that fails in a child process).  Plugins load on first
    use, so inside a call where no `ready` loaded them; as a payload's error every case, the
    built-in implementations' too, became an error record, kept by --resume.  Looked up, not
    imported: a target that never touched the registry cannot have raised it."""
    registry = sys.modules.get("normbench.strategies._registry")
    return registry is not None and isinstance(e, registry.PluginError)


def _format_tb() -> str:
    try:
        return traceback.format_exc()
    except BaseException:       # an exception whose __str__ raises
        return "(traceback unavailable)"


def _die_with_parent(parent_pid: int) -> None:
    """Exit if the parent dies, even while busy in a kernel that never returns."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            PR_SET_PDEATHSIG = 1
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except Exception:
            pass

    def watch() -> None:  # elsewhere (and as a backstop): poll for being re-parented
        while True:
            if os.getppid() != parent_pid:
                os._exit(1)
            time.sleep(1.0)

    if os.getppid() != parent_pid:  # died before prctl took effect
        os._exit(1)
    threading.Thread(target=watch, name="normbench-parent-watch", daemon=True).start()
