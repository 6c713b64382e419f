"""Issue 20 through the command line: foreign directories, resume provenance, broken plugins,
--only, signals, odd paths — every one exit 2 with one line, or a record; never a traceback."""
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from normbench.harness.store import load_meta, load_records
from tests import forkcli

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "NORMBENCH_PLUGINS": "tests.fake_impls", "NORMBENCH_QUIET": "1",
       "PYTHONPATH": str(ROOT), "COLUMNS": "200"}


def cli(*args, env=None, cwd=ROOT, timeout=300):
    return forkcli.run([sys.executable, ROOT / "run_bench.py", *args], cwd=cwd,
                       env=env or ENV, timeout=timeout)


def config(tmp_path, name="t", **fields):
    base = {"name": name, "norm": ["layernorm"], "rows": [4], "d": [8], "dtype": ["fp32"],
            "timing": {"warmup_ms": 1, "rep_ms": 1}, "determinism": {"repeats": 2},
            "implementations": ["torch"]}
    base.update(fields)
    p = tmp_path / f"{name}.yaml"
    p.write_text(json.dumps(base))
    return p


def one_line(r, *words):
    """Exit 2, one line on stderr holding `words`, no traceback."""
    err = r.stderr.decode("utf-8", "replace")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert r.returncode == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def snapshot(d: Path) -> dict:
    return {p: p.read_bytes() for p in d.rglob("*") if p.is_file()}


def test_foreign_directories_are_refused_and_untouched(tmp_path):
    u = tmp_path / "U"
    (u / "plots").mkdir(parents=True)
    (u / "plots" / "mine.png").write_bytes(b"png")
    (u / "report.md").write_text("notes")
    (u / "meta.json").write_text('{"a": 1}')
    before = snapshot(u)
    cfg = config(tmp_path)
    one_line(cli("report", str(u)), "report:", "not a run directory")
    one_line(cli("run", str(cfg), "--out", str(u)), "run:", "not empty")
    one_line(cli("run", str(cfg), "--out", str(u), "--resume"), "run:", "not empty")
    assert snapshot(u) == before
    one_line(cli("run", str(cfg), "--out", "/"), "run: / ")
    assert not Path("/records.csv").exists() and not Path("/meta.json").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line(cli("run", str(cfg), "--out", "", cwd=empty), "--out")
    assert not any(empty.iterdir())
    one_line(cli("run", str(cfg), "--out", str(tmp_path / ("a" * 300))), "too long")
    one_line(cli("run", str(cfg), "--out", "/proc"), "not a normbench run directory")


def test_a_run_into_another_run_s_plots_folder_is_refused(tmp_path):
    """A run written with --no-report has no plots/ yet: `run --out RUN/plots` made a run
    there, exit 0, and RUN's report then wrote its plots into it (and removed those it no
    longer drew), this run's report its pages into RUN's plots folder.  One line, exit 2, as
    merge and export --out refuse a run's own files; a folder of one's own inside a run
    directory is still a place to run into."""
    cfg = config(tmp_path)
    held = tmp_path / "held"
    assert cli("run", str(cfg), "--out", str(held), "--no-report").returncode == 0
    one_line(cli("run", str(cfg), "--out", str(held / "plots")), "run: --out",
             f"one of the files of the run directory {held}")
    one_line(cli("run", str(cfg), "--out", str(held / "records.csv"), "--resume"), "run: --out")
    assert not (held / "plots").exists()
    r = cli("run", str(cfg), "--out", str(held / "mine"), "--no-report")
    assert r.returncode == 0, r.stderr.decode()


def test_resume_refuses_another_config_or_device_unless_forced(tmp_path):
    a, b = config(tmp_path, "a"), config(tmp_path, "b", implementations=["torch", "atomic"])
    out = tmp_path / "run"
    assert cli("run", str(a), "--out", str(out), "--no-report").returncode == 0
    meta0 = load_meta(out)
    one_line(cli("run", str(b), "--out", str(out), "--resume"), "cannot resume", "another config",
             "--force-resume")
    # the same config measured elsewhere (an H200 run resumed on CPU)
    meta = json.loads((out / "meta.json").read_text())
    (out / "meta.json").write_text(json.dumps({**meta, "device_name": "NVIDIA H200",
                                               "interpreted": False}))
    one_line(cli("run", str(a), "--out", str(out), "--resume"), "measured on NVIDIA H200")
    (out / "meta.json").write_text(json.dumps(meta))
    assert len(load_records(out)) == 1 and load_meta(out) == meta0     # nothing changed
    r = cli("run", str(b), "--out", str(out), "--force-resume", "--no-report")
    assert r.returncode == 0, r.stderr
    meta = load_meta(out)
    (resumed,) = meta["resumes"]
    assert resumed["forced"] and "another config" in resumed["differs"][0]
    assert resumed["config_hash"] != meta["config_hash"] == meta0["config_hash"]
    assert resumed["config_text"] == b.read_text()
    df = load_records(out)
    assert sorted(df["implementation"]) == ["atomic", "torch"]
    assert set(df["device"]) == {meta["device_name"]}
    before = load_meta(out)
    r = cli("run", str(b), "--out", str(out), "--force-resume", "--no-report")   # nothing left
    assert r.returncode == 0 and "nothing left to measure" in r.stderr.decode()
    assert load_meta(out) == before and len(before["resumes"]) == 1      # left as it was


