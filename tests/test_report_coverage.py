"""harness/report/coverage.py: a report of part of a run (interrupted, one shard, a partial
merge) says so at its top and calls a planned implementation without a record "not measured
here"; a case key recorded twice is read as `compare` reads it, the last one (CPU only)."""
from __future__ import annotations

import pandas as pd
import pytest

import synthetic
from normbench.harness.compare_rules import index
from normbench.harness.report import build_report, write_table
from normbench.harness.report.answer import answer_table
from normbench.harness.report.coverage import coverage
from normbench.harness.report.fmt import plain


def _recs():
    """Two shapes: ours at both, a nondeterministic strategy at one, no peer recorded."""
    return [synthetic.record(implementation="disjoint_block", groups=4, time_ms=0.05),
            synthetic.record(implementation="disjoint_block", groups=4, rows=64, time_ms=0.02),
            synthetic.record(implementation="atomic", rows=64, time_ms=0.03,
                             deterministic=False, distinct_results=2)]


def _top(md: str) -> str:
    return md.split("## The answer")[0]


def test_a_complete_run_has_no_warning_and_an_absent_peer_is_not_in_run():
    rep = build_report(pd.DataFrame(_recs()), synthetic.meta(completed=True))
    assert "Incomplete run" not in rep.markdown()
    t, _ = answer_table(pd.DataFrame(_recs()), coverage(plain(pd.DataFrame(_recs())),
                                                        synthetic.meta(completed=True)))
    assert t["best peer"].tolist() == ["not in run", "not in run"]


def test_an_interrupted_run_says_so_at_the_top_of_every_format():
    rep = build_report(pd.DataFrame(_recs()), synthetic.meta(completed=False))
    md = rep.markdown()
    assert "**Incomplete run**" in _top(md) and "3 records are here" in _top(md)
    assert "does not record how many cases were planned" in md
    assert "Incomplete run" in rep.html().split('id="answer"')[0]
    # the plan is unknown: a role without a record may just not have been reached
    table = md.split("| norm |")[1].split("\n\n")[0]
    assert "not measured here" in table and "not in run" not in table
    assert "The run is incomplete: the cases it did not record were not checked" in md


def test_a_shard_names_what_the_plan_has_elsewhere():
    recs = _recs()
    torch = synthetic.record(implementation="torch", kind="baseline")     # shard 2's
    plan = [r["case_id"] for r in recs] + [torch["case_id"]]
    meta = synthetic.meta(completed=True, shard={
        "index": 1, "count": 2, "spec": "1/2", "plan_size": len(plan), "plan_keys": plan,
        "keys": plan[:3]})
    md = build_report(pd.DataFrame(recs), meta).markdown()
    top = _top(md)
    assert "shard 1/2" in top and "3 of the plan's 4 cases are recorded here" in top
    assert "not measured here: torch rmsnorm 1024x1024 bf16/fp32." in top    # few: each named
    assert "3 records of 4 planned" in top
    t, _ = answer_table(pd.DataFrame(recs), coverage(plain(pd.DataFrame(recs)), meta))
    # rows 64, then 1024: torch is planned at 1024 only; at 64 no peer is in the plan
    assert t["best peer"].tolist() == ["not in run", "not measured here"]
    # atomic is recorded (a nondeterministic strategy): no planned case of it is missing
    assert t["best nondeterministic"].tolist() == ["atomic", "not in run"]
    assert "a peer of the plan may be among the cases not measured here" in md


def test_a_shard_that_holds_the_whole_plan_is_complete():
    """--shard 0/1 (a job array of one task), or shard 0/2 of a plan of one case: the shard
    holds every case of the whole plan.  Nothing is incomplete, no other shard holds a
    "rest", and compare judges its plan as a complete run's (a case its --only never planned
    is a flag, not a regression)."""
    recs = _recs()
    plan = [r["case_id"] for r in recs]
    meta = synthetic.meta(completed=True, shard={
        "index": 0, "count": 1, "spec": "0/1", "plan_size": len(plan), "plan_keys": plan,
        "keys": plan})
    cov = coverage(plain(pd.DataFrame(recs)), meta)
    assert not cov.incomplete, cov.warning
    assert "Incomplete run" not in build_report(pd.DataFrame(recs), meta).markdown()
    # still a shard's part: one case not recorded yet is said as before
    assert "shard 0/1 of a sharded run" in coverage(plain(pd.DataFrame(recs[:2])), meta).warning


