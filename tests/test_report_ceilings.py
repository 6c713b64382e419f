"""The copy ceiling and datasheet peak the report draws and predicts from are the ones the
records were measured against (harness/report/fmt.py, sections.py; harness/model.py)."""
from __future__ import annotations

import pandas as pd
import pytest

import synthetic
from normbench.harness import model
from normbench.harness.report import build_report
from normbench.harness.report.fmt import ms_to_us, one_copy_ceiling, plain


def _prediction(md: str) -> list[dict]:
    """The bandwidth-bound table's rows, by heading."""
    table = next(t for t in md.split("\n\n") if "| measured µs |" in t).splitlines()
    head = [c.strip() for c in table[0].strip("|").split("|")]
    return [dict(zip(head, (c.strip() for c in line.strip("|").split("|"))))
            for line in table[2:]]


def test_a_merge_draws_the_ceiling_its_timed_records_carry_not_metas_median():
    """Three shards measured 2000, 5000 and 3000 GB/s; every timed record is shard 0's, so
    meta's median (3000) is a ceiling none of them was measured against."""
    recs = [synthetic.record(implementation=n, time_ms=0.2, seed=k)
            for k, n in enumerate(("torch", "disjoint_block"))]
    for r in recs:
        r["pct_copy"] = r["gbps"] / 2000 * 100
    recs.append(synthetic.record(implementation="liger", status="skipped", error="absent"))
    meta = synthetic.meta(copy_ceiling_gbps=3000.0, config_name="merged")
    df = plain(pd.DataFrame(recs))
    assert one_copy_ceiling(df, meta) == pytest.approx(2000)
    md = build_report(pd.DataFrame(recs), meta).markdown()
    assert "copy ceiling 2000 GB/s (the one the records were measured against" in md
    nb = recs[0]["bytes_moved"]
    floor = ms_to_us(model.bandwidth_bound_ms(nb, 2.0))
    assert {r["floor @ copy ceiling µs"] for r in _prediction(md)} == {floor}
    # no record carries a ceiling: meta's is the only one there is
    assert one_copy_ceiling(df.iloc[2:], meta) == 3000.0


def test_a_mixed_cluster_has_no_single_datasheet_peak():
    name = "mixed: NVIDIA H100 80GB HBM3, NVIDIA H200"
    assert model.peak_tbps(name) is None
    assert model.peak_tbps(name, override=5.0) == 5.0          # the config's own word stands


def test_a_mixed_cluster_predicts_each_record_from_its_own_gpus_peak():
    """H100 and H200 workers: each record's % of peak is its own GPU's; meta's peak_tbps
    (the first model's, as a run that turned mixed when a worker joined keeps it) is none of
    the H200 record's.  A record without a % of peak gets no datasheet floor."""
    def rec(impl, tbps, copy, seed):
        r = synthetic.record(implementation=impl, time_ms=0.2, seed=seed)
        r.update(pct_copy=r["gbps"] / copy * 100,
                 pct_peak=r["gbps"] / (tbps * 1000) * 100 if tbps else None)
        return r
    recs = [rec("torch", 3.35, 2800, 1), rec("disjoint_block", 4.8, 4000, 2),
            rec("atomic", None, 4000, 3)]
    meta = synthetic.meta(device_name="mixed: NVIDIA H100 80GB HBM3, NVIDIA H200",
                          peak_tbps=3.35, copy_ceiling_gbps=3400.0, config_name="cluster")
    md = build_report(pd.DataFrame(recs), meta).markdown()
    assert "each record's own GPU's datasheet peak (3.35, 4.8 TB/s)" in md
    got = {r["implementation"]: r for r in _prediction(md)}
    nb = recs[0]["bytes_moved"]
    for r, tbps in zip(recs, (3.35, 4.8)):
        floor = model.bandwidth_bound_ms(nb, tbps)
        assert got[r["implementation"]]["floor @ datasheet peak µs"] == ms_to_us(floor)
        assert got[r["implementation"]]["measured / floor"] == f"{r['time_ms'] / floor:.2f}×"
    assert got["atomic"]["floor @ datasheet peak µs"] == "" and got["atomic"]["measured / floor"] == ""


def _prediction_text(md: str) -> str:
    return md.split("## Measured time against the bandwidth bound")[1].split("\n## ")[0]


def test_an_old_run_without_bytes_moved_says_so_and_renders_no_empty_sentence():
    """A run recorded before bytes_moved (and without a copy ceiling or peak in meta.json):
    every ok record has a time, none a byte count.  The section said "divided by the
    bandwidth — ." and then "No record has a measured time."; it names what is missing."""
    recs = [synthetic.record(implementation=n, time_ms=0.2, seed=k)
            for k, n in enumerate(("torch", "disjoint_block"))]
    for r in recs:
        r.update(bytes_moved=None, gbps=None, pct_copy=None, pct_peak=None)
    meta = synthetic.meta(config_name="old")
    for k in ("copy_ceiling_gbps", "peak_tbps", "timer"):
        meta.pop(k)
    sec = _prediction_text(build_report(pd.DataFrame(recs), meta).markdown())
    assert "No record has both a measured time and bytes_moved (2 ok records have a time" in sec
    assert "No record has a measured time" not in sec
    assert "— ." not in sec and "divided by the bandwidth" not in sec
    assert "| measured µs |" not in sec