BROKEN = {"nb_missing_dep": "import nosuch_module_xyz\n",
          "nb_syntax": "def broken(:\n",
          "nb_duplicate": ("from normbench.strategies import register\n"
                           "@register('torch', kind='baseline', deterministic_by_design=True,"
                           " uses_groups=False)\ndef f(*a, **k):\n    pass\n"),
          "nb_exits": "import sys\nsys.exit(3)\n"}


@pytest.fixture(scope="module")
def broken_plugins(tmp_path_factory):
    """One folder of the broken plugins for every case, so that their calls share one
    environment but for NORMBENCH_PLUGINS (and one fork server: tests/forkcli.py)."""
    folder = tmp_path_factory.mktemp("plugins")
    for name, text in BROKEN.items():
        (folder / f"{name}.py").write_text(text)
    return folder


@pytest.mark.parametrize("module", ["nb_absent", *BROKEN])
def test_a_broken_plugin_is_one_line_naming_it(tmp_path, module, broken_plugins):
    env = {**ENV, "NORMBENCH_PLUGINS": f"tests.fake_impls,{module}",
           "PYTHONPATH": f"{ROOT}{os.pathsep}{broken_plugins}"}
    cfg = config(tmp_path)
    for args in (["list"], ["run", str(cfg), "--dry-run"], []):
        one_line(cli(*args, env=env, cwd=tmp_path), f"plugin {module} ", "cannot be loaded")


def test_a_commit_told_that_is_no_commit_is_refused(tmp_path):
    """NORMBENCH_GIT_COMMIT goes into meta.json as the run's commit: a value that is not a
    commit id (a placeholder left in a device script) is one line, exit 2, nothing written;
    a short or full hex id is taken."""
    cfg = config(tmp_path)
    for bad in ("COMMIT_PLACEHOLDER", "abc", "<sha>", "4389895 "):
        one_line(cli("run", str(cfg), "--out", str(tmp_path / "o"),
                     env={**ENV, "NORMBENCH_GIT_COMMIT": bad}),
                 "NORMBENCH_GIT_COMMIT", "not a commit id")
    assert not (tmp_path / "o").exists()
    r = cli("run", str(cfg), "--out", str(tmp_path / "o"), "--no-report",
            env={**ENV, "NORMBENCH_GIT_COMMIT": "4389895"})
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads((tmp_path / "o" / "meta.json").read_text())["git_commit"] == "4389895"


def test_a_dirty_flag_told_that_is_no_flag_is_refused(tmp_path):
    """NORMBENCH_GIT_DIRTY goes into meta.json as git_dirty: a value that is not 0/1 (a typo,
    'maybe') was ignored — the tree's state, or null, recorded instead of what the user said.
    It is one line, exit 2, nothing written; 0/1, false/true, no/yes and empty are taken."""
    cfg = config(tmp_path)
    for bad in ("maybe", "ture", "2"):
        one_line(cli("run", str(cfg), "--out", str(tmp_path / "o"),
                     env={**ENV, "NORMBENCH_GIT_DIRTY": bad}),
                 "NORMBENCH_GIT_DIRTY", "not 0 or 1")
    assert not (tmp_path / "o").exists()
    r = cli("run", str(cfg), "--out", str(tmp_path / "o"), "--no-report",
            env={**ENV, "NORMBENCH_GIT_DIRTY": "Yes"})
    assert r.returncode == 0, r.stderr.decode()
    assert json.loads((tmp_path / "o" / "meta.json").read_text())["git_dirty"] is True


@pytest.mark.parametrize("name", ["NORMBENCH_FAST_LAUNCH", "NORMBENCH_INTERPRET_REPATCH"])
def test_a_switch_that_is_neither_0_nor_1_is_refused(tmp_path, name):
    """The strategies read these at import and act on "0" (FAST_LAUNCH) or "1" (REPATCH)
    alone: NORMBENCH_FAST_LAUNCH=false left the fast launch on while meta.json's environment
    recorded false.  Any value but 0, 1 or empty is one line, exit 2, nothing written."""
    cfg = config(tmp_path)
    for bad in ("false", "maybe", "-1"):
        one_line(cli("run", str(cfg), "--out", str(tmp_path / "o"), "--dry-run",
                     env={**ENV, name: bad}), name, "not 0 or 1")
    r = cli("run", str(cfg), "--dry-run", env={**ENV, name: "0"})
    assert r.returncode == 0, r.stderr.decode()


def test_only_that_selects_nothing_is_refused(tmp_path):
    cfg = config(tmp_path)
    for only, words in (("", "no implementation"), (",,,", "no implementation"),
                        ("atomic", "not in this sweep")):
        one_line(cli("run", str(cfg), "--only", only, "--out", str(tmp_path / "o")), words)
    assert not (tmp_path / "o").exists()