def test_a_partial_merge_says_which_cases_are_in_no_shard(tmp_path):
    recs = _recs()
    gone = synthetic.record(implementation="torch", kind="baseline", rows=64)["case_id"]
    meta = synthetic.meta(completed=False, merge={
        "shards": 1, "count": 2, "plan_size": 4, "partial": True, "missing": 1,
        "missing_keys": [gone], "finished": True})
    md = build_report(pd.DataFrame(recs), meta).markdown()
    assert "merged with missing shards" in _top(md) and "1 of the plan's 4 cases" in _top(md)
    run = synthetic.write_run(tmp_path / "r", recs, meta)
    text = write_table(run)                  # the README table of it carries the warning too
    assert text.startswith("> **Warning:** Incomplete run: merged with missing shards")


def test_a_duplicate_case_key_is_read_as_compare_reads_it():
    first = synthetic.record(implementation="disjoint_block", groups=4, time_ms=0.02)
    again = synthetic.record(implementation="disjoint_block", groups=4, time_ms=0.08, seed=1)
    recs = pd.DataFrame([first, synthetic.record(implementation="torch", kind="baseline",
                                                 time_ms=0.05), again])
    used = index(recs)[0][tuple(str(again[k]) for k in ("norm", "implementation", "rows", "d",
                                                        "dtype", "weight_dtype", "groups"))]
    assert used["time_ms"] == again["time_ms"]
    rep = build_report(recs, synthetic.meta())
    md = rep.markdown()
    assert "the report uses the last record of each key, as `compare` does" in _top(md)
    row = next(x for x in md.splitlines() if x.startswith("| rmsnorm | 1024 × 1024"))
    assert f"| {again['time_ms'] * 1000:.1f}" in row
    assert f"{first['time_ms'] * 1000:.1f}" not in row
    assert "2 records" in _top(md)
    assert "Show all 3 records" in rep.html()       # the earlier one is still listed


def _merged(recs, completed, plan_size, missing=(), **merge):
    """The meta of a merge of shards 0/2 and 1/2 (0/2 stopped unless it completed)."""
    return synthetic.meta(completed=completed, merged_from=[
        {"shard": "0/2", "completed": completed, "ended_at": "2025-01-01T00:10:00+00:00"},
        {"shard": "1/2", "completed": True, "ended_at": "2025-01-01T00:09:00+00:00"}],
        merge={"shards": 2, "count": 2, "plan_size": plan_size, "partial": bool(missing),
               "missing": len(missing), "missing_keys": list(missing), "finished": True,
               **merge})


def test_a_stopped_merge_a_resume_completed_has_no_warning():
    """completed with no case missing is the whole run, whatever merge.finished still says
    (a resume finished the merge before the resume set finished)."""
    meta = _merged(_recs(), True, 3, finished=False)
    assert coverage(plain(pd.DataFrame(_recs())), meta).warning is None


def test_a_partial_merge_of_every_shard_names_the_one_that_stopped():
    gone = synthetic.record(implementation="torch", kind="baseline", rows=64)["case_id"]
    text = coverage(plain(pd.DataFrame(_recs())), _merged(_recs(), False, 4, [gone])).warning
    assert "from every shard, shard(s) 0/2 having stopped before they finished" in text
    assert "1 of the plan's 4 cases were not measured" in text and "missing shards" not in text


def test_a_resume_of_a_merge_that_stopped_is_blamed_not_a_shard():
    """A complete merge resumed with --force-resume (a bigger config) and interrupted: the
    merge's plan_size is not this directory's plan; the resume stopped, not a shard."""
    recs = _recs()
    meta = dict(_merged(recs, True, 2), completed=False, resumes=[
        {"at": "2025-01-02T00:00:00+00:00", "forced": True, "differs": ["another config"]}])
    cov = coverage(plain(pd.DataFrame(recs)), meta)
    assert cov.warning.startswith("a resume of this merged run stopped before it finished")
    assert "3 records are here" in cov.warning and "planned" not in cov.warning.split(";")[0]
    assert cov.planned is None and "shards of which" not in cov.warning
    md = _top(build_report(pd.DataFrame(recs), meta).markdown())
    assert "3 records of" not in md and "3 records, " in md
    # a merge from before shards' resumes moved to merged_from: the copied entry is older
    old = dict(_merged(recs, False, 3), resumes=[{"at": "2024-12-31T00:00:00+00:00"}])
    assert coverage(plain(pd.DataFrame(recs)), old).warning.startswith(
        "merged, and shard(s) 0/2 stopped before finishing")


