"""The Dask executor (harness/distributed.py, harness/gpuworker.py) on a real local cluster of
two stand-in worker processes under the Triton interpreter, the GPU placement and the
exclusive scheduling with stand-in devices and hosts, and the host-load count
(harness/hostload.py)."""
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from normbench.harness import hostload
from normbench.harness.placement import PlacementError, choose, parse_gpus, physical_index, visible_gpus
from normbench.harness.store import load_records

from tests.test_shard import ROOT, same_records, write_config
from tests import forkcli

ENV = {**os.environ, "NORMBENCH_PLUGINS": "tests.fake_impls,tests.scaleout_impls",
       "NORMBENCH_QUIET": "1", "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
needs_dask = pytest.mark.skipif(
    __import__("importlib").util.find_spec("distributed") is None,
    reason="Dask is not installed (pip install -e '.[cluster]')")


@pytest.fixture(autouse=True)
def own_hostload_dir(tmp_path, monkeypatch):
    """Each test counts only its own cases' overlaps (not another test run's on this host)."""
    monkeypatch.setitem(ENV, "NORMBENCH_HOSTLOAD_DIR", str(tmp_path / "hostload"))


def cli(*args, timeout=300, env=ENV):
    return forkcli.run([sys.executable, ROOT / "run_bench.py", *args], cwd=ROOT, env=env,
                       text=True, timeout=timeout)


def popen(*args, env=ENV, **kw):
    return subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), *map(str, args)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, **kw)


def wait_for_records(out, n, p, limit_s=240):
    """True once `out` holds n records; False past limit_s or once p (a Popen, or anything whose
    poll() is None while the run goes on) has ended."""
    deadline = time.time() + limit_s
    while time.time() < deadline and p.poll() is None:
        try:
            if len(load_records(out)) >= n:
                return True
        except Exception:
            pass
        time.sleep(0.3)
    return False


# --------------------------------------------------------------------------- pure parts

def test_gpu_placement_with_stand_in_devices():
    assert visible_gpus(None, 4) == ["0", "1", "2", "3"]
    assert visible_gpus("2,3", 2) == ["2", "3"]
    assert visible_gpus("1,,3", 3) == ["1"]                  # CUDA stops at an empty entry
    assert visible_gpus("GPU-aa,GPU-bb", 2) == ["GPU-aa", "GPU-bb"]
    assert choose("all", ["2", "3"]) == ["2", "3"]
    assert choose(1, ["2", "3"]) == ["2"]
    with pytest.raises(PlacementError, match="only 2 GPU"):
        choose(3, ["2", "3"])
    with pytest.raises(PlacementError, match="no GPU"):
        choose("all", [])
    assert parse_gpus("all") == "all" and parse_gpus("2") == 2 and parse_gpus(" 2 ") == 2
    # a count in ASCII digits, as --shard's and a config's: int() also read '２', '2_0' (20
    # workers) and '+2'
    for bad in ("0", "-1", "two", "２", "2_0", "+2", "٣", ""):
        with pytest.raises(PlacementError):
            parse_gpus(bad)
    assert physical_index("3") == 3 and physical_index("GPU-aa") is None


def test_queue_largest_first_and_exclusive_cases_alone():
    from normbench.harness.distributed import Queue
    cases = ["a", "b", "c", "d", "e"]
    costs = [1, 5, 3, 2, 4]
    call = {"a": 10, "b": 500, "c": 20, "d": 900, "e": 800}
    q = Queue(cases, costs, call.get, exclusive_below_us=100)
    # shared cases, largest cost first, to whichever host has a free slot
    assert q.take("h1", 2) == ("b", False)
    assert q.take("h1", 2) == ("e", False)
    assert q.take("h1", 2) is None                            # both slots busy
    assert q.take("h2", 2) == ("d", False)
    # only exclusive cases left (c, a): not on a host where something runs
    assert q.take("h2", 2) is None
    assert q.finished("h2", "d", False, {"status": "ok", "concurrent_cases": 3, "time_ms": 0.9})
    assert q.take("h2", 2) == ("c", True)
    assert q.take("h2", 2) is None                            # alone while c runs
    assert q.take("h1", 2) is None                            # h1 still busy
    q.finished("h1", "b", False, {"status": "ok", "concurrent_cases": 2, "time_ms": 0.5})
    # measured concurrently and faster than the threshold: re-measured alone, not kept
    assert not q.finished("h1", "e", False, {"status": "ok", "concurrent_cases": 2,
                                              "time_ms": 0.05})
    assert q.take("h1", 2) == ("a", True)
    q.finished("h1", "a", True, {"status": "ok", "concurrent_cases": 1, "time_ms": 0.01})
    assert q.take("h1", 2) == ("e", True)
    assert q.finished("h1", "e", True, {"status": "ok", "concurrent_cases": 1, "time_ms": 0.05})
    q.finished("h2", "c", True, None)
    assert not q and q.take("h1", 2) is None
    # without a threshold nothing waits and nothing is re-measured
    q = Queue(cases, costs, call.get)
    assert [q.take("h", 9)[0] for _ in cases] == ["b", "e", "c", "d", "a"]
    assert q.finished("h", "a", False, {"status": "ok", "concurrent_cases": 5, "time_ms": 1e-6})


def test_hostload_counts_overlapping_cases(tmp_path):
    assert hostload.most_at_once([(0, 10), (2, 3), (4, 5)], 0, 10) == 2
    assert hostload.most_at_once([(0, 1), (2, 3)], 1.5, 1.8) == 0
    assert hostload.most_at_once([(0, 4), (1, 5), (2, 6)], 3, 3.5) == 3
    with hostload.track(tmp_path) as outer:
        with hostload.track(tmp_path) as a:
            pass
        with hostload.track(tmp_path) as b:
            pass
    assert (a.count, b.count, outer.count) == (2, 2, 2)
    with hostload.track(tmp_path) as alone:
        (tmp_path / "busy" / "999999-1").write_text("0.0 999999\n")     # a dead process's
    assert alone.count == 1 and not (tmp_path / "busy" / "999999-1").exists()
    assert list((tmp_path / "busy").iterdir()) == []


