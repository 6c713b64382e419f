"""The runner end to end, through the CLI, on CPU under the interpreter: records, determinism
verdicts, faults as records, hangs under --isolate, interruption and --resume, locks."""
import json
import re
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from normbench.harness.schema import COLUMNS, STATUSES
from normbench.harness.store import load_records
from tests import forkcli

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NORMBENCH_PLUGINS": "tests.fake_impls", "NORMBENCH_QUIET": "1",
       "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def cli(*args, timeout=300, env=ENV, **kw):
    return forkcli.run([sys.executable, ROOT / "run_bench.py", *args], cwd=ROOT, env=env,
                       text=True, timeout=timeout, **kw)


def config(tmp_path, name="t", **fields):
    base = {"name": name, "norm": ["layernorm"], "rows": [6], "d": [16], "dtype": ["fp32"],
            "timing": {"warmup_ms": 1, "rep_ms": 1}, "determinism": {"repeats": 4}}
    base.update(fields)
    p = tmp_path / f"{name}.yaml"
    p.write_text(json.dumps(base))          # JSON is YAML
    return p


def test_records_schema_and_verdicts(tmp_path):
    cfg = config(tmp_path, norm=["layernorm", "rmsnorm"], groups=[2],
                 implementations=["test_nondeterministic", "disjoint_block", "atomic"])
    r = cli("run", cfg, "--out", tmp_path / "run", "--no-report")
    assert r.returncode == 0, r.stderr
    df = load_records(tmp_path / "run")
    assert list(df.columns) == list(COLUMNS)
    assert set(df["status"]) <= set(STATUSES)
    assert len(df) == 6 and df["case_id"].is_unique
    pq = pd.read_parquet(tmp_path / "run" / "records.parquet")
    assert len(pq) == len(df)
    assert (df["status"] == "ok").all() and df["correct"].all()
    by = df.set_index(["implementation", "norm"])
    # the deliberately nondeterministic implementation must be caught, the others must pass
    assert not by.loc[("test_nondeterministic", "layernorm"), "deterministic"]
    assert by.loc[("test_nondeterministic", "layernorm"), "distinct_results"] == 2
    assert by.loc[("disjoint_block", "rmsnorm"), "deterministic"]
    assert by.loc[("atomic", "layernorm"), "writers_per_slot"] == 6
    assert by.loc[("disjoint_block", "layernorm"), "writers_per_slot"] == 1
    assert by.loc[("disjoint_block", "layernorm"), "workspace_bytes"] == 2 * 16 * 4 * 2
    assert df["time_ms"].gt(0).all() and (df["timer"] == "cpu_wall").all()
    samples = json.loads(df["time_samples_ms"].iloc[0])
    assert len(samples) >= 3 and df["time_p20_ms"].iloc[0] <= df["time_ms"].iloc[0] <= df["time_p80_ms"].iloc[0]
    meta = json.loads((tmp_path / "run" / "meta.json").read_text())
    for k in ("device_name", "sm_count", "torch_version", "triton_version", "python_version",
              "git_commit", "git_dirty", "config_text", "config_hash", "copy_ceiling_gbps",
              "started_at", "ended_at"):
        assert k in meta, k
    assert meta["config_text"] == cfg.read_text() and meta["interpreted"] and meta["completed"]
    assert "CPU wall-clock" in r.stdout          # the table says what the times are


def test_faults_are_records_and_the_sweep_goes_on(tmp_path):
    cfg = config(tmp_path, implementations=["test_raises", "test_nan", "test_compile_error",
                                            "test_float_writers", "test_list_notes",
                                            "test_keyboard_interrupt", "disjoint_block"],
                 groups=[2])
    r = cli("run", cfg, "--out", tmp_path / "run", "--no-report")
    assert r.returncode == 0, r.stderr
    df = load_records(tmp_path / "run").set_index("implementation")
    # values a plugin supplies that a record cannot hold: its error, not the store's
    assert df.loc["test_float_writers", "status"] == "error"
    assert df.loc["test_float_writers", "error"].startswith("ValueError: its writers(): ")
    assert df.loc["test_list_notes", "status"] == "error"
    assert "its notes(): column 'notes'" in df.loc["test_list_notes", "error"]
    assert "6 × 16" in r.stdout and "6.0" not in r.stdout     # the terminal table's shapes
    # a KeyboardInterrupt a plugin raises itself is no signal: its record, the sweep goes on
    assert df.loc["test_keyboard_interrupt", "status"] == "error"
    assert df.loc["test_keyboard_interrupt", "error"].startswith("KeyboardInterrupt")
    assert df.loc["test_raises", "status"] == "error"
    assert "deliberate failure with a second line" in df.loc["test_raises", "error"]
    assert df.loc["test_nan", "status"] == "error" and "NaN" in df.loc["test_nan", "error"]
    assert df.loc["test_compile_error", "status"] == "error"
    assert df.loc["disjoint_block", "status"] == "ok"
    assert "Traceback" not in r.stderr


def test_isolate_turns_a_hang_into_a_timeout_record(tmp_path):
    """And a crash into an error record that keeps what the case measured before it (the
    worker's last progress: test_crash_later's correctness, judged on its first call)."""
    cfg = config(tmp_path, implementations=["test_hang", "test_crash_later", "disjoint_block"],
                 timeout_s=3)
    t0 = time.time()
    r = cli("run", cfg, "--out", tmp_path / "run", "--no-report", "--isolate", timeout=240)
    assert r.returncode == 0, r.stderr
    df = load_records(tmp_path / "run").set_index("implementation")
    assert df.loc["test_hang", "status"] == "timeout"
    assert "did not return within 3 s" in df.loc["test_hang", "error"]
    crash = df.loc["test_crash_later"]
    assert crash["status"] == "error" and "worker crashed" in crash["error"]
    assert "exit code 7" in crash["error"] and crash["correct"] == True      # noqa: E712
    assert crash["max_rel_err"] < 1e-6 and pd.isna(crash["time_ms"])
    assert df.loc["disjoint_block", "status"] == "ok"     # measured in a fresh worker
    assert time.time() - t0 < 200


def test_unavailable_implementation_is_skipped_with_the_reason(tmp_path):
    cfg = config(tmp_path, implementations=["quack", "disjoint_block"])
    r = cli("run", cfg, "--out", tmp_path / "run", "--no-report")
    assert r.returncode == 0, r.stderr
    df = load_records(tmp_path / "run").set_index("implementation")
    from normbench import strategies
    if not strategies.get("quack").available:
        assert df.loc["quack", "status"] == "skipped" and df.loc["quack", "error"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_interrupted_runs_resume_with_nothing_lost_or_duplicated(tmp_path, sig):
    cfg = config(tmp_path, rows=[3, 9], d=[8, 24], norm=["layernorm", "rmsnorm"],
                 implementations=["disjoint_block", "torch"], determinism={"repeats": 2})
    out = tmp_path / "run"
    expected = 2 * 2 * 2 * 2
    rng = random.Random()
    kills, latest = 0, 9.0
    for attempt in range(8):
        resume = ["--resume"] if out.exists() else []
        args = ["run", cfg, "--out", out, "--no-report"] + resume
        p = subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), *map(str, args)],
                             cwd=ROOT, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:                                   # start-up included
            p.wait(timeout=rng.uniform(1.0, latest))
        except subprocess.TimeoutExpired:
            pass
        if p.poll() is None:
            p.send_signal(sig)
            kills += 1
        _, err = p.communicate(timeout=120)
        # 128+sig: stopped cleanly mid-sweep; 0: it had finished; -sig: the signal landed in
        # the milliseconds of interpreter start-up or shutdown, outside any handler
        assert p.returncode in (0, 128 + sig, -sig), (p.returncode, err)
        assert "Traceback" not in err
        if p.returncode == 128 + sig and "records kept" in err:
            assert "--resume" in err
        # every file that exists is readable at every moment after a kill (a kill during
        # start-up may come before the run directory or its meta.json is written)
        if not out.exists():
            continue
        if not any((out / n).exists() for n in ("records.csv", "records.parquet")):
            # the moment between the directory's mkdir and records.csv: a store interrupted
            # there removes the directory it made; only a hard kill can leave it, empty
            from normbench.harness.rundir import _ours     # the lock's note, temporaries
            assert sig == signal.SIGKILL and all(map(_ours, os.listdir(out))), os.listdir(out)
            continue
        df = load_records(out)
        assert df["case_id"].is_unique
        if (out / "records.parquet").exists():
            assert len(pd.read_parquet(out / "records.parquet")) <= len(df)
        if (out / "meta.json").exists():
            json.loads((out / "meta.json").read_text())
        if len(df) == expected:
            if kills:
                break
            # the whole sweep ran before the first signal (a fast machine): again from
            # scratch, the signal sooner — this test is about a run cut in the middle
            shutil.rmtree(out)
            latest = max(1.5, latest / 2)
    r = cli("run", cfg, "--out", out, "--no-report", "--resume")
    assert r.returncode == 0, r.stderr
    df = load_records(out)
    assert len(df) == expected and df["case_id"].is_unique and (df["status"] == "ok").all()
    assert kills >= 1


def _on_a_terminal(args, stop_at=None, timeout=60):
    """Run the CLI with stderr on a pseudo-terminal (TERM=xterm: rich draws its live progress
    bar); with `stop_at`, SIGINT once that text has appeared there.  (returncode, what the
    terminal showed); a process still alive after `timeout` s is killed, the test failed."""
    import pty
    import threading
    master, slave = pty.openpty()
    # `python3` forked from tests/forkcli's server (the torch import paid once), on this
    # terminal: SIGINT sent to it is forwarded to the run
    p = subprocess.Popen(["python3", str(ROOT / "run_bench.py"), *map(str, args)],
                         cwd=ROOT, env=forkcli.script_env({**ENV, "TERM": "xterm"}),
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown, seen = [], threading.Event()

    def read():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:               # EIO: every holder of the terminal's other end gone
                break
            if not chunk:
                break
            shown.append(chunk.decode("utf-8", "replace"))
            if stop_at and stop_at in "".join(shown)[-4096:]:
                seen.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if stop_at:
            assert seen.wait(timeout), f"{stop_at!r} never shown: {''.join(shown)[-2000:]!r}"
            time.sleep(0.5)
            p.send_signal(signal.SIGINT)
        p.communicate(timeout=timeout)
    except (subprocess.TimeoutExpired, AssertionError):
        p.kill()
        p.wait()
        raise
    finally:
        reader.join(10)
        os.close(master)
    return p.returncode, re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(shown))


