"""One sweep over every GPU of a host (`--gpus`) or over a Dask cluster (`--scheduler`).

The engine is Dask (`dask.distributed`; dask-cuda's LocalCUDACluster on one host: one worker
per GPU, CUDA_VISIBLE_DEVICES and CPU affinity set per worker).  This module is the driver:

* it starts the cluster (`--gpus`) or connects to one (`--scheduler`: its address must first
  answer as a Dask scheduler within HANDSHAKE_S, `Executor.reach`, asked before the run
  directory is made), and asks every worker for its GPU's facts (harness.gpuworker.facts)
  for meta.json;
* it schedules dynamically: a free worker gets the largest case left (the plan's estimated
  cost, harness.shard.case_costs); it keeps at most one case per worker in flight, each
  restricted to its host, so it knows what runs where (`Queue`, pure, tested with stand-in
  hosts);
* records stream back as they finish and `execute` (harness/run.py) alone writes them through
  the store: atomic records, the lock and resume hold unchanged;
* `--exclusive-below-us X`: a case whose estimated call time is below X µs waits until the
  shared cases are handed out and then runs with no other case of the run on its host (another
  process measuring there it cannot hold off: hostload.contention_note says so); so does a case
  measured next to others whose measured call took under X µs or was host-bound (the
  concurrent measurement is dropped for the exclusive one);
* a worker that dies while measuring (the Dask worker itself: kill -9) costs that case, an
  `error` record (the scheduler's allowed-failures is 0 on a cluster we start); the nanny
  replaces the worker.  Crashes and hangs inside a worker's measuring child are records of
  harness.gpuworker.  Ctrl-C stops the cluster we started; the cases finished by then are
  recorded (not a crash of a measuring child: the stop's signal may have caused it), those
  still running cancelled; the run directory resumes.  The workers of a
  cluster we start leave SIGINT and SIGTERM to the driver (a terminal and SLURM signal the
  whole process group; they are born with SIGINT blocked, Executor._making, and
  gpuworker.dask_setup, their preload, ignores it), so a stop prints one line, also one
  while the cluster starts (the cluster made so far is closed, Dask's logs silenced).

Without a GPU, `--gpus N` starts N stand-in workers (a LocalCluster of processes, a GPU
resource each) that run under the Triton interpreter — how the tests run it.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import statistics
import threading
import time
import uuid
from collections import Counter, deque
from dataclasses import asdict
from pathlib import Path

from rich.markup import escape

from normbench.harness import hostload, placement
from normbench.harness import plan as _plan
from normbench.harness.shard import case_costs

START_TIMEOUT_S = 300.0        # for the first worker (and its facts) to appear
NO_WORKER_TIMEOUT_S = 300.0    # with work left and no worker at all: give up
POLL_S = 0.02
STOP_FETCH_S = 10.0            # at a stop, for each finished task's result
REFRESH_S = 1.0
HANDSHAKE_S = 30.0             # for --scheduler's address to answer as a scheduler (reach)
WORKER_PRELOAD = "normbench.harness.gpuworker"   # its dask_setup: the workers of --gpus


_LOST = ("lost the Dask scheduler: the cases being measured were not recorded; the records "
         "kept are on disk, finish with --resume once the cluster is back")


class ClusterError(Exception):
    """The cluster cannot be used (extra missing, no worker, bad --gpus); one line."""


class _Unfetched(ClusterError):
    """A task that finished on the cluster but whose result could not be fetched: the
    connection broke (the scheduler's, as a rule: Executor._finished tells which)."""


def call_us(case) -> float:
    """A rough estimate of one call's time (µs) by the plan's GPU model: launch + bytes."""
    nbytes = _plan.bytes_moved(case.norm, case.rows, case.d, case.dtype, case.weight_dtype)
    return 1e6 * (_plan.GPU_LAUNCH_S + nbytes / _plan.GPU_COMPARE_BPS)


class Queue:
    """Which case a free slot of a host starts next.  Pure: hosts are names, cases opaque.

    Shared cases go largest cost first to any host with a free slot.  An exclusive case starts
    on a host only when nothing of ours runs there, and while it runs nothing else starts
    there; exclusive cases start once every shared case is handed out."""

    def __init__(self, cases, costs, call_us_of=None, exclusive_below_us=None):
        order = sorted(range(len(cases)), key=lambda k: (-costs[k], k))
        self.x = exclusive_below_us
        alone = (lambda c: call_us_of(c) < self.x) if self.x is not None else (lambda c: False)
        self.shared = deque(cases[k] for k in order if not alone(cases[k]))
        self.exclusive = deque(cases[k] for k in order if alone(cases[k]))
        self.running: Counter = Counter()
        self.alone_on: set = set()
        self.rerun: set = set()

    def take(self, host, capacity: int):
        """(case, exclusive) for a free slot on `host` (capacity: its workers), or None."""
        if host in self.alone_on or self.running[host] >= capacity:
            return None
        if self.shared:
            self.running[host] += 1
            return self.shared.popleft(), False
        if self.exclusive and self.running[host] == 0:
            self.running[host] += 1
            self.alone_on.add(host)
            return self.exclusive.popleft(), True
        return None

    def finished(self, host, case, exclusive: bool, rec: dict | None) -> bool:
        """Book the end of a case; False when its record is to be replaced by an exclusive
        re-measurement (queued here)."""
        self.running[host] -= 1
        if exclusive:
            self.alone_on.discard(host)
        if exclusive or self.x is None or rec is None or rec.get("status") != "ok":
            return True
        n = rec.get("concurrent_cases")
        t = rec.get("time_ms")
        if n is None or n <= 1 or t is None:
            return True
        if t * 1e3 < self.x or hostload.host_dominated(rec):
            self.exclusive.append(case)
            self.rerun.add(case)
            return False
        return True

    def give_back(self, host, case, exclusive: bool) -> None:
        """A case whose task was lost without a result (its host vanished): start it again."""
        self.running[host] -= 1
        if exclusive:
            self.alone_on.discard(host)
            self.exclusive.appendleft(case)
        else:
            self.shared.appendleft(case)

    def __bool__(self) -> bool:
        return bool(self.shared or self.exclusive)


def _check_scheduler(target: str) -> str:
    """The scheduler's address, or None for a scheduler file not written yet (in a folder
    that exists: reach() waits for it).  --scheduler names a scheduler file (JSON with its
    "address") or an address with a port of 1-65535 (tcp://host:8786, host:8786) whose scheme the
    client can use (_scheme_problem); anything else is refused before a run starts (a port
    out of range waited 30 s to fail to connect, tls:// without certificates ended in
    Dask's traceback)."""
    from distributed.comm import get_address_host_port, parse_address
    address = target
    if Path(target).is_file():
        for attempt in range(21):    # one just being written (dask's own Client retries too)
            try:
                address = json.loads(Path(target).read_text(encoding="utf-8"))["address"]
                break
            except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError):
                if attempt == 20:
                    raise ClusterError(f"--scheduler {target}: not a Dask scheduler file (JSON "
                                       "with an \"address\")") from None
                time.sleep(0.05)
        if not isinstance(address, str):
            raise ClusterError(f"--scheduler {target}: its \"address\" is not a string")
    elif _names_a_file(target):
        # a scheduler file not written yet (under SLURM the scheduler writes it a moment
        # later): reach() waits for it, as dask's Client(scheduler_file=) does; a folder that
        # is not there will never hold it
        folder = Path(target).parent
        if os.path.lexists(target):
            raise ClusterError(f"--scheduler {target}: not a file (give a scheduler file or "
                               "tcp://HOST:PORT)")
        if not folder.is_dir():
            raise ClusterError(f"--scheduler {target}: no such scheduler file, and its folder "
                               f"{folder} does not exist")
        return None
    try:
        scheme = parse_address(address, strict=False)[0]
        if (why := _scheme_problem(scheme)) is not None:
            raise ClusterError(f"--scheduler {target!r}: {why}")
        _, port = get_address_host_port(address)
        if not 0 < port < 65536:
            raise ValueError(f"port {port} is outside 1-65535")
    except ValueError as e:
        raise ClusterError(f"--scheduler {target!r}: not a scheduler address ({e}); give "
                           "tcp://HOST:PORT or a scheduler file") from None
    return address


