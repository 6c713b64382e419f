"""harness/isolate.py: results, remote errors, timeouts, crashes, environment, no orphans."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from normbench.harness.isolate import Worker, WorkerCrashed, WorkerStartError, WorkerTimeout
from tests import forkcli

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
# The worker is a fresh interpreter; spawn hands it our sys.path, so the targets module must be
# importable from there under the name we give it.
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

GRACE = 1.0


def alive(pid: int) -> bool:
    """Running (not gone, not a zombie waiting to be reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


@pytest.fixture
def worker():
    made = []

    def make(name: str, **kw) -> Worker:
        w = Worker(f"isolate_targets:{name}", grace_s=GRACE, **kw)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()


def test_returns_and_reuses_the_worker(worker):
    w = worker("echo")
    first = w.call({"x": [1, 2.5, "three"]}, timeout_s=30)
    second = w.call(None, timeout_s=30)
    assert first["payload"] == {"x": [1, 2.5, "three"]}
    assert first["pid"] == second["pid"] == w.pid != os.getpid()


def test_target_exception_is_carried(worker):
    w = worker("fail")
    with pytest.raises(RuntimeError) as err:
        w.call(5, timeout_s=30)
    assert str(err.value) == "ValueError: bad payload 5"
    assert "ValueError: bad payload 5" in err.value.remote_traceback
    assert "isolate_targets.py" in err.value.remote_traceback
    pid = w.pid
    with pytest.raises(RuntimeError):  # an exception does not cost the worker
        w.call(6, timeout_s=30)
    assert w.pid == pid


def test_timeout_kills_and_next_call_gets_a_fresh_worker(worker):
    w = worker("nap")
    assert w.call(0, timeout_s=30) == 0
    old = w.pid
    t0 = time.monotonic()
    with pytest.raises(WorkerTimeout) as err:
        w.call(3600, timeout_s=0.5)
    assert time.monotonic() - t0 < 0.5 + GRACE + 1.0
    assert "within 0.5 s" in str(err.value) and str(old) in str(err.value)
    assert w.pid is None and not alive(old)  # killed and reaped: no zombie
    assert w.call(0, timeout_s=30) == 0
    assert w.pid not in (None, old)


def test_busy_loop_holding_the_gil_is_killed(worker):
    w = worker("spin_forever")
    t0 = time.monotonic()
    with pytest.raises(WorkerTimeout):
        w.call(None, timeout_s=0.5)
    assert time.monotonic() - t0 < 0.5 + GRACE + 1.0


def test_exit_is_reported_as_crash(worker):
    w = worker("exit_3")
    with pytest.raises(WorkerCrashed, match="exit code 3") as err:
        w.call(None, timeout_s=30)
    assert "\n" not in str(err.value)
    assert w.pid is None


def test_signal_death_is_reported_as_crash(worker):
    w = worker("segfault")
    with pytest.raises(WorkerCrashed, match="SIGSEGV"):
        w.call(None, timeout_s=30)


def test_start_errors():
    with pytest.raises(ValueError, match="module:function"):
        Worker("isolate_targets.echo")
    with Worker("isolate_targets:no_such_function") as w:
        with pytest.raises(WorkerStartError, match="AttributeError") as err:
            w.call(None, timeout_s=30)
        assert isinstance(err.value, WorkerCrashed)
        assert "no_such_function" in err.value.remote_traceback


def test_ready_runs_as_the_worker_starts_outside_every_call_s_timeout(worker):
    w = worker("echo", ready="isolate_targets:ready_slowly")
    assert w.call(1, timeout_s=1)["payload"] == 1       # its 2 s were the start's
    pid = w.pid
    assert w.call(2, timeout_s=1)["pid"] == pid          # once, not per call


def test_a_ready_that_fails_or_overruns_stops_the_start(worker):
    """A `ready` raising PluginError is the worker's failure to get ready, worded as a call's;
    one slower than start_timeout_s a start that did not finish, saying what it was doing."""
    w = worker("echo", ready="isolate_targets:ready_fails")
    with pytest.raises(WorkerStartError, match="could not get ready: PluginError: plugin nb_x") as err:
        w.start()
    assert "ready_fails" in err.value.remote_traceback and w.pid is None
    w = worker("echo", ready="isolate_targets:ready_slowly", start_timeout_s=1)
    with pytest.raises(WorkerStartError, match=r"did not start \(import it, then run "
                                               r"isolate_targets:ready_slowly\) within 1 s"):
        w.call(1, timeout_s=30)
    assert w.pid is None
    with pytest.raises(ValueError, match="ready must be 'module:function'"):
        Worker("isolate_targets:echo", ready="isolate_targets.ready_slowly")


def test_a_plugin_slow_to_import_costs_no_case_its_timeout(tmp_path, monkeypatch):
    """--isolate: the plugins loaded inside the worker's first call, so a plugin slower to
    import than timeout_s made that case a `timeout` record, and every later one too (each in
    a fresh worker that loaded it again), the built-ins' included — records --resume kept as
    done.  The worker loads them as it starts, outside every case's timeout_s."""
    from rich.console import Console
    from normbench import strategies
    from normbench.harness import run
    from normbench.harness.config import parse_config
    from normbench.harness.plan import expand
    from normbench.harness.store import load_records
    sweep = parse_config("norm: [layernorm]\nrows: [4, 6]\nd: [8]\nimplementations: [torch]\n"
                         "timing: {warmup_ms: 1, rep_ms: 1}\ntimeout_s: 1.5\n")
    # this process's plugins load first, without it: only the worker imports the slow one
    cases = expand(sweep, uses_groups=lambda n: strategies.get(n).uses_groups,
                   available=strategies.known())
    (tmp_path / "nb_slow_import.py").write_text("import time\ntime.sleep(2.5)\n")
    monkeypatch.syspath_prepend(str(tmp_path))          # spawn hands the worker our sys.path
    monkeypatch.setenv("NORMBENCH_PLUGINS", "nb_slow_import")
    out = run.execute(sweep, cases, tmp_path / "r", isolate=True,
                      console=Console(stderr=True, quiet=True))
    df = load_records(tmp_path / "r")
    assert out.finished and out.measured == 2
    assert list(df["status"]) == ["ok", "ok"], list(df["error"])


def test_unpicklable_result_is_an_error_not_a_crash(worker):
    w = worker("unpicklable")
    with pytest.raises(RuntimeError, match="cannot be sent back"):
        w.call(None, timeout_s=30)
    assert w.pid is not None


def test_environment_reaches_the_worker(worker, monkeypatch):
    monkeypatch.setenv("NORMBENCH_TEST_INHERITED", "from-parent")
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    w = worker("env", env={"TRITON_INTERPRET": "1", "NORMBENCH_PLUGINS": "a,b"})
    got = w.call(["TRITON_INTERPRET", "NORMBENCH_PLUGINS", "NORMBENCH_TEST_INHERITED"], timeout_s=30)
    assert got == {"TRITON_INTERPRET": "1", "NORMBENCH_PLUGINS": "a,b", "NORMBENCH_TEST_INHERITED": "from-parent"}
    assert "TRITON_INTERPRET" not in os.environ and "NORMBENCH_PLUGINS" not in os.environ


def test_worker_ignores_sigint(worker):
    w = worker("sigint_ignored")
    assert w.call(None, timeout_s=30) is True
    w2 = worker("nap")
    w2.start()
    os.kill(w2.pid, signal.SIGINT)
    assert w2.call(0.2, timeout_s=30) == 0.2


def test_close_reaps_and_worker_exits_when_its_pipe_closes(worker):
    w = worker("echo")
    w.call(None, timeout_s=30)
    pid = w.pid
    w.close()
    assert not alive(pid)
    with pytest.raises(RuntimeError, match="closed"):
        w.call(None, timeout_s=30)

    w = worker("echo")
    w.start()
    proc, pid = w._proc, w.pid
    w._conn.close()  # as if the parent vanished: the idle worker sees EOF and leaves
    proc.join(10)
    assert proc.exitcode == 0


PARENT = """
    import sys
    sys.path.insert(0, sys.argv[1])
    from normbench.harness.isolate import Worker
    w = Worker("isolate_targets:spin_forever")
    w.start()
    print(w.pid, flush=True)
    w.call(None, timeout_s=3600)
"""


def test_no_orphan_when_the_parent_is_killed_mid_call():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    parent = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(PARENT), str(TESTS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = parent.stdout.readline()
        assert line.strip().isdigit(), parent.stderr.read()
        child = int(line)
        time.sleep(0.3)  # let the call start spinning
        assert alive(child)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.communicate()
    assert wait_gone(child, within=5.0), f"worker {child} outlived its parent"


def test_a_huge_timeout_is_no_overflow(worker):
    """Issue 20.6: poll() takes at most ~2**31 ms; timeout_s: 3e6 raised OverflowError."""
    w = worker("echo")
    assert w.call(1, timeout_s=3e6)["payload"] == 1
    assert w.call(2, timeout_s=1e300)["payload"] == 2


def test_a_target_raising_base_exceptions_is_an_error_not_a_crash(worker):
    w = worker("system_exit")
    with pytest.raises(RuntimeError, match="^SystemExit: 4$"):
        w.call(None, timeout_s=30)
    assert w.pid is not None                    # the worker survived it
    w = worker("bad_str")
    with pytest.raises(RuntimeError, match="^_BadStr: <_BadStr whose str"):
        w.call(None, timeout_s=30)


def test_chunked_wait_times_out_on_time(monkeypatch):
    import multiprocessing
    from normbench.harness import isolate
    monkeypatch.setattr(isolate, "_WAIT_CHUNK_S", 0.05)
    a, b = multiprocessing.Pipe()
    t0 = time.monotonic()
    assert isolate._wait([a], 0.3) == []
    assert 0.25 <= time.monotonic() - t0 < 2
    b.send(1)
    assert isolate._wait([a], 1e300) == [a]


@pytest.mark.parametrize("target, sent", [("echo", True), ("fail", True), ("nap", False)])
def test_a_signal_as_the_reply_arrives_keeps_the_reply(worker, monkeypatch, target, sent):
    """Ctrl-C landing in the parent's wait after the worker had sent its reply: the worker
    was killed and the reply, a finished call's result, thrown away with it.  The exception
    now carries it as `reply`, which returns it (or raises the target's error) as the call
    would have; one that lands before any reply carries none."""
    from normbench.harness import isolate
    from normbench.harness.interrupt import Interrupted
    w = worker(target)
    w.start()
    wait = isolate._wait

    def signalled(objects, timeout_s):
        if sent:
            wait(objects, timeout_s)            # the reply is in the pipe
        raise Interrupted(signal.SIGINT)        # as the handler raises it, in the wait
    monkeypatch.setattr(isolate, "_wait", signalled)
    with pytest.raises(Interrupted) as stop:
        w.call(5, timeout_s=30)
    assert w.pid is None                        # discarded all the same
    if target == "echo":
        assert stop.value.reply()["payload"] == 5
    elif target == "fail":
        with pytest.raises(RuntimeError, match="ValueError: bad payload 5"):
            stop.value.reply()
    else:
        assert not hasattr(stop.value, "reply")


def test_a_plugin_the_worker_cannot_load_is_no_payloads_error(worker):
    """A PluginError is the worker's failure to get ready, not the payload's: WorkerStartError
    (the run stops), and the worker is discarded (its registry would refuse every call)."""
    w = worker("plugin_error")
    with pytest.raises(WorkerStartError, match="could not get ready: PluginError: plugin nb_x"):
        w.call(None, timeout_s=120)
    assert w.pid is None


def test_isolate_stops_when_a_plugin_loads_only_in_the_parent(tmp_path, plugin_path):
    """--isolate with a plugin that fails in the worker only: every case, the built-ins' too,
    was an error record (exit 0), and --resume kept them.  Now one line, nothing recorded and
    no directory the run made left (an empty run was: the same command without --isolate was
    then refused, "already holds a run ... use --resume"); that command measures the case."""
    import json
    from normbench.harness.store import load_records
    plugins, pythonpath = plugin_path
    (plugins / "nb_parent_only.py").write_text(
        "import multiprocessing\n"
        "if multiprocessing.current_process().name != 'MainProcess':\n"
        "    raise RuntimeError('not in a worker')\n")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({
        "name": "t", "norm": ["layernorm"], "rows": [4], "d": [8], "dtype": ["fp32"],
        "timing": {"warmup_ms": 1, "rep_ms": 1}, "determinism": {"repeats": 2},
        "implementations": ["torch"]}))
    env = {**os.environ, "NORMBENCH_PLUGINS": "nb_parent_only", "NORMBENCH_QUIET": "1",
           "PYTHONPATH": pythonpath, "COLUMNS": "200"}
    out = tmp_path / "new" / "o"

    def run(*extra):
        return forkcli.run([sys.executable, REPO / "run_bench.py", "run", cfg, "--out", out,
                            "--no-report", *extra], cwd=tmp_path, env=env, timeout=600)
    r = run("--isolate")
    err = [ln for ln in r.stderr.decode().splitlines() if ln.strip()]
    assert r.returncode == 1, r.stderr.decode()
    assert "could not get ready" in err[-1] and "plugin nb_parent_only" in err[-1]
    assert not any("Traceback" in ln for ln in err)
    assert not (tmp_path / "new").exists()          # neither --out nor the parent it made
    r = run()                                       # the same command, without --isolate
    assert r.returncode == 0, r.stderr.decode()
    df = load_records(out)
    assert list(df["status"]) == ["ok"] and list(df["implementation"]) == ["torch"]


def test_a_worker_that_cannot_start_again_mid_sweep_says_what_was_kept(tmp_path, plugin_path):
    """A fresh worker after a crash that cannot get ready (its plugin edited mid-run) stops
    the run, exit 1; its line said "so no case can run" although the records measured were
    kept, and gave no way on.  Now it says how many are kept and the command that finishes."""
    import json
    from normbench.harness.store import load_records
    marker = tmp_path / "edited"
    plugins, pythonpath = plugin_path
    (plugins / "nb_edited.py").write_text(textwrap.dedent(f"""\
        import multiprocessing, os
        from normbench import strategies
        from normbench.strategies import register
        if (multiprocessing.current_process().name != 'MainProcess'
                and os.path.exists({str(marker)!r})):
            raise RuntimeError('edited')

        @register("nb_crash_once", kind="strategy", deterministic_by_design=True,
                  uses_groups=False)
        def crash_once(x, dy, weight, mean, rstd, *, groups=None):
            if not os.path.exists({str(marker)!r}):
                open({str(marker)!r}, "w").close()
                os._exit(3)
            return strategies.get("torch").fn(x, dy, weight, mean, rstd)
        """))
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({
        "name": "t", "norm": ["layernorm", "rmsnorm"], "rows": [4], "d": [8],
        "dtype": ["fp32"], "timing": {"warmup_ms": 1, "rep_ms": 1},
        "determinism": {"repeats": 2}, "implementations": ["torch", "nb_crash_once"]}))
    env = {**os.environ, "NORMBENCH_PLUGINS": "nb_edited", "NORMBENCH_QUIET": "1",
           "PYTHONPATH": pythonpath, "COLUMNS": "200"}
    out = tmp_path / "o"
    r = forkcli.run([sys.executable, REPO / "run_bench.py", "run", cfg, "--out", out,
                     "--no-report", "--isolate"], cwd=tmp_path, env=env, timeout=600)
    err = [ln for ln in r.stderr.decode().splitlines() if ln.strip()]
    assert r.returncode == 1, r.stderr.decode()
    assert not any("Traceback" in ln for ln in err)
    assert "could not get ready" in err[-1] and "no case can run" not in err[-1], err[-1]
    assert f"2 records kept in {out}; once it can, finish with:" in err[-1], err[-1]
    assert err[-1].endswith(f"--isolate --no-report --out {out} --resume"), err[-1]
    assert len(load_records(out)) == 2