def test_a_run_in_a_terminal_finishes_and_stops_at_ctrl_c(tmp_path):
    """In a terminal the run stalled at 0/N for ever and neither Ctrl-C nor SIGTERM ended it:
    rich's Progress swapped sys.stderr for a proxy printing to the CLI's console, whose
    file writes to sys.stderr, so each line fed itself back.  The bar now runs to the end, and
    Ctrl-C mid-sweep stops it with 130 and the resume hint."""
    cfg = config(tmp_path, norm=["layernorm", "rmsnorm"], implementations=["torch"])
    code, shown = _on_a_terminal(["run", cfg, "--out", tmp_path / "a", "--no-report"])
    assert code == 0, shown[-2000:]
    assert "2/2" in shown and len(load_records(tmp_path / "a")) == 2
    # test_hang spins until the signal: Ctrl-C lands mid-sweep, whichever case is first
    cfg = config(tmp_path, "h", implementations=["torch", "test_hang"])
    code, shown = _on_a_terminal(["run", cfg, "--out", tmp_path / "b", "--no-report"],
                                 stop_at="/2")
    assert code == 128 + signal.SIGINT, shown[-2000:]
    assert "--resume" in shown and "Traceback" not in shown, shown[-2000:]


def test_a_log_gets_one_line_a_case_whatever_forces_colour(tmp_path):
    """FORCE_COLOR (any non-empty value, "0" too) or TTY_COMPATIBLE=1 make rich take any
    stream for a terminal: a run with stderr to a file drew live cursor frames into the log and
    no `[i/N]` line.  Whether the bar is live is decided from the stream itself."""
    cfg = config(tmp_path, norm=["layernorm", "rmsnorm"], implementations=["torch"])
    with open(tmp_path / "err.log", "w") as log:
        r = subprocess.run(["python3", str(ROOT / "run_bench.py"), "run", str(cfg), "--out",
                            str(tmp_path / "a"), "--no-report"], cwd=ROOT, timeout=120,
                           env=forkcli.script_env({**ENV, "FORCE_COLOR": "1", "TERM": "xterm"}),
                           stdout=subprocess.DEVNULL, stderr=log)
    text = (tmp_path / "err.log").read_text()
    assert r.returncode == 0, text
    assert re.search(r"^\[1/2\] ok ", text, re.M) and re.search(r"^\[2/2\] ok ", text, re.M), text
    assert "\r" not in text and "\x1b[2K" not in text and "\x1b[?25l" not in text, repr(text)


@pytest.mark.parametrize("environ, tty, live", [
    ({"FORCE_COLOR": "1", "TERM": "xterm"}, False, False),
    ({"FORCE_COLOR": "0", "TERM": "xterm"}, False, False),
    ({"TTY_COMPATIBLE": "1", "TERM": "xterm"}, False, False),
    ({"TERM": "xterm"}, True, True),
    ({"FORCE_COLOR": "1", "TERM": "xterm"}, True, True),
    ({"TTY_COMPATIBLE": "0", "TERM": "xterm"}, True, False),     # rich would not redraw
    ({"TERM": "dumb"}, True, False),
    ({"TERM": "xterm"}, None, False),                            # a closed stream
])
def test_the_bar_is_live_only_on_a_terminal_stream(environ, tty, live):
    import io
    from rich.console import Console
    from normbench.harness.run import _redraws

    class Stream(io.StringIO):
        def isatty(self):
            if tty is None:
                raise ValueError("I/O operation on closed file")
            return tty
    assert _redraws(Console(file=Stream(), _environ=environ)) is live


def test_the_cli_streams_write_past_a_rich_proxy(monkeypatch):
    """A rich Live that redirects sys.stderr puts a FileProxy printing to its console there;
    the CLI's consoles write to the stream it proxies, never back into themselves."""
    import io
    from rich.console import Console
    from rich.file_proxy import FileProxy
    from normbench.harness import cli
    real = io.StringIO()
    monkeypatch.setattr(sys, "stderr", FileProxy(Console(file=cli._Lossless("stderr")), real))
    assert cli._Lossless("stderr")._f() is real


def test_a_directory_held_by_a_live_run_is_refused(tmp_path):
    hang = config(tmp_path, name="hang", implementations=["test_hang"])   # holds the lock for ever
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), "run", str(hang), "--out",
                          str(out), "--no-report"], cwd=ROOT, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not (out / "meta.json").exists() and time.time() < deadline:
            time.sleep(0.2)
        r = cli("run", hang, "--out", out, "--no-report", "--resume")
        assert r.returncode == 2 and "Traceback" not in r.stderr
        refusal = [ln for ln in r.stderr.splitlines() if "in use by another run" in ln]
        assert len(refusal) == 1 and refusal[0].startswith("run: "), r.stderr
        assert p.poll() is None            # the holder was not disturbed
    finally:
        p.kill()                           # dies holding the lock: a stale lock
        p.wait()
    ok = config(tmp_path, name="ok", implementations=["disjoint_block"])
    # the stale lock is taken over (another config: forced, as a plain --resume is refused)
    r = cli("run", ok, "--out", out, "--no-report", "--force-resume")
    assert r.returncode == 0, r.stderr
    assert len(load_records(out)) == 1