def _names_a_file(target: str) -> bool:
    """--scheduler's value is a path (a scheduler file), not an address: no scheme, and a
    folder in it or a .json name (HOST:PORT has neither), and not a folder's (HOST:PORT/ is
    a mistyped address, not a file to wait for)."""
    return "://" not in target and not target.endswith(("/", os.sep)) and (
        "/" in target or os.sep in target or target.lower().endswith(".json"))


SCHEMES = ("tcp", "tls")        # the comms --scheduler takes (HOST:PORT is tcp)


def _scheme_problem(scheme: str) -> str | None:
    """Why the client cannot reach a scheduler over `scheme`, or None: tcp needs nothing,
    tls the client certificate of Dask's own TLS settings (distributed.comm.tls.ca-file and
    .client.cert in its config or DASK_DISTRIBUTED__COMM__TLS__* variables); the others
    (inproc, ws, ucx ...) normbench does not set up."""
    supported = "tcp://HOST:PORT, or tls://HOST:PORT with Dask's TLS settings"
    if scheme not in SCHEMES:
        return f"the {scheme}:// comm is not supported ({supported})"
    if scheme == "tls":
        from distributed.security import Security
        try:
            tls = Security().get_tls_config_for_role("client")
        except Exception as e:          # a Dask config it cannot read
            return f"Dask's TLS settings cannot be read ({type(e).__name__}: {e})"
        if not (tls.get("ca_file") and tls.get("cert")):
            return ("tls:// needs Dask's TLS settings: distributed.comm.tls.ca-file and "
                    "distributed.comm.tls.client.cert (and .key) in the Dask config, e.g. "
                    "DASK_DISTRIBUTED__COMM__TLS__CA_FILE")
    return None