def test_workers_at_another_commit_or_versions_are_refused_not_recorded_as_one():
    """meta.json of a --scheduler run took the first worker's commit, versions and plugins:
    a worker at another commit (or torch, or without a plugin) measured its cases, recorded
    as measured with the first's.  Every worker must share them: refused before any case
    (ClusterError: exit 1), and a worker joining mid-run at another commit stops the run, its
    case not recorded; the dirty flag is any worker's."""
    from concurrent.futures import Future
    from normbench.harness.distributed import (ClusterError, Executor, check_stacks,
                                               summarize_facts)

    def facts(commit="2792e69de66e", dirty=False, **more):
        return {"device_name": "GPU", "interpreted": False, "git_commit": commit,
                "git_dirty": dirty, "torch_version": "2.9", "plugins": [],
                "package_versions": {"numpy": "2.3"}, "copy_ceiling_gbps": 1.0,
                "where": {"hostname": "n1", "gpu_index": 0, "gpu_uuid": None}, **more}
    check_stacks({"tcp://a:1": facts(), "tcp://b:1": facts("2792E69", dirty=True)})
    assert summarize_facts([facts(), facts(dirty=True)])["git_dirty"] is True
    assert summarize_facts([facts(), facts(dirty=None)])["git_dirty"] is None
    plugin = {"source": "NORMBENCH_PLUGINS", "module": "nb_p", "entry_point": None,
              "distribution": None, "version": None}
    for other, needle in ((facts("aaaaaaa"), "git_commit='aaaaaaa'"),
                          (facts(torch_version="2.10"), "torch_version='2.10'"),
                          (facts(plugins=[plugin]), "plugins.nb_p="),
                          (facts(package_versions={"numpy": "2.4"}),
                           "package_versions.numpy='2.4'")):
        with pytest.raises(ClusterError, match="the worker tcp://b:1 on n1 measures with "
                           + re.escape(needle) + ".*the worker tcp://a:1 on n1"):
            check_stacks({"tcp://a:1": facts(), "tcp://b:1": other})
    ex = Executor(None, None, None, None)
    ex._stack = summarize_facts([facts()])
    fut = Future()
    fut.set_result({"worker": "tcp://c:1", "facts": facts("bbbbbbb")})
    with pytest.raises(ClusterError, match="tcp://c:1 .*'bbbbbbb'.*not recorded"):
        ex._note_worker(fut)
    assert ex.joined() == []
    fut = Future()
    fut.set_result({"worker": "tcp://d:1", "facts": facts()})
    ex._note_worker(fut)
    assert [g["hostname"] for g in ex.joined()] == ["n1"]


def test_workers_whose_environment_differs_or_is_refused_are_refused_not_recorded_as_one():
    """meta.json of a --scheduler run recorded the first worker's environment for every
    record: a worker started with NORMBENCH_FAST_LAUNCH=0 (or a TRITON_*/PYTORCH_* setting of
    its own, or NORMBENCH_FAST_LAUNCH=maybe, which the driver refuses in its own) measured
    cases recorded as measured without it, nothing said.  Refused as check_stacks refuses
    other versions, naming the worker, the variable and both values; the variables a worker
    legitimately has of its own (CUDA_VISIBLE_DEVICES, set per GPU by dask-cuda) are not."""
    from concurrent.futures import Future
    from normbench.harness.distributed import (ClusterError, Executor, check_stacks,
                                               summarize_facts)

    def facts(**environment):
        return {"device_name": "GPU", "interpreted": False, "git_commit": "2792e69de66e",
                "git_dirty": False, "torch_version": "2.9", "plugins": [],
                "package_versions": {}, "copy_ceiling_gbps": 1.0,
                "environment": {"TRITON_INTERPRET": "0", **environment},
                "where": {"hostname": "n1", "gpu_index": 0, "gpu_uuid": None}}
    check_stacks({"tcp://a:1": facts(CUDA_VISIBLE_DEVICES="0,1"),
                  "tcp://b:1": facts(CUDA_VISIBLE_DEVICES="1,0")})
    for other, needle in ((facts(NORMBENCH_FAST_LAUNCH="0"),
                           "environment NORMBENCH_FAST_LAUNCH '0', the worker tcp://a:1 on n1 "
                           "with unset"),
                          (facts(TRITON_INTERPRET="1"),
                           "environment TRITON_INTERPRET '1', .* with '0'"),
                          (facts(PYTORCH_NO_CUDA_MEMORY_CACHING="1"),
                           "environment PYTORCH_NO_CUDA_MEMORY_CACHING '1'")):
        with pytest.raises(ClusterError, match="^the worker tcp://b:1 on n1 measures with "
                           + needle):
            check_stacks({"tcp://a:1": facts(), "tcp://b:1": other})
    for bad in ({"tcp://a:1": facts(NORMBENCH_FAST_LAUNCH="maybe")},
                {"tcp://a:1": facts(NORMBENCH_FAST_LAUNCH="maybe"),
                 "tcp://b:1": facts(NORMBENCH_FAST_LAUNCH="maybe")}):
        with pytest.raises(ClusterError, match="^the worker tcp://a:1 on n1: environment "
                           "NORMBENCH_FAST_LAUNCH: 'maybe' is not 0 or 1"):
            check_stacks(bad)
    ex = Executor(None, None, None, None)
    ex._stack = summarize_facts([facts()])
    fut = Future()
    fut.set_result({"worker": "tcp://c:1", "facts": facts(TRITON_DEBUG="1")})
    with pytest.raises(ClusterError, match="tcp://c:1 .*TRITON_DEBUG '1'.*not recorded"):
        ex._note_worker(fut)
    assert ex.joined() == []


def test_contention_note():
    rec = {"status": "ok", "concurrent_cases": 2, "time_ms": 0.05, "hostname": "h"}
    assert "2 cases ran on h" in hostload.contention_note(rec)
    assert hostload.contention_note({**rec, "concurrent_cases": 1}) is None
    assert hostload.contention_note({**rec, "time_ms": 5.0}) is None
    assert hostload.contention_note({**rec, "time_ms": 5.0, "gpu_time_ms": 1.0})   # host-bound
    assert hostload.contention_note({**rec, "time_ms": 0.1, "gpu_time_ms": 0.09}) is None


def test_a_contended_record_s_note_says_whose_the_neighbours_may_be():
    """Every host-bound record measured beside other cases said "--exclusive-below-us runs
    such cases alone" — a plain run's too, which refuses the flag (it measures one case at a
    time: its neighbours were another process's, which the flag, counting only the run's own
    cases, never holds off).  A plain run's record, and a --gpus/--scheduler run's measured
    alone, say another process loaded the host and to time it again with nothing else
    measuring there; one measured beside the run's own cases may be either, and says both."""
    from types import SimpleNamespace
    from normbench.harness import run
    from normbench.harness.distributed import Executor, Queue
    rec = {"status": "ok", "concurrent_cases": 3, "time_ms": 0.05}
    where = {"hostname": "h", "gpu_index": 0, "gpu_uuid": None}
    other = "none of the others this run's"
    plain = run._annotated((None, dict(rec), SimpleNamespace(count=3), where))["notes"]
    assert other in plain and "nothing else measuring there" in plain, plain
    assert "exclusive-below-us" not in plain

    class Done:
        def result(self):
            return {"record": dict(rec), "where": where, "concurrent_cases": 3}
    ex = Executor(gpus=None, scheduler="tcp://x:1", sweep=None, exclusive_below_us=None)
    ex._held = {}
    case = SimpleNamespace(key="k")
    for alone in (True, False):
        fut = Done()
        _, got = ex._finished(fut, {fut: (case, "h", alone, 0.0)}, Queue([case], [1.0]), None)
        assert "ran on h" in got["notes"]
        assert (other in got["notes"]) is alone
        assert ("--exclusive-below-us" in got["notes"]) is not alone, got["notes"]


# --------------------------------------------------------------------------- a real cluster