def test_two_runs_into_different_directories_do_not_interfere(tmp_path):
    cfg = config(tmp_path, rows=[3, 5], implementations=["disjoint_block", "torch"])
    env = forkcli.script_env(ENV)       # two `python3` runs forked from one server, at once
    ps = [subprocess.Popen(["python3", str(ROOT / "run_bench.py"), "run", str(cfg), "--out",
                            str(tmp_path / f"run{i}"), "--no-report"], cwd=ROOT, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    for p in ps:
        assert p.wait(timeout=300) == 0
    a, b = (load_records(tmp_path / f"run{i}") for i in range(2))
    assert len(a) == len(b) == 4
    assert list(a["max_rel_err"]) == list(b["max_rel_err"])    # same seed, same inputs


BAD_CLI = [
    (["run", "configs/nope.yaml"], "config error: configs/nope.yaml"),
    (["run", "configs"], "config error: configs"),
    (["run", "configs/cpu.yaml", "--resume"], "--resume needs --out"),
    (["run", "configs/cpu.yaml", "--only", "nosuch"], "unknown implementation 'nosuch'"),
    (["compare", "configs", "configs", "--threshold", "abc"], "--threshold"),
    (["report", "configs"], "not a run directory"),
]


@pytest.mark.parametrize("args,msg", BAD_CLI)
def test_bad_cli_input_is_one_line_and_exit_2(args, msg):
    r = cli(*args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.strip().splitlines() if not ln.startswith("normbench:")]
    assert len(lines) == 1 and msg in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_unwritable_output_directory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = cli("run", "configs/cpu.yaml", "--out", blocker / "sub")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert str(blocker / "sub") in r.stderr


def test_dry_run_and_list():
    r = cli("run", "configs/cpu.yaml", "--dry-run")
    assert r.returncode == 0 and "plan: cpu" in r.stdout and "disjoint_block" in r.stdout
    # a plan of more records than PLAN_ROWS: its count first, then the first rows only
    r = cli("run", "configs/cpu.yaml", "rows=[1, 2, 3, 4, 5, 6, 7, 8]", "--dry-run")
    n = int(re.match(r"plan: cpu — (\d+) records, about ", r.stdout).group(1))
    assert r.returncode == 0 and n > 200
    assert f"… and {n - 200} more records (the first 200 shown)" in r.stdout
    # one record is one record ("plan: cpu — 1 records")
    r = cli("run", "configs/cpu.yaml", "rows=[4]", "d=[8]", "norm=rmsnorm", "--only", "torch",
            "--dry-run")
    assert r.returncode == 0 and r.stdout.startswith("plan: cpu — 1 record, about "), r.stdout
    # the estimate in the unit a plan is read in: a plan of days read "6000.0 min"
    from normbench.harness.cli import _fmt_s
    assert [_fmt_s(s) for s in (5, 119, 120, 7199, 7200, 172799, 360000)] == [
        "5 s", "119 s", "2.0 min", "120.0 min", "2.0 h", "48.0 h", "4.2 days"]
    from normbench.harness.text import count
    assert [count(k, "more record") for k in (0, 1, 2)] == [
        "0 more records", "1 more record", "2 more records"]


def test_dry_run_marks_and_does_not_time_the_cases_skipped_here():
    """An implementation unavailable here (the Gluon ones on a CPU) was estimated as if
    measured ("16 records, about 19 s") and listed like any other case, though the run records
    them all skipped at once.  They now cost nothing in the estimate, their rows say "skipped
    here", the count says how many, and each one's reason is printed."""
    from normbench import strategies
    if strategies.get("disjoint_smem").available:
        pytest.skip("disjoint_smem runs here")
    why = strategies.get("disjoint_smem").reason
    gluon = "implementations=[disjoint_smem,disjoint_cluster]"
    r = cli("run", "configs/cpu.yaml", gluon, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("plan: cpu — 16 records (16 to be recorded skipped: "
                               "disjoint_smem, disjoint_cluster are unavailable here), about 0 s")
    rows = [ln for ln in r.stdout.splitlines() if "disjoint_" in ln and "│" in ln]
    assert len(rows) == 16 and all("skipped here" in ln for ln in rows)
    assert f"skipped here: disjoint_smem: {why}" in r.stdout
    # beside torch: the estimate is torch's alone
    mixed = cli("run", "configs/cpu.yaml", "implementations=[disjoint_smem,torch]", "--dry-run")
    alone = cli("run", "configs/cpu.yaml", "implementations=[torch]", "--dry-run")
    about = [re.search(r"about (\S+ \S+)", x.stdout.splitlines()[0]).group(1) for x in (mixed, alone)]
    assert about[0] == about[1], (mixed.stdout, alone.stdout)
    assert "16 records (8 to be recorded skipped: disjoint_smem is unavailable" in mixed.stdout
    assert "skipped here" not in alone.stdout
    # a cluster's workers measure, not this login node: nothing is marked
    r = cli("run", "configs/cpu.yaml", gluon, "--scheduler", "tcp://127.0.0.1:1", "--dry-run")
    assert r.returncode == 0 and "skipped here" not in r.stdout, r.stdout


def test_paths_and_errors_are_printed_as_text_not_markup(tmp_path):
    """A directory named like rich markup ("[red]", "[/x]") is printed as it is, and an error
    text with markup in it neither vanishes nor stops the sweep."""
    cfg = config(tmp_path, implementations=["test_raises", "disjoint_block"])
    out = tmp_path / "q[red]w[/x]"
    r = cli("run", cfg, "--out", out, "--no-report")
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert f"records: {out / 'records.csv'}" in r.stderr and f"writing {out}" in r.stderr
    assert len(load_records(out)) == 2


def test_messages_keep_a_long_path_on_one_line(tmp_path):
    """rich hard-wraps at the console's width (80 off a terminal, without COLUMNS; stdout's
    160): 'resuming: N records already in DIR', 'note: resuming DIR although …' and report's
    'report.html: PATH' lines were broken mid-path.  A message carrying a path is one line."""
    out = tmp_path / ("d" * 200)
    env = {k: v for k, v in ENV.items() if k != "COLUMNS"}

    def run(*args):
        return forkcli.run([sys.executable, ROOT / "run_bench.py", *args], cwd=ROOT, env=env,
                           text=True, timeout=300)
    r = run("run", config(tmp_path, implementations=["torch"]), "--out", out, "--no-report")
    assert r.returncode == 0, r.stderr
    r = run("run", config(tmp_path, "u", implementations=["torch"], norm=["layernorm", "rmsnorm"]),
            "--out", out, "--force-resume", "--no-report")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    assert any(ln.startswith(f"note: resuming {out} although ") for ln in lines), r.stderr
    assert f"resuming: 1 record already in {out}" in lines, r.stderr
    r = run("report", out)
    assert r.returncode == 0, r.stderr
    assert f"report.html: {out / 'report.html'}" in r.stdout.splitlines(), r.stdout


def test_odd_out_and_only_arguments_are_one_line(tmp_path):
    long = tmp_path / ("a" * 300)              # a name longer than the OS takes
    for extra in ([], ["--resume"]):
        r = cli("run", "configs/cpu.yaml", "--out", long, "--dry-run", *extra)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
    # a name the config does not list: 'not in this sweep', whatever this machine has
    cfg = config(tmp_path, implementations=["torch", "atomic"])
    r = cli("run", cfg, "--only", "quack", "--dry-run")
    assert r.returncode == 2 and "'quack' is not in this sweep; it runs: torch, atomic" in r.stderr


def test_dry_run_of_a_resume_shows_what_is_left_and_is_refused_as_the_run_is(tmp_path):
    cfg = config(tmp_path, implementations=["torch", "disjoint_block", "atomic"])
    out = tmp_path / "run"
    assert cli("run", cfg, "--only", "torch,atomic", "--out", out, "--no-report").returncode == 0
    r = cli("run", cfg, "--out", out, "--resume", "--dry-run")
    assert r.returncode == 0 and "1 of 3 records left" in r.stdout, r.stderr
    assert "disjoint_block" in r.stdout and "atomic" not in r.stdout
    r = cli("run", cfg, "--out", out, "--dry-run")              # without --resume: refused
    assert r.returncode == 2 and "already holds 2 records" in r.stderr
    r = cli("run", cfg, "rows=[7]", "--out", out, "--resume", "--dry-run")   # another config
    assert r.returncode == 2 and "cannot resume" in r.stderr
    r = cli("run", cfg, "--out", out, "--resume", "--no-report")
    assert r.returncode == 0 and "1 of 3 records left" in r.stderr
    r = cli("list")
    assert r.returncode == 0
    for n in ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "torch", "liger", "quack"):
        assert n in r.stdout


def test_a_cut_records_csv_is_refused_naming_the_record_before_any_plan(tmp_path):
    """A records.csv cut short was read as no record before the store refused it: run said
    the directory "already holds a run, finished with no record", --resume --dry-run exited
    0 with every case left to do, and --resume printed that plan before its refusal.  Every
    mode now refuses it in the store's one line, naming the record, exit 2 — and a
    records.parquet holding a record the CSV lacks, which --dry-run passed, likewise."""
    cfg = config(tmp_path, implementations=["torch", "atomic"])
    out = tmp_path / "run"
    assert cli("run", cfg, "--out", out, "--no-report").returncode == 0
    whole = (out / "records.csv").read_bytes()
    (out / "records.csv").write_bytes(whole[:-200])
    for args in ([], ["--dry-run"], ["--resume", "--dry-run"], ["--resume"]):
        r = cli("run", cfg, "--out", out, "--no-report", *args)
        assert r.returncode == 2 and r.stdout == "", (args, r.stdout, r.stderr)
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"run: cannot read {out / 'records.csv'}: record 2 has ") and \
            "the file is cut short" in lines[0], (args, r.stderr)
    (out / "records.csv").write_bytes(b"\n".join(whole.split(b"\n")[:2]) + b"\n")
    for args in (["--dry-run"], ["--resume", "--dry-run"]):
        r = cli("run", cfg, "--out", out, "--no-report", *args)
        assert r.returncode == 2 and r.stdout == "", (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert f"run: {out / 'records.parquet'} holds case " in r.stderr and \
            f"which {out / 'records.csv'} lacks" in r.stderr, r.stderr


def test_a_resume_of_a_complete_run_leaves_it_as_it_is(tmp_path):
    """--resume of a finished run measured the copy ceiling again, appended a resumes entry
    that measured 0, moved ended_at to its own end and rewrote the report (undoing an earlier
    `report --baseline`).  With nothing left it now changes no file there and says so in one
    line; --strict still judges the records the run holds."""
    cfg = config(tmp_path, implementations=["torch", "test_raises"])
    out = tmp_path / "run"
    assert cli("run", cfg, "--out", out).returncode == 0
    assert cli("report", out, "--baseline", "test_raises").returncode == 0

    def files():
        return {p.relative_to(out): (p.read_bytes(), p.stat().st_mtime_ns)
                for p in sorted(out.rglob("*")) if p.is_file()}
    before = files()
    line = f"nothing left to measure: {out} is complete (2 records)"
    r = cli("run", cfg, "--out", out, "--resume")
    assert r.returncode == 0 and r.stderr.strip().splitlines() == [line], r.stderr
    assert r.stdout == ""
    r = cli("run", cfg, "--out", out, "--resume", "--dry-run")
    assert r.returncode == 0 and r.stdout.strip() == line, r.stdout
    r = cli("run", cfg, "--out", out, "--resume", "--only", "torch")
    assert r.returncode == 0 and line in r.stderr, r.stderr
    r = cli("run", cfg, "--out", out, "--resume", "--strict")
    assert r.returncode == 1 and "run --strict: 1 of 2 records fail (1 error)" in r.stderr, r.stderr
    assert files() == before
    # another config is refused as before, and a run not complete is resumed as before
    r = cli("run", cfg, "rows=[7]", "--out", out, "--resume")
    assert r.returncode == 2 and "cannot resume" in r.stderr
    meta = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**meta, "completed": False, "ended_at": None}))
    r = cli("run", cfg, "--out", out, "--resume", "--no-report")
    assert r.returncode == 0 and "nothing left" not in r.stderr, r.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["completed"] is True and meta["ended_at"] and meta["resumes"][-1]["measured"] == 0


def test_a_resume_of_a_complete_run_it_cannot_open_does_not_say_it_is_complete(tmp_path):
    """A complete run whose records.csv has a column this version does not know, its parquet
    gone: --resume printed "nothing left to measure: ... is complete" and then refused the
    directory (exit 2).  Only the refusal, in one line."""
    cfg = config(tmp_path, implementations=["torch"])
    out = tmp_path / "run"
    assert cli("run", cfg, "--out", out, "--no-report").returncode == 0
    lines = (out / "records.csv").read_text().splitlines()
    (out / "records.csv").write_text("\n".join([lines[0] + ',"foo"']
                                                + [ln + ',"x"' for ln in lines[1:]]) + "\n")
    (out / "records.parquet").unlink()
    r = cli("run", cfg, "--out", out, "--resume", "--no-report")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"run: {out} was written with other columns (foo); cannot resume it"], r.stderr