def make_executor(*, gpus, scheduler, sweep, exclusive_below_us, dry_run=False):
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ClusterError("--gpus / --scheduler need Dask: install the cluster extra "
                           "('normbench[cluster]', or -e '.[cluster]' in a checkout: dask, "
                           "distributed, dask-cuda)") from None
    try:
        spec = placement.parse_gpus(gpus) if gpus is not None else None
    except placement.PlacementError as e:
        raise ClusterError(str(e)) from None
    address = _check_scheduler(scheduler) if scheduler is not None else None
    ex = Executor(spec, scheduler, sweep, exclusive_below_us)
    ex.address = address
    if spec is not None:
        ex.choose()
    return ex


class Executor:
    def __init__(self, gpus, scheduler, sweep, exclusive_below_us):
        self.gpus, self.scheduler, self.sweep = gpus, scheduler, sweep
        self.x = exclusive_below_us
        self.client = self.cluster = None
        self.address: str | None = None      # --scheduler's, from its file where it names one
        self.devices: list[str] | None = None
        self.standin = False
        self._facts: dict = {}
        self._stack: dict | None = None      # the run's facts (meta.json), once it started
        self._joined: list[dict] = []
        self._quiet = contextlib.ExitStack()

    def choose(self) -> None:
        """The GPUs of --gpus (stand-ins under the interpreter)."""
        from normbench import strategies
        if strategies.interpreted():
            if self.gpus == "all":
                raise ClusterError("--gpus all: no GPU here (under the interpreter, --gpus N "
                                   "runs N stand-in workers)")
            most = max(os.cpu_count() or 1, 2)     # two: the fewest that show a scale-out
            if self.gpus > most:
                raise ClusterError(f"--gpus {self.gpus}: no GPU here, and each stand-in worker "
                                   f"is a process of its own: at most {most} (the CPU cores)")
            self.standin, self.devices = True, [str(i) for i in range(self.gpus)]
            return
        import torch
        visible = placement.visible_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"),
                                         torch.cuda.device_count())
        try:
            self.devices = placement.choose(self.gpus, visible)
        except placement.PlacementError as e:
            raise ClusterError(str(e)) from None

    def reach(self, timeout_s: float = HANDSHAKE_S) -> None:
        """--scheduler: ClusterError unless its address answers as a Dask scheduler within
        timeout_s (_ask: a host that does not resolve or a port that refuses fails at once);
        the CLI asks before it makes the run directory, and exits 2: the address is the
        input's fault.  Nothing to ask for --gpus (start() makes the cluster)."""
        if self.scheduler is None:
            return
        if self.address is None:        # a scheduler file not there yet: wait for it
            deadline = time.monotonic() + timeout_s
            while not Path(self.scheduler).exists():
                if time.monotonic() >= deadline:
                    raise ClusterError(f"--scheduler {self.scheduler}: no such scheduler file "
                                       f"(waited {timeout_s:g} s for the scheduler to write it)")
                time.sleep(0.1)
            self.address = _check_scheduler(self.scheduler)
            timeout_s = max(deadline - time.monotonic(), 1.0)
        got: list = []

        def ask() -> None:
            try:
                got.append(_ask(self.address, timeout_s))
            except BaseException as e:      # its thread's: told by the caller
                got.append(e)
        # in a thread of its own, waited for at most timeout_s and a margin: a connect stuck
        # past its own timeout (a cancellation not taken) is left to that daemon thread
        asker = threading.Thread(target=ask, name="normbench-scheduler-probe", daemon=True)
        asker.start()
        asker.join(timeout_s + 5)
        said = f"--scheduler {self.scheduler}: "
        if not got or isinstance(got[0], (TimeoutError, asyncio.TimeoutError)):
            raise ClusterError(said + f"does not answer as a Dask scheduler within "
                               f"{timeout_s:g} s (is it the scheduler's port, not its "
                               "dashboard's or another server's?)")
        out = got[0]
        if isinstance(out, ClusterError):
            raise ClusterError(said + str(out))
        if isinstance(out, BaseException):
            raise ClusterError(said + "does not answer as a Dask scheduler ("
                               f"{type(out).__name__}: {' '.join(str(out).split())}"[:300]
                               + ")")
        if not isinstance(out, dict) or out.get("type") != "Scheduler":
            kind = out.get("type") if isinstance(out, dict) else type(out).__name__
            raise ClusterError(said + f"answers as a {kind}, not as a Dask scheduler")

    def estimate(self, serial_s: float) -> float:
        n = len(self.devices) if self.devices else 1
        return _plan.STARTUP_S + (serial_s - _plan.STARTUP_S) / n

    # -- start

    def start(self, console) -> dict:
        import dask
        from distributed import Client
        from distributed.utils import silence_logging_cmgr
        # this process's Dask logs at CRITICAL only while it runs, its cluster's close
        # included: a lost scheduler was logged by distributed.client at ERROR with a 30-line
        # traceback before the run's own line said so
        self._quiet.enter_context(silence_logging_cmgr(logging.CRITICAL))
        if self.devices is not None:
            # a worker's measuring child is a process of its own: workers must not be daemons;
            # each worker leaves a signal to the driver (gpuworker.dask_setup, its preload)
            preload = list(dask.config.get("distributed.worker.preload", default=None) or [])
            dask.config.set({"distributed.scheduler.allowed-failures": 0,
                             "distributed.scheduler.worker-saturation": 1.0,
                             "distributed.worker.daemon": False,
                             "distributed.worker.preload": preload + [WORKER_PRELOAD] * (
                                 WORKER_PRELOAD not in preload)})
            # dask's own logs at CRITICAL only: a worker whose scheduler has gone (the run
            # interrupted, the cluster closing) logs its failed heartbeat at ERROR with a
            # traceback; what a worker's death does to a case the run records itself
            common = dict(threads_per_worker=1, resources={"GPU": 1}, memory_limit=0,
                          dashboard_address=":0", silence_logs=50)
            with self._making():
                if self.standin:
                    from distributed import LocalCluster
                    self.cluster = LocalCluster(n_workers=len(self.devices), processes=True,
                                                **common)
                else:
                    try:
                        from dask_cuda import LocalCUDACluster
                    except Exception as e:      # dask-cuda, or the cuda.core it imports, missing
                        console.print("[yellow]note:[/] " + escape(
                            f"dask-cuda does not import ({type(e).__name__}: {e}); one worker "
                            "per GPU with CUDA_VISIBLE_DEVICES set, without dask-cuda's CPU "
                            "affinity"), soft_wrap=True)
                        self.cluster = _per_gpu_cluster(self.devices, common)
                    else:
                        self.cluster = LocalCUDACluster(
                            CUDA_VISIBLE_DEVICES=",".join(self.devices),
                            n_workers=len(self.devices), **common)
            self.client = Client(self.cluster)
            where = f"{len(self.devices)} {'stand-in ' if self.standin else ''}worker(s) on " \
                    f"{'this host' if self.standin else 'GPUs ' + ','.join(self.devices)}"
        else:
            target = self.scheduler
            kw = {"scheduler_file": target} if Path(target).is_file() else {"address": target}
            try:
                self.client = Client(timeout="30s", **kw)
            except (OSError, TypeError, ValueError) as e:   # TypeError: a TLS setting Dask refuses
                raise ClusterError(f"--scheduler {target}: cannot connect: "
                                   f"{type(e).__name__}: {' '.join(str(e).split())}"[:400]
                                   ) from None
            where = f"the cluster at {target}"
        console.print(f"Dask: {where}; dashboard {self.client.dashboard_link}", markup=False,
                      highlight=False, soft_wrap=True)
        try:
            self.client.wait_for_workers(1, timeout=START_TIMEOUT_S)
        except TimeoutError:
            raise ClusterError(f"no Dask worker joined within {START_TIMEOUT_S:g} s") from None
        if self.devices is not None:
            try:
                self.client.wait_for_workers(len(self.devices), timeout=START_TIMEOUT_S)
            except TimeoutError:
                raise ClusterError(f"{len(self.devices)} Dask workers were asked for; not all "
                                   f"joined within {START_TIMEOUT_S:g} s") from None
        console.print("measuring every worker's GPU (facts, copy ceiling) …")
        from normbench.harness import gpuworker
        try:
            got = self.client.run(gpuworker.facts_async)
        except Exception as e:
            raise ClusterError(f"a worker could not get ready (its implementations, its GPU): "
                               f"{type(e).__name__}: "
                               f"{' '.join(str(e).split())}"[:400]) from None
        self._facts = dict(got)          # worker address -> its facts
        check_stacks(self._facts)        # before any case: one stack for every record
        self._stack = summarize_facts(list(got.values()))
        return self._stack

    @contextlib.contextmanager
    def _making(self):
        """The cluster is made in here, SIGINT blocked in this thread: the threads the making
        starts (Dask's event loop, those that spawn the workers) inherit the mask, and so do
        the worker processes, from their first instruction — their preload
        (gpuworker.dask_setup) ignores SIGINT only once they have imported Dask, and a Ctrl-C
        to the process group as they booted ended each with a KeyboardInterrupt traceback.
        Blocked, not ignored: this process's other threads (numpy's BLAS pool) take a Ctrl-C
        meanwhile, and Python raises it here as the run's stop, where an ignored one is lost.
        multiprocessing's resource tracker is started first: starting it unblocks SIGINT in
        the thread that does (CPython's ensure_running), which would be Dask's loop.
        Whatever stops the making (that Ctrl-C, a SIGTERM) leaves the cluster made so far in
        self.cluster, for close(): left unclosed, Dask closed it at exit and logged it past
        the run's last line."""
        from multiprocessing import resource_tracker
        from distributed import SpecCluster
        resource_tracker.ensure_running()
        before = list(SpecCluster._instances)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            yield
        except BaseException:
            if self.cluster is None:
                self.cluster = next((c for c in list(SpecCluster._instances)
                                     if not any(c is b for b in before)), None)
            raise
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    def joined(self) -> list[dict]:
        """meta.gpus entries of the workers that joined since the start and have measured a
        case (a SLURM job's workers arrive over minutes), each given once."""
        out, self._joined = self._joined, []
        return out

    def _note_worker(self, fut) -> None:
        try:
            out = fut.result()
        except Exception:
            return
        w, f = out.get("worker"), out.get("facts")
        if w and f and w not in self._facts:
            if self._stack is not None:         # not kept: its case is left to --resume
                _check_stack(w, f, self._stack, "the run's workers",
                             "the case it measured is not recorded")
            self._facts[w] = f
            self._joined.append(gpu_entry(f))

    # -- run

    def _hosts(self) -> dict[str, int]:
        info = self.client.scheduler_info(n_workers=-1) if self.client.status == "running" \
            else {}
        if "workers" not in info:      # {} once the client has lost the scheduler
            raise ClusterError(_LOST)
        workers = info["workers"].values()
        gpu = [w for w in workers if (w.get("resources") or {}).get("GPU")]
        self.resources = {"GPU": 1} if gpu else None
        return Counter(w["host"] for w in (gpu or workers))

    def records(self, todo, settings, timeout_s):
        """(case, record) as each case finishes.  A stop (a signal, a fault) leaves the record
        last handed out (until the next is asked for), the records of tasks that had finished
        but were not yet handed out, and those held for their exclusive re-run, to unsaved()
        (measured: never lost); only tasks still running are cancelled."""
        self._gen = self._records(todo, settings, timeout_s)
        return self._gen

    def _records(self, todo, settings, timeout_s):
        from normbench.harness import gpuworker
        queue = Queue(todo, case_costs(todo, self.sweep), call_us, self.x)
        s = asdict(settings)
        in_flight: dict = {}
        # concurrent records waiting for their exclusive re-run, case key -> (case, record), and
        # the records of tasks found finished at a stop: on the executor, so that what a stop
        # leaves here is saved by the caller (unsaved())
        self._held, self._stopped, self._handed = {}, [], None
        self._check_known(todo)
        hosts, refreshed, lonely = self._hosts(), time.monotonic(), None
        try:
            while queue or in_flight:
                if time.monotonic() - refreshed > REFRESH_S:
                    hosts, refreshed = self._hosts(), time.monotonic()
                    self._reclaim(in_flight, hosts, queue)
                for host, n in hosts.items():
                    while (got := queue.take(host, n)) is not None:
                        case, alone = got
                        fut = self.client.submit(
                            gpuworker.measure_task, asdict(case), s, timeout_s,
                            key=f"normbench-{uuid.uuid4().hex}", pure=False, workers=[host],
                            allow_other_workers=False, resources=self.resources)
                        in_flight[fut] = (case, host, alone, time.monotonic())
                if not hosts and queue and not in_flight:
                    lonely = lonely or time.monotonic()
                    if time.monotonic() - lonely > NO_WORKER_TIMEOUT_S:
                        raise ClusterError(f"no Dask worker for {NO_WORKER_TIMEOUT_S:g} s "
                                           f"with {len(todo)} cases to measure")
                else:
                    lonely = None
                time.sleep(POLL_S)
                for fut in [f for f in in_flight if f.done()]:
                    if fut.cancelled():  # not by this run (_reclaim's are no longer in flight):
                        raise ClusterError(_LOST)   # the scheduler was lost, not the case
                    if (got := self._finished(fut, in_flight, queue, settings)) is not None:
                        # held here until the caller asks for the next: a signal before it
                        # stored this one leaves it to unsaved() (its store skips a kept one)
                        self._handed = got
                        yield got
                        self._handed = None
        except GeneratorExit:            # the caller stopped: it saves unsaved()
            self._stop(in_flight, queue, settings)
            raise
        except BaseException:
            self._stop(in_flight, queue, settings)
            yield from self._take_unsaved()     # measured: never lost
            raise

    def _check_known(self, todo) -> None:
        """ClusterError, before any case, where a worker that reported its facts does not know
        an implementation of the plan (a worker joining later fails the first such case:
        gpuworker.UnknownImplementation)."""
        plan = list(dict.fromkeys(c.implementation for c in todo))
        for worker, f in sorted(self._facts.items()):
            known = f.get("implementations")
            missing = [n for n in plan if known is not None and n not in known]
            if missing:
                raise ClusterError(
                    f"the worker {worker} on {f['where'].get('hostname')} does not know "
                    f"implementation(s) {', '.join(missing)} of the plan (NORMBENCH_PLUGINS and "
                    "the plugins installed must be those of the driver): no case measured; run "
                    "again once every worker has them")

    def _finished(self, fut, in_flight, queue, settings, stopping_s=None):
        """(case, record) of a finished task in flight; None where its record is held for an
        exclusive re-run.  ClusterError where the task stands for no measurement (_record)."""
        from normbench.harness.measure import failed_record
        case, host, alone, _ = in_flight[fut]
        try:
            rec = _record(fut, case, settings, failed_record, stopping_s, apart=alone)
        except _Unfetched as e:
            # the scheduler killed mid-run broke the fetch before the client's status said so:
            # the run's "lost the scheduler" line, not a case the cluster "could not run"
            raise ClusterError(_LOST if stopping_s is None and self._scheduler_gone()
                               else str(e)) from None
        self._note_worker(fut)
        del in_flight[fut]      # once fetched: a stop while it is fetched finds it in flight
        if not queue.finished(host, case, alone, rec):
            self._held[case.key] = (case, rec)
            return None
        prior = self._held.pop(case.key, None)
        if prior is not None and rec.get("status") != "ok":
            # a failed re-run does not replace a good measurement: kept, said so
            rec = _noted(prior[1], f"its exclusive re-run failed ({rec.get('status')}: "
                                   f"{rec.get('error')}); measured beside other cases")
        return case, rec

    def _scheduler_gone(self) -> bool:
        """Whether the client has lost the scheduler: its status says so, or the scheduler's
        address no longer answers Dask's identity request (within 5 s)."""
        if self.client is None or self.client.status != "running":
            return True
        try:
            _ask(self.client.scheduler.address, 5.0)
        except Exception:
            return True
        return False

    def _stop(self, in_flight, queue, settings) -> None:
        """The sweep stopped: every task already finished becomes a record (for unsaved()), as
        it would have at the next poll — a case that finished while the last record was being
        kept, or during the poll's sleep, is measured; the tasks still running are cancelled.
        Not where the scheduler is lost (nothing can be fetched), nor a task that stands for
        no measurement (a transport failure, a result not fetched within STOP_FETCH_S), nor a
        case whose measuring child died (the stop's SIGTERM, which SLURM sends to every
        process of the job, kills it too): those cases are left for --resume."""
        if self.client is None or self.client.status != "running":
            return
        for fut in [f for f in in_flight if f.done() and not f.cancelled()]:
            try:
                got = self._finished(fut, in_flight, queue, settings, stopping_s=STOP_FETCH_S)
            except ClusterError:
                in_flight.pop(fut)          # done: nothing to cancel
                continue
            if got is not None:
                self._stopped.append(got)
        self._cancel(in_flight)

    def _cancel(self, in_flight) -> None:
        """Cancel the tasks in flight, where the scheduler can still be told (a lost one would
        hold each cancel for the connect timeout)."""
        if self.client is not None and self.client.status == "running":
            for fut in in_flight:
                fut.cancel()

    def unsaved(self) -> list:
        """(case, record) of the last one records() handed over (the caller may have stopped
        before storing it: it skips one it holds), of the tasks found finished when records()
        stopped, and of the concurrent measurements still waiting for their exclusive re-run:
        the caller stores them (measured: never lost).  Closes the records() iterator first,
        so that its stop has run."""
        gen = getattr(self, "_gen", None)
        if gen is not None:
            gen.close()
        return self._take_unsaved()

    def _take_unsaved(self) -> list:
        handed, self._handed = getattr(self, "_handed", None), None
        out, self._stopped = getattr(self, "_stopped", []), []
        out = ([handed] if handed is not None else []) + out
        held = getattr(self, "_held", {})
        while held:
            out.append(self._unheld(held.popitem()[1]))
        return out

    @staticmethod
    def _unheld(item):
        case, rec = item
        return case, _noted(rec, "measured beside other cases: the run stopped before its "
                                 "exclusive re-run")

    def _reclaim(self, in_flight, hosts, queue) -> None:
        """Tasks pinned to a host with no worker left for a minute: start them elsewhere."""
        now = time.monotonic()
        for fut, (case, host, alone, since) in list(in_flight.items()):
            if host not in hosts and fut.status == "pending" and now - since > 60:
                fut.cancel()
                del in_flight[fut]
                queue.give_back(host, case, alone)

    def close(self) -> None:
        try:
            if self.client is not None and self.cluster is None \
                    and self.client.status == "running":
                # a cluster's workers outlive the run: each stops its measuring child, which
                # would keep its GPU's memory (a --gpus cluster's close ends the children)
                from normbench.harness import gpuworker
                self.client.run(gpuworker.close_async, on_error="ignore")
        except Exception:
            pass
        try:
            if self.client is not None:
                self.client.close(timeout=10)
        except Exception:
            pass
        try:
            if self.cluster is not None:
                self.cluster.close(timeout=30)
        except Exception:
            pass
        self.client = self.cluster = None
        self._quiet.close()