def test_a_target_that_retires_its_process_gets_a_fresh_one_next(worker):
    """A case that lost the process's CUDA context (an illegal memory access: every later CUDA
    call of the process fails) left every later case in that worker an error record, kept by
    --resume as done.  The target retires the process: its result comes back, the next call
    runs in a fresh worker, and nothing is recorded as a crash."""
    w = worker("retire_when_told")
    first = w.call("echo", timeout_s=60)
    retired = w.call("retire", timeout_s=60)
    assert retired["pid"] == first["pid"] and w.retired == "told to" and w.pid is None
    assert not alive(first["pid"])
    after = w.call("echo", timeout_s=60)
    assert after["pid"] != first["pid"] and after["pid"] == w.pid


def test_a_failed_case_that_lost_the_cuda_context_retires_its_worker(monkeypatch):
    """measure_payload, the isolate worker's target: a record that is not ok where the
    process's CUDA context no longer works says so and retires the worker; an ok record, or
    a failed one with the context intact, leaves it serving."""
    from dataclasses import asdict
    from normbench.harness import isolate, measure
    from normbench.harness.plan import Case
    case = asdict(Case(norm="layernorm", implementation="torch", rows=4, d=16,
                       dtype="fp32", weight_dtype="fp32", groups="-"))
    settings = asdict(measure.Settings(warmup_ms=1, rep_ms=1, repeats=2, seed=0,
                                       peak_tbps=None, copy_gbps=None, device_name="cpu"))
    monkeypatch.setattr(measure, "measure", lambda c, s: measure.failed_record(
        c, s, "error", "CUDA error: an illegal memory access", 0.0))
    monkeypatch.setattr(isolate, "_RETIRING", None)
    rec = measure.measure_payload((case, settings))
    assert rec["status"] == "error" and isolate._RETIRING is None
    monkeypatch.setattr(measure, "context_lost", lambda: "CUDA error: an illegal memory access")
    rec = measure.measure_payload((case, settings))
    assert rec["status"] == "error" and "the CUDA context was lost" in rec["notes"]
    assert isolate._RETIRING == "CUDA error: an illegal memory access"


def test_a_call_that_hangs_or_dies_carries_the_targets_last_progress(worker):
    """A case under --isolate that hung or crashed after measuring its correctness lost it
    (the record held only the case and the failure); the target's `progress` values now come
    with the failure as `partial`, and a call that returns is not disturbed by them."""
    w = worker("progress_then")
    assert w.call("fine", timeout_s=60) == "done" and w.partial == {"step": 2, "payload": "fine"}
    with pytest.raises(WorkerTimeout) as hung:
        w.call("hang", timeout_s=3)
    assert hung.value.partial == {"step": 2, "payload": "hang"}
    with pytest.raises(WorkerCrashed) as died:
        w.call("die", timeout_s=60)
    assert died.value.partial == {"step": 2, "payload": "die"} and "exit code 5" in str(died.value)
    assert w.call("again", timeout_s=60) == "done"
    echo = worker("echo")
    with pytest.raises(WorkerTimeout) as plain:     # a target that sends none: None
        worker("sleep_forever").call(None, timeout_s=1)
    assert plain.value.partial is None and echo.call(1, timeout_s=60)["payload"] == 1