def test_no_arguments_runs_the_cpu_config_without_a_gpu(tmp_path):
    """`python run_bench.py` alone: configs/cpu.yaml under the interpreter, with its report."""
    r = forkcli.run([sys.executable, ROOT / "run_bench.py"], cwd=tmp_path,
                    env={**ENV, "NORMBENCH_PLUGINS": ""}, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "configs/cpu.yaml" in r.stderr and "no GPU" in r.stderr
    (run,) = (tmp_path / "runs").iterdir()
    df = load_records(run)
    assert len(df) and (df["status"] == "ok").all() and df["correct"].all()
    assert (run / "report.html").exists()


# ---------------------------------------------------------------------------- CLI ergonomics


def test_overrides_shape_stdin_strict_progress_lines_and_history(tmp_path):
    """An ad-hoc sweep from the shell: a shipped name with overrides, piped output (one line
    per finished case), --strict, and a resume that joins the invocation history."""
    out = tmp_path / "run"
    r = cli("run", "cpu", "--out", out, "--no-report", "--strict", "--shape", "6x16",
            "norm=layernorm", "dtype=fp32", "implementations=[disjoint_block, test_raises]",
            "determinism.repeats=2")
    assert r.returncode == 1, r.stderr                       # test_raises errs: --strict
    assert "[1/2] ok disjoint_block G=4 layernorm 6x16 fp32/fp32: " in r.stderr
    assert "[2/2] error test_raises layernorm 6x16 fp32/fp32: RuntimeError" in r.stderr
    assert r.stderr.strip().splitlines()[-1] == "run --strict: 1 of 2 records fail (1 error)"
    df = load_records(out)
    assert sorted(df["implementation"]) == ["disjoint_block", "test_raises"]
    assert list(zip(df["rows"], df["d"])) == [(6, 16)] * 2
    # booleans stay booleans, samples are numbers in parquet, also with a failed record
    import pyarrow.parquet as pq
    schema = pq.read_schema(out / "records.parquet")
    assert str(schema.field("time_samples_ms").type) == "list<element: double>"
    for col in ("correct", "deterministic", "deterministic_by_design"):
        assert str(schema.field(col).type) == "bool"
        for source in ("csv", "parquet"):
            assert str(load_records(out, source)[col].dtype) == "boolean"
        assert str(pd.read_csv(out / "records.csv", dtype_backend="numpy_nullable")[col].dtype) \
            == "boolean"
    samples = pd.read_parquet(out / "records.parquet").set_index("implementation")
    assert len(samples.loc["disjoint_block", "time_samples_ms"]) >= 3
    meta = json.loads((out / "meta.json").read_text())
    assert "--shape" in meta["config_text"].splitlines()[0]  # what ran, overrides applied
    resume = ["run", "cpu", "--out", out, "--no-report", "--resume", "--shape", "6x16",
              "norm=layernorm", "dtype=fp32", "implementations=[disjoint_block, test_raises]",
              "determinism.repeats=2"]
    r2 = cli(*resume)                     # a complete run: nothing to do, nothing rewritten
    assert r2.returncode == 0 and "nothing left to measure" in r2.stderr + r2.stdout, r2.stderr
    assert len(json.loads((out / "meta.json").read_text())["invocations"]) == 1
    # a run stopped after its last record (killed before it was marked complete) is resumed:
    # the resume joins the invocation history
    meta["completed"] = False
    (out / "meta.json").write_text(json.dumps(meta))
    r2 = cli(*resume)
    assert r2.returncode == 0, r2.stderr                     # nothing left: no --strict
    meta = json.loads((out / "meta.json").read_text())
    assert meta["completed"] is True
    assert [i["argv"][-1] for i in meta["invocations"]] == ["determinism.repeats=2"] * 2
    assert "--resume" in meta["invocations"][1]["argv"] and "--strict" in meta["argv"]
    # the run and its resume name the config file they read (the shipped cpu.yaml, by name)
    assert meta["config_path"].endswith("cpu.yaml")
    assert [e["config_path"] for e in meta["resumes"]] == [meta["config_path"]]
    stdin = cli("run", "-", "--dry-run", "d=[8]",
                input="name: piped\nrows: [4]\nd: [16]\nimplementations: [torch]\n")
    assert stdin.returncode == 0 and "plan: piped" in stdin.stdout and "│ 8 " in stdin.stdout


@pytest.mark.parametrize("args,msg", [
    (["run", "cpu", "d=[x]"], "config error: override 'd=[x]': d[0]: must be an integer"),
    (["run", "cpu", "--shape", "5"], "config error: --shape '5': shapes: expected ROWSxD"),
    (["run", "nosuch"], "nor is it a shipped config"),
    (["compare", "a", "b", "--format", "xml"], "'xml' is not one of 'table', 'markdown', 'json'"),
])
def test_bad_overrides_and_choices_are_one_line(args, msg):
    r = cli(*args)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert msg in r.stderr, r.stderr


@pytest.mark.parametrize("plugin,text,fault", [
    ("nb_missing_dep", "import surely_not_installed_anywhere\n", "ModuleNotFoundError"),
    ("nb_syntax", "def f(:\n", "SyntaxError"),
    ("nb_raises", "raise RuntimeError('no\\nway')\n", "RuntimeError: no way"),
    ("nb_dup", "from normbench.strategies import register\n"
               "@register('torch', kind='baseline', deterministic_by_design=False, "
               "uses_groups=False)\ndef f(*a, **k): pass\n", "'torch' registered twice"),
    ("nb_nosuch_module", None, "No module named 'nb_nosuch_module'"),
])
def test_a_broken_plugin_is_one_line_naming_it_and_exit_2(plugin_path, plugin, text, fault):
    # one plugin folder for every case (conftest's plugin_path), so that their calls share one
    # environment but for NORMBENCH_PLUGINS and are forked from one server (tests/forkcli.py)
    folder, pythonpath = plugin_path
    if text is not None:
        (folder / f"{plugin}.py").write_text(text)
    r = cli("list", env={**ENV, "NORMBENCH_PLUGINS": plugin, "PYTHONPATH": pythonpath},
            timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    (line,) = [ln for ln in r.stderr.splitlines() if not ln.startswith("normbench:")]
    assert line.startswith(f"plugin {plugin} (NORMBENCH_PLUGINS) cannot be loaded: ")
    assert fault in line


def test_strict_fails_on_wrong_and_unrepeatable_records_too(tmp_path):
    """--strict gates what a record says, not only its status: an ok record that is incorrect,
    or not bitwise repeatable although deterministic by design, fails it; a nondeterministic
    strategy that never claimed otherwise does not."""
    cfg = config(tmp_path, implementations=["test_coarse_dw", "test_det_flips",
                                  "test_nondeterministic", "disjoint_block"])
    r = cli("run", cfg, "--out", tmp_path / "run", "--no-report", "--strict")
    df = load_records(tmp_path / "run").set_index("implementation")
    assert (df["status"] == "ok").all()
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1] == (
        "run --strict: 2 of 4 records fail (1 incorrect, 1 not deterministic, though by design)")
    ok = config(tmp_path, name="ok", implementations=["test_nondeterministic", "disjoint_block"])
    assert cli("run", ok, "--out", tmp_path / "ok", "--no-report", "--strict").returncode == 0


def test_the_resume_hint_keeps_every_option_that_changes_the_run():
    from normbench.harness.cli import _again
    cmd = _again("cpu", ["d=[8]"], ["4x8"], out_dir="r", gpus="2", exclusive_below_us=0.0,
                 force_resume=True, strict=False, only=None)
    assert cmd == ("normbench run cpu 'd=[8]' --shape 4x8 --gpus 2 --exclusive-below-us 0.0 "
                   "--force-resume --out r --resume")


def test_help_version_and_list_markup():
    from normbench import __version__
    for flag in ("-V", "--version"):
        assert cli(flag).stdout.strip() == f"normbench {__version__}"
    helps = {}                      # each help asked once, its text read by every check
    for args in (["-h"], ["run", "-h"], ["compare", "-h"]):
        r = helps[args[0]] = cli(*args)
        assert r.returncode == 0 and "Usage" in r.stdout, r.stderr
    assert "table|markdown|json" in helps["compare"].stdout
    from normbench.harness import cli as cli_module, schema
    assert [m.value for m in cli_module.Metric] == list(schema.metrics())   # declared, not listed
    assert "--shape" in helps["run"].stdout and "--strict" in helps["run"].stdout
    listed = cli("list").stdout
    assert "[d]" in listed          # rich markup escaped: "[d]" shows (wherever the cell wraps)


def test_resume_without_the_device_compares_the_config_only():
    """device=False (a cluster run: the cases run elsewhere) never compares this machine's
    device or timer with the run's — a GPU run resumes from a login node without a GPU."""
    from normbench.harness.config import parse_config
    from normbench.harness.run import resume_mismatch
    sweep = parse_config("rows: [4]\nd: [8]\n")
    meta = {"device_name": "NVIDIA H200", "interpreted": False, "config_hash": sweep.config_hash}
    assert resume_mismatch(meta, sweep, device=False) == []
    assert resume_mismatch({**meta, "config_hash": "other"}, sweep, device=False)
    assert resume_mismatch(meta, sweep) != []       # here: CPU and the interpreter


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_in_an_exit_hook_is_an_exit_code_not_a_traceback(sig):
    """Once the CLI's command is done (interrupt.exit_quietly, in cli.main's finally), SIGINT
    or SIGTERM landing in an atexit hook or a finalizer — CI saw one land in weakref's exit
    function after a sweep — ends the process with 128 + the signal and no traceback.
    Without it the signal handler's exception is printed as "Exception ignored in …" with a
    traceback."""
    code = ("import atexit, os, signal, time\n"
            "from normbench.harness import interrupt\n"
            "interrupt.install()\n"
            f"atexit.register(lambda: (os.kill(os.getpid(), {int(sig)}), time.sleep(2)))\n"
            "interrupt.exit_quietly()\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=ENV, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 128 + sig, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr


def test_a_resume_on_a_cluster_lists_each_gpu_once():
    from normbench.harness.run import _joined_gpus
    gpu = lambda i, c: {"hostname": "h", "gpu_uuid": f"GPU-{i}", "gpu_index": i,
                        "copy_ceiling_gbps": c}
    known = [gpu(0, 4000.0), gpu(1, 4010.0)]
    assert _joined_gpus(known, [gpu(0, 4005.0), gpu(1, 3999.0)]) == known   # measured again
    assert _joined_gpus(known, [gpu(1, 1.0), gpu(2, 2.0)]) == known + [gpu(2, 2.0)]
    standin = {"hostname": "h", "gpu_uuid": None, "gpu_index": None, "copy_ceiling_gbps": None}
    assert len(_joined_gpus([standin] * 2, [standin] * 2)) == 2
    assert len(_joined_gpus([standin] * 2, [standin] * 3)) == 3


def test_done_line_says_an_incorrect_result():
    """A timed but wrong result is not printed as a plain "ok": the outputs past their
    tolerance, as the record holds them (dγ/dβ by tolerance_dw, dx by tolerance)."""
    from normbench.harness.run import _done_line
    rec = dict(status="ok", time_ms=27.73, duration_s=0.1, correct=False, err_dx=0.004,
               err_dw=0.0056, err_db=None, tolerance=0.03, tolerance_dw=1e-4)
    line = _done_line(rec, "torch layernorm 19x33 bf16/fp32", 2, 2)
    assert line == ("[2/2] ok, incorrect (dγ 0.0056 > 0.0001) torch layernorm 19x33 "
                    "bf16/fp32: 27.73 ms (0.1 s)")
    assert "\n" not in line
    # no error columns: still said; a correct one is plain "ok"
    assert _done_line(dict(rec, err_dw=None, err_dx=None), "x", 1, 1).startswith(
        "[1/1] ok, incorrect x: ")
    assert _done_line(dict(rec, correct=True), "x", 1, 1) == "[1/1] ok x: 27.73 ms (0.1 s)"


def _sweep_and_cases():
    from normbench import strategies as s
    from normbench.harness.config import parse_config
    from normbench.harness.plan import expand
    sweep = parse_config("rows: [4, 6]\nd: [8]\nimplementations: [torch]\n"
                         "timing: {warmup_ms: 1, rep_ms: 1}\n")
    return sweep, expand(sweep, uses_groups=lambda n: s.get(n).uses_groups, available=s.known())


def test_a_resume_is_incomplete_while_it_measures_and_records_its_stack(tmp_path, monkeypatch):
    """A resume killed hard (kill -9: no ended_at written) left the earlier run's
    "completed: true" and ended_at, older than the records it added: meta says neither
    while the resume measures.  Its entry in `resumes` names the commit, dirty flag,
    versions, plugins and environment it measured with (a run resumed at another commit, or
    with NORMBENCH_FAST_LAUNCH=0, said nothing of it: meta's environment is the start's)."""
    from rich.console import Console
    from normbench.harness import env, run
    from normbench.harness.measure import failed_record
    from normbench.harness.store import load_meta
    monkeypatch.delenv("NORMBENCH_FAST_LAUNCH", raising=False)
    sweep, cases = _sweep_and_cases()
    seen = []

    def measure(case, settings):            # what a kill -9 at this moment would leave
        seen.append(load_meta(tmp_path))
        return failed_record(case, settings, "error", "stub", 0.0)
    monkeypatch.setattr(run, "measure", measure)
    quiet = Console(stderr=True, quiet=True)
    run.execute(sweep, cases[:1], tmp_path, console=quiet)
    assert load_meta(tmp_path)["completed"]
    seen.clear()
    monkeypatch.setenv("NORMBENCH_FAST_LAUNCH", "0")
    run.execute(sweep, cases, tmp_path, resume=True, console=quiet)
    assert seen and {(m["completed"], m["ended_at"]) for m in seen} == {(False, None)}
    meta = load_meta(tmp_path)
    assert meta["completed"] and meta["ended_at"]
    (entry,) = meta["resumes"]
    commit, dirty = env.git_state()
    assert (entry["git_commit"], entry["git_dirty"]) == (commit, dirty)
    assert entry["package_versions"] == env.package_versions()
    assert entry["plugins"] == env.strategies.plugins()      # which plugin code, as meta's
    assert entry["torch_version"] == meta["torch_version"] and "format_version" not in entry
    assert entry["environment"]["NORMBENCH_FAST_LAUNCH"] == "0"
    assert "NORMBENCH_FAST_LAUNCH" not in meta["environment"]


def test_a_resumed_partial_merge_no_longer_lists_what_it_measured_as_missing(tmp_path,
                                                                               monkeypatch):
    """merge --allow-partial, then --resume to measure the missing cases: meta.merge said
    partial, the cases missing, once they were measured.  They move to measured_after_merge."""
    from rich.console import Console
    from normbench.harness import run
    from normbench.harness.measure import failed_record
    from normbench.harness.store import RunStore, load_meta
    sweep, cases = _sweep_and_cases()
    monkeypatch.setattr(run, "measure", lambda case, settings: failed_record(
        case, settings, "error", "stub", 0.0))
    quiet = Console(stderr=True, quiet=True)
    run.execute(sweep, cases[:1], tmp_path, console=quiet)
    missing = [c.key for c in cases[1:]]
    with RunStore(tmp_path, resume=True) as store:      # as merge --allow-partial leaves it
        store.update_meta(completed=False, merge={"shards": 2, "plan_size": len(cases),
                                                  "partial": True, "missing": len(missing),
                                                  "missing_keys": missing, "finished": True})
    run.execute(sweep, cases, tmp_path, resume=True, console=quiet)
    meta = load_meta(tmp_path)
    assert meta["completed"]
    assert meta["merge"] == {"shards": 2, "plan_size": len(cases), "partial": False,
                             "missing": 0, "missing_keys": [], "finished": True,
                             "measured_after_merge": missing}


class _Cluster:
    """A stand-in executor: start() runs `start`; records() measures with a stub, or with
    `interrupt` is stopped by a signal that leaves its first record unkept (unsaved())."""

    def __init__(self, start=None, interrupt=False):
        self._start, self._interrupt, self._unsaved = start, interrupt, []

    def start(self, console):
        if self._start:
            self._start()
        return None

    def records(self, todo, settings, timeout_s):
        from normbench.harness.interrupt import Interrupted
        from normbench.harness.measure import failed_record
        if self._interrupt:
            self._unsaved = [(c, failed_record(c, settings, "error", "stub", 0.0))
                             for c in todo[:1]]
            raise Interrupted(signal.SIGINT)
        for c in todo:
            yield c, failed_record(c, settings, "error", "stub", 0.0)

    def joined(self):
        return []

    def unsaved(self):
        out, self._unsaved = self._unsaved, []
        return out

    def close(self):
        pass


@pytest.mark.parametrize("where", ["cluster", "isolate"])
def test_a_signal_as_a_finished_sweep_closes_leaves_every_file_written(tmp_path, monkeypatch,
                                                                       where):
    """A signal just after the last record raised inside the cluster's (or the isolate
    worker's) close, skipping the store's: records.parquet stayed short of records.csv for
    good and the lock's note was left, while meta said completed.  The close now runs under
    interrupt.held(): every file is written, and the signal is the run's stop after a
    finished sweep (outcome.finished)."""
    from rich.console import Console
    from normbench.harness import run
    from normbench.harness.measure import Settings, failed_record
    from normbench.harness.plan import Case
    from normbench.harness.store import load_meta
    sweep, cases = _sweep_and_cases()

    def signalled():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.5)                   # the handler runs in here

    class Closing(_Cluster):
        def close(self):
            signalled()

    class Worker:
        def __init__(self, *a, **k):
            pass

        def call(self, payload, timeout_s):
            return failed_record(Case(**payload[0]), Settings(**payload[1]), "error", "stub", 0.0)

        def close(self):
            signalled()
    monkeypatch.setattr(run, "Worker", Worker)
    d = tmp_path / "r"
    out = run.execute(sweep, cases, d, console=Console(stderr=True, quiet=True),
                      isolate=where == "isolate", executor=Closing() if where == "cluster" else None)
    assert out.interrupted == signal.SIGINT and out.finished and out.measured == len(cases)
    assert len(pd.read_parquet(d / "records.parquet")) == len(load_records(d)) == len(cases)
    assert not (d / ".normbench.lock.json").exists() and load_meta(d)["completed"] is True


def test_a_signal_after_the_sweep_is_told_as_such_and_a_resume_repairs_what_it_cut(tmp_path):
    """The CLI said "interrupted by SIGTERM; nothing was being measured" for a signal in a
    finished run's close.  It now says the sweep finished and how to write the report.  And a
    --resume with nothing left to measure left a records.parquet short of records.csv (cut
    so before the close was held) short for good: it now rewrites it from the CSV, and
    removes a lock note left behind."""
    cfg = config(tmp_path, norm=["layernorm", "rmsnorm"], implementations=["torch"])
    out = tmp_path / "r"
    code = ("import os, signal, sys, time\n"
            "from normbench.harness import isolate\n"
            "close, sent = isolate.Worker.close, []\n"
            "def closing(self):\n"
            "    if not sent:\n"
            "        sent.append(os.kill(os.getpid(), signal.SIGTERM))\n"
            "        time.sleep(0.5)\n"
            "    close(self)\n"
            "if __name__ == '__main__':     # not in the --isolate worker, which spawn starts from it\n"
            "    isolate.Worker.close = closing\n"
            f"    sys.argv = ['normbench', 'run', {str(cfg)!r}, '--out', {str(out)!r}, '--isolate']\n"
            "    from normbench.harness.cli import main\n"
            "    main()\n")
    script = tmp_path / "closing_signalled.py"       # a script: forked from forkcli's server
    script.write_text(code)
    p = forkcli.run([sys.executable, script], cwd=ROOT, env=ENV, text=True, timeout=300)
    assert p.returncode == 128 + signal.SIGTERM, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        f"interrupted by SIGTERM after the sweep finished: 2 records complete in {out}; "
        f"write the report with: normbench report {out}"), p.stderr
    assert len(pd.read_parquet(out / "records.parquet")) == 2
    assert not (out / ".normbench.lock.json").exists()
    # as such a close left a run before it was held: the parquet short, the note there
    full = pd.read_parquet(out / "records.parquet")
    full.iloc[:1].to_parquet(out / "records.parquet")
    (out / ".normbench.lock.json").write_text('{"pid": 1, "host": "h", "since": "x"}')
    r = cli("run", cfg, "--out", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert r.stderr.strip().splitlines() == [
        f"nothing left to measure: {out} is complete (2 records)",
        f"run --resume: {out}: records.parquet rewritten from records.csv (it held 1 of its "
        "2); the lock's note .normbench.lock.json a stopped run left removed"], r.stderr
    assert len(pd.read_parquet(out / "records.parquet")) == 2
    assert not (out / ".normbench.lock.json").exists()
    r = cli("run", cfg, "--out", out, "--resume")      # nothing more to repair: one line
    assert r.stderr.strip().splitlines() == [
        f"nothing left to measure: {out} is complete (2 records)"], r.stderr


def test_a_signal_as_a_measurement_ends_loses_nothing(tmp_path, monkeypatch):
    """A signal in the moment between a measurement's end and its store (the host-load
    count, the label) lost the record: measured, never stored.  It is now saved as the run
    closes, annotated as it would have been."""
    from rich.console import Console
    from normbench.harness import hostload, run
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.measure import failed_record
    sweep, cases = _sweep_and_cases()
    monkeypatch.setattr(run, "measure", lambda case, settings: failed_record(
        case, settings, "error", "stub", 0.0))

    class Signalled(hostload.track):
        def __exit__(self, *exc):
            super().__exit__(*exc)
            raise Interrupted(signal.SIGINT)     # as a signal landing as it ends
    monkeypatch.setattr(hostload, "track", Signalled)
    out = run.execute(sweep, cases, tmp_path / "r", console=Console(stderr=True, quiet=True))
    df = load_records(tmp_path / "r")
    assert out.interrupted == signal.SIGINT and out.measured == 1
    assert list(df["case_id"]) == [cases[0].key] and df["concurrent_cases"].notna().all()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_a_plugin_swallows_still_stops_the_sweep(tmp_path, sig):
    """A plugin whose bare `except:` caught the Interrupted of the first Ctrl-C made the run
    unstoppable: later signals are ignored once one arrived (for the cleanup's sake), the
    first never got out, and the sweep ran to its end with exit 0.  It now stops at the next
    record's end, with 128 + the signal, what it measured kept, and resumes as any stop."""
    cfg = config(tmp_path, implementations=["test_swallows_signal", "torch"],
                 determinism={"repeats": 2})
    out = tmp_path / "r"
    r = cli("run", cfg, "--out", out, "--no-report",
            env={**ENV, "NORMBENCH_TEST_SIGNAL": sig.name})
    assert r.returncode == 128 + sig, r.stderr
    assert f"interrupted by {sig.name}: 1 record kept in {out}" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert list(load_records(out)["implementation"]) == ["test_swallows_signal"]
    assert len(pd.read_parquet(out / "records.parquet")) == 1
    assert json.loads((out / "meta.json").read_text())["completed"] is False
    r = cli("run", cfg, "--out", out, "--no-report", "--resume")
    assert r.returncode == 0, r.stderr
    assert sorted(load_records(out)["implementation"]) == ["test_swallows_signal", "torch"]


def test_a_signal_swallowed_under_a_cluster_s_records_still_stops_the_sweep(tmp_path):
    """As above, where the executor's code is what swallows it (a library's bare `except:`
    around its wait): the sweep stops once the record it handed over is kept."""
    from rich.console import Console
    from normbench.harness import run
    sweep, cases = _sweep_and_cases()

    class Swallowing(_Cluster):
        def records(self, todo, settings, timeout_s):
            for i, item in enumerate(super().records(todo, settings, timeout_s)):
                if i == 0:
                    try:
                        os.kill(os.getpid(), signal.SIGTERM)
                        time.sleep(0.5)
                    except:                 # noqa: E722 -- the point
                        pass
                yield item
    out = run.execute(sweep, cases, tmp_path / "r", console=Console(stderr=True, quiet=True),
                      executor=Swallowing())
    assert out.interrupted == signal.SIGTERM and out.measured == 1 and not out.finished
    assert list(load_records(tmp_path / "r")["case_id"]) == [cases[0].key]


def test_a_signal_as_the_isolate_worker_s_record_arrives_loses_nothing(tmp_path, monkeypatch):
    """--isolate: a signal landing after the worker had sent a finished case's record, before
    the run read it, killed the worker with the record unread — "1 record kept", the case's
    missing.  The record comes with the stop (isolate's `reply`) and is saved as the run
    closes, as one measured here is."""
    from rich.console import Console
    from normbench.harness import isolate, run
    from normbench.harness.interrupt import Interrupted
    sweep, cases = _sweep_and_cases()
    wait, waits = isolate._wait, []

    def signalled(objects, timeout_s):
        if len(waits) == 1:     # the first call's first wait (the first: the start's): the
            _idle(next(iter(isolate._LIVE)).pid)    # worker sends its progress, then the
        ready = wait(objects, timeout_s)            # record, and waits for the next call
        waits.append(ready)
        if len(waits) == 2:
            raise Interrupted(signal.SIGINT)
        return ready
    monkeypatch.setattr(isolate, "_wait", signalled)
    out = run.execute(sweep, cases, tmp_path / "r", isolate=True,
                      console=Console(stderr=True, quiet=True))
    df = load_records(tmp_path / "r")
    assert out.interrupted == signal.SIGINT and out.measured == 1 and not out.finished
    assert list(df["case_id"]) == [cases[0].key] and list(df["status"]) == ["ok"]
    assert df["concurrent_cases"].notna().all()
    assert len(pd.read_parquet(tmp_path / "r" / "records.parquet")) == 1


def _idle(pid: int, limit_s: float = 120.0) -> None:
    """Wait until process `pid` sleeps and has used no CPU for a second (an isolate worker
    blocked reading its next call, every message of the last one sent)."""
    def now():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[11]) + int(fields[12])     # state, utime + stime
    deadline, last = time.monotonic() + limit_s, now()
    while time.monotonic() < deadline:
        time.sleep(1.0)
        state, cpu = now()
        if state == "S" and last == (state, cpu):
            return
        last = (state, cpu)
    raise AssertionError(f"worker {pid} still busy after {limit_s:g} s")