def _ask(address: str, timeout_s: float):
    """_identity's answer, after two quick looks that fail at once with their reason where
    Dask's connect retried for its whole timeout: a host that does not resolve, a port that
    refuses the connection (ClusterError)."""
    from distributed.comm import get_address_host_port
    deadline = time.monotonic() + timeout_s
    host, port = get_address_host_port(address)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as e:
        raise ClusterError(f"its host {host} does not resolve ({e.strerror or e})") from None
    try:
        socket.create_connection((host, port), timeout=timeout_s).close()
    except OSError as e:
        raise ClusterError(f"cannot connect to {host}:{port} ({e.strerror or e})") from None
    return asyncio.run(_identity(address, max(deadline - time.monotonic(), 0.1)))


async def _identity(address: str, timeout_s: float):
    """What the server at `address` says to Dask's `identity` request ({"type": "Scheduler",
    ...} from a scheduler), all of it within timeout_s: distributed.Client's timeout does not
    bound its handshake, and a port that accepts but does not answer as Dask does (the
    dashboard's, an HTTP server's) held `run --scheduler` for good."""
    from distributed.comm import connect
    from distributed.security import Security

    async def ask():
        comm = await connect(address, timeout=timeout_s,
                             **Security().get_connection_args("client"))
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()
    return await asyncio.wait_for(ask(), timeout_s)


