"""harness/export.py against the formats' published shapes (schemas written from their docs).

github-action-benchmark, `customSmallerIsBetter` (README "Examples" / src/extract.ts): a JSON
array of objects {name: string, unit: string, value: number, range?: string, extra?: string}.
Bencher Metric Format (bencher.dev/docs/reference/bencher-metric-format): the JSON Schema
published there (draft-07), {benchmark: {measure: {value, lower_value?, upper_value?}}}; the
built-in measures are `latency` (nanoseconds) and `throughput` (operations / second).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

import synthetic
from normbench.harness import export as ex
from normbench.harness.store import load_records

RESULTS = Path(__file__).resolve().parent.parent / "results"

GITHUB_ACTION_BENCHMARK = {
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "unit": {"type": "string"},
                       "value": {"type": "number"}, "range": {"type": "string"},
                       "extra": {"type": "string"}},
        "required": ["name", "unit", "value"],
        "additionalProperties": False,
    },
}

# As published by Bencher (https://bencher.dev/bmf.json).
BMF = {
    "$id": "https://bencher.dev/bmf.json",
    "$schema": "http://json-schema.org/draft-07/schema",
    "type": "object",
    "patternProperties": {".+": {
        "type": "object",
        "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                           "upper_value": {"type": "number"}},
            "required": ["value"],
        }},
    }},
}


def _run(tmp_path):
    return synthetic.write_run(tmp_path / "run", synthetic.sweep_records(), synthetic.meta())


@pytest.mark.parametrize("source", ["synthetic", "h200-peers"])
def test_github_action_benchmark_shape(tmp_path, source):
    run = _run(tmp_path) if source == "synthetic" else RESULTS / source
    text, skipped = ex.export(run, "github-action-benchmark")
    doc = json.loads(text)
    jsonschema.validate(doc, GITHUB_ACTION_BENCHMARK)
    df = load_records(run)
    ok = df[df["status"] == "ok"]
    assert len(doc) == len(ok) and skipped == len(df) - len(ok)
    names = [e["name"] for e in doc]
    assert len(set(names)) == len(names)                      # one entry per case key
    by_name = {e["name"]: e for e in doc}
    r = ok.iloc[0]
    label = ex.key_label({k: str(r[k]) for k in ex.schema.KEY})
    e = by_name[label]
    assert e["unit"] == "us" and e["value"] == pytest.approx(r["time_ms"] * 1e3, rel=1e-6)
    half = (r["time_p80_ms"] - r["time_p20_ms"]) / 2 * 1e3
    assert e["range"].startswith("± ") and float(e["range"][2:]) == pytest.approx(half, rel=1e-2)
    assert "GB/s: " in e["extra"] and "% of copy: " in e["extra"] and "determinism: " in e["extra"]


@pytest.mark.parametrize("source", ["synthetic", "h200-quick"])
def test_bencher_bmf_shape(tmp_path, source):
    run = _run(tmp_path) if source == "synthetic" else RESULTS / source
    text, _ = ex.export(run, "bencher")
    doc = json.loads(text)
    jsonschema.validate(doc, BMF)
    ok = load_records(run).query("status == 'ok'")
    assert len(doc) == len(ok)
    r = ok.iloc[0]
    m = doc[ex.key_label({k: str(r[k]) for k in ex.schema.KEY})]
    lat, thr = m["latency"], m["throughput"]
    assert lat["value"] == pytest.approx(r["time_ms"] * 1e6)                  # ns
    assert lat["lower_value"] == pytest.approx(r["time_p20_ms"] * 1e6)
    assert lat["upper_value"] == pytest.approx(r["time_p80_ms"] * 1e6)
    assert lat["lower_value"] <= lat["value"] <= lat["upper_value"]
    assert thr["value"] == pytest.approx(1e9 / lat["value"])                  # calls per second
    assert thr["lower_value"] <= thr["value"] <= thr["upper_value"]
    assert m["bandwidth"]["value"] == pytest.approx(r["gbps"])
    assert all(math.isfinite(v) for ms in doc.values() for x in ms.values() for v in x.values())


def test_schemas_reject_the_compare_document(tmp_path):
    """The documents `compare --format json` writes are not what the trackers read: the
    schemas in this file can tell the difference (so the tests above can fail)."""
    from normbench.harness import compare as cmp
    run = _run(tmp_path)
    again = synthetic.write_run(tmp_path / "again", synthetic.sweep_records(), synthetic.meta())
    doc = json.loads(cmp.render(cmp.compare(run, again), "json"))
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, GITHUB_ACTION_BENCHMARK)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"x": {"latency": {"lower_value": 1.0}}}, BMF)


def test_export_errors_and_cli(tmp_path, monkeypatch):
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    run = _run(tmp_path)
    with pytest.raises(ex.ExportError, match="--format"):
        ex.export(run, "csv")
    with pytest.raises(ex.ExportError, match="not a run directory"):
        ex.export(tmp_path, "bencher")
    with pytest.raises(ex.ExportError, match="--metric"):
        ex.export(run, "bencher", metric="wall")
    r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher", "--out",
                                 str(tmp_path / "bmf.json")])
    assert r.exit_code == 0
    jsonschema.validate(json.loads((tmp_path / "bmf.json").read_text()), BMF)
    r = CliRunner().invoke(app, ["export", str(run), "--format", "nope"])
    assert r.exit_code == 2 and "export: --format" in r.output
    # --out - is stdout, as - is elsewhere on the command line (it wrote a file named '-')
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher", "--out", "-"])
    assert r.exit_code == 0 and not (tmp_path / "-").exists(), r.output
    jsonschema.validate(json.loads(r.stdout), BMF)
    r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher", "--out", "./-"])
    assert r.exit_code == 0 and (tmp_path / "-").is_file(), r.output     # ./- is a file


def test_out_writes_through_a_fifo_or_a_descriptor_and_still_refuses_a_run_s_own_file(tmp_path):
    """--out a FIFO or /dev/fd/N (a process substitution, >(...)): written through, not
    replaced by a regular file beside it (its reader got nothing, exit 0) nor refused (no
    temporary can be made in /dev/fd)."""
    import os
    import stat
    import threading
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    run = _run(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    rfd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)    # a reader and a writer held open:
    hold = os.open(fifo, os.O_WRONLY)                   # no EOF before the export writes
    os.set_blocking(rfd, True)
    pipe_r, pipe_w = os.pipe()
    got = {}

    def drain(fd, key):
        with os.fdopen(fd, "rb") as f:
            got[key] = f.read()
    readers = [threading.Thread(target=drain, args=a, daemon=True)
               for a in ((rfd, "fifo"), (pipe_r, "fd"))]
    for t in readers:
        t.start()
    try:
        for out in (str(fifo), f"/dev/fd/{pipe_w}"):
            r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher", "--out", out])
            assert r.exit_code == 0, r.output
    finally:
        os.close(hold)
        os.close(pipe_w)
    for t in readers:
        t.join(10)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    for key in ("fifo", "fd"):
        jsonschema.validate(json.loads(got[key]), BMF)
    for own in ("records.csv", "meta.json"):            # the run's own files: still refused
        before = (run / own).read_bytes()
        r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher",
                                     "--out", str(run / own)])
        assert r.exit_code == 2 and "one of the files of the run directory" in r.output
        assert (run / own).read_bytes() == before




def test_out_a_closed_descriptor_is_refused_and_a_nonblocking_one_is_waited_on(tmp_path):
    """A descriptor's name whose descriptor is not open is no file to make (it was atomically
    'replaced' -- as root, /dev/stdout became a regular file); a non-blocking pipe whose
    reader reads only after the writer is done gets all of the export, with --out
    /dev/stdout and without (os.write's EAGAIN cut it at the pipe's 64 KiB, exit 0 or 2)."""
    import errno
    import os
    import subprocess
    import sys
    import time
    from normbench.harness.rundir import write_file_atomic
    r, w = os.pipe()
    os.close(w)
    with pytest.raises(OSError) as e:
        write_file_atomic(f"/proc/self/fd/{w}", "x")
    assert e.value.errno == errno.EBADF and "not open" in str(e.value)
    os.close(r)
    r, w = os.pipe()
    os.set_blocking(w, False)
    code = ("import sys; from normbench.harness import rundir, cli; "
            f"rundir.write_file_atomic('/dev/stdout', 'a' * 300000); cli._emit('b' * 300000)")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=w)
    os.close(w)
    time.sleep(1.0)                      # the writer finds the pipe full before any read
    got = b""
    while chunk := os.read(r, 1 << 16):
        got += chunk
    os.close(r)
    assert p.wait(60) == 0
    assert got == b"a" * 300000 + b"b" * 300000 + b"\n"

@pytest.mark.parametrize("name", ["/dev/fd/{fd}", "/proc/self/fd/{fd}"])
def test_out_a_descriptor_s_name_writes_at_its_offset_not_over_the_file(tmp_path, name):
    """--out /dev/fd/N (or /dev/stdout) where N is a file the shell opened -- `>> ci.log`,
    or `> f` after other lines: the export lands after what is there.  Opening the name anew
    truncated an appended log and wrote from its start, over the lines before it."""
    import os
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    if not os.path.exists(name.format(fd=0).rsplit("/", 1)[0]):
        pytest.skip(f"no {name}")
    run = _run(tmp_path)
    log = tmp_path / "ci.log"
    log.write_text("earlier log line\n")
    fd = os.open(log, os.O_WRONLY | os.O_APPEND)
    try:
        r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher",
                                     "--out", name.format(fd=fd)])
        assert r.exit_code == 0, r.output
        os.write(fd, b"later line\n")
    finally:
        os.close(fd)
    head, body = log.read_text().split("\n", 1)
    assert head == "earlier log line"
    body, tail = body.rsplit("\n", 2)[0], body.rsplit("\n", 2)[1]
    assert tail == "later line"
    jsonschema.validate(json.loads(body), BMF)

def test_nothing_to_export_and_a_bad_out_are_one_line_errors(tmp_path):
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    recs = [synthetic.record(implementation=n, time_ms=0.1) for n in ("torch", "atomic")]
    for r in recs:
        r["gpu_time_ms"] = None                           # a CPU run: no GPU time
    run = synthetic.write_run(tmp_path / "cpu", recs, synthetic.meta())
    with pytest.raises(ex.ExportError, match="nothing to export .* 2 without a gpu_time_ms"):
        ex.export(run, "bencher", metric="gpu")           # not an empty document
    ok = _run(tmp_path)
    for out in (tmp_path, tmp_path / "no" / "such" / "dir.json"):
        r = CliRunner().invoke(app, ["export", str(ok), "--format", "bencher", "--out", str(out)])
        assert r.exit_code == 2 and "export: --out" in r.output, r.output
        assert "Traceback" not in r.output


def test_no_gpu_time_blames_the_timer_only_where_it_was_the_cpu(tmp_path):
    """A GPU run that predates GPU-time recording has none: re-run it (not 'a GPU only');
    an interpreter run's timer is the CPU's; a run left out for failing gets no hint."""
    def run(name, timer, **over):
        recs = [synthetic.record(implementation=n, timer=timer, **over)
                for n in ("torch", "atomic")]
        return synthetic.write_run(tmp_path / name, recs, synthetic.meta(
            timer=timer, interpreted=timer == "cpu_wall"))
    with pytest.raises(ex.ExportError, match=r"2 without a gpu_time_ms > 0 \(the run recorded "
                       "no gpu_time_ms: export with --metric call, or re-run on a harness"):
        ex.export(run("gpu", "cuda_event"), "bencher", metric="gpu")
    with pytest.raises(ex.ExportError, match=r"GPU time is measured on a GPU only: this run "
                       r"timed the Triton interpreter; export with --metric call\)$"):
        ex.export(run("cpu", "cpu_wall"), "github-action-benchmark", metric="gpu")
    with pytest.raises(ex.ExportError, match="of 2 record.s., 2 not ok$"):
        ex.export(run("failed", "cuda_event", status="error", error="boom"), "bencher",
                  metric="gpu")


def test_a_time_of_zero_or_less_is_left_out(tmp_path):
    """A broken or hand-edited record's 0 or negative time: left out as one without a time
    (a tracker would take it as infinitely fast; bencher's throughput divided by it)."""
    recs = [synthetic.record(implementation=n, time_ms=0.1)
            for n in ("torch", "atomic", "disjoint_block")]
    recs[1]["time_ms"], recs[2]["time_ms"] = 0.0, -1.0
    run = synthetic.write_run(tmp_path / "run", recs, synthetic.meta())
    for fmt in ex.FORMATS:
        text, skipped = ex.export(run, fmt)
        assert skipped == 2 and "atomic" not in text and "disjoint_block" not in text


def test_gpu_metric_exports_rates_at_gpu_time(tmp_path):
    """Under --metric gpu, GB/s and % of copy follow the GPU time, not the call time."""
    rec = synthetic.record(implementation="torch", time_ms=0.2)
    rec["gpu_time_ms"] = 0.1
    run = synthetic.write_run(tmp_path / "g", [rec], synthetic.meta())
    call = json.loads(ex.export(run, "bencher", metric="call")[0])
    gpu = json.loads(ex.export(run, "bencher", metric="gpu")[0])
    (c,), (g,) = call.values(), gpu.values()
    assert g["gpu-bandwidth"]["value"] == pytest.approx(2 * c["bandwidth"]["value"])
    assert g["gpu-latency"]["value"] == pytest.approx(c["latency"]["value"] / 2)
    (e,) = json.loads(ex.export(run, "github-action-benchmark", metric="gpu")[0])
    assert f"GB/s: {2 * rec['gbps']:.0f}" in e["extra"]


def test_a_small_bandwidth_keeps_its_digits_and_a_name_bencher_refuses_is_refused(tmp_path):
    """The extra's GB/s, formatted as the table's column (".0f"), read "GB/s: 0" for 8e-05
    GB/s; a case label past Bencher's 1,024 characters for a benchmark name was exported and
    its upload refused."""
    rec = synthetic.record(implementation="torch", time_ms=0.2)
    rec["gbps"], rec["pct_copy"] = 8e-05, 0.0123
    run = synthetic.write_run(tmp_path / "s", [rec], synthetic.meta())
    (e,) = json.loads(ex.export(run, "github-action-benchmark")[0])
    assert "GB/s: 8e-05" in e["extra"] and "% of copy: 0.0123" in e["extra"], e["extra"]
    long = synthetic.record(implementation="x" * 1000, time_ms=0.2)
    run = synthetic.write_run(tmp_path / "l", [long], synthetic.meta())
    assert ex.export(run, "github-action-benchmark")[0]         # no limit documented there
    with pytest.raises(ex.ExportError, match=r"implementation 'x{60}'\.\.\.: its case label "
                                             r"is \d+ characters, past the 1024"):
        ex.export(run, "bencher")


def test_the_gpu_metric_is_a_series_of_its_own(tmp_path):
    """--metric gpu wrote the same names as --metric call (Bencher: the same benchmark's
    `latency` and `throughput`; github-action-benchmark: the same name and unit), so a
    tracker fed both joined the two clocks in one chart.  Call's names are unchanged; gpu's
    are its own."""
    rec = synthetic.record(implementation="torch", time_ms=0.2)
    rec["gpu_time_ms"] = 0.1
    run = synthetic.write_run(tmp_path / "g", [rec], synthetic.meta())
    label = "torch rmsnorm 1024x1024 bf16/fp32"
    call, gpu = (json.loads(ex.export(run, "bencher", metric=m)[0]) for m in ("call", "gpu"))
    assert set(call[label]) == {"latency", "throughput", "bandwidth"}
    assert set(gpu[label]) == {"gpu-latency", "gpu-throughput", "gpu-bandwidth"}
    (c,), (g,) = (json.loads(ex.export(run, "github-action-benchmark", metric=m)[0])
                  for m in ("call", "gpu"))
    assert c["name"] == label and g["name"] == label + " [gpu]"


def test_incorrect_records_are_left_out_and_counted(tmp_path):
    """A result past its tolerance has a real time, but of a wrong result: a tracker would
    chart it as an ordinary point, so it is left out as a failure is, and the note says why."""
    recs = [synthetic.record(implementation="torch"),
            synthetic.record(implementation="atomic", correct=False),
            synthetic.record(implementation="disjoint_block", status="error", error="boom")]
    run = synthetic.write_run(tmp_path / "run", recs, synthetic.meta())
    for fmt in ex.FORMATS:
        text, skipped = ex.export(run, fmt)
        assert "torch" in text and "atomic" not in text and "disjoint_block" not in text
        assert skipped == 2 and skipped.reasons == {"incorrect": 1, "not ok": 1}
        assert skipped.note() == "2 record(s) left out: 1 incorrect, 1 not ok"
        import copy
        import pickle
        for twin in (copy.copy(skipped), pickle.loads(pickle.dumps(skipped))):
            assert twin == 2 and twin.reasons == skipped.reasons
    bad = synthetic.write_run(tmp_path / "bad", recs[1:2], synthetic.meta())
    with pytest.raises(ex.ExportError, match="nothing to export — of 1 record.s., 1 incorrect$"):
        ex.export(bad, "bencher")
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher"])
    assert r.exit_code == 0
    assert "export: 2 record(s) left out: 1 incorrect, 1 not ok" in r.stderr


def test_the_last_timed_call_is_named_only_where_the_record_compared_it(tmp_path):
    """last_call_compared True: 'in R repeats and the last timed call'; a committed run from
    before the column (empty there) compared the repeats only and says so."""
    recs = [synthetic.record(implementation=impl, rows=64, d=8, repeats=3, seed=k, **extra)
            for k, (impl, extra) in enumerate([("torch", {"last_call_compared": True}),
                                               ("atomic", {})])]
    run = synthetic.write_run(tmp_path / "run", recs, synthetic.meta())
    extra = {e["name"].split()[0]: e["extra"] for e in json.loads(
        ex.export(run, "github-action-benchmark")[0])}
    assert "(1 distinct in 3 repeats and the last timed call)" in extra["torch"]
    assert "(1 distinct in 3 repeats)" in extra["atomic"]
    old = json.loads(ex.export(RESULTS / "h200-small", "github-action-benchmark")[0])
    assert all("repeats)" in e["extra"] and "last timed call" not in e["extra"] for e in old)


def test_an_entrys_label_is_its_columns_declaration(tmp_path, monkeypatch):
    """The extra text says what the value is from the column's declaration: a SLOWER column
    of the fastest call was labelled "min time, median"."""
    from normbench.harness import schema
    monkeypatch.setattr(schema, "DECLARATION", schema.DECLARATION + [
        schema.Column("time_min_ms", "Float64", doc="fastest call time (host included)", unit="ms",
                      label="min", gate=schema.SLOWER, metric="min")])
    schema.rebuild()
    try:
        run = synthetic.write_run(tmp_path / "run", [synthetic.record(time_min_ms=0.08)],
                                  synthetic.meta())
        (e,) = json.loads(ex.export(run, "github-action-benchmark", metric="min")[0])
        assert e["value"] == pytest.approx(80)
        assert e["extra"].splitlines()[0] == "fastest call time (host included)"
        (e,) = json.loads(ex.export(run, "github-action-benchmark")[0])
        assert e["extra"].splitlines()[0].startswith("median call time (host included); p20-p80 ")
    finally:
        monkeypatch.undo()
        schema.rebuild()


def test_a_case_recorded_twice_is_exported_once_from_its_last_record(tmp_path):
    """A hand-joined records.csv holding a case twice: export refused it ("two records share
    a case key", exit 2, naming neither file nor case) where compare and report take the last
    record of each key.  It exports each case once, from the last record (a later failure
    of a case leaves it out, as compare judges that record), and says so on stderr."""
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    recs = [synthetic.record(implementation="torch", time_ms=0.1),
            synthetic.record(implementation="atomic", time_ms=0.3),
            synthetic.record(implementation="disjoint_block", time_ms=0.2),
            synthetic.record(implementation="atomic", time_ms=0.15, seed=1),
            synthetic.record(implementation="disjoint_block", status="error", error="boom")]
    run = synthetic.write_run(tmp_path / "run", recs[:3], synthetic.meta())
    later = synthetic.write_run(tmp_path / "later", recs[3:], synthetic.meta())
    with open(run / "records.csv", "a") as f:               # joined by hand
        f.writelines((later / "records.csv").read_text().splitlines(True)[1:])
    (run / "records.parquet").unlink(missing_ok=True)       # records.csv is the one read
    for fmt in ex.FORMATS:
        text, skipped = ex.export(run, fmt)
        doc = json.loads(text)
        names = [e["name"] for e in doc] if isinstance(doc, list) else list(doc)
        assert sorted(names) == sorted(["torch rmsnorm 1024x1024 bf16/fp32",
                                        "atomic rmsnorm 1024x1024 bf16/fp32"])
        value = ({e["name"]: e["value"] for e in doc} if isinstance(doc, list) else
                 {n: m["latency"]["value"] / 1e3 for n, m in doc.items()})
        assert value["atomic rmsnorm 1024x1024 bf16/fp32"] == pytest.approx(150, rel=1e-6)
        assert skipped == 1 and skipped.reasons == {"not ok": 1}
        (note,) = skipped.notes
        assert note.startswith(f"{run / 'records.csv'} holds 2 earlier record(s) of a case "
                               "recorded again later (the first: atomic rmsnorm 1024x1024 "
                               "bf16/fp32)")
    r = CliRunner().invoke(app, ["export", str(run), "--format", "github-action-benchmark"])
    assert r.exit_code == 0, r.output
    assert len(json.loads(r.stdout)) == 2
    lines = r.stderr.splitlines()
    assert lines[0] == f"export: {note}" and lines[1] == "export: 1 record(s) left out: 1 not ok"


def _export_cli(args, stdout, env=None):
    import os
    import subprocess
    import sys
    root = Path(__file__).resolve().parent.parent
    return subprocess.run([sys.executable, str(root / "run_bench.py"), "export", *args],
                          stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root), **(env or {})})