def test_a_run_that_holds_its_lock_is_still_running(tmp_path):
    from normbench.harness.store import RunStore, in_use
    recs = _recs()
    cov = coverage(plain(pd.DataFrame(recs)), synthetic.meta(completed=False), live=True)
    assert cov.warning.startswith("it is still running (its lock is held): 3 records")
    assert "stopped" not in cov.warning and "interrupted" not in cov.warning
    plan = [r["case_id"] for r in recs]
    shard = synthetic.meta(completed=False, shard={"spec": "0/1", "plan_keys": plan,
                                                   "keys": plan})
    text = coverage(plain(pd.DataFrame(recs[:2])), shard, live=True).warning
    assert "1 of them not recorded (it is still running: its lock is held)" in text
    d = synthetic.write_run(tmp_path / "r", recs, synthetic.meta(completed=False))
    assert not in_use(d)
    with RunStore(d, resume=True):
        assert in_use(d)
        from normbench.harness.report.build import write_table
        assert "still running (its lock is held)" in write_table(d)   # the report reads it
    (d / ".normbench.lock.json").write_text("{}")        # a holder killed hard: not alive
    assert not in_use(d)


def test_two_reports_of_one_run_at_once_leave_the_later_ones_report(tmp_path, monkeypatch):
    """`report RUN` begun while the run measured (it reads: rmsnorm only, still running) and
    the run's own report at its end (complete) wrote their files at once: the earlier one's
    "still running" pages landed over the complete ones.  One waits for the other now, then
    reads the run as it is: the complete report is the one left, every plot it links there."""
    import re
    import threading
    from normbench.harness.report import build, write_report
    from normbench.harness.store import RunStore
    recs = [synthetic.record(norm=n, implementation="torch", rows=1024, d=512)
            for n in ("rmsnorm", "layernorm")]
    d = synthetic.write_run(tmp_path / "r", recs[:1], synthetic.meta(completed=False))
    run = RunStore(d, resume=True)                 # the run, still measuring
    built, other_building, other_done = (threading.Event() for _ in range(3))
    real = build.build_report

    def slow_build(*a, **k):        # the standalone report: slow to build (its plots)
        if threading.current_thread().name == "run":
            other_building.set()
        rep = real(*a, **k)
        if threading.current_thread().name == "standalone":
            built.set()
            # the run's report goes through meanwhile, where nothing holds it off (1 s
            # without it building: it waits for this one)
            if other_building.wait(1):
                other_done.wait(60)
        return rep
    monkeypatch.setattr(build, "build_report", slow_build)
    errors = []

    def report(name):
        try:
            write_report(d)
        except BaseException as e:      # pragma: no cover - shown by the assert below
            errors.append(e)
        if name == "run":
            other_done.set()
    standalone = threading.Thread(target=report, args=("standalone",), name="standalone")
    standalone.start()
    assert built.wait(60)
    run.append(recs[1])                 # the run measures its last case, then closes
    run.write_meta(synthetic.meta(completed=True))
    run.close()
    at_end = threading.Thread(target=report, args=("run",), name="run")
    at_end.start()
    standalone.join(60)
    at_end.join(60)
    assert not errors
    md = (d / "report.md").read_text()
    assert "still running" not in md and "Incomplete run" not in md
    links = set(re.findall(r"plots/([\w.-]+\.png)", md))
    assert "bandwidth_layernorm.png" in links
    assert all((d / "plots" / name).is_file() for name in links)