def _per_gpu_cluster(devices: list[str], common: dict):
    """dask-cuda's layout without it: one nanny per GPU, that GPU first in its worker's
    CUDA_VISIBLE_DEVICES (no CPU affinity)."""
    from distributed import Nanny, Scheduler, SpecCluster
    opts = {"nthreads": common["threads_per_worker"], "resources": common["resources"],
            "memory_limit": common["memory_limit"], "silence_logs": common["silence_logs"]}
    workers = {f"gpu-{dev}": {"cls": Nanny, "options": {
        **opts, "name": f"gpu-{dev}",
        "env": {"CUDA_VISIBLE_DEVICES": ",".join(devices[i:] + devices[:i])}}}
        for i, dev in enumerate(devices)}
    return SpecCluster(workers=workers, scheduler={"cls": Scheduler, "options": {
        "dashboard_address": common["dashboard_address"]}}, silence_logs=common["silence_logs"])


def _noted(rec: dict, note: str) -> dict:
    old = rec.get("notes")
    return {**rec, "notes": f"{old}; {note}" if isinstance(old, str) and old else note}


def _record(fut, case, settings, failed_record, stopping_s=None, apart=False) -> dict:
    """The record of a finished task, or the failure it stands for.  stopping_s: the run is
    stopping — the result is fetched within stopping_s seconds, and a crash of the case's
    measuring child is ClusterError (no record: the stop's signal may have killed it).

    gpuworker.measure_task returns a case's every failure (an error, a crash or a hang of
    its measuring child) as {"failed": ...}; it raises only where it did not measure.  So a
    task that raised is the cluster's failure, not the case's — a scheduler or worker that
    cannot unpickle the task (normbench not importable there), a measuring child that cannot
    start: ClusterError, nothing recorded, the case left for --resume (as an `error` record
    every case failed so, and a resume skipped them all).  The one exception: the Dask worker
    died while it ran the task (KilledWorker) — the case's own crash, an `error` record.  A
    worker that does not know the case's implementation (gpuworker.UnknownImplementation: a
    plugin its node lacks) is the cluster's failure too: recorded as an `error`, --resume
    skipped a case never measured.  A task that ran but whose result could not be fetched
    (the connection broke: an OSError while the future is "finished") is _Unfetched, which
    Executor._finished tells apart as the lost scheduler or a broken connection.  apart: the case ran with none of this run's beside it
    on its host (exclusive: Queue), so its neighbours were another process's (the note of
    hostload.contention_note)."""
    from normbench.harness.measure import Settings
    try:
        out = fut.result(stopping_s) if stopping_s is not None else fut.result()
    except Exception as e:
        name, text = type(e).__name__, " ".join(str(e).split())
        if name in ("CancelledError", "FutureCancelledError"):
            # cancelled by none of this run's own (_reclaim's are no longer in flight): the
            # client lost the scheduler between the poll's cancelled() and result()
            raise ClusterError(_LOST) from None
        if getattr(fut, "status", "error") in ("finished", "lost") and isinstance(e, OSError):
            # the task ran (a task that raised is "error"); fetching its result broke off
            # (CommClosedError, a reset connection): nothing measured reached this process
            raise _Unfetched(f"the connection to the cluster broke while case {case.key}'s "
                             f"result was fetched ({name}: {text[:300]}): nothing recorded for "
                             "it; the records kept are on disk, finish with --resume") from None
        if name != "KilledWorker":
            need = ("every worker needs the plan's implementations" if name ==
                    "UnknownImplementation" else "the scheduler and every worker need "
                    "normbench importable")
            raise ClusterError(f"the cluster could not run case {case.key} ({name}: {text[:300]}): "
                               f"nothing recorded for it ({need}); the records kept are on disk, "
                               "finish with --resume") from None
        return failed_record(case, settings, "error",
                             "the Dask worker died while measuring it (killed, a segfault or out "
                             f"of memory): {text}"[:500], None)
    if "record" in out:
        rec = out["record"]
    elif stopping_s is not None and out.get("crashed"):
        raise ClusterError(f"case {case.key}: its measuring child died as the run stopped")
    else:
        status, error = out["failed"]
        rec = failed_record(case, Settings(**out["settings"]), status, error, out["duration_s"],
                            out.get("partial"))
    return hostload.annotate(rec, out["where"], out["concurrent_cases"], apart)