def test_saving_what_a_stop_left_skips_the_kept_and_goes_past_a_refused_record(tmp_path):
    """_save_unsaved stored what a stop left until one append failed, dropping the rest — and
    the executor's last record handed over, once kept, was such a one (a duplicate).  A case
    the store holds is skipped, a refused record left and the others stored."""
    from normbench.harness.measure import Settings, failed_record
    from normbench.harness.run import Outcome, _save_unsaved
    from normbench.harness.store import RunStore
    _, cases = _sweep_and_cases()
    s = Settings(warmup_ms=1, rep_ms=1, repeats=1, seed=0, peak_tbps=None, copy_gbps=None,
                 device_name="cpu")
    rec = {c.key: failed_record(c, s, "error", "stub", 0.0) for c in cases}
    outcome = Outcome(out_dir=tmp_path / "r")
    with RunStore(tmp_path / "r") as store:
        store.append(rec[cases[0].key])
        _save_unsaved([(cases[0], rec[cases[0].key]),                       # kept already
                       (cases[1], {**rec[cases[1].key], "status": "bogus"}),  # refused
                       (cases[2], rec[cases[2].key])], store, outcome, None)
    assert sorted(load_records(tmp_path / "r")["case_id"]) == sorted(c.key for c in (cases[0], cases[2]))
    assert outcome.measured == 1