def test_a_sweep_with_no_ok_record_and_odd_paths(tmp_path):
    bad = bytes(tmp_path) + b"/c\xff.yaml"
    Path(os.fsdecode(bad)).write_text(config(tmp_path, implementations=["test_raises"]).read_text())
    out = bytes(tmp_path) + b"/out\xff"
    # forked from forkcli's server: the paths as argv strings, as Python decodes argv bytes
    # (os.fsdecode, surrogateescape), carried through its JSON request unchanged
    r = cli("run", os.fsdecode(bad), "--out", os.fsdecode(out), "--no-report")
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    run = Path(os.fsdecode(out))
    assert load_meta(run)["config_path"] == os.fsdecode(bad)
    assert list(load_records(run)["status"]) == ["error"]
    # the report of a run with no ok record, in a directory whose name is not UTF-8: written,
    # or (while report files are not all written through write_file_atomic) one line
    r = cli("report", os.fsdecode(out), "--baseline", "test_raises")
    if r.returncode != 0:
        one_line(r, "report: cannot write the report")
    # a sweep with no ok record, report included (the end-of-run tables had a traceback)
    r = cli("run", str(config(tmp_path, "e", implementations=["test_raises"])), "--out",
            str(tmp_path / "e"))
    assert r.returncode == 0 and b"Traceback" not in r.stderr, r.stderr
    assert (tmp_path / "e" / "report.html").exists()
    run = tmp_path / "e"
    # a file where the report writes a directory: one line
    import shutil
    shutil.rmtree(run / "plots")
    (run / "plots").write_text("x")
    one_line(cli("report", str(run), "--baseline", "test_raises"), "report: ", "plots")


def test_default_directories_never_collide(tmp_path):
    from normbench.harness.config import parse_config
    from normbench.harness.run import default_out_dir
    sweep = parse_config("name: same\nrows: [4]\nd: [8]")
    dirs = [default_out_dir(sweep, tmp_path) for _ in range(3)]
    assert len(set(dirs)) == 3 and all(d.is_dir() for d in dirs)


def test_a_default_parent_that_leads_nowhere_is_named(tmp_path):
    """`runs` a symbolic link to a folder gone (a scratch area purged): every name's mkdir
    said "File exists", and 999 names later the run said 'cannot find a free directory name
    for runs/NAME-TIME'; the link is named instead."""
    from normbench.harness.config import parse_config
    from normbench.harness.run import default_out_dir
    from normbench.harness.store import StoreError
    (tmp_path / "runs").symlink_to(tmp_path / "gone")
    with pytest.raises(StoreError, match=r"runs is a symbolic link that leads nowhere \(to "):
        default_out_dir(parse_config("name: same\nrows: [4]\nd: [8]"), tmp_path / "runs")


def test_many_signals_at_once_keep_the_resume_hint(tmp_path):
    cfg = config(tmp_path, rows=[3, 4, 5, 6, 7, 8, 9, 10], implementations=["torch", "atomic"],
                 timing={"warmup_ms": 20, "rep_ms": 40})
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), "run", str(cfg),
                          "determinism={repeats: 2}", "--only", "torch,atomic", "--out",
                          str(out), "--no-report"], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if (out / "records.csv").exists() and len(load_records(out)) >= 2:
            break
        time.sleep(0.1)
    for _ in range(8):
        p.send_signal(signal.SIGINT)
        time.sleep(0.005)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    assert "Traceback" not in err and "nothing was being measured" not in err, err
    assert f"--out {out} --resume" in err
    kept = len(load_records(out))
    assert f"{kept} records kept" in err and kept < 16
    # the hint is a command that works as printed: quoted overrides, the same options
    # and starts this normbench as it was started (python run_bench.py, not `normbench`)
    hint = shlex.split(err.split("finish with: ", 1)[1].strip().splitlines()[0])
    assert hint[:3] == [_this_python(), str(ROOT / "run_bench.py"), "run"], hint
    assert "--only" in hint and "--no-report" in hint
    done = _as_printed(hint, text=True)
    assert done.returncode == 0, done.stderr
    assert len(load_records(out)) == 16


def test_a_shape_no_record_passes_the_printed_paths_and_an_unreadable_report(tmp_path):
    """A sweep where one shape has no passing record still prints its tables and writes its
    report; the paths printed are the files (a relative --out is not doubled); --resume of a
    directory that does not exist says it starts one; `report` of unreadable records is one
    line, exit 2, not a report that only says so."""
    cfg = config(tmp_path, d=[8, 9], implementations=["test_fails_odd_d"])
    r = cli("run", str(cfg), "--out", "rel", "--resume", cwd=tmp_path)
    err = r.stderr.decode()
    assert r.returncode == 0 and "Traceback" not in err, err
    assert "rel does not exist yet: a new run starts there" in err
    assert "report: rel/report.html" in err and "records: rel/records.csv" in err
    assert (tmp_path / "rel" / "report.html").is_file()
    (tmp_path / "rel" / "records.csv").write_text('case_id,status\n"torn,ok\n')
    (tmp_path / "rel" / "records.parquet").unlink(missing_ok=True)
    one_line(cli("report", str(tmp_path / "rel")), "report: cannot read", "records.csv")


def test_report_of_a_read_only_run_is_exit_2_naming_the_directory(tmp_path):
    """`report` of a run directory it may not write exited 1 (the machine's fault) naming a
    temporary file's random name, and --markdown-table printed nothing: exit 2 naming the
    directory, the table printed first.  Run without CAP_DAC_OVERRIDE (as root: setpriv
    drops it), so that the permission bits hold."""
    import shutil
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv: permission bits do not hold")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    run = tmp_path / "r"
    assert cli("run", str(config(tmp_path)), "--out", str(run), "--no-report").returncode == 0
    run.chmod(0o555)
    try:
        def ro(*args):
            return subprocess.run([*prefix, sys.executable, str(ROOT / "run_bench.py"), *args],
                                  cwd=ROOT, env=ENV, capture_output=True, timeout=300)
        one_line(ro("report", str(run)), f"report: {run} is not writable (Permission denied)")
        r = ro("report", str(run), "--markdown-table")
        one_line(r, f"report: {run} is not writable (Permission denied): the table is printed, "
                    "report-table.md not written")
        assert b"| norm | rows" in r.stdout and not (run / "report-table.md").exists()
    finally:
        run.chmod(0o755)