def gpu_entry(f: dict) -> dict:
    """One worker's line of meta.gpus: where it is, its model, its copy ceiling."""
    return dict(f["where"], device_name=f["device_name"], copy_ceiling_gbps=f["copy_ceiling_gbps"])


def _stack(f: dict) -> dict:
    """What a worker measures with that every worker of a run must share, as the shards of a
    merge must (harness/merge.check): its commit, its timer (a GPU's or the interpreter's),
    every version and plugin."""
    from normbench.harness.merge import versions
    return {"git_commit": f.get("git_commit"), "interpreted": bool(f.get("interpreted")),
            **versions(f)}


def _check_stack(worker: str, f: dict, run: dict, against: str,
                 lost: str = "no case measured") -> None:
    """ClusterError where the worker's facts `f` differ in _stack from `run` (another
    worker's facts, or the run's meta.json: `against` names it) — the run's records would say
    they were measured with what this worker's were not."""
    from normbench.harness.merge import _full_commits
    mine, theirs = _stack(f), _stack(run)
    for key in sorted(mine.keys() | theirs.keys(), key=lambda k: (k != "git_commit", k)):
        a, b = mine.get(key), theirs.get(key)
        if key == "git_commit":
            a, b = _full_commits([a, b])
        if a != b:
            host = (f.get("where") or {}).get("hostname")
            raise ClusterError(
                f"the worker {worker} on {host} measures with {key}={mine.get(key)!r}, "
                f"{against} with {theirs.get(key)!r}: every worker of a run needs one "
                f"commit, the same versions and plugins ({lost}); run again once they have")
    _check_env(worker, f, run, against, lost)