@pytest.fixture
def stub_run(tmp_path, monkeypatch):
    """A complete run of _sweep_and_cases's first case in tmp_path/r, measured by a stub."""
    from rich.console import Console
    from normbench.harness import run
    from normbench.harness.measure import failed_record
    sweep, cases = _sweep_and_cases()
    monkeypatch.setattr(run, "measure", lambda case, settings: failed_record(
        case, settings, "error", "stub", 0.0))
    quiet = Console(stderr=True, quiet=True)
    run.execute(sweep, cases[:1], tmp_path / "r", console=quiet)
    return lambda cases_=cases, **kw: run.execute(sweep, cases_, tmp_path / "r", resume=True,
                                                  console=quiet, **kw), cases, tmp_path / "r"


def test_a_resume_records_how_many_records_it_measured(stub_run):
    """merge compares only the resumes that measured: each entry counts its records when the
    sweep ends, is interrupted, or saves what a signal left unkept."""
    from normbench.harness.store import load_meta
    resume, cases, d = stub_run
    resume(cases[:1])                                    # nothing left
    out = resume(cases, executor=_Cluster(interrupt=True))  # a signal with one record unkept
    assert out.interrupted and out.measured == 1
    resume()                                             # the rest
    counts = [e["measured"] for e in load_meta(d)["resumes"]]
    assert counts == [0, 1, len(cases) - 2]


@pytest.mark.parametrize("stop", ["fault", "signal"])
def test_a_resume_whose_cluster_does_not_start_leaves_meta_as_it_was(stub_run, stop):
    """--scheduler unreachable, or Ctrl-C while the cluster starts: nothing was resumed, so
    the complete run is not marked incomplete with a new ended_at."""
    from normbench.harness.interrupt import Interrupted
    resume, cases, d = stub_run
    before = (d / "meta.json").read_bytes()

    def start():
        if stop == "signal":
            raise Interrupted(signal.SIGINT)
        raise RuntimeError("--scheduler tcp://127.0.0.1:9: cannot connect")
    if stop == "signal":
        assert resume(executor=_Cluster(start)).interrupted == signal.SIGINT
    else:
        with pytest.raises(RuntimeError, match="cannot connect"):
            resume(executor=_Cluster(start))
    assert (d / "meta.json").read_bytes() == before


def test_a_resume_that_completes_a_stopped_merge_finishes_it(stub_run):
    """A merge stopped part-way (merge.finished false), resumed to the end: finished."""
    from normbench.harness.store import RunStore, load_meta
    resume, cases, d = stub_run
    with RunStore(d, resume=True) as store:             # as a merge stopped by a full disk
        store.update_meta(completed=False, merge={"shards": 2, "plan_size": len(cases),
                                                  "partial": False, "missing": 0,
                                                  "missing_keys": [], "finished": False})
    resume()
    meta = load_meta(d)
    assert meta["completed"] and meta["merge"]["finished"] is True