def test_stdout_is_ascii_json_and_a_failed_write_to_it_is_an_error(tmp_path):
    """`export RUN > /dev/full` said nothing and exited 0 (the document lost), and a stdout
    of another encoding (PYTHONIOENCODING=ascii) got `"range": "\\xb1 ..."`, no JSON.  The
    document is ASCII (the ± a \\u escape); a write that fails is one line and exit 2, as a
    failed --out is; a reader that closed its pipe (`| head`) is no error."""
    import os
    run = _run(tmp_path)
    text, _ = ex.export(run, "github-action-benchmark")
    assert text.isascii() and "\\u00b1 " in text
    assert json.loads(text)[0]["range"].startswith("± ")
    out = tmp_path / "a.json"
    with open(out, "w") as f:
        r = _export_cli([str(run), "--format", "github-action-benchmark"], f,
                        env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == json.loads(text)
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as f:
            r = _export_cli([str(run), "--format", "bencher"], f)
        assert r.returncode == 2
        assert r.stderr == "export: cannot write to stdout: No space left on device\n"
    rfd, wfd = os.pipe()
    os.close(rfd)
    try:
        r = _export_cli([str(run), "--format", "bencher"], wfd)
    finally:
        os.close(wfd)
    assert r.returncode == 0 and "cannot write" not in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_the_caveats_report_and_compare_print_go_with_the_export(tmp_path):
    """An interrupted run, one shard of a plan, a run still measuring, records timed under
    the interpreter and host-contended ones were exported without a word.  stderr says each
    (one line), a github-action-benchmark entry's extra says its own record's, and stdout
    stays the document."""
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    from normbench.harness.store import RunStore
    recs = [synthetic.record(implementation="torch", time_ms=0.1, gpu_time_ms=0.09),
            synthetic.record(implementation="atomic", time_ms=0.01, gpu_time_ms=0.002,
                             concurrent_cases=4, hostname="node7"),
            synthetic.record(implementation="disjoint_block", time_ms=50, timer="cpu_wall")]
    run = synthetic.write_run(tmp_path / "run", recs, synthetic.meta(completed=False))
    r = CliRunner().invoke(app, ["export", str(run), "--format", "github-action-benchmark"])
    assert r.exit_code == 0, r.output
    extra = {e["name"].split()[0]: e["extra"] for e in json.loads(r.stdout)}
    assert extra["disjoint_block"].endswith("\n" + ex.INTERPRETED)
    assert extra["atomic"].endswith(
        "\nhost-bound call measured while 4 cases ran on node7: the time may be inflated by "
        "host contention (--exclusive-below-us measures such cases of a --gpus/--scheduler run "
        "with none of its own beside them; another process's load it does not hold off: time "
        "it with nothing else measuring on the host)")
    assert "Triton" not in extra["torch"] and "contention" not in extra["torch"]
    assert r.stderr.splitlines() == [
        "export: incomplete run: the run stopped before it finished (meta.json `completed: "
        "false`: interrupted, or stopped by a fault): 3 records are here; meta.json does not "
        "record how many cases were planned — `run … --out DIR --resume` measures the rest",
        "export: 1 of the 3 exported record(s) are CPU wall-clock timing under the Triton "
        "interpreter: they say nothing about GPU speed",
        "export: 1 of the 3 exported record(s) are host-bound calls measured while other cases "
        "ran on their host: they may be inflated by host contention (time them with nothing "
        "else measuring on the host; --exclusive-below-us keeps a --gpus/--scheduler run's own "
        "cases apart)"]
    r = CliRunner().invoke(app, ["export", str(run), "--format", "bencher"])
    assert r.exit_code == 0 and len(r.stderr.splitlines()) == 3, r.output
    jsonschema.validate(json.loads(r.stdout), BMF)
    with RunStore(run, resume=True):                      # a run still measuring
        (note, *_), = [ex.export(run, "bencher")[1].notes]
    assert note.startswith("incomplete run: it is still running (its lock is held): 3 records")
    plan = [r["case_id"] for r in recs] + ["rmsnorm|spin_lock|1024|1|1024|bf16|fp32|-"]
    shard = synthetic.write_run(tmp_path / "shard", recs[:1], synthetic.meta(
        shard={"spec": "0/2", "plan_keys": plan, "keys": plan[:1]}))
    (note, *_), = [ex.export(shard, "bencher")[1].notes]
    assert note.startswith("incomplete run: shard 0/2 of a sharded run: 1 of the plan's 4 "
                           "cases are recorded here")
    whole = synthetic.write_run(tmp_path / "whole", recs[:1], synthetic.meta(completed=True))
    assert ex.export(whole, "bencher")[1].notes == ()


def test_a_stopped_run_s_note_names_the_cases_its_recorded_plan_lacks():
    """results/h200-targets-narrow-ln-4389895 stopped one case short: export's note said
    "meta.json does not record how many cases were planned" although its config_text names
    every implementation.  The plan is rebuilt from it: 59 of 60, the missing case named."""
    (note, *_), = [ex.export(RESULTS / "h200-targets-narrow-ln-4389895", "bencher")[1].notes]
    assert note == (
        "incomplete run: the run stopped before it finished (meta.json `completed: false`: "
        "interrupted, or stopped by a fault): 59 of 60 planned cases are recorded here; not "
        "measured here: quack layernorm 32768x3072 fp32/fp32 — `run … --out DIR --resume` "
        "measures the rest")


def test_strict_json_and_only_ordered_bounds(tmp_path):
    """A time of 1e306 ms was written as `"value": Infinity` (no JSON a tracker parses), one
    of 1e-310 ms as a throughput of Infinity, and a p20 twice the median as lower_value >
    value (and a negative range).  Such records are left out and counted by reason; bounds
    are written only where finite and p20 <= median <= p80."""
    recs = [synthetic.record(implementation="torch", time_ms=1e306),
            synthetic.record(implementation="atomic", time_ms=1e-310),
            synthetic.record(implementation="disjoint_block", time_ms=0.1),
            synthetic.record(implementation="spin_lock", time_ms=0.1)]
    recs[2]["time_p20_ms"] = 0.2
    run = synthetic.write_run(tmp_path / "run", recs, synthetic.meta())
    for fmt in ex.FORMATS:
        text, skipped = ex.export(run, fmt)
        doc = json.loads(text, parse_constant=lambda c: pytest.fail(f"{fmt}: {c} in {text}"))
        assert skipped.reasons == {"with a time_ms not finite in ns or calls/s": 2}
        assert skipped.note() == "2 record(s) left out: 2 with a time_ms not finite in ns or calls/s"
        entries = ({e["name"].split()[0]: e for e in doc} if isinstance(doc, list) else
                   {n.split()[0]: m for n, m in doc.items()})
        assert set(entries) == {"disjoint_block", "spin_lock"}
        bad, good = entries["disjoint_block"], entries["spin_lock"]
        if fmt == "bencher":
            assert set(bad["latency"]) == set(bad["throughput"]) == {"value"}
            for m in ("latency", "throughput"):
                assert good[m]["lower_value"] <= good[m]["value"] <= good[m]["upper_value"]
        else:
            assert "range" not in bad and "p20-p80" not in bad["extra"]
            assert good["range"].startswith("± ") and "p20-p80" in good["extra"]


def test_out_the_run_s_plots_folder_is_refused(tmp_path):
    """--out RUN/plots (no plots/ yet: a report-less run) wrote a file named plots, and the
    run's next `report` failed ("RUN/plots is not a directory").  Refused as the run's other
    own paths are; plots/<name> inside it still is."""
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    run = _run(tmp_path)
    other = synthetic.write_run(tmp_path / "other", synthetic.sweep_records(), synthetic.meta())
    for out in (run / "plots", tmp_path / "other" / ".." / "run" / "plots"):
        r = CliRunner().invoke(app, ["export", str(other), "--format", "bencher",
                                     "--out", str(out)])
        assert r.exit_code == 2, r.output
        assert r.output.startswith(f"export: --out {out}: one of the files of the run "
                                   f"directory {run} (records, meta.json, lock, report, plots)")
        assert not (run / "plots").exists()


def _workflow_steps() -> dict:
    import yaml
    wf = yaml.safe_load((RESULTS.parent / ".github" / "workflows" / "benchmark.yml").read_text())
    (job,) = wf["jobs"].values()
    return {s.get("id") or s.get("name") or s["uses"]: s for s in job["steps"]}


@pytest.mark.parametrize("event", ["pull_request", "workflow_dispatch"])
def test_the_workflow_keeps_the_history_only_where_its_branch_is_or_is_made(tmp_path, event):
    """benchmark.yml ran github-action-benchmark on every event, and the action fetches the
    history branch, which only a push to main made: a same-repository pull request before
    main's first push failed the job.  The history step runs the workflow's own script:
    on another event it finds no branch and the action is skipped; a push to main makes the
    branch, after which the other event runs the action (which pushes nothing there).  And
    save-data-file, which gh-pages mode ignores, is not set as if it decided anything."""
    import os
    import subprocess
    steps = _workflow_steps()
    find = steps["history"]
    keep = next(s for s in steps.values() if "github-action-benchmark" in str(s.get("uses")))
    names = list(steps)
    assert names.index("history") < names.index(keep["name"])
    assert "steps.history.outputs.exists == 'true'" in keep["if"]
    assert "save-data-file" not in keep["with"] or "external-data-json-path" in keep["with"]
    origin, work = tmp_path / "origin.git", tmp_path / "work"
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", "--bare", str(origin)], check=True)
    subprocess.run([*git, "clone", "-q", str(origin), str(work)], check=True,
                   capture_output=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], cwd=work, check=True)
    subprocess.run(["git", "push", "-q", "origin", "HEAD:main"], cwd=work, check=True,
                   capture_output=True)

    def step(name, ref):
        out = tmp_path / f"out-{name}"
        out.write_text("")
        env = {**os.environ, "GITHUB_EVENT_NAME": name, "GITHUB_REF": ref,
               "GITHUB_OUTPUT": str(out), "GIT_TERMINAL_PROMPT": "0"}
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                            find["run"]], cwd=work, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return out.read_text().split(), r.stdout
    heads = ["git", "ls-remote", "--heads", str(origin), "benchmark-history"]
    got, said = step(event, "refs/pull/1/merge" if event == "pull_request" else "refs/heads/x")
    assert got == ["exists=false"] and "::notice::no benchmark-history branch yet" in said
    assert subprocess.run(heads, capture_output=True, text=True).stdout == ""   # none made
    assert step("push", "refs/heads/main")[0] == ["exists=true"]
    assert subprocess.run(heads, capture_output=True, text=True).stdout != ""   # made
    assert step(event, "refs/heads/x")[0] == ["exists=true"]