def test_a_finished_run_without_its_provenance_is_not_resumed_or_overwritten(tmp_path):
    cfg = config(tmp_path)
    run = tmp_path / "r"
    assert cli("run", cfg, "--out", run, "--no-report").returncode == 0
    # --out of a run that holds records, without --resume: refused before anything is said
    r = cli("run", cfg, "--out", run, "--no-report")
    one_line(r, "already holds 1 record;", "--resume")
    assert b"writing" not in r.stderr
    # its meta.json cut to the marker: records whose config and device nobody can tell
    meta = load_meta(run)
    (run / "meta.json").write_text(json.dumps({k: meta[k] for k in ("format", "format_version")}))
    one_line(cli("run", cfg, "--out", run, "--resume", "--no-report"),
             "does not say which config and device its 1 record(s)")
    # a newer format than this normbench reads: refused wherever it is read
    (run / "meta.json").write_text(json.dumps({**meta, "format_version": 99}))
    for args in (("report", run), ("run", cfg, "--out", run, "--resume"), ("export", run,
                                                                         "--format", "bencher")):
        one_line(cli(*args), "format_version 99 is newer")


def test_python_dash_m_normbench_is_the_command():
    r = subprocess.run([sys.executable, "-m", "normbench", "--version"], cwd=ROOT, env=ENV,
                       capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout.decode().startswith("normbench ")


def _sh(cmd: str, env=None, timeout=300):
    return subprocess.run(["bash", "-c", cmd], cwd=ROOT, env=env or ENV, capture_output=True,
                          timeout=timeout, text=True)


def test_a_stream_that_cannot_be_written_never_stops_a_sweep_or_changes_a_verdict(tmp_path):
    """stderr read by a pipe that closes after one line (a `| tee` whose reader died): every
    record is still measured; compare piped into `head` keeps its exit code (its verdict);
    an ASCII or closed stdout is no traceback; a UTF-8 config on stdin reads as a file does."""
    cfg = config(tmp_path, rows=[4, 5, 6, 7])
    py, rb = sys.executable, ROOT / "run_bench.py"
    # `python3` where all three streams are open (the pipe that closes, /dev/null): forked
    # from tests/forkcli's server (script_env), which hands the child this process's very
    # descriptors; a command with a stream closed, or another PYTHONIOENCODING, is `py`, a
    # fresh interpreter (the stand-in would take a closed descriptor for its own socket)
    served = forkcli.script_env(ENV)
    r = _sh(f"python3 '{rb}' run '{cfg}' --out '{tmp_path}/r' --no-report 2>&1 >/dev/null "
            "| head -1; exit ${PIPESTATUS[0]}", env=served)
    assert r.returncode == 0, r.stderr
    assert len(load_records(tmp_path / "r")) == 4
    base = ROOT / "results" / "h200-quick-runs"
    r = _sh(f"set -o pipefail; python3 '{rb}' compare '{base}' '{ROOT}/results/h200-quick' "
            "--only kind:strategy --format json | head -1", env=served)
    ok = _sh(f"python3 '{rb}' compare '{base}' '{ROOT}/results/h200-quick' --only kind:strategy "
             "--format json >/dev/null", env=served)
    assert r.returncode == ok.returncode and "Traceback" not in r.stderr
    for cmd in ("list", f"export '{base}/run-1' --format github-action-benchmark"):
        r = _sh(f"PYTHONIOENCODING=ascii '{py}' '{rb}' {cmd}")
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    # a closed stdout (sys.stdout is None): no traceback, and each exit code its own --
    # print() then did nothing but the flush after it raised, exit 1 (compare's "regression")
    for cmd, code in (("list", 0), ("-V", 0), (f"export '{base}/run-1' --format bencher", 0),
                      (f"compare '{base}/run-1'", 2),
                      (f"compare '{base}/run-1' '{base}/run-2' --only kind:strategy "
                       "--threshold 900%", 0)):
        r = _sh(f"'{py}' '{rb}' {cmd} >&-")
        assert r.returncode == code and "Traceback" not in r.stderr, (cmd, r.stderr)
    # stdin closed too: /dev/null goes onto descriptor 1 by number (open() took 0 and left 1
    # closed, and --out /dev/stdout was then 'replaced': as root /dev/stdout became a file)
    r = _sh(f"'{py}' '{rb}' export '{base}/run-1' --format bencher --out /dev/fd/1 <&- >&-")
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    (tmp_path / "u.yaml").write_text(cfg.read_text()[:-1] + ', "description": "dγ, 8×32"}',
                                     encoding="utf-8")
    r = _sh(f"PYTHONIOENCODING=ascii '{py}' '{rb}' run - --dry-run < '{tmp_path}/u.yaml'")
    assert r.returncode == 0, r.stderr


def test_export_never_replaces_a_file_of_a_run_directory(tmp_path):
    """export --out RUN/records.csv (or meta.json, the lock, a report file, a plot) would leave
    a run that report, compare and --resume cannot read: refused, one line, nothing touched;
    another file in the run directory is fine."""
    import synthetic
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    run = synthetic.write_run(tmp_path / "run", synthetic.sweep_records(), synthetic.meta())
    (run / "plots").mkdir()
    before = snapshot(run)
    other = synthetic.write_run(tmp_path / "other", synthetic.sweep_records(), synthetic.meta())
    for name in ("records.csv", "records.parquet", "meta.json", ".normbench.lock.json",
                 "report.html", "report-table.md", "plots/speedup.png"):
        for out in (run / name, tmp_path / "other" / ".." / "run" / name):
            r = CliRunner().invoke(app, ["export", str(other), "--format", "bencher",
                                         "--out", str(out)])
            assert r.exit_code == 2 and "one of the files of the run directory" in r.output
            assert len(r.output.strip().splitlines()) == 1, r.output
    assert snapshot(run) == before
    r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher", "--out",
                                 str(run / "bencher.json")])
    assert r.exit_code == 0 and (run / "bencher.json").exists(), r.output