def test_a_resume_measures_its_own_copy_ceiling_and_its_records_use_it(tmp_path, monkeypatch):
    """The README's workflow: --out DIR in one device call, --resume in the next — a fresh
    machine.  The resume measured no copy ceiling: its records' pct_copy was against the
    ceiling meta.json holds, measured at the start on another machine.  A resume measures
    its own, as a start does, records it in its `resumes` entry and its records use it."""
    from rich.console import Console
    from normbench.harness import run
    from normbench.harness.measure import failed_record
    from normbench.harness.store import load_meta
    sweep, cases = _sweep_and_cases()
    ceilings, used = iter([50.0, 80.0]), []
    monkeypatch.setattr(run.timing, "copy_ceiling_gbps", lambda device, on_gpu: next(ceilings))

    def measure(case, settings):
        used.append(settings.copy_gbps)
        return failed_record(case, settings, "error", "stub", 0.0)
    monkeypatch.setattr(run, "measure", measure)
    console = Console(stderr=True, record=True, width=200)
    run.execute(sweep, cases[:1], tmp_path, console=console)
    console.export_text()
    run.execute(sweep, cases, tmp_path, resume=True, console=console)
    assert "measuring the device-to-device copy ceiling" in console.export_text()
    assert used == [50.0] + [80.0] * (len(cases) - 1)
    meta = load_meta(tmp_path)
    assert meta["copy_ceiling_gbps"] == 50.0            # the start's, as its records' own
    (entry,) = meta["resumes"]
    assert entry["copy_ceiling_gbps"] == 80.0 and "peak_tbps" in entry


def test_a_resume_on_a_machine_without_a_peer_records_it_skipped_never_dropped(tmp_path):
    """The README's workflow with a config that names no implementation: a run stopped on one
    machine, --resume on another that lacks a peer the run planned.  The resume planned only
    what the second machine had: the peer's cases were neither measured nor recorded, and
    meta.json said completed: true.  It now finishes the plan the run started with (meta.json
    plan_implementations), the peer recorded skipped with the reason."""
    from normbench.harness.store import load_meta
    cfg = config(tmp_path, groups=[2], determinism={"repeats": 2})     # names none
    out, env = tmp_path / "run", {**ENV, "NORMBENCH_PLUGINS": "tests.optional_peer"}

    def run(*args, **extra):
        return forkcli.run([sys.executable, ROOT / "run_bench.py", "run", cfg, "--out", out,
                            "--no-report", *args], cwd=ROOT, env={**env, **extra}, text=True,
                           timeout=300)
    # the peer comes last in the plan (plugins register after the shipped ones): Ctrl-C
    # while it is measured leaves every other record of the case
    r = run(NORMBENCH_TEST_PEER_SIGINT="1")
    assert r.returncode == 128 + signal.SIGINT, r.stderr
    held = load_records(out)
    meta = load_meta(out)
    assert "test_optional_peer" not in set(held["implementation"]) and not meta["completed"]
    r = run("--resume", NORMBENCH_TEST_PEER_MISSING="1")
    assert r.returncode == 0, r.stderr
    df = load_records(out).set_index("implementation")
    assert len(df) == len(held) + 1
    assert df.loc["test_optional_peer", "status"] == "skipped"
    assert "not installed here" in df.loc["test_optional_peer", "error"]
    assert load_meta(out)["completed"] is True
    assert "test_optional_peer" in load_meta(out)["plan_implementations"]
    # a plan naming an implementation no plugin registers here: refused, unless --only
    # leaves it out
    meta = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**meta, "plan_implementations":
                                               meta["plan_implementations"] + ["test_gone"]}))
    r = run("--resume")
    assert r.returncode == 2 and "'test_gone', which is not registered here" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert run("--resume", "--only", "torch").returncode == 0
    (out / "meta.json").write_text(json.dumps({**meta, "plan_implementations": ["torch", 3]}))
    r = run("--resume")
    assert r.returncode == 2 and r.stderr.strip() == (
        f"run: {out / 'meta.json'}: plan_implementations: expected a list of str, got an item "
        "of int")
    # a run written before plan_implementations: those its records hold and those available
    # here, with a note
    from normbench.harness.run import resumed_implementations
    (out / "meta.json").write_text(json.dumps({k: v for k, v in meta.items()
                                               if k != "plan_implementations"}))
    names, note = resumed_implementations(out, ["torch", "test_other", "atomic"],
                                          ["test_other"])
    assert names == ["torch", "test_other", "atomic"] + sorted(
        set(df.index) - {"torch", "atomic"}) and "plan_implementations" in note
    r = run("--resume", NORMBENCH_TEST_PEER_MISSING="1")
    assert r.returncode == 0 and "does not list its plan's implementations" in r.stderr
    assert resumed_implementations(tmp_path / "none", ["torch"], ["torch"]) is None


@pytest.fixture(scope="module")
def torch_only_run(tmp_path_factory):
    """A run of [torch, disjoint_block] that measured torch only (--only): a resume has a
    case left to measure."""
    tmp = tmp_path_factory.mktemp("torch_only")
    cfg = config(tmp, implementations=["torch", "disjoint_block"])
    r = cli("run", cfg, "--out", tmp / "run", "--no-report", "--only", "torch")
    assert r.returncode == 0, r.stderr
    return cfg, tmp / "run"


def test_a_run_and_its_resume_record_their_only_for_a_stopped_run_s_plan(torch_only_run,
                                                                        tmp_path):
    """--only narrows the plan but was recorded nowhere but in argv: the report of a stopped
    run rebuilt from config and plan_implementations alone would count cases never planned.
    Each invocation records its `only` (null: none); one from before that, its argv."""
    from normbench.harness.report.coverage import coverage
    from normbench.harness.store import load_meta
    cfg, run = torch_only_run
    d = tmp_path / "run"
    shutil.copytree(run, d)
    r = cli("run", cfg, "--out", d, "--resume", "--no-report")       # no --only: disjoint_block
    assert r.returncode == 0, r.stderr
    meta = load_meta(d)
    assert [e["only"] for e in meta["invocations"]] == [["torch"], None]
    held = load_records(d)
    first = {**meta, "completed": False, "invocations": meta["invocations"][:1]}
    cov = coverage(held[held["implementation"] == "torch"], first)
    assert "1 of 1 planned cases are recorded here" in cov.warning
    argv = {k: v for k, v in meta["invocations"][0].items() if k != "only"}
    assert "--only" in argv["argv"]
    assert coverage(held[held["implementation"] == "torch"],
                    {**first, "invocations": [argv]}).warning == cov.warning
    whole = {**first, "invocations": meta["invocations"]}       # the resume ran all
    cov = coverage(held[held["implementation"] == "torch"], whole)
    assert "1 of 2 planned cases are recorded here; not measured here: disjoint_block G=auto " \
           "layernorm 6x16 fp32/fp32" in cov.warning


@pytest.mark.parametrize("field,value,needle", [
    ("copy_ceiling_gbps", "fast", "copy_ceiling_gbps: expected number, got str"),
    ("peak_tbps", "fast", "peak_tbps: expected number, got str"),
    ("peak_tbps", True, "peak_tbps: expected number, got bool"),
    ("invocations", 5, "invocations: expected list, got int"),
    ("invocations", ["run"], "invocations: expected a list of dict, got an item of str"),
    ("argv", "run", "argv: expected list, got str"),
    ("argv", [1], "argv: expected a list of str, got an item of int"),
    ("gpus", {"0": {}}, "gpus: expected list, got dict"),
    ("gpus", [0], "gpus: expected a list of dict, got an item of int"),
    ("workers", "2", "workers: expected int, got str"),
    ("plan_implementations", "torch", "plan_implementations: expected list, got str"),
    ("plugins", "nb_p", "plugins: expected list, got str"),
    ("plugins", ["nb_p"], "plugins: expected a list of dict, got an item of str"),
    ("plugins", [{"module": "nb_p", "version": 2}],
     "plugins[0].version: expected str or null, got int"),
])
def test_a_resume_of_a_mistyped_meta_field_measures_nothing(torch_only_run, tmp_path, field,
                                                            value, needle):
    """--resume reads the copy ceiling and peak (each record's % of copy and of peak), the
    invocations and argv (the history it extends) and the GPUs (a cluster's): a copy ceiling
    of "fast" made every resumed case an `error` record (a TypeError in the measurement) that
    no later resume measured again, invocations: 5 was a traceback (exit 1) leaving meta
    incomplete with a resume entry.  Refused at once: one line naming meta.json and the
    field, exit 2, nothing measured, meta.json as it was."""
    cfg, run = torch_only_run
    d = tmp_path / "run"
    shutil.copytree(run, d)
    meta = json.loads((d / "meta.json").read_text())
    (d / "meta.json").write_text(json.dumps({**meta, field: value}))
    before = {n: (d / n).read_bytes() for n in ("meta.json", "records.csv")}
    for extra in (("--dry-run",), ()):
        r = cli("run", cfg, "--out", d, "--resume", "--no-report", *extra)
        assert r.returncode == 2 and r.stderr.strip() == f"run: {d / 'meta.json'}: {needle}", \
            r.stderr
    assert {n: (d / n).read_bytes() for n in before} == before


def test_a_sweep_run_from_a_thread_finishes_and_a_failure_leaves_no_lock(tmp_path, monkeypatch):
    """execute() from a thread (a pool, a notebook's or a web app's worker) raised "signal
    only works in main thread" after its store was made, leaving the directory locked: a
    retry in the same process was refused as "in use by another run" — its own pid.  Off the
    main thread it installs no handler and runs; whatever fails once the store is made, the
    store is closed and its lock released."""
    import threading
    from rich.console import Console
    from normbench.harness import run
    from normbench.harness.measure import failed_record
    from normbench.harness.store import RunStore, load_meta
    sweep, cases = _sweep_and_cases()
    monkeypatch.setattr(run, "measure", lambda case, settings: failed_record(
        case, settings, "error", "stub", 0.0))
    quiet = Console(stderr=True, quiet=True)
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    got = []
    t = threading.Thread(target=lambda: got.append(
        _outcome_or_error(lambda: run.execute(sweep, cases, tmp_path / "t", console=quiet))))
    t.start()
    t.join()
    (out,) = got
    assert getattr(out, "finished", out) is True, out
    assert len(load_records(tmp_path / "t")) == len(cases) and load_meta(tmp_path / "t")["completed"]
    assert not (tmp_path / "t" / ".normbench.lock.json").exists()
    assert {s: signal.getsignal(s) for s in handlers} == handlers

    def broken(previous=None):
        raise ValueError("cannot install")
    monkeypatch.setattr(run, "install", broken)
    with pytest.raises(ValueError, match="cannot install"):
        run.execute(sweep, cases, tmp_path / "f", console=quiet)
    RunStore(tmp_path / "f", resume=True).close()      # not locked: opened again here
    assert {s: signal.getsignal(s) for s in handlers} == handlers