def test_the_job_summary_keeps_under_github_s_limit_with_its_details_closed(tmp_path):
    """GitHub takes at most 1 MiB (1048576 bytes) of job summary from a step; compare's
    markdown of thousands of changed cases is longer, and the step then failed to post
    anything.  The step's own script: a compare.md that fits with the step's other lines goes
    whole, without a note (it cut at 1000000 bytes and said "more than the 1 MiB a job summary
    takes: cut here" of a file of 1000001, less than 1 MiB, that lost nothing: its last
    </details> taken off and put back); a longer one is cut at a line with its <details>
    closed and a note that gives the real sizes and names the artifact that holds it whole,
    every byte posted under the limit."""
    import os
    import re
    import subprocess
    limit = 1 << 20
    script = _workflow_steps()["summary"]["run"].replace("${{ github.sha }}", "abc123")
    footer = "\nFull report: artifact `benchmark-abc123` → report.html\n"
    room = limit - len(footer.encode())

    def post(text):
        (tmp_path / "compare.md").write_text(text)
        out = tmp_path / "summary.md"
        out.write_text("")
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                           cwd=tmp_path, env={**os.environ, "GITHUB_STEP_SUMMARY": str(out)},
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return out.read_text()

    def changes(size):
        """compare's markdown of `size` bytes: a <details> of table rows, closed at the end."""
        head = ("OK: 0 regressions\n\n<details><summary>12000 changes</summary>\n\n"
                "| case | baseline ms | candidate ms |\n|---|---|---|\n")
        end = "\n</details>\n"
        row = "| disjoint_block rmsnorm 8192x4096 | 0.1000 | 0.1100 |\n"
        rows = (size - len(head) - len(end)) // len(row) - 1
        last = size - len(head) - len(end) - rows * len(row)       # a last row, padded
        text = head + row * rows + "|" + "x" * (last - 3) + "|\n" + end
        assert len(text.encode()) == size
        return text
    short = "REGRESSION: 1 regression\n\n| case | ms |\n|---|---|\n| a | 1 |\n"
    assert post(short) == short + footer
    # just under 1 MiB (1000001 bytes: cut before), and exactly as much as fits beside the
    # step's own lines: whole, no note, 1048576 bytes posted in all
    for size in (1_000_001, room):
        text = changes(size)
        got = post(text)
        assert got == text + footer and "compare.md is" not in got, size
    assert len(post(changes(room)).encode()) == limit
    # a byte more than fits, and far more: cut, every byte counted
    for size in (room + 1, limit, 3_000_000):
        text = changes(size)
        got = post(text)
        posted = len(got.encode())
        assert posted <= limit, (size, posted)
        cut = got[:got.index("\n**compare.md is")]                     # before the note
        assert got.startswith(text[:1000]) and cut.count("<details>") == cut.count("</details>") == 1
        body = got[:got.index("</details>")]
        assert body.endswith("|\n"), body[-80:]                        # cut at a line
        note = re.search(r"\*\*compare\.md is (\d+) bytes: with the other lines of this step it "
                         r"would pass the 1048576 bytes \(1 MiB\) GitHub takes of the summary of "
                         r"a step, so only its first (\d+) bytes are shown, cut at a line \(1 "
                         r"open `<details>` closed here\)\. The whole of it is compare\.md in the "
                         r"artifact `benchmark-abc123`\.\*\*", got)
        assert note and int(note[1]) == size, got[-600:]
        shown = int(note[2])
        assert text.encode()[:shown] == got.encode()[:shown] and shown < size
        assert got.encode()[shown:].startswith(b"</details>\n")          # the count is true
        assert got.endswith(footer)