def test_a_report_table_written_while_the_run_went_on_is_rewritten_with_its_report(tmp_path):
    """report --markdown-table during a run writes report-table.md; the run's own report at
    its end (run, run --resume, report DIR: write_report) rewrites it, never leaving the
    "still running" table beside a complete report.  A run without one gets none."""
    from normbench.harness.report import write_report
    from normbench.harness.store import RunStore
    recs = _recs()
    d = synthetic.write_run(tmp_path / "r", recs[:1], synthetic.meta(completed=False))
    with RunStore(d, resume=True) as store:
        assert "still running" in write_table(d)
        for r in recs[1:]:
            store.append(r)
        store.write_meta(synthetic.meta(completed=True))
    assert "report-table.md" in write_report(d)
    text = (d / "report-table.md").read_text()
    assert "Warning" not in text and text == write_table(d)
    assert text.count("| RMS |") == 2                            # both shapes, not one
    fresh = synthetic.write_run(tmp_path / "f", recs, synthetic.meta(completed=True))
    assert "report-table.md" not in write_report(fresh)
    assert not (fresh / "report-table.md").exists()


def test_a_meta_field_of_the_wrong_type_is_refused_by_name():
    from normbench.harness.store import StoreError
    recs = plain(pd.DataFrame(_recs()))
    for bad, field in (({"shard": {"plan_keys": [1, 2], "keys": 5}}, "shard.keys"),
                       ({"shard": ["0/2"]}, "shard"),
                       ({"merge": {"missing_keys": "k"}}, "merge.missing_keys"),
                       ({"merge": {"plan_size": True}}, "merge.plan_size"),
                       ({"resumes": 3}, "resumes"), ({"completed": "false"}, "completed")):
        with pytest.raises(StoreError, match=rf"^meta\.json: {field}: expected"):
            coverage(recs, synthetic.meta(**bad))
    with pytest.raises(StoreError, match=r"^meta\.json: invocations\[0\]\.only: expected list"):
        coverage(recs, synthetic.meta(invocations=[{"argv": [], "only": "torch"}]))


def _report_cli(*args):
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    r = CliRunner().invoke(app, ["report", *map(str, args)])
    lines = [x for x in r.output.splitlines() if x.strip()]
    assert isinstance(r.exception, SystemExit) and len(lines) == 1, r.output
    return r.exit_code, lines[0]