def _check_env(worker: str, f: dict, run: dict, against: str, lost: str) -> None:
    """ClusterError where the worker's environment (its facts' TRITON_*/CUDA_*/PYTORCH_*/
    NORMBENCH_* variables) holds a value the driver refuses in its own (env.told_problem:
    NORMBENCH_FAST_LAUNCH=maybe ran the fast launch), or differs from `run`'s but in
    env.PER_WORKER — meta.json records one worker's environment for every record, so a
    worker with NORMBENCH_FAST_LAUNCH=0 or a TRITON_*/PYTORCH_* setting of its own measured
    cases recorded as measured without it."""
    from normbench.harness import env
    mine, theirs = f.get("environment"), run.get("environment")
    if not isinstance(mine, dict):
        return
    host = (f.get("where") or {}).get("hostname")
    if why := env.told_problem(mine):
        raise ClusterError(f"the worker {worker} on {host}: {why} ({lost}); run again once "
                           "it has")
    if not isinstance(theirs, dict):
        return

    def said(v):
        return "unset" if v is None else repr(v)[:80]
    for key in sorted((mine.keys() | theirs.keys()) - set(env.PER_WORKER)):
        if mine.get(key) != theirs.get(key):
            raise ClusterError(
                f"the worker {worker} on {host} measures with environment {key} "
                f"{said(mine.get(key))}, {against} with {said(theirs.get(key))}: every worker "
                "of a run needs the same TRITON_*/CUDA_*/PYTORCH_*/NORMBENCH_* variables, which "
                f"meta.json records once ({lost}); run again once they have")