def test_records_read_as_text_say_their_determinism_as_they_spell_it(tmp_path):
    """A library client's records read with pd.read_csv(..., dtype=str): 'False' is the
    verdict False (bool('False') is True), so a record whose repeats differed is not
    'bitwise reproducible', and one not deterministic by design is not 'by design'."""
    import pandas as pd
    from normbench.harness.store import records_path
    recs = [synthetic.record(implementation="atomic", deterministic=False, distinct_results=3,
                             deterministic_by_design=False),
            synthetic.record(implementation="torch", deterministic=True,
                             deterministic_by_design=True)]
    run = synthetic.write_run(tmp_path / "run", recs, synthetic.meta())
    text = pd.read_csv(records_path(run), dtype=str)
    floats = pd.read_csv(records_path(run)).astype({"distinct_results": float})
    for df in (load_records(run), text, floats):
        extra = {e["name"].split()[0]: e["extra"].split("\n")
                 for e in ex.github_action_benchmark(df)[0]}
        atomic = next(x for x in extra["atomic"] if x.startswith("determinism: "))
        torch_ = next(x for x in extra["torch"] if x.startswith("determinism: "))
        assert atomic.startswith("determinism: not reproducible (3 distinct")
        assert atomic.endswith(", not by design")
        assert torch_.startswith("determinism: bitwise reproducible (1 distinct")
        assert torch_.endswith(", deterministic by design")