def test_a_sweep_in_a_thread_after_an_interrupted_one_is_not_stopped_by_its_signal(
        tmp_path, monkeypatch):
    """A sweep stopped by a signal (a notebook's Ctrl-C) left its stop noted; a later sweep
    run from a thread, where no handler is installed, read it as its own and stopped at its
    first record, "interrupted by SIGTERM", nothing measured."""
    import threading
    from rich.console import Console
    from normbench.harness import run
    from normbench.harness.interrupt import Interrupted
    from normbench.harness.measure import failed_record
    sweep, cases = _sweep_and_cases()
    monkeypatch.setattr(run, "measure", lambda case, settings: failed_record(
        case, settings, "error", "stub", 0.0))
    quiet = Console(stderr=True, quiet=True)

    class Stopped(_Cluster):
        def records(self, todo, settings, timeout_s):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.5)
            yield from super().records(todo, settings, timeout_s)
    first = run.execute(sweep, cases, tmp_path / "a", console=quiet, executor=Stopped())
    assert first.interrupted == signal.SIGTERM and not first.finished
    got = []
    t = threading.Thread(target=lambda: got.append(
        _outcome_or_error(lambda: run.execute(sweep, cases, tmp_path / "b", console=quiet))))
    t.start()
    t.join()
    assert not isinstance(got[0], Interrupted), got
    assert got[0].finished and got[0].interrupted is None, got[0]
    assert len(load_records(tmp_path / "b")) == len(cases)


def _outcome_or_error(call):
    try:
        return call()
    except BaseException as e:          # noqa: BLE001 — told to the test's main thread
        return e


def test_a_sweep_built_in_python_resumes_only_its_own_run(tmp_path, monkeypatch):
    """Two Sweeps built in Python both hashed as the empty text: a resume with another one
    was accepted into the same run, and meta.json recorded config_text ''.  Now the other
    is refused, and meta.json holds the settings that ran."""
    from rich.console import Console
    from normbench import strategies as s
    from normbench.harness import run
    from normbench.harness.config import Sweep, parse_config
    from normbench.harness.measure import failed_record
    from normbench.harness.plan import expand
    from normbench.harness.rundir import StoreError
    from normbench.harness.store import load_meta
    monkeypatch.setattr(run, "measure", lambda case, settings: failed_record(
        case, settings, "error", "stub", 0.0))
    kw = dict(name="nb", norm=["rmsnorm"], rows=[3], implementations=["torch"],
              timing={"warmup_ms": 1, "rep_ms": 1})
    a, b = Sweep(d=[8], **kw), Sweep(d=[16], seed=5, **kw)
    quiet = Console(stderr=True, quiet=True)
    plan = lambda sw: expand(sw, uses_groups=lambda n: s.get(n).uses_groups, available=s.known())
    run.execute(a, plan(a), tmp_path / "r", console=quiet)
    meta = load_meta(tmp_path / "r")
    assert meta["config_hash"] == a.config_hash and parse_config(meta["config_text"]).d == [8]
    with pytest.raises(StoreError, match="started from another config"):
        run.execute(b, plan(b), tmp_path / "r", resume=True, console=quiet)
    assert list(load_records(tmp_path / "r")["d"]) == [8]


def test_discard_if_empty_removes_the_parents_the_run_made(tmp_path):
    """A cluster that fails before a record is kept: the --out directory this run made goes,
    and so do the parents of it the run made (--out nest/a/b where nest did not exist), up to
    the first one only; a parent that holds something else stays, as does what was there."""
    from normbench.harness.run import discard_if_empty
    from normbench.harness.rundir import META_JSON, RECORDS_CSV
    out = tmp_path / "nest" / "a" / "b"
    out.mkdir(parents=True)
    for name in (META_JSON, RECORDS_CSV):
        (out / name).write_text("")
    discard_if_empty(out, up_to=tmp_path / "nest")
    assert not (tmp_path / "nest").exists() and tmp_path.exists()
    out.mkdir(parents=True)
    (tmp_path / "nest" / "keep.txt").write_text("mine")
    discard_if_empty(out, up_to=tmp_path / "nest")
    assert not (tmp_path / "nest" / "a").exists() and (tmp_path / "nest" / "keep.txt").exists()
    out.mkdir(parents=True)
    discard_if_empty(out)                       # no up_to: the run directory alone
    assert not out.exists() and (tmp_path / "nest" / "a").exists()


def test_a_resume_whose_only_leaves_out_a_plugin_not_loaded_leaves_a_stopped_run_incomplete(
        tmp_path):
    """A run stopped before a plugin's cases, resumed without the plugin and an --only of
    the rest: its plan cannot be rebuilt (the plugin neither registered nor recorded here),
    and that was read as done — completed: true with the plugin's cases never measured.
    It stays incomplete; a plan rebuilt does not decide it, what the run was before does."""
    from normbench.harness.store import load_meta
    cfg = config(tmp_path)                                              # names none
    d = tmp_path / "run"
    r = cli("run", cfg, "--out", d, "--no-report", "--only", "torch")
    assert r.returncode == 0, r.stderr
    meta = load_meta(d)     # as if it planned torch and a plugin `ni`, and stopped after torch
    meta.update(completed=False, plan_implementations=["torch", "ni"],
                invocations=[{**e, "only": None} for e in meta["invocations"]])
    (d / "meta.json").write_text(json.dumps(meta))
    r = cli("run", cfg, "--out", d, "--resume", "--no-report", "--only", "torch")
    assert r.returncode == 0, r.stderr
    assert load_meta(d)["completed"] is False and len(load_records(d)) == 1


def _stopped_after_torch(cfg, run, tmp_path):
    """(cfg, a copy of `run`) whose meta.json says its first invocation planned both
    implementations and stopped after torch's case."""
    from normbench.harness.store import load_meta
    d = tmp_path / "run"
    shutil.copytree(run, d)
    meta = load_meta(d)
    meta.update(completed=False, invocations=[{**e, "only": None} for e in meta["invocations"]])
    (d / "meta.json").write_text(json.dumps(meta))
    return cfg, d


def test_a_resume_narrowed_by_only_leaves_a_stopped_run_incomplete(torch_only_run, tmp_path):
    """A whole run stopped early, then resumed with --only torch: the resume measured what
    its --only left and wrote completed: true, though disjoint_block's case of the first
    invocation's plan was never measured — the report then called it "not in run", compare
    read the run as complete.  The plan is every invocation's: it stays incomplete until a
    resume measures the rest."""
    from normbench.harness.store import load_meta
    cfg, d = _stopped_after_torch(*torch_only_run, tmp_path)
    r = cli("run", cfg, "--out", d, "--resume", "--no-report", "--only", "torch")
    assert r.returncode == 0, r.stderr
    assert load_meta(d)["completed"] is False
    r = cli("run", cfg, "--out", d, "--resume", "--no-report")
    assert r.returncode == 0, r.stderr
    assert load_meta(d)["completed"] is True and len(load_records(d)) == 2


def test_a_resume_forced_onto_another_config_leaves_a_stopped_run_incomplete(torch_only_run,
                                                                             tmp_path):
    """A run stopped before its plan was done, then --force-resume'd with another config and
    no --only: the resume measured all its own config planned and wrote completed: true,
    though the cases of the config meta.json names (the run's plan) were still missing.  It
    stays incomplete; a resume with the run's own config measures the rest and completes it."""
    from normbench.harness.store import load_meta
    cfg, d = _stopped_after_torch(*torch_only_run, tmp_path)
    for other in (config(tmp_path, "u", implementations=["torch"]),             # same keys
                  config(tmp_path, "v", implementations=["torch"], norm=["rmsnorm"])):
        r = cli("run", other, "--out", d, "--force-resume", "--no-report")
        assert r.returncode == 0, r.stderr
        assert load_meta(d)["completed"] is False, other
    r = cli("run", cfg, "--out", d, "--resume", "--no-report")
    assert r.returncode == 0, r.stderr
    assert load_meta(d)["completed"] is True and len(load_records(d)) == 3


def test_a_resume_refused_for_another_config_names_the_settings_that_differ(tmp_path):
    """A resume of another config was refused naming two hashes only ('another config (hash
    1c785bee…, this one 80ef4bdd…)'): nothing said that the run had --shape 4x64 and this
    one rows=[4] d=[64].  The line names each setting that differs, both ways, or says the
    settings are the same and only the config's text differs."""
    from normbench.harness.overrides import load
    from normbench.harness.run import resume_mismatch
    a = load("configs/cpu.yaml", ["timing.rep_ms=1"], ["4x64"])
    meta = {"device_name": "x", "config_hash": a.config_hash, "config_text": a.config_text,
            "config_path": a.source_path}
    b = load("configs/cpu.yaml", ["timing.rep_ms=2", "rows=[4]", "d=[64]"])
    (why,) = resume_mismatch(meta, b, device=False, held=1)
    assert a.config_hash in why and b.config_hash in why and "\n" not in why
    assert ("settings that differ: rows unset in the run, [4] here; shapes [[4,64]] in the "
            "run, unset here; d unset in the run, [64] here; timing.rep_ms 1 in the run, 2 "
            "here)") in why, why
    text = tmp_path / "cpu.yaml"            # the same settings, a comment added
    text.write_text(Path("configs/cpu.yaml").read_text() + "# a note\n")
    c, d = load("configs/cpu.yaml"), load(str(text))
    meta.update(config_hash=c.config_hash, config_text=c.config_text, config_path=c.source_path)
    (why,) = resume_mismatch(meta, d, device=False, held=1)
    assert "its settings are this one's: only the config's text differs" in why, why
