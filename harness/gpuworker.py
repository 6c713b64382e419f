"""The worker side of a distributed run: what a Dask worker does with one case.

A Dask worker owns one GPU (dask-cuda puts it first in the worker's CUDA_VISIBLE_DEVICES).  It
does not measure in its own process: it keeps one harness.isolate.Worker child, started on its
first case and reused for every later one (compiled kernels and the peers' JIT caches stay
warm), and hands each case to it with the config's timeout_s.  So a case that segfaults, runs
out of memory or is killed costs that case (an `error` record with the exit signal) and a case
that hangs costs a `timeout` record and a fresh child; the Dask worker itself lives on.  The
first call of a run (Executor.start: facts_async) also measures the child's GPU, afresh: its
facts for meta.json and its own copy ceiling, which every record it measures uses for
`pct_copy`.

The Dask worker process does not import torch: records of cases that produced none (timeout,
crash) are completed on the driver from what `measure_task` returns.
"""
from __future__ import annotations

import os
import threading
import time

from normbench.harness import hostload

FACTS_TIMEOUT_S = 600.0
CLOSE_WAIT_S = 10.0
_lock = threading.Lock()
_state: dict = {}


def _child():
    import multiprocessing
    from normbench.harness.isolate import Worker
    if multiprocessing.current_process().daemon:
        raise RuntimeError("this Dask worker is a daemon process, which may not start the "
                           "child that measures: start workers with "
                           "DASK_DISTRIBUTED__WORKER__DAEMON=False")
    w = _state.get("worker")
    if w is None:
        # TRITON_INTERPRET as this worker has it, unset where it is unset: the child's facts
        # (meta's environment) recorded the "0" once set here, which a plain run does not
        w = Worker("normbench.harness.gpuchild:child", env={"NORMBENCH_QUIET": "1"},
                   ready="normbench.harness.measure:prepare_worker")
        _state["worker"] = w
    return w


def facts(fresh: bool = False) -> dict:
    """This worker's GPU: env.describe(), hostname / gpu_index / gpu_uuid, copy ceiling, peak
    (measured in its child, kept for the run's cases).  fresh: a run starts here, and they
    are measured for it in a fresh child (_drop).  A --scheduler cluster's workers outlive
    their runs: kept for the worker's life, a later run at another commit or from a dirty
    tree recorded the first run's git_commit, git_dirty and copy ceiling in meta.json."""
    with _lock:
        if fresh:
            _drop()
        if "facts" not in _state:
            _state["facts"] = _child().call(("facts", None), timeout_s=FACTS_TIMEOUT_S)
        return _state["facts"]


async def facts_async() -> dict:
    """facts(fresh=True) for Client.run as a run starts, off the worker's event loop (its
    heartbeats go on)."""
    import asyncio
    return await asyncio.to_thread(facts, True)


class UnknownImplementation(RuntimeError):
    """The case's implementation is not registered here (a plugin the driver has and this
    node lacks): the cluster's failure, not the case's (distributed._record)."""


def measure_task(case: dict, settings: dict, timeout_s: float) -> dict:
    """One case on this worker's GPU -> {"record": ...} or {"failed": (status, error), ...}.
    UnknownImplementation where this worker does not know the case's implementation."""
    from normbench.harness.isolate import WorkerCrashed, WorkerStartError, WorkerTimeout
    f = facts()
    known = f.get("implementations")
    if known is not None and case["implementation"] not in known:
        w = f["where"]
        raise UnknownImplementation(
            f"the worker {_address() or ''} on {w.get('hostname')} does not know implementation "
            f"{case['implementation']!r} (NORMBENCH_PLUGINS and the plugins installed must be "
            "those of the driver)")
    s = dict(settings, device_name=f["device_name"], copy_gbps=f["copy_ceiling_gbps"])
    if f["device_name"] != settings["device_name"] and not f["interpreted"]:
        s["peak_tbps"] = f["peak_tbps"]
    with _lock:
        w = _child()
        t0 = time.perf_counter()
        with hostload.track() as load:
            try:
                out = {"record": w.call(("measure", (case, s)), timeout_s=timeout_s)}
            except WorkerStartError:
                raise
            except WorkerTimeout as e:
                out = {"failed": ("timeout", str(e)), "partial": getattr(e, "partial", None)}
            except WorkerCrashed as e:      # "crashed": a stopping driver keeps no record
                out = {"failed": ("error", f"worker crashed: {e}"), "crashed": True,
                       "partial": getattr(e, "partial", None)}
            except RuntimeError as e:       # measure() itself raised: a bug, still a record
                out = {"failed": ("error", " ".join(str(e).split())[:500])}
        out.update(duration_s=time.perf_counter() - t0, where=f["where"],
                   concurrent_cases=load.count, settings=s, facts=f, worker=_address())
    return out


def dask_setup(worker) -> None:
    """The preload of the workers of a cluster `--gpus` starts: the driver alone answers a
    signal.  A terminal's Ctrl-C and SLURM's SIGTERM reach the run's whole process group,
    these workers included: SIGINT ended each with a KeyboardInterrupt traceback, and Dask's
    comm loggers printed as the cluster closed (a worker's silence_logs lasts only until it
    closes).  So SIGINT is ignored (the measuring child ignores it too: harness.isolate) and
    unblocked (it was blocked from the worker's birth: harness.distributed.Executor._making),
    SIGTERM is caught and does nothing (a handler, not SIG_IGN, which the measuring child
    would inherit: a timeout's stop sends it SIGTERM), and Dask's loggers here say nothing
    below CRITICAL.  The driver closes the cluster; a worker whose driver is gone exits
    (Dask's parent watch)."""
    import logging
    import signal
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, _ignore)
    except ValueError:          # not the main thread: a worker of this process, no process
        pass
    else:                       # blocked until now (Executor._making): ignored from here on
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _ignore(signum, frame) -> None:
    pass


def _address() -> str | None:
    """This Dask worker's address (a worker that joined after the start is known by it)."""
    try:
        from distributed import get_worker
        return get_worker().address
    except Exception:           # not in a Dask worker (a test calling measure_task)
        return None


def close() -> None:
    """Stop the child and forget the facts measured in it.  A --scheduler run's driver has
    every worker do it as the run ends (close_async): those workers outlive the run, and an
    idle child kept its GPU's CUDA context and cached memory, which a later run's free-memory
    check saw, and the facts, which a later run recorded as its own.  The workers of
    a --gpus cluster end with the run, and their children with them (isolate's parent watch).
    Between cases (the lock measure_task holds): a case another run started here is measured
    whole, and the next one starts a fresh child."""
    with _lock:
        _drop()


def _drop() -> None:
    """Forget this worker's facts and stop its child (the caller holds _lock).  Both at a
    run's start too (facts(fresh=True)): a driver killed with kill -9 never had close() run,
    and its child, started for an earlier tree, runs that tree's code in that environment."""
    _state.pop("facts", None)
    w = _state.pop("worker", None)
    if w is not None:
        w.close()


async def close_async(wait_s: float = CLOSE_WAIT_S) -> None:
    """close() for Client.run, off the worker's event loop, waited for at most wait_s: a task
    of a stopped run cannot be cancelled once it runs, and the child it measures in closes
    when that case ends (close waits for it), not while the driver waits."""
    import asyncio
    try:
        await asyncio.wait_for(asyncio.to_thread(close), wait_s)
    except asyncio.TimeoutError:
        pass