def check_stacks(facts: dict[str, dict]) -> None:
    """ClusterError unless every worker ({address: its facts}) measures with one commit, one
    timer, the same versions and plugins (_stack) and the same environment (_check_env; each
    worker's checked for values the driver refuses in its own): meta.json records one
    worker's (merge refuses shards whose commit, versions or plugins differ so)."""
    if not facts:
        return
    (first, ref), *others = sorted(facts.items())
    against = f"the worker {first} on {(ref.get('where') or {}).get('hostname')}"
    _check_env(first, ref, ref, against, "no case measured")
    for worker, f in others:
        _check_stack(worker, f, ref, against)


def summarize_facts(facts: list[dict]) -> dict:
    """meta.json facts from every worker's: one describe(), the GPUs, the median ceiling; a fact
    they differ in is null, each worker's own in its `gpus` entry (`workers_differ`)."""
    if not facts:
        raise ClusterError("no Dask worker reported its GPU")
    facts = sorted(facts, key=lambda f: (f["where"]["hostname"], f["where"]["gpu_index"] or 0))
    meta = {k: v for k, v in facts[0].items()
            if k not in ("where", "peak_tbps", "implementations")}
    models = list(dict.fromkeys(f["device_name"] for f in facts))
    meta["device_name"] = models[0] if len(models) == 1 else "mixed: " + ", ".join(models)
    meta["gpus"] = [gpu_entry(f) for f in facts]
    ceilings = [f["copy_ceiling_gbps"] for f in facts if f["copy_ceiling_gbps"]]
    meta["copy_ceiling_gbps"] = statistics.median(ceilings) if ceilings else None
    meta["hostname"] = ", ".join(dict.fromkeys(f["where"]["hostname"] for f in facts))
    # dirty if any worker's tree is, unknown if any worker's is (merge's rule for shards)
    dirty = [f.get("git_dirty") for f in facts]
    meta["git_dirty"] = True if True in dirty else None if None in dirty else False
    meta["workers"] = len(facts)
    # a fact the workers do not share (a node's CPU, a GPU's clocks, power limit or UUID) is
    # null at the top, each worker's own in its `gpus` entry, and named in `workers_differ`
    # (as merge does for its shards); the stack and environment are checked alike already
    # (check_stacks), the rest above are the workers' together
    own = ("device_name", "gpus", "copy_ceiling_gbps", "hostname", "git_dirty", "workers",
           "environment")
    differ = sorted(k for k in meta if k not in own
                    and any(f.get(k) != meta[k] for f in facts[1:]))
    for k in differ:
        meta[k] = None
        for entry, f in zip(meta["gpus"], facts):
            entry[k] = f.get(k)
    if differ:
        meta["workers_differ"] = differ
    return meta