def test_report_markdown_table_that_cannot_be_written_to_stdout_is_an_error(tmp_path):
    """`report RUN --markdown-table > /dev/full` printed nothing and exited 0, the table lost
    (export's fix, 7042ad9, was not carried to it): one line and exit 2, as export says; a
    reader that closed its pipe (`| head`) took what it wanted, quiet and exit 0."""
    import synthetic
    run = synthetic.write_run(tmp_path / "run", synthetic.sweep_records(), synthetic.meta())
    # `python3` forked from tests/forkcli's server (script_env), the child's stdout this
    # process's very descriptor (/dev/full, the pipe whose reader is gone)
    args = ["python3", str(ROOT / "run_bench.py"), "report", str(run), "--markdown-table"]
    env = forkcli.script_env(ENV)
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as f:
            r = subprocess.run(args, stdout=f, stderr=subprocess.PIPE, env=env, timeout=300)
        assert r.returncode == 2, r.stderr
        assert r.stderr == b"report: cannot write to stdout: No space left on device\n"
    rfd, wfd = os.pipe()
    os.close(rfd)
    try:
        r = subprocess.run(args, stdout=wfd, stderr=subprocess.PIPE, env=env, timeout=300)
    finally:
        os.close(wfd)
    assert r.returncode == 0 and not r.stderr.strip(), r.stderr
    assert (run / "report-table.md").exists()