def test_report_errors_are_one_line_with_and_without_markdown_table(tmp_path, monkeypatch):
    """A malformed meta.json field, report-table.md a directory, a write that fails: one
    line, exit 2 for the input's fault, 1 for the machine's; never a traceback."""
    bad = synthetic.write_run(tmp_path / "m", _recs(), synthetic.meta(
        completed=True, shard={"plan_keys": [1, 2], "keys": 5}))
    for extra in ((), ("--markdown-table",)):
        code, line = _report_cli(bad, *extra)
        assert code == 2 and "meta.json: shard.keys: expected list, got int" in line
    d = synthetic.write_run(tmp_path / "d", _recs(), synthetic.meta(completed=True))
    (d / "report-table.md").mkdir()
    code, line = _report_cli(d, "--markdown-table")
    assert code == 2 and line == f"report: {d / 'report-table.md'} is a directory"
    (d / "report-table.md").rmdir()
    from normbench.harness import store

    def full(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(store, "write_file_atomic", full)
    code, line = _report_cli(d, "--markdown-table")
    assert code == 1 and "No space left on device" in line


# a config as meta.json records it (config_text): two shapes, ours and torch
_CFG = ("name: t\nnorm: [rmsnorm]\nrows: [64, 1024]\nd: [1024]\ndtype: [bf16]\n"
        "weight_dtype: [fp32]\ngroups: [4]\n")
_RUN = {"argv": ["normbench", "run", "t.yaml", "--out", "r"]}


def _stopped(**over):
    """A plain run stopped before its end whose config is recorded: ours at both shapes,
    torch at rows 64 only (its case at 1024 not measured)."""
    recs = [synthetic.record(implementation="disjoint_block", groups=4, time_ms=0.05),
            synthetic.record(implementation="disjoint_block", groups=4, rows=64, time_ms=0.02),
            synthetic.record(implementation="torch", kind="baseline", rows=64, time_ms=0.03)]
    meta = synthetic.meta(completed=False, invocations=[_RUN],
                          config_text=_CFG + "implementations: [disjoint_block, torch]\n")
    return recs, {**meta, **over}


def test_a_stopped_run_rebuilds_its_plan_from_its_config_and_names_what_is_missing(tmp_path):
    """A plain run stopped before its end: the report said "meta.json does not record how
    many cases were planned", every role without a record "not measured here" (the plan may
    have one) although meta.json's config_text names every implementation, and never named
    the case it lacked.  Its plan is rebuilt as `run --resume` rebuilds it: the count, the
    case not measured, and a role the plan has none of is "not in run"."""
    recs, meta = _stopped()
    md = build_report(pd.DataFrame(recs), meta).markdown()
    top = _top(md)
    assert "3 of 4 planned cases are recorded here; not measured here: torch rmsnorm " \
           "1024x1024 bf16/fp32 — `run … --out DIR --resume` measures the rest" in top
    assert "3 records of 4 planned" in top and "does not record how many" not in md
    t, _ = answer_table(pd.DataFrame(recs), coverage(plain(pd.DataFrame(recs)), meta))
    # rows 64, then 1024: no nondeterministic strategy is planned; torch's 1024 is missing
    assert t["best nondeterministic"].tolist() == ["not in run", "not in run"]
    assert t["best peer"].tolist() == ["torch", "not measured here"]
    run = synthetic.write_run(tmp_path / "r", recs, meta)
    assert "not measured here: torch rmsnorm 1024x1024" in write_table(run)


def test_a_stopped_run_s_plan_is_its_plan_implementations_narrowed_by_each_only():
    """A config naming none: the implementations meta.json's plan_implementations lists (the
    measuring machine's, not this one's), narrowed by the --only of its invocations (`only`,
    or read from the argv of one from before that was recorded), their union over resumes."""
    recs, _ = _stopped()
    listed = {"config_text": _CFG, "plan_implementations": ["atomic", "disjoint_block", "torch"]}
    df = plain(pd.DataFrame(recs))
    for runs in ([{**_RUN, "only": ["disjoint_block", "torch"]}],
                 [{"argv": _RUN["argv"] + ["--only=disjoint_block", "--only", "torch"]}]):
        cov = coverage(df, synthetic.meta(completed=False, invocations=runs, **listed))
        assert "3 of 4 planned cases" in cov.warning and cov.planned == 4
        assert not cov.open_plan
    # a resume without --only planned atomic too: its cases are missing as well
    cov = coverage(df, synthetic.meta(completed=False, **listed, invocations=[
        {**_RUN, "only": ["disjoint_block", "torch"]}, {**_RUN, "only": None}]))
    assert cov.planned == 6 and "atomic rmsnorm 64x1024 bf16/fp32" in cov.warning
    # still running: the same plan, so far
    cov = coverage(df, synthetic.meta(completed=False, invocations=[_RUN], **listed), live=True)
    assert cov.warning.startswith("it is still running (its lock is held): 3 of 6 planned "
                                  "cases are recorded here; not measured here: ")


def test_a_stopped_run_from_before_plan_implementations_says_only_what_it_can():
    """A config naming none and no plan_implementations: which implementations the measuring
    machine planned is not recorded.  The cases of those recorded here are counted and
    named; others may be missing, so a role without a record stays "not measured here" and
    no planned total is claimed."""
    recs, _ = _stopped()
    meta = synthetic.meta(completed=False, invocations=[_RUN], config_text=_CFG)
    cov = coverage(plain(pd.DataFrame(recs)), meta)
    assert "3 records are here; meta.json does not record which implementations were " \
           "planned" in cov.warning
    assert "of those recorded here, not measured here: torch rmsnorm 1024x1024" in cov.warning
    assert cov.planned is None and cov.open_plan
    t, _ = answer_table(pd.DataFrame(recs), cov)
    assert t["best nondeterministic"].tolist() == ["not measured here"] * 2
    md = _top(build_report(pd.DataFrame(recs), meta).markdown())
    assert "3 records, " in md and "planned," not in md


def test_a_plan_meta_json_cannot_rebuild_is_not_claimed():
    """No config that parses, no invocation recorded (its --only unknown), or a record the
    rebuilt plan does not hold (not the plan that was measured): the plan stays unknown."""
    recs, _ = _stopped()
    df = plain(pd.DataFrame(recs))
    names = _CFG + "implementations: [disjoint_block, torch]\n"
    for meta in (_stopped(config_text="rows: [64]\n")[1], _stopped(invocations=[])[1],
                 _stopped(config_text=_CFG + "implementations: [disjoint_block]\n")[1],
                 _stopped(resumes=[{"forced": True, "config_text": names}])[1]):
        cov = coverage(df, meta)
        assert "does not record how many cases were planned" in cov.warning
        assert cov.missing is None and cov.planned is None