def test_timed_records_without_any_bandwidth_get_no_empty_floor_sentence():
    """A mixed cluster without a copy ceiling: the one record carrying a % of peak has no
    bytes_moved, the timed one no % of peak — no timed record has a bandwidth to divide by."""
    timed = synthetic.record(implementation="torch", time_ms=0.2, seed=1)
    timed.update(pct_copy=None, pct_peak=None)
    other = synthetic.record(implementation="atomic", time_ms=0.2, seed=2)
    other.update(bytes_moved=None, pct_copy=None)
    meta = synthetic.meta(device_name="mixed: NVIDIA H100 80GB HBM3, NVIDIA H200",
                          config_name="cluster")
    for k in ("copy_ceiling_gbps", "peak_tbps"):
        meta.pop(k)
    sec = _prediction_text(build_report(pd.DataFrame([timed, other]), meta).markdown())
    assert "has a copy ceiling or a datasheet peak to divide by: no floor can be drawn." in sec
    assert "— ." not in sec and "| measured µs |" not in sec


def test_no_timed_record_says_no_time_not_no_bytes():
    recs = [synthetic.record(implementation="torch", status="failed", error="boom")]
    sec = _prediction_text(build_report(pd.DataFrame(recs), synthetic.meta()).markdown())
    assert "No ok record has a positive finite measured time" in sec and "— ." not in sec


def test_a_resume_whose_ceiling_differs_is_named_as_the_cause():
    """A run resumed on another machine: its resume measured its own ceiling (run.py), so
    its records' % of copy is against another ceiling than the start's.  The report blamed
    "GPUs of merged shards or workers", of which this run has none; it names the resume."""
    recs = [synthetic.record(implementation=n, time_ms=0.2, seed=k)
            for k, n in enumerate(("torch", "disjoint_block"))]
    for r, ceiling in zip(recs, (2000, 2500)):
        r["pct_copy"] = r["gbps"] / ceiling * 100
    resume = {"at": "2025-01-02T00:00:00+00:00", "forced": False, "differs": [],
              "device_name": synthetic.DEVICE, "hostname": "other-host",
              "copy_ceiling_gbps": 2500.0, "measured": 1}
    meta = synthetic.meta(copy_ceiling_gbps=2000.0, resumes=[resume])
    md = build_report(pd.DataFrame(recs), meta).markdown()
    assert ("The records were measured against different copy ceilings (1 resume measured a "
            "ceiling of its own): each record's % of copy") in _prediction_text(md)
    assert "merged shards or workers" not in md
    # a merge of two shards, one of them resumed: both causes
    shards = [{"dir": "a", "resumes": []}, {"dir": "b", "resumes": [resume, resume]}]
    merged = synthetic.meta(copy_ceiling_gbps=2000.0, merged_from=shards)
    assert ("(2 merged shards measured one each; 2 resumes measured ceilings of their own)"
            in build_report(pd.DataFrame(recs), merged).markdown())


def test_a_resume_that_measured_every_record_names_itself_and_both_ceilings_differ_in_print():
    """A run stopped inside its first case and resumed (one machine, the interpreter's 8-ish
    GB/s): every record is the resume's, measured against its 8.396 GB/s, meta.json's top
    level holds the start's 8.004.  The sentence read "copy ceiling 8 GB/s (... not
    meta.json's 8 GB/s: a merge's or a cluster's median)" — two ceilings printed alike and a
    cause this run does not have."""
    recs = [synthetic.record(implementation=n, time_ms=0.2, seed=k)
            for k, n in enumerate(("torch", "torch_compile"))]
    for r in recs:
        r["pct_copy"] = r["gbps"] / 8.396418768725788 * 100
    resume = {"at": "2025-01-02T00:00:00+00:00", "forced": False, "differs": [],
              "device_name": synthetic.DEVICE, "copy_ceiling_gbps": 8.396418768725788,
              "measured": 2}
    meta = synthetic.meta(copy_ceiling_gbps=8.003500561871876, resumes=[resume])
    sec = _prediction_text(build_report(pd.DataFrame(recs), meta).markdown())
    assert ("the measured device-to-device copy ceiling 8.396 GB/s (the one the records were "
            "measured against, not meta.json's 8.004 GB/s: 1 resume measured a ceiling of its "
            "own)") in sec
    assert "median" not in sec and "cluster" not in sec


def test_records_of_different_ceilings_are_each_against_the_one_measured_with_them():
    """A plain resume on one machine is no GPU of its own: the sentence names no GPU."""
    recs = [synthetic.record(implementation=n, time_ms=0.2, seed=k)
            for k, n in enumerate(("torch", "disjoint_block"))]
    for r, ceiling in zip(recs, (2000, 2500)):
        r["pct_copy"] = r["gbps"] / ceiling * 100
    resume = {"at": "2025-01-02T00:00:00+00:00", "forced": False, "differs": [],
              "device_name": synthetic.DEVICE, "copy_ceiling_gbps": 2500.0, "measured": 1}
    meta = synthetic.meta(copy_ceiling_gbps=2000.0, resumes=[resume])
    sec = _prediction_text(build_report(pd.DataFrame(recs), meta).markdown())
    assert "each record's % of copy is against the ceiling measured with it" in sec
    assert "GPU" not in sec