@pytest.fixture(scope="module")
def serial(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("serial")
    cfg = write_config(tmp / "c.yaml")
    r = cli("run", cfg, "--out", tmp / "serial", "--no-report")
    assert r.returncode == 0, r.stderr
    return cfg, load_records(tmp / "serial")


@needs_dask
def test_two_workers_give_the_serial_record_set(serial, tmp_path):
    cfg, base = serial
    r = cli("run", cfg, "--gpus", "2", "--out", tmp_path / "d", "--no-report")
    assert r.returncode == 0, r.stderr
    df = load_records(tmp_path / "d")
    same_records(df, base, exact_errors=False)
    assert (df["hostname"] == base["hostname"].iloc[0]).all()
    assert df["concurrent_cases"].between(1, 2).all() and (df["concurrent_cases"] == 2).any()
    meta = json.loads((tmp_path / "d" / "meta.json").read_text())
    assert meta["workers"] == 2 and len(meta["gpus"]) == 2 and meta["completed"]
    ceilings = {g["copy_ceiling_gbps"] for g in meta["gpus"]}
    # pct_copy from the measuring worker's own ceiling: gbps / pct_copy is one of them
    implied = {round(g / p * 100, 6) for g, p in zip(df["gbps"], df["pct_copy"])}
    assert implied <= {round(c, 6) for c in ceilings}


@needs_dask
def test_a_killed_worker_a_segfault_and_a_hang_cost_one_case_each(tmp_path):
    # timeout_s: a loaded 2-core machine takes up to ~4 s for a first interpreted call
    cfg = write_config(tmp_path / "c.yaml", rows=[5, 9], norm=["layernorm"], timeout_s=12,
                       implementations=["torch", "disjoint_block", "test_segfault", "test_hang"])
    out = tmp_path / "d"
    import psutil
    p = popen("run", cfg, "--gpus", "2", "--out", out, "--no-report")
    try:
        assert wait_for_records(out, 2, p), p.communicate()[1] if p.poll() is not None else ""
        workers = [c for c in psutil.Process(p.pid).children() if c.children()]
        assert workers, "no Dask worker process with a measuring child"
        workers[0].send_signal(signal.SIGKILL)
        _, err = p.communicate(timeout=300)
    finally:
        p.kill()
    assert p.returncode == 0, err
    df = load_records(out)
    assert len(df) == 8 and df["case_id"].is_unique                  # none lost or duplicated
    by = df.set_index("case_id")
    killed = df[df["error"].fillna("").str.contains("Dask worker died")]
    assert len(killed) <= 2
    for rows in (5, 9):
        seg = by.loc[f"layernorm|test_segfault|{rows}|16|fp32|fp32|-"]
        hang = by.loc[f"layernorm|test_hang|{rows}|16|fp32|fp32|-"]
        assert seg["status"] == "error" and ("SIGSEGV" in seg["error"] or "Dask worker died" in seg["error"])
        assert hang["status"] in ("timeout", "error")
        assert hang["status"] == "timeout" or "Dask worker died" in hang["error"]
    fine = df[df["implementation"].isin(["torch", "disjoint_block"])]
    assert ((fine["status"] == "ok") | fine["error"].fillna("").str.contains("Dask worker died")).all()
    assert (fine["status"] == "ok").sum() >= 2


@needs_dask
def test_an_interrupted_distributed_run_resumes(serial, tmp_path):
    cfg, base = serial
    out = tmp_path / "d"
    # Ctrl-C in a terminal: SIGINT to the run's whole process group, its Dask workers too
    p = popen("run", cfg, "--gpus", "2", "--out", out, "--no-report", "--exclusive-below-us", "1e9",
              start_new_session=True)
    try:
        assert wait_for_records(out, 3, p)
        os.killpg(p.pid, signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert p.returncode == 130, err
    assert "--resume" in err and "Traceback" not in err and "distributed" not in err, err
    assert err.strip().splitlines()[-1].startswith("interrupted by SIGINT"), err
    kept = load_records(out)
    assert 3 <= len(kept) < 12
    r = cli("run", cfg, "--gpus", "2", "--out", out, "--no-report", "--resume",
            "--exclusive-below-us", "1e9")
    assert r.returncode == 0, r.stderr
    df = load_records(out)
    same_records(df, base, exact_errors=False)
    assert (df["concurrent_cases"] == 1).all()          # every case measured alone


def test_a_worker_that_joins_mid_run_is_added_to_meta(tmp_path):
    """A SLURM job's workers arrive over minutes: one first seen with a record is added to
    meta.gpus once (its records already say which GPU measured them)."""
    from normbench.harness.distributed import Executor
    from normbench.harness.run import _add_gpus
    from normbench.harness.store import RunStore

    def facts(host, ceiling):
        return {"where": {"hostname": host, "gpu_index": 0, "gpu_uuid": f"GPU-{host}"},
                "device_name": "NVIDIA H200", "copy_ceiling_gbps": ceiling}

    class Done:
        def __init__(self, out):
            self.out = out

        def result(self):
            return self.out
    ex = Executor(gpus=None, scheduler="tcp://x:1", sweep=None, exclusive_below_us=None)
    ex._facts = {"tcp://a": facts("a", 4000.0)}
    for w, f in (("tcp://a", facts("a", 4000.0)), ("tcp://b", facts("b", 4100.0)),
                 ("tcp://b", facts("b", 4100.0))):
        ex._note_worker(Done({"worker": w, "facts": f}))
    (new,) = ex.joined()
    assert new["hostname"] == "b" and ex.joined() == []
    with RunStore(tmp_path / "r") as store:
        store.update_meta(gpus=[{"hostname": "a", "gpu_index": 0, "gpu_uuid": "GPU-a",
                                 "device_name": "NVIDIA H200", "copy_ceiling_gbps": 4000.0}],
                          workers=1, hostname="a", device_name="NVIDIA H200")
        _add_gpus(store, [new])
        m = store.meta
    assert m["workers"] == 2 and [g["hostname"] for g in m["gpus"]] == ["a", "b"]
    assert m["hostname"] == "a, b" and m["device_name"] == "NVIDIA H200"
    # a resumed run: b's GPU, listed already, rejoins under a new address — not listed twice
    ex._note_worker(Done({"worker": "tcp://b2", "facts": facts("b", 4100.0)}))
    with RunStore(tmp_path / "r", resume=True) as store:
        _add_gpus(store, ex.joined())
        assert store.meta["workers"] == 2


class _Task:
    """A stand-in Dask future: pending until the test finishes it; its result what
    gpuworker.measure_task returns for a case it measured."""

    def __init__(self, case, settings):
        self.case, self.settings, self.status = case, settings, "pending"
        self.on_fetch, self.crashed = None, False

    def done(self):
        return self.status != "pending"

    def cancelled(self):
        return self.status == "cancelled"

    def cancel(self):
        self.status = "cancelled"       # a finished one too: Dask releases its result

    def result(self, timeout=None):
        assert self.status == "finished", self.status
        if self.on_fetch is not None:
            self.on_fetch, hook = None, self.on_fetch
            hook()
        return {"failed": ("error", f"measured {self.case['rows']}"), "settings": self.settings,
                "duration_s": 0.0, "concurrent_cases": 3, "crashed": self.crashed,
                "where": {"hostname": "h", "gpu_index": 0, "gpu_uuid": None}}


class _Client:
    """A stand-in Dask client of three workers on one host; each task submitted is kept in
    `tasks`, the first finished at once (and `on_fetch` run as its result is first fetched)."""
    status, dashboard_link = "running", ""

    def __init__(self):
        self.tasks, self.on_fetch = [], None

    def scheduler_info(self, n_workers=-1):
        return {"workers": {w: {"host": "h", "resources": {"GPU": 1}} for w in "abc"}}

    def submit(self, fn, case, settings, timeout_s, **kw):
        self.tasks.append(_Task(case, settings))
        if len(self.tasks) == 1:
            self.tasks[0].status, self.tasks[0].on_fetch = "finished", self.on_fetch
        return self.tasks[-1]

    def run(self, *a, **kw):
        pass

    def close(self, timeout=None):
        pass


def _five_cases_on_a_fake_scheduler():
    """A sweep of five tiny torch cases, and an Executor for an external scheduler whose client
    is a _Client: (sweep, cases, executor, client)."""
    from normbench import strategies
    from normbench.harness import distributed
    from normbench.harness.config import parse_config
    from normbench.harness.plan import expand
    sweep = parse_config("rows: [4, 6, 8, 10, 12]\nd: [8]\nimplementations: [torch]\n"
                         "timing: {warmup_ms: 1, rep_ms: 1}\n")
    cases = expand(sweep, uses_groups=lambda n: strategies.get(n).uses_groups,
                   available=strategies.known())
    ex = distributed.Executor(gpus=None, scheduler="tcp://x:1", sweep=sweep,
                              exclusive_below_us=None)
    ex.client = client = _Client()
    return sweep, cases, ex, client


@pytest.mark.parametrize("where,crashed", [("keeping a record", False), ("polling", False),
                                           ("fetching a result", False),
                                           ("keeping a record", True)])
def test_a_stop_keeps_the_cases_the_workers_finished(tmp_path, monkeypatch, where, crashed):
    """A signal while the driver kept a record (records.csv written and fsynced), slept
    between polls or fetched a finished task's result: a task that had finished meanwhile
    (or the one being fetched) was cancelled with the running ones and its measurement lost
    (1 record kept where the workers had measured 2).  Every finished task is now a record;
    only the running ones are cancelled.  Not a case whose measuring child died as the run
    stopped (crashed): the stop's SIGTERM reaches every process of a SLURM job."""
    from types import SimpleNamespace

    from rich.console import Console

    from normbench.harness import distributed, run
    from normbench.harness.interrupt import Interrupted
    sweep, cases, ex, client = _five_cases_on_a_fake_scheduler()
    ex.start = lambda console: None      # this machine's facts for meta.json

    def stop(*_):                         # the second task finishes, then the signal lands
        client.tasks[1].status, client.tasks[1].crashed = "finished", crashed
        raise Interrupted(signal.SIGINT)
    if where == "keeping a record":
        ex.joined = stop                  # called by execute once the record is kept
    elif where == "fetching a result":    # the first task's, by the first poll
        client.on_fetch = stop
    else:                                 # the poll after the first record was yielded
        sleeps = iter([lambda s: None, stop])
        monkeypatch.setattr(distributed, "time", SimpleNamespace(
            monotonic=time.monotonic, sleep=lambda s: next(sleeps)(s)))
    out = run.execute(sweep, cases, tmp_path / "r", executor=ex,
                      console=Console(stderr=True, quiet=True))
    finished = [t for t in client.tasks if t.status == "finished"]
    assert len(finished) == 2
    kept = [t for t in finished if not t.crashed]
    assert out.interrupted == signal.SIGINT and out.measured == len(kept) == 2 - crashed
    df = load_records(tmp_path / "r")
    assert sorted(df["error"]) == sorted(f"measured {t.case['rows']}" for t in kept)
    assert all(t.status == "cancelled" for t in client.tasks if t not in finished)
    assert len(client.tasks) >= 3


@pytest.mark.parametrize("when", ["before it is stored", "once it is stored"])
def test_a_signal_as_a_handed_record_is_kept_loses_nothing(tmp_path, monkeypatch, when):
    """A signal after the executor handed a record over and before the run stored it lost
    the record: records() had let go of it.  The executor now holds it until the next is
    asked for and unsaved() gives it back; the run skips it where it was stored after all
    (the signal held until then), and stores what else the stop left (a task that finished
    meanwhile) past it."""
    from rich.console import Console

    from normbench.harness import run
    from normbench.harness.interrupt import Interrupted
    sweep, cases, ex, client = _five_cases_on_a_fake_scheduler()
    ex.start = lambda console: None

    def finish_the_second():
        client.tasks[1].status = "finished"
    if when == "before it is stored":     # the label is made before the store
        def label(case):
            finish_the_second()
            raise Interrupted(signal.SIGINT)     # as a signal landing there
        monkeypatch.setattr(run, "_label", label)
    else:                                 # a real signal once it is kept: held till the end
        def joined():
            finish_the_second()
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.2)
            return []
        ex.joined = joined
    out = run.execute(sweep, cases, tmp_path / "r", executor=ex,
                      console=Console(stderr=True, quiet=True))
    df = load_records(tmp_path / "r")
    assert out.interrupted == signal.SIGINT and out.measured == len(df) == 2
    assert sorted(df["error"]) == sorted(f"measured {t.case['rows']}" for t in client.tasks[:2])


def _signals_here():
    """On a Dask worker: the SIGINT/SIGTERM dispositions of this process and of its measuring
    child ("ignored", "caught" or "default", from /proc), and its Dask log level."""
    import logging
    from normbench.harness import gpuworker

    def disposition(pid):
        masks = dict(line.split(":\t") for line in open(f"/proc/{pid}/status").read().splitlines()
                     if line.startswith(("SigIgn", "SigCgt")))
        ign, cgt = int(masks["SigIgn"], 16), int(masks["SigCgt"], 16)
        return {s.name: "ignored" if ign >> (s - 1) & 1 else "caught" if cgt >> (s - 1) & 1
                else "default" for s in (signal.SIGINT, signal.SIGTERM)}
    return {"worker": disposition(os.getpid()),
            "child": disposition(gpuworker._state["worker"]._proc.pid),
            "log_level": logging.getLogger("distributed").getEffectiveLevel()}


@needs_dask
def test_the_workers_of_gpus_leave_sigint_and_sigterm_to_the_driver():
    """A terminal's Ctrl-C (and SLURM's SIGTERM) reaches the run's whole process group: a
    stand-in worker died of SIGINT with 'Process Dask Worker process (from Nanny): Traceback
    … KeyboardInterrupt', and Dask's comm loggers printed 'Batched Comm Closed' as the
    cluster closed.  Each worker now ignores SIGINT, catches SIGTERM and logs nothing below
    CRITICAL (its preload, gpuworker.dask_setup); its measuring child ignores SIGINT and keeps
    SIGTERM's default action, which a timeout's stop relies on."""
    import logging
    from rich.console import Console
    from normbench.harness.distributed import make_executor
    # one stand-in worker: its preload and its child's start are each worker's alike (the
    # claim is not about how many), and each worker's measuring child imports torch
    ex = make_executor(gpus="1", scheduler=None, sweep=None, exclusive_below_us=None)
    try:
        ex.start(Console(stderr=True, quiet=True))
        got = list(ex.client.run(_signals_here).values())
    finally:
        ex.close()
    assert len(got) == 1
    for w in got:
        assert w["worker"] == {"SIGINT": "ignored", "SIGTERM": "caught"}, w
        assert w["child"] == {"SIGINT": "ignored", "SIGTERM": "default"}, w
        assert w["log_level"] == logging.CRITICAL, w


_STOPPED_WHILE_STARTING = """
import os, signal, sys, threading
from rich.console import Console
from distributed.process import AsyncProcess
from normbench.harness import interrupt
from normbench.harness.distributed import make_executor

start = AsyncProcess.start
def spawned(self):                  # Ctrl-C to the group while the workers boot
    out = start(self)
    threading.Timer(0.3, os.killpg, (os.getpgid(0), signal.SIGINT)).start()
    return out
AsyncProcess.start = spawned
interrupt.install()
ex = make_executor(gpus="2", scheduler=None, sweep=None, exclusive_below_us=None)
try:
    ex.start(Console(stderr=True, quiet=True))
    print("started")
except interrupt.Interrupted as e:
    print("stopped by", e)
finally:
    made = ex.cluster
    ex.close()
print("cluster", "closed" if made is not None and made.status.name == "closed" else made)
"""


@needs_dask
def test_a_ctrl_c_while_the_cluster_starts_prints_nothing_of_dask():
    """Ctrl-C to the process group while a --gpus cluster was starting: each worker, still
    importing Dask (its preload, which ignores SIGINT, not yet run), printed a
    KeyboardInterrupt traceback, and the cluster, interrupted in its constructor, was never
    held by the executor — closed at exit, past the run's last line, logging at INFO.  The
    workers are now born with SIGINT blocked (Executor._making) and the cluster made so far
    is closed by close() with Dask's logs still silenced."""
    p = subprocess.run([sys.executable, "-c", _STOPPED_WHILE_STARTING], cwd=ROOT, env=ENV,
                       capture_output=True, text=True, timeout=120, start_new_session=True)
    assert "stopped by SIGINT" in p.stdout and "cluster closed" in p.stdout, (p.stdout, p.stderr)
    assert p.stderr.strip() == "", p.stderr
    assert p.returncode == 0


@needs_dask
def test_workers_that_cannot_load_a_plugin_stop_the_run_not_each_case(tmp_path, plugin_path):
    """NORMBENCH_PLUGINS naming a module a node lacks: the run stops at the start, one line,
    exit 1; before, every case (built-ins too) was an error record and the run exited 0."""
    plugins, pythonpath = plugin_path
    (plugins / "nb_driver_only.py").write_text(
        "import os\n"
        "os.environ.setdefault('NB_DRIVER_PID', str(os.getpid()))\n"
        "if os.environ['NB_DRIVER_PID'] != str(os.getpid()):\n"
        "    raise ImportError('not installed on this node')\n")
    cfg = write_config(tmp_path / "c.yaml")
    env = {**ENV, "NORMBENCH_PLUGINS": ENV["NORMBENCH_PLUGINS"] + ",nb_driver_only",
           "PYTHONPATH": pythonpath}
    # one stand-in worker: the plugin fails in each worker alike (the claim is not about how
    # many), and each worker's measuring child imports torch before it fails
    r = cli("run", cfg, "--gpus", "1", "--out", tmp_path / "r", "--no-report", env=env)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("run: a worker could not get ready") and "not installed" in last
    assert not (tmp_path / "r").exists()    # made by the run, nothing measured: not left
    # --out through a directory not yet there and `..`: the path the kernel uses is x/y, and
    # x was the user's (empty) — judged on the text, the run took x for its own, removed it
    (tmp_path / "x").mkdir()
    r = cli("run", cfg, "--gpus", "1", "--out", tmp_path / "newdir" / ".." / "x" / "y",
            "--no-report", env=env)
    assert r.returncode == 1, r.stderr
    assert (tmp_path / "x").is_dir() and not (tmp_path / "x" / "y").exists()


@needs_dask
def test_workers_without_an_implementation_of_the_plan_stop_the_run_and_record_nothing(
        tmp_path, plugin_path):
    """NORMBENCH_PLUGINS registering an implementation on the driver only: each of its cases
    was an `error` record ("unknown implementation ..."), never measured, and --resume
    skipped them as done.  The workers' known implementations are checked against the plan
    before any case (a worker joining later fails its first such task: UnknownImplementation,
    a cluster failure, nothing recorded)."""
    plugins, pythonpath = plugin_path
    (plugins / "nb_driver_impl.py").write_text(
        "import os\n"
        "from normbench import strategies\n"
        "os.environ.setdefault('NB_DRIVER_PID', str(os.getpid()))\n"
        "if os.environ['NB_DRIVER_PID'] == str(os.getpid()):\n"
        "    t = strategies.get('torch')\n"
        "    strategies.register('test_driver_only', kind='strategy', "
        "deterministic_by_design=True, uses_groups=False)(t.fn)\n")
    cfg = write_config(tmp_path / "c.yaml", implementations=["torch", "test_driver_only"])
    env = {**ENV, "NORMBENCH_PLUGINS": ENV["NORMBENCH_PLUGINS"] + ",nb_driver_impl",
           "PYTHONPATH": pythonpath}
    # one stand-in worker: the check is each reporting worker's (the claim is not about how
    # many), and each worker's measuring child imports torch for its facts
    r = cli("run", cfg, "--gpus", "1", "--out", tmp_path / "r", "--no-report", env=env)
    assert r.returncode == 1, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "does not know implementation(s) test_driver_only of the plan" in last, r.stderr
    assert not (tmp_path / "r").exists()       # nothing measured: no directory left

    from dataclasses import asdict
    from normbench.harness import gpuworker
    from normbench.harness.distributed import ClusterError, _record
    from normbench.harness.measure import Settings, failed_record
    from normbench.harness.plan import Case
    case = Case(norm="rmsnorm", implementation="test_driver_only", rows=5, d=16, dtype="fp32",
                weight_dtype="fp32", groups="-")

    facts = {"implementations": ["torch"], "where": {"hostname": "node7"}}
    with pytest.raises(gpuworker.UnknownImplementation, match="on node7 does not know"):
        with pytest.MonkeyPatch.context() as m:     # the worker's facts, its child unasked
            m.setitem(gpuworker._state, "facts", facts)
            gpuworker.measure_task(asdict(case), {}, 10)

    class Failed:
        def result(self):
            raise gpuworker.UnknownImplementation("does not know implementation")
    with pytest.raises(ClusterError, match="could not run case .*plan's implementations"):
        _record(Failed(), case, Settings(warmup_ms=1, rep_ms=1, repeats=1, seed=0,
                                         peak_tbps=None, copy_gbps=None, device_name="x"),
                failed_record)


def test_a_cluster_run_plans_what_its_workers_can_run_not_the_login_node(tmp_path):
    """--scheduler from a node without a GPU: the config naming no implementation plans every
    one known (the GPU-only ones included, skipped where unavailable), as a shard does."""
    r = cli("run", "quick", "--scheduler", "tcp://127.0.0.1:1", "--dry-run")
    assert r.returncode == 0 and "disjoint_smem" in r.stdout, r.stderr
    r = cli("run", "quick", "--scheduler", "tcp://127.0.0.1:1", "--only", "disjoint_smem",
            "--dry-run")
    assert r.returncode == 0 and "disjoint_smem" in r.stdout, r.stderr
    assert "disjoint_smem" not in cli("run", "quick", "--dry-run").stdout   # here: the CPU's


def test_a_resume_on_a_cluster_plans_what_the_run_planned(tmp_path):
    """--resume finishes the plan the run started with (meta.json's plan_implementations),
    whatever the executor: a plain run resumed with --scheduler planned every known
    implementation instead — the rest of the plan plus cases it never had (disjoint_smem,
    liger … recorded skipped, a new copy ceiling and a resumes entry in a complete run)."""
    from normbench import strategies
    cfg = tmp_path / "c.yaml"          # names no implementation: the plan is this machine's
    cfg.write_text("name: r\nnorm: [rmsnorm]\nrows: [5]\nd: [16]\n"
                   "timing: {warmup_ms: 1, rep_ms: 1}\ndeterminism: {repeats: 2}\n")
    out, cluster = tmp_path / "r", ("--scheduler", "tcp://127.0.0.1:1")   # never reached
    r = cli("run", cfg, "--only", "torch", "--out", out, "--no-report")
    assert r.returncode == 0, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert "disjoint_smem" not in meta["plan_implementations"]     # unavailable on a CPU
    # a plan of two (as on a machine that had only these), torch measured
    meta["plan_implementations"] = ["torch", "atomic"]
    (out / "meta.json").write_text(json.dumps(meta))
    r = cli("run", cfg, "--out", out, "--resume", *cluster, "--dry-run")
    assert r.returncode == 0 and "1 of 2 records left" in r.stdout, (r.stdout, r.stderr)
    unplanned = [n for n in strategies.known() if n not in ("torch", "atomic")]
    assert "atomic" in r.stdout and not [n for n in unplanned if n in r.stdout], r.stdout
    assert cli("run", cfg, "--out", out, "--resume", "--no-report").returncode == 0
    before = (out / "meta.json").read_text()
    assert json.loads(before)["completed"]
    # a complete run: nothing left, nothing changed, the cluster not even asked
    r = cli("run", cfg, "--out", out, "--resume", *cluster, "--no-report")
    assert r.returncode == 0 and "nothing left to measure" in r.stderr, r.stderr
    assert (out / "meta.json").read_text() == before and len(load_records(out)) == 2


def test_bad_cluster_options_are_one_line_and_exit_2(tmp_path):
    cfg = write_config(tmp_path / "c.yaml")
    for args, needle in ((["--gpus", "0"], "at least 1"), (["--gpus", "all"], "no GPU"),
                         (["--gpus", "99999"], "each stand-in worker is a process"),
                         (["--gpus", "2", "--scheduler", "tcp://x:1"], "exclude each other"),
                         (["--exclusive-below-us", "5"], "needs --gpus"),
                         (["--gpus", "２"], "expected 'all' or a number of GPUs, got '２'"),
                         (["--gpus", "2", "--exclusive-below-us", "1_0"],
                          "--exclusive-below-us: expected a number of µs >= 0, got '1_0'"),
                         (["--shard", "3/3"], "0 <= I < N"),
                         (["--scheduler", "garbage"], "not a scheduler address"),
                         (["--scheduler", str(tmp_path / "no" / "s.json")],
                          "no such scheduler file, and its folder"),
                         (["--scheduler", "tcp://127.0.0.1:99999"], "port 99999 is outside"),
                         (["--scheduler", "127.0.0.1:0"], "port 0 is outside"),
                         (["--scheduler", str(cfg)], "not a Dask scheduler file"),
                         (["--scheduler", "tls://127.0.0.1:1"], "needs Dask's TLS settings"),
                         (["--scheduler", "ws://127.0.0.1:1"], "ws:// comm is not supported")):
        r = cli("run", cfg, *args, "--out", tmp_path / "x", "--dry-run")
        assert r.returncode == 2, (args, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and needle in lines[0] and lines[0].startswith("run: "), r.stderr
    # a port out of range passed the check, waited 30 s to connect and exited 1
    (tmp_path / "s.json").write_text('{"address": "tcp://127.0.0.1:99999"}')
    start = time.monotonic()
    r = cli("run", cfg, "--scheduler", tmp_path / "s.json", "--out", tmp_path / "y")
    assert r.returncode == 2 and "port 99999 is outside 1-65535" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and time.monotonic() - start < 25
    # a host that does not resolve, a port that refuses: exit 1 after 30 s, and an --out
    # directory left holding a stub meta.json and an empty records.csv
    for address, needle in (("tcp://nohost.invalid:8786", "does not resolve"),
                            ("tcp://127.0.0.1:1", "cannot connect to 127.0.0.1:1")):
        start = time.monotonic()
        r = cli("run", cfg, "--scheduler", address, "--out", tmp_path / "u")
        assert r.returncode == 2 and needle in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and time.monotonic() - start < 20
        assert not (tmp_path / "u").exists()
    # tls:// without certificates: Dask's TypeError about ssl_context, a traceback
    r = cli("run", cfg, "--scheduler", "tls://127.0.0.1:1", "--out", tmp_path / "z")
    assert r.returncode == 2 and r.stderr.startswith("run: --scheduler 'tls://"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "z").exists()


def test_facts_the_workers_differ_in_are_each_worker_s_not_the_first_s():
    """meta.json of a cluster run took the first worker's CPU, clocks, power limit and GPU
    UUID for the run's: a node with another CPU or a GPU clocked otherwise was recorded as
    the first.  A fact the workers differ in is null at the top, each worker's own in its
    `gpus` entry, named in `workers_differ` and in the report's Environment section."""
    from normbench.harness.distributed import summarize_facts
    from normbench.harness.report.document import Report
    from normbench.harness.report.sections import environment_section

    def facts(host, **more):
        return {"device_name": "GPU", "git_commit": "2792e69", "git_dirty": False,
                "cpu_model": "A", "sm_clock_max_mhz": 1980, "copy_ceiling_gbps": 1.0,
                "environment": {"TRITON_X": "1"},
                "where": {"hostname": host, "gpu_index": 0, "gpu_uuid": None}, **more}
    same = summarize_facts([facts("n1"), facts("n2")])
    assert "workers_differ" not in same and same["cpu_model"] == "A"
    assert all("cpu_model" not in g for g in same["gpus"])
    meta = summarize_facts([facts("n2", cpu_model="B", sm_clock_max_mhz=1755), facts("n1")])
    assert meta["workers_differ"] == ["cpu_model", "sm_clock_max_mhz"]
    assert meta["cpu_model"] is None and meta["sm_clock_max_mhz"] is None
    assert [(g["hostname"], g["cpu_model"], g["sm_clock_max_mhz"]) for g in meta["gpus"]] == \
        [("n1", "A", 1980), ("n2", "B", 1755)]
    assert meta["git_commit"] == "2792e69" and meta["environment"] == {"TRITON_X": "1"}
    rep = Report("t")
    environment_section(rep, meta, interp=False)
    assert "The workers' facts differ in `cpu_model`, `sm_clock_max_mhz`" in rep.markdown()


@needs_dask
def test_a_scheduler_address_that_does_not_answer_as_one_is_refused_in_time():
    """A port that accepts and never answers as Dask does (the dashboard's, an HTTP
    server's): distributed.Client's timeout="30s" did not cover its handshake and `run
    --scheduler` hung for good.  reach() asks for the scheduler's identity within its
    timeout (the CLI's: 30 s, before the run directory is made)."""
    import socket
    from normbench.harness.distributed import ClusterError, make_executor
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(4)
        address = "tcp://127.0.0.1:%d" % s.getsockname()[1]
        ex = make_executor(gpus=None, scheduler=address, sweep=None, exclusive_below_us=None)
        start = time.monotonic()
        with pytest.raises(ClusterError, match="does not answer as a Dask scheduler within 2 s"):
            ex.reach(timeout_s=2)
        assert time.monotonic() - start < 10


@needs_dask
def test_a_scheduler_file_not_written_yet_is_waited_for(tmp_path):
    """Under SLURM the scheduler writes its file a moment after the job starts: `--scheduler
    DIR/sched.json` naming none yet said "not a scheduler address (missing port number ...)".
    reach() waits for it within its timeout, as dask's Client(scheduler_file=) does, then
    reads it; a file that never comes is named as such, a folder that is not there at once."""
    from normbench.harness.distributed import ClusterError, make_executor
    path = tmp_path / "sched.json"
    ex = make_executor(gpus=None, scheduler=str(path), sweep=None, exclusive_below_us=None)
    writer = threading.Timer(0.5, path.write_text, ('{"address": "tcp://127.0.0.1:1"}',))
    writer.start()
    with pytest.raises(ClusterError, match="cannot connect to 127.0.0.1:1"):   # its address
        ex.reach(timeout_s=5)
    writer.join()
    ex = make_executor(gpus=None, scheduler=str(tmp_path / "never.json"), sweep=None,
                       exclusive_below_us=None)
    start = time.monotonic()
    with pytest.raises(ClusterError, match=r"never.json: no such scheduler file \(waited 1 s"):
        ex.reach(timeout_s=1)
    assert time.monotonic() - start < 5
    for bad, needle in ((tmp_path / "no" / "s.json", "its folder"), (tmp_path, "not a file"),
                        ("head:8786/", "not a scheduler address")):   # not waited for
        with pytest.raises(ClusterError, match=needle):
            make_executor(gpus=None, scheduler=str(bad), sweep=None, exclusive_below_us=None)


class _FailedTask:
    """A finished Dask future whose result() raises `e`."""

    def __init__(self, e):
        self.e = e

    def result(self):
        raise self.e


def _task_case():
    """A case and its settings, for _record."""
    from normbench.harness.measure import Settings
    from normbench.harness.plan import Case
    return (Case(norm="rmsnorm", implementation="torch", rows=5, d=16, dtype="fp32",
                 weight_dtype="fp32", groups="-"),
            Settings(warmup_ms=1, rep_ms=1, repeats=1, seed=0, peak_tbps=None, copy_gbps=None,
                     device_name="x"))


def test_a_task_the_cluster_could_not_run_stops_the_run_and_records_nothing():
    """A scheduler without normbench cannot unpickle the task: every case was an `error`
    record ("the task failed: RuntimeError: Error during deserialization …"), the run exited
    0 and --resume skipped them all.  A task that raised never measured (measure_task returns
    a case's failures): ClusterError.  A worker that died running it is still the case's."""
    from normbench.harness.distributed import ClusterError, _record
    from normbench.harness.measure import failed_record

    class KilledWorker(Exception):      # distributed's, by name
        pass

    Failed = _FailedTask
    case, settings = _task_case()
    for e in (RuntimeError("Error during deserialization of the task graph"),
              ModuleNotFoundError("No module named 'normbench'")):
        with pytest.raises(ClusterError, match="could not run case rmsnorm.*--resume"):
            _record(Failed(e), case, settings, failed_record)
    class FutureCancelledError(Exception):      # distributed's, by name
        pass
    with pytest.raises(ClusterError, match="lost the Dask scheduler"):   # not "could not run"
        _record(Failed(FutureCancelledError("cancelled for reason: scheduler-connection-lost")),
                case, settings, failed_record)
    rec = _record(Failed(KilledWorker("attempted to run task")), case, settings, failed_record)
    assert rec["status"] == "error" and "Dask worker died" in rec["error"]


def test_a_result_whose_fetch_broke_is_the_lost_scheduler_where_it_no_longer_answers():
    """The scheduler killed mid-run: the fetch of a finished task's result broke off
    (CommClosedError, "Connection reset by peer") before the client's status said the scheduler
    was lost, and the run ended on "the cluster could not run case …: the scheduler and every
    worker need normbench importable" (a CI failure) instead of its "lost the Dask scheduler"
    line.  A fetch that broke is the lost scheduler where its address no longer answers; where
    it still does, the broken connection is named; a task that raised an OSError on the worker
    is still one the cluster could not run."""
    from normbench.harness import distributed as dist
    from normbench.harness.measure import failed_record

    class CommClosedError(OSError):     # distributed's is an OSError
        pass

    def Fut(status, e):
        fut = _FailedTask(e)
        fut.status = status
        return fut
    case, settings = _task_case()
    broke = CommClosedError("in <TCP (closed) ConnectionPool.gather>: ConnectionResetError")
    with pytest.raises(dist.ClusterError, match="could not run case"):   # raised on the worker
        dist._record(Fut("error", OSError("Too many open files")), case, settings, failed_record)
    ex = object.__new__(dist.Executor)
    for gone, match in ((True, "^lost the Dask scheduler"),
                        (False, "^the connection to the cluster broke while case rmsnorm")):
        ex._scheduler_gone = lambda gone=gone: gone
        fut = Fut("finished", broke)
        with pytest.raises(dist.ClusterError, match=match):
            ex._finished(fut, {fut: (case, "h", False, 0.0)}, None, settings)
    ex.client = None        # no client: gone, whatever the address would say
    assert dist.Executor._scheduler_gone(ex)


def _start_by_hand(folder):
    """A Dask scheduler and one worker (no nanny: its pid is the worker's) started as a
    cluster is by hand, their logs in `folder`: (address, scheduler process, worker process,
    log files), returned once the worker has joined the scheduler (a run started sooner is
    refused, one line: nothing listens on the port yet)."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    env = {**ENV, "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    logs = [open(folder / f"{n}.log", "w") for n in ("scheduler", "worker")]
    sched = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--port",
                              str(port), "--no-dashboard"], env=env, stdout=logs[0],
                             stderr=subprocess.STDOUT)
    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                               "--nthreads", "1", "--resources", "GPU=1", "--no-nanny",
                               "--no-dashboard"], env=env, stdout=logs[1],
                              stderr=subprocess.STDOUT)
    held = (address, sched, worker, logs)
    try:
        from distributed import Client
        with Client(address, timeout="120s") as c:     # connects once the scheduler listens
            c.wait_for_workers(1, timeout=120)
    except BaseException:
        _stop_by_hand(held)
        raise
    return held


def _stop_by_hand(held):
    _, sched, worker, logs = held
    for p in (worker, sched):
        p.kill()
        p.wait()
    for f in logs:
        f.close()


@pytest.fixture(scope="module")
def _cluster_by_hand(tmp_path_factory):
    """The module's hand-started cluster (_start_by_hand), started by the first test that
    asks for it and stopped at the module's end: a list holding it, or nothing."""
    held: list = []
    yield held
    if held:
        _stop_by_hand(held.pop())


@pytest.fixture
def scheduler_and_worker(_cluster_by_hand, tmp_path_factory):
    """A Dask scheduler and one worker started as a cluster is by hand, (address, scheduler
    process, worker process), given once the worker has joined.  One for the module's tests
    (a worker of a --scheduler cluster outlives its runs, which is what they test): a test
    that leaves both standing leaves them to the next, one that killed either (the lost
    scheduler's) has them stopped at its end, and the next test gets a fresh pair."""
    held = _cluster_by_hand
    if held and any(p.poll() is not None for p in held[0][1:3]):
        _stop_by_hand(held.pop())
    if not held:
        held.append(_start_by_hand(tmp_path_factory.mktemp("by_hand")))
    address, sched, worker, _ = held[0]
    try:
        yield address, sched, worker
    finally:
        if any(p.poll() is not None for p in (sched, worker)):
            _stop_by_hand(held.pop())


def _measuring_children(pid):
    """The worker's measuring child (multiprocessing's resource tracker left out)."""
    import psutil
    try:
        kids = psutil.Process(pid).children()
        return [k for k in kids if "resource_tracker" not in " ".join(k.cmdline())]
    except psutil.Error:
        return []


@needs_dask
def test_each_run_on_a_long_lived_cluster_records_its_own_facts(scheduler_and_worker, tmp_path):
    """A --scheduler cluster's worker kept the facts of the first run it measured for its
    whole life (git commit, dirty flag, versions, copy ceiling), and every later run recorded
    them in meta.json.  Each run's start now measures them again in a fresh child: after a run
    that ended (close()) and after one whose driver was killed with kill -9 (no close())."""
    from distributed import Client
    address, sched, worker = scheduler_and_worker

    def tell(commit):                   # the worker's tree now says it is at `commit`
        with Client(address, timeout="30s") as c:
            c.run(lambda: os.environ.update(NORMBENCH_GIT_COMMIT=commit, NORMBENCH_GIT_DIRTY="1"))

    def untell():                       # the worker as it was, for the module's next test
        with Client(address, timeout="30s") as c:
            c.run(lambda: [os.environ.pop(k, None)
                           for k in ("NORMBENCH_GIT_COMMIT", "NORMBENCH_GIT_DIRTY")])

    def recorded(out):
        m = json.loads((out / "meta.json").read_text())
        return m["git_commit"], m["git_dirty"], m["environment"].get("NORMBENCH_GIT_COMMIT")
    cfg = write_config(tmp_path / "c.yaml", norm=["rmsnorm"], rows=[5],
                       implementations=["torch"])
    first = cli("run", cfg, "--scheduler", address, "--out", tmp_path / "a", "--no-report")
    assert first.returncode == 0, first.stderr
    try:
        tell("aaaaaaa")
        r = cli("run", cfg, "--scheduler", address, "--out", tmp_path / "b", "--no-report")
        assert r.returncode == 0, r.stderr
        assert recorded(tmp_path / "b") == ("aaaaaaa", True, "aaaaaaa")
        tell("bbbbbbb")                     # a run killed with kill -9 after its first record
        cfg = write_config(tmp_path / "d.yaml", rows=[5, 9, 17, 33],
                           implementations=["torch", "disjoint_block"])
        p = popen("run", cfg, "--scheduler", address, "--out", tmp_path / "c", "--no-report")
        try:
            assert wait_for_records(tmp_path / "c", 1, p), p.communicate()[1] if p.poll() else ""
        finally:
            p.kill()
            p.communicate()
        assert recorded(tmp_path / "c") == ("bbbbbbb", True, "bbbbbbb")
        assert _measuring_children(worker.pid), "the killed run's child is gone: nothing tested"
        tell("ccccccc")
        r = cli("run", cfg, "rows=[5]", "--scheduler", address, "--out", tmp_path / "e",
                "--no-report")
        assert r.returncode == 0, r.stderr
        assert recorded(tmp_path / "e") == ("ccccccc", True, "ccccccc")
    finally:
        if sched.poll() is None and worker.poll() is None:
            untell()


@needs_dask
def test_a_scheduler_run_stops_its_workers_children_and_a_lost_scheduler_is_one_line(
        scheduler_and_worker, tmp_path):
    """--scheduler: the cluster's workers outlive the run, so as it ends each stops the child
    it measured in (which held its GPU's memory).  The scheduler lost mid-run: the run's one
    line and exit 1, without distributed.client's traceback before it."""
    address, sched, worker = scheduler_and_worker
    cfg = write_config(tmp_path / "c.yaml", norm=["rmsnorm"], rows=[5], implementations=["torch"])
    r = cli("run", cfg, "--scheduler", address, "--out", tmp_path / "a", "--no-report")
    assert r.returncode == 0, r.stderr
    deadline = time.time() + 20
    while _measuring_children(worker.pid) and time.time() < deadline:
        time.sleep(0.2)
    assert not _measuring_children(worker.pid), "the worker kept its measuring child"
    cfg = write_config(tmp_path / "d.yaml", rows=[5, 9, 17, 33],
                       implementations=["torch", "disjoint_block"])
    out = tmp_path / "b"
    # the run forks from forkcli's server (its first part's kind); the scheduler is killed
    # from a thread once the run has kept its first record
    done, killed = threading.Event(), []

    def kill_the_scheduler_at_the_first_record():
        running = types.SimpleNamespace(poll=lambda: True if done.is_set() else None)
        if wait_for_records(out, 1, running):
            sched.kill()
            killed.append(True)
    killer = threading.Thread(target=kill_the_scheduler_at_the_first_record, daemon=True)
    killer.start()
    try:
        r = cli("run", cfg, "--scheduler", address, "--out", out, "--no-report")
    finally:
        done.set()
        killer.join()
    err = r.stderr
    assert killed, ("the run ended before its first record", r.returncode, err)
    assert r.returncode == 1, err
    assert "Traceback" not in err and "distributed." not in err, err
    assert err.strip().splitlines()[-1].startswith("run: lost the Dask scheduler"), err


@needs_dask
def test_the_slurm_recipe_starts_the_run_once_a_worker_has_joined(monkeypatch):
    """configs/cluster/slurm_dask.py started the run as soon as it had asked SLURM for the
    jobs: a queue that held them past the run's wait for a first worker (START_TIMEOUT_S)
    ended the run with "no Dask worker joined".  It waits for one first (no time limit)."""
    import runpy
    calls = []

    class SLURMCluster:
        scheduler_address = "tcp://head:8786"

        def __init__(self, **kw):
            calls.append("make")

        def scale(self, jobs):
            calls.append(f"scale {jobs}")

        def wait_for_workers(self, n, timeout=None):
            calls.append(f"wait {n} {timeout}")

        def close(self):
            calls.append("close")

    import dask
    monkeypatch.setattr(dask.config, "set", lambda *a, **kw: calls.append("config"))  # not ours
    monkeypatch.setitem(sys.modules, "dask_jobqueue", types.SimpleNamespace(SLURMCluster=SLURMCluster))
    monkeypatch.setattr(subprocess, "run",
                        lambda argv, **kw: calls.append(argv[-1]) or types.SimpleNamespace(returncode=0))
    monkeypatch.setattr(sys, "argv", ["slurm_dask.py", "cpu", "runs/x", "2"])
    with pytest.raises(SystemExit) as e:
        runpy.run_path(str(ROOT / "configs" / "cluster" / "slurm_dask.py"), run_name="__main__")
    assert e.value.code == 0
    assert calls == ["config", "make", "scale 2", "wait 1 None", "tcp://head:8786", "close"], calls