def test_the_resume_hint_of_a_config_from_stdin_pipes_it_in_again(tmp_path):
    """`run -` interrupted: the hint cannot be run as printed without the config on stdin (a
    terminal or nothing there): it ends `< CONFIG.yaml` and says why; with the config piped in
    the command finishes the run."""
    cfg = config(tmp_path, rows=[3, 4, 5, 6, 7, 8], implementations=["torch", "atomic"],
                 timing={"warmup_ms": 20, "rep_ms": 40})
    out = tmp_path / "run"
    with open(cfg, "rb") as stdin:
        p = subprocess.Popen([sys.executable, str(ROOT / "run_bench.py"), "run", "-", "seed=1",
                              "--out", str(out), "--no-report"], cwd=ROOT, env=ENV, stdin=stdin,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline:
        if (out / "records.csv").exists() and len(load_records(out)) >= 1:
            break
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    hint = err.split("finish with: ", 1)[1].strip().splitlines()[0]
    command, _, why = hint.partition(" < CONFIG.yaml")
    assert "standard input" in why and "pipe the same one in" in why, hint
    # pasted into a shell, the line is the command and a comment (no stray '(')
    assert shlex.split(hint, comments=True)[-2:] == ["<", "CONFIG.yaml"], hint
    words = shlex.split(command)
    assert words[:5] == [_this_python(), str(ROOT / "run_bench.py"), "run", "-", "seed=1"] \
        and words[-1] == "--resume", hint
    done = _as_printed(words, input=cfg.read_bytes(), text=True)
    assert done.returncode == 0, done.stderr
    assert len(load_records(out)) == 12


def _python_code(code: str, tmp_path, cwd):
    """`python -c CODE` for the tests whose CODE patches the CLI and runs it: CODE as a script
    of its own (tmp_path/code/call.py) served by the fork server (tests/forkcli.py), a new
    process in a new __main__ with normbench imported afresh, without torch's import; text."""
    script = tmp_path / "code" / "call.py"
    script.parent.mkdir()
    script.write_text(code)
    return forkcli.run([sys.executable, script], cwd=cwd, env=ENV, text=True, timeout=300)


def _as_printed(words: list, input=None, text=False):
    """A printed `PYTHON run_bench.py ...` command run as pasted, from the repository root:
    PYTHON is this interpreter (_this_python: its name where PATH finds this very
    interpreter), so the call is `python run_bench.py ...` served by the fork server
    (tests/forkcli.py) — a new process that runs the script, without torch's import."""
    assert words[0] == _this_python() and words[1] == str(ROOT / "run_bench.py"), words
    return forkcli.run([sys.executable, *words[1:]], cwd=ROOT, env=ENV, input=input, text=text,
                       timeout=300)


def _this_python() -> str:
    """How a printed command names this interpreter (launch._python)."""
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found and os.path.abspath(found) == os.path.abspath(sys.executable):
            return name
    return sys.executable


def test_a_signal_while_the_report_is_written_costs_the_report_only(tmp_path):
    """Ctrl-C after the last record, while the report is made: exit 130, the records whole,
    and the line says so and how to write the report (it said "nothing was being measured")."""
    out = tmp_path / "r"
    code = ("import signal, sys\n"
            "from normbench.harness import cli\n"
            "from normbench.harness.interrupt import Interrupted\n"
            "def stop(run_dir, baseline): raise Interrupted(signal.SIGINT)\n"
            "cli._write_report = stop\n"
            f"sys.argv = ['normbench', 'run', {str(config(tmp_path))!r}, '--out', {str(out)!r}]\n"
            "cli.main()\n")
    r = _python_code(code, tmp_path, ROOT)
    assert r.returncode == 130, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert "while writing the report" in last and "records" in last, last
    assert shlex.split(last.split("write it with: ", 1)[1]) == ["normbench", "report", str(out)]
    assert len(load_records(out)) == 1 and load_meta(out)["completed"] is True


def test_a_signal_while_report_writes_the_report_leaves_its_plots_and_says_so(tmp_path):
    """Ctrl-C while `report DIR` writes: exit 130, one line saying the report was being written
    and the command that writes it again, and every plot report.md links still there (the old
    plots were unlinked first: an empty plots/, and "nothing was being measured")."""
    import synthetic
    recs = [synthetic.record(implementation=n, rows=r, d=256, time_ms=t * r / 1024, seed=r)
            for n, t in (("torch", 0.03), ("atomic", 0.02)) for r in (1024, 2048)]
    run = synthetic.write_run(tmp_path / "my  run", recs, synthetic.meta())
    (run / "plots").mkdir()         # an earlier report's, as write_report leaves them
    for name in ("speedup_vs_torch", "samples"):
        (run / "plots" / f"{name}.png").write_bytes(b"\x89PNG old")
    before = "# old\n\n![a](plots/speedup_vs_torch.png)\n\n![b](plots/samples.png)\n"
    (run / "report.md").write_text(before)
    code = ("import signal, sys\n"
            "from normbench.harness import cli, store\n"
            "from normbench.harness.interrupt import Interrupted\n"
            "real = store.write_file_atomic\n"
            "def once(path, data):\n"      # stopped once the first new plot is written
            "    real(path, data)\n"
            "    if str(path).endswith('.png'): raise Interrupted(signal.SIGINT)\n"
            "store.write_file_atomic = once\n"
            f"sys.argv = ['normbench', 'report', {str(run)!r}, '--baseline', 'atomic']\n"
            "cli.main()\n")
    r = _python_code(code, tmp_path, ROOT)
    assert r.returncode == 130, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("interrupted by SIGINT while writing the report: "), lines[0]
    assert shlex.split(lines[0].split("write it with: ", 1)[1]) == \
        ["normbench", "report", str(run), "--baseline", "atomic"]
    assert (run / "report.md").read_text() == before
    assert (run / "plots" / "speedup_vs_torch.png").read_bytes() == b"\x89PNG old"
    assert (run / "plots" / "samples.png").is_file(), sorted(os.listdir(run / "plots"))


def _pasted(command: str) -> list:
    """The arguments bash gives the printed `normbench ...` command when it is pasted."""
    assert command.startswith("normbench ") and not any(c in command for c in "\n\r\t"), command
    r = subprocess.run(["bash", "-c", "printf '%s\\0' " + command[len("normbench "):]],
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.split(b"\0")[:-1]


def test_shell_join_gives_back_every_word_when_pasted():
    from normbench.harness.text import shell_join
    words = ["my  runs", "a\tb", "x\ny\r", "it's", "back\\slash", "\xa0nbsp", "\u2028", "γ×µ",
             "undecodable\udcff", "$HOME `id` *", "", " ", "\x1b[31mred", "ok"]
    command = shell_join(["normbench", *words])
    assert _pasted(command) == [os.fsencode(w) for w in words]
    assert shell_join(["normbench", "run", "cpu", "d=[8]"]) == "normbench run cpu 'd=[8]'"


def test_the_printed_resume_and_report_commands_give_back_every_argument(tmp_path, monkeypatch,
                                                                         capsys):
    """Arguments with repeated spaces, a tab or a newline: the line's message is folded onto one
    line, but the command it ends with was folded too ('my  runs' printed 'my runs': pasted,
    it started a new run elsewhere, and 'description=a  b' was refused as another config)."""
    import typer
    from typer.testing import CliRunner
    from normbench.harness import cli as c, run as run_mod
    from normbench.harness.interrupt import Interrupted
    real = run_mod.execute

    def stopped(*args, **kwargs):
        outcome = real(*args, **kwargs)
        outcome.interrupted, outcome.finished = signal.SIGINT, False    # a stop mid-sweep
        return outcome
    monkeypatch.setattr(run_mod, "execute", stopped)
    cfg = config(tmp_path).rename(tmp_path / "c  fg\t.yaml")
    out = tmp_path / "my  runs\tx\ny"
    given = [str(cfg), "description=a  b", "seed=1 ", "--only", "torch", "--no-report",
             "--out", str(out)]
    r = CliRunner().invoke(c.app, ["run", *given])
    assert r.exit_code == 130 and ": 1 record kept in " in r.output, r.output
    command = r.output.split("finish with: ", 1)[1].rstrip("\n")
    assert _pasted(command) == [os.fsencode(w) for w in ["run", *given, "--resume"]]

    def stop(run_dir, baseline):
        raise Interrupted(signal.SIGINT)
    monkeypatch.setattr(c, "_write_report", stop)
    capsys.readouterr()
    with pytest.raises(typer.Exit):
        c._report_after(out)
    command = capsys.readouterr().err.split("write it with: ", 1)[1].rstrip("\n")
    assert _pasted(command) == [b"report", os.fsencode(out)]


def test_the_command_less_default_runs_the_shipped_file_whatever_this_folder_holds(tmp_path,
                                                                                  monkeypatch):
    """Bare `normbench` said "running the shipped config cpu" but read ./cpu: a folder there
    failed ("is a directory"), a file there ran instead.  It passes the shipped file; and
    `run cpu` beside a run's folder named cpu is the shipped config too."""
    from typer.testing import CliRunner
    from normbench.harness import cli as c
    from normbench.harness.overrides import shipped
    (tmp_path / "cpu").mkdir()
    (tmp_path / "default").write_text("name: not-shipped\n")
    monkeypatch.chdir(tmp_path)
    given = []
    monkeypatch.setattr(c, "run", lambda config, **_: given.append(config))
    r = CliRunner().invoke(c.app, [])
    assert r.exit_code == 0, r.output
    assert [Path(g) for g in given] in ([shipped()["cpu"]], [shipped()["default"]]), given
    r = cli("run", "cpu", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0 and b"plan: cpu" in r.stdout, r.stderr


def test_the_version_flag_acts_on_true_only():
    """typer 0.12 with click >= 8.2 handed the eager --version callback the string 'False':
    every command printed the version and exited 0 (a CI gate passing silently)."""
    import typer
    from normbench.harness import cli as c
    assert c._version(False) is None and c._version("False") is None
    with pytest.raises(typer.Exit):
        c._version(True)


@pytest.mark.parametrize("args, words", [
    (("run", "quick", "--bogus"), ("run: No such option: --bogus", "-h")),
    (("merge",), ("merge: Missing argument",)),
    (("compare", "a", "b", "--metric", "x"), ("compare: Invalid value for '--metric'",)),
    (("nosuchcmd",), ("No such command 'nosuchcmd'",)),
])
def test_a_usage_error_is_one_line_and_exit_2_even_when_stderr_is_gone(args, words):
    """click printed a usage error as four lines to the raw stderr; where that stderr was a
    closed pipe (`... 2>&1 | head -1`) the process exited 1 — compare's "regression"."""
    one_line(cli(*args), *words)
    r, w = os.pipe()
    os.close(r)                       # the reader has gone
    try:
        gone = subprocess.run([sys.executable, str(ROOT / "run_bench.py"), *args], cwd=ROOT,
                              env=ENV, stdout=w, stderr=w, timeout=300)
    finally:
        os.close(w)
    assert gone.returncode == 2


@pytest.mark.parametrize("main, argv0, exe, path, want", [
    # python -m normbench: this interpreter by its name on PATH, else by its path
    ("normbench.__main__", "/x/normbench/__main__.py", "/usr/bin/python3",
     {"python3": "/usr/bin/python3"}, ["python3", "-m", "normbench"]),
    ("normbench.__main__", "/x/normbench/__main__.py", "/venv/bin/python",
     {"python3": "/usr/bin/python3", "python": "/usr/bin/python"},
     ["/venv/bin/python", "-m", "normbench"]),
    # python run_bench.py, the path as it was given
    (None, "run_bench.py", "/usr/bin/python3", {"python3": "/usr/bin/python3"},
     ["python3", "run_bench.py"]),
    (None, "/src/nb/run_bench.py", "/usr/bin/python", {"python": "/usr/bin/python"},
     ["python", "/src/nb/run_bench.py"]),
    # main() called from Python: no normbench script to name
    (None, "-c", "/usr/bin/python3", {}, ["normbench"]),
    (None, "/x/ipykernel_launcher.py", "/usr/bin/python3", {}, ["normbench"]),
])
def test_the_printed_command_starts_normbench_as_this_process_was(monkeypatch, main, argv0,
                                                                   exe, path, want):
    """The resume and report hints printed `normbench …` whatever was run: pasted after
    `python run_bench.py` in a checkout, `python -m normbench` or a virtual environment's
    normbench not on PATH, they ran another install (or none)."""
    import types
    from normbench.harness import launch
    spec = types.SimpleNamespace(name=main) if main else None
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__spec__=spec))
    monkeypatch.setattr(sys, "argv", [argv0, "run"])
    monkeypatch.setattr(sys, "executable", exe)
    monkeypatch.setattr(launch.shutil, "which", path.get)
    assert launch.command() == want


def test_the_printed_command_names_a_normbench_script_off_path(tmp_path, monkeypatch):
    """A normbench script this process runs: `normbench` where PATH finds that very script,
    else its absolute path (a virtual environment not activated)."""
    import types
    from normbench.harness import launch
    venv, other = tmp_path / "venv" / "bin", tmp_path / "other" / "bin"
    for d in (venv, other):
        d.mkdir(parents=True)
        (d / "normbench").write_text("#!/bin/sh\n")
    monkeypatch.setitem(sys.modules, "__main__", types.SimpleNamespace(__spec__=None))
    monkeypatch.setattr(sys, "argv", [str(venv / "normbench"), "run"])
    for on_path, want in ((venv, ["normbench"]), (other, [str(venv / "normbench")]),
                          (None, [str(venv / "normbench")])):
        found = str(on_path / "normbench") if on_path else None
        monkeypatch.setattr(launch.shutil, "which",
                            lambda name, found=found: found if name == "normbench" else None)
        assert launch.command() == want, on_path


def test_the_report_hint_of_python_m_normbench_says_python_m_normbench(tmp_path):
    """Run as a module (runpy, as `python -m normbench` runs it), a signal while the report
    is written prints `python -m normbench report DIR`, which writes the report pasted."""
    out = tmp_path / "r"
    code = ("import runpy, signal, sys\n"
            "from normbench.harness import cli\n"
            "from normbench.harness.interrupt import Interrupted\n"
            "def stop(run_dir, baseline): raise Interrupted(signal.SIGINT)\n"
            "cli._write_report = stop\n"
            f"sys.argv = ['normbench', 'run', {str(config(tmp_path))!r}, '--out', {str(out)!r}]\n"
            "runpy.run_module('normbench', run_name='__main__', alter_sys=True)\n")
    r = _python_code(code, tmp_path, tmp_path)
    assert r.returncode == 130, r.stderr
    words = shlex.split(r.stderr.strip().splitlines()[-1].split("write it with: ", 1)[1])
    assert words == [_this_python(), "-m", "normbench", "report", str(out)], words
    done = subprocess.run(words, cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and (out / "report.html").is_file(), done.stderr


def test_a_case_that_loses_the_cuda_context_stops_the_run_not_every_later_case(tmp_path,
                                                                              monkeypatch):
    """Measured in the run's own process, a case that lost the CUDA context (an illegal memory
    access: every later CUDA call of the process fails) turned every later case into an error
    record, each kept by --resume as done.  The run now keeps that case's record (its notes say
    so) and stops, exit 1, with the command that finishes it under --isolate (whose worker is
    replaced instead: test_isolate)."""
    import shlex
    from typer.testing import CliRunner
    from normbench.harness import cli as c, measure, run as run_mod
    from normbench.harness.measure import failed_record
    from normbench.harness.store import load_meta, load_records
    measured = []

    def broken(case, settings):      # the first case fails and takes the context with it
        measured.append(case)
        monkeypatch.setattr(measure, "context_lost", lambda: "CUDA error: an illegal memory access")
        return failed_record(case, settings, "error", "CUDA error: an illegal memory access", 0.0)
    monkeypatch.setattr(run_mod, "measure", broken)
    cfg = config(tmp_path, rows=[4, 6, 8])
    out = tmp_path / "r"
    r = CliRunner().invoke(c.app, ["run", str(cfg), "--no-report", "--out", str(out)])
    assert r.exit_code == 1 and len(measured) == 1, r.output
    assert "the CUDA context of this process was lost measuring" in r.output, r.output
    assert "1 record kept in" in r.output
    command = shlex.split(r.output.split("loses it: ", 1)[1])
    assert "--isolate" in command and command[-3:] == ["--out", str(out), "--resume"], command
    df = load_records(out)
    assert len(df) == 1 and "the CUDA context was lost" in df["notes"].iloc[0]
    assert load_meta(out)["completed"] is False


def test_a_full_disk_as_the_run_closes_keeps_meta_honest_and_says_how_to_go_on(tmp_path,
                                                                              monkeypatch):
    """records.parquet could not be written as the run closed (a full disk): meta.json
    already said completed: true, and the line, 'run: cannot write …/records.parquet: No
    space left on device', said neither that records.csv holds every record nor how to go
    on.  meta.json no longer says complete; the line says what was kept and ends with the
    --resume command, which once the disk has room rewrites records.parquet and completes
    the run."""
    import errno
    from typer.testing import CliRunner
    from normbench.harness import cli as c, store as store_mod
    real, n = store_mod._atomic_write, [0]

    def write(path, fn):            # the store's opening writes records.parquet, then full
        if path.name == "records.parquet":
            n[0] += 1
            if n[0] > 1:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real(path, fn)
    monkeypatch.setattr(store_mod, "_atomic_write", write)
    cfg, out = config(tmp_path, norm=["layernorm", "rmsnorm"]), tmp_path / "r"
    r = CliRunner().invoke(c.app, ["run", str(cfg), "--no-report", "--out", str(out)])
    assert r.exit_code == 1, r.output
    (line,) = [ln for ln in r.output.splitlines() if ln.startswith("run: ")]
    assert line.startswith(f"run: cannot write {out / 'records.parquet'}: No space left on "
                           f"device; 2 records kept in {out / 'records.csv'}"), line
    assert line.endswith(f"--out {out} --resume"), line
    assert load_meta(out)["completed"] is not True
    assert len(load_records(out, source="csv")) == 2
    monkeypatch.setattr(store_mod, "_atomic_write", real)
    r = CliRunner().invoke(c.app, ["run", str(cfg), "--no-report", "--out", str(out),
                                   "--resume"])
    assert r.exit_code == 0, r.output
    assert load_meta(out)["completed"] is True
    assert len(load_records(out, source="parquet")) == 2


def test_columns_zero_loses_no_error_line(tmp_path):
    """COLUMNS=0 in the environment (`COLUMNS=$(tput cols)` without a terminal): rich took it
    as a console 0 columns wide and printed nothing, so a config error was exit 2 and an
    empty stderr; the line is there, whole."""
    cfg = config(tmp_path)
    one_line(cli("run", str(cfg), "--shape", "0x8", env={**ENV, "COLUMNS": "0"}),
             "config error: --shape '0x8': shapes[0].rows: must be at least 1, got 0")
