"""What `compare` counts as baseline: runs that hold less than their plan (shards, a run stopped
early), the candidate's own measurements among the baselines, and a speed-up that is host time
in a disturbed baseline run (CPU only, synthetic runs)."""
from __future__ import annotations

import json
import shutil

import pytest

import synthetic
from normbench.harness import compare as cmp
from normbench.harness import stats
from normbench.harness.merge import merge
from normbench.harness.store import load_records


def _cases(drop=(), **over):
    """Three cases of a small run, less the implementations in `drop`; `over` maps an
    implementation to record overrides."""
    base = [dict(implementation="torch", time_ms=0.100),
            dict(implementation="disjoint_block", groups=64, groups_effective=64, time_ms=0.200,
                 writers_per_slot=1),
            dict(implementation="spin_lock", groups=64, groups_effective=64, time_ms=0.250)]
    out = []
    for i, kw in enumerate(base):
        kw = {"rows": 8192, "d": 4096, "seed": i, **kw, **over.get(kw["implementation"], {})}
        if kw["implementation"] not in drop:
            out.append(synthetic.record(**kw))
    return out


def _run(tmp_path, name, recs=None, **meta):
    return synthetic.write_run(tmp_path / name, _cases() if recs is None else recs,
                               synthetic.meta(**meta))


def _shards(tmp_path, prefix="s"):
    """run --shard 0/2 and 1/2 of the three cases: each holds part of the plan."""
    recs = _cases()
    plan = [r["case_id"] for r in recs]
    out = []
    for i, part in enumerate((recs[:1], recs[1:])):
        shard = {"index": i, "count": 2, "spec": f"{i}/2", "plan_digest": "p", "plan_size": 3,
                 "plan_keys": plan, "keys": [r["case_id"] for r in part]}
        out.append(_run(tmp_path, f"{prefix}{i}", part, shard=shard))
    return out


def _impls(cases):
    return sorted(c.key["implementation"] for c in cases)


def test_a_case_dropped_from_the_candidate_regresses_beside_shards_and_a_run_stopped_early(
        tmp_path):
    """A shard, or a run stopped early, lacks cases it was never meant to (or never got to)
    measure: it says nothing about them.  Before, a case the candidate dropped regressed only
    where every baseline run held it, so with the shards of a run as the baseline no dropped
    strategy ever failed the gate (exit 0, a flag)."""
    cand = _run(tmp_path, "cand", _cases(drop=("spin_lock",)))
    res = cmp.compare(_shards(tmp_path), cand)
    (reg,) = res.regressions
    assert reg.key["implementation"] == "spin_lock" and cmp.exit_code(res) == 1
    assert reg.regressions == ["missing from the candidate run (ok in every baseline run that "
                               "holds it, 1 of 2)"]
    # a run stopped before its end beside a whole one: the same
    whole = _run(tmp_path, "whole")
    stopped = _run(tmp_path, "stopped", _cases(drop=("spin_lock",)), completed=False)
    (reg,) = cmp.compare([whole, stopped], cand).regressions
    assert reg.key["implementation"] == "spin_lock"
    # a complete baseline run that lacks the case did not plan it (baseline runs of two
    # configs): a flag, as before
    other = _run(tmp_path, "other", _cases(drop=("spin_lock",)), completed=True)
    res = cmp.compare([whole, other], cand)
    assert not res.regressions and cmp.exit_code(res) == 0
    (flagged,) = [c for c in res.cases if c.cand_status == cmp.MISSING]
    assert "1 complete baseline run(s) lack it too: not in every baseline run's plan" in \
        flagged.flags[0]
    # a baseline run that failed the case: a flag, as before
    failed = _run(tmp_path, "failed", _cases(spin_lock=dict(status="error", error="boom")))
    assert not cmp.compare([whole, failed], cand).regressions


def test_shards_as_the_baseline_say_one_baseline_run_a_case(tmp_path):
    """Every case of two shards is held by one of them: judged by the single-run rule, which
    the summary, the JSON and a note now say (they said "between-run envelope of 2 baseline
    runs", and the one-run note was missing)."""
    res = cmp.compare(_shards(tmp_path), _run(tmp_path, "cand"))
    assert {c.rule for c in res.cases} <= {stats.SINGLE, stats.SINGLE_HOST,
                                           stats.SINGLE_UNSTEADY}
    assert "2 baseline runs, each case held by one of them: between-run noise unknown" in \
        res.summary()
    assert "envelope" not in res.summary()
    noise = json.loads(cmp.render(res, "json"))["noise"]
    assert noise["envelope_cases"] == 0 and noise["one_run_cases"] == 3
    assert noise["rule"].startswith("one baseline run")
    assert ("3 gated case(s) are judged against one baseline run's time: the other baseline "
            "run(s) lack 3 of them (shards, a run stopped early, cases added since); "
            "between-run noise is unknown") in "\n".join(res.notes)
    # two whole runs and a third that stopped after one case: an envelope for that case,
    # one run's rule for none (every case has two or three)
    runs = [_run(tmp_path, "w1"), _run(tmp_path, "w2"),
            _run(tmp_path, "w3", _cases(drop=("torch", "spin_lock")), completed=False)]
    res = cmp.compare(runs, _run(tmp_path, "cand2"))
    assert "between-run envelope of 3 baseline runs" in res.summary()
    assert json.loads(cmp.render(res, "json"))["noise"]["rule"] == stats.ENVELOPE
    # one whole run beside a shard of another: both rules, counted
    res = cmp.compare([_run(tmp_path, "w4"), _shards(tmp_path, "t")[1]], _run(tmp_path, "c3"))
    assert ("between-run envelope of 2 baseline runs, for 2 case(s); one baseline run, "
            "conservative rule, for 1") in res.summary()
    noise = json.loads(cmp.render(res, "json"))["noise"]
    assert (noise["envelope_cases"], noise["one_run_cases"]) == (2, 1)
    assert noise["rule"].startswith("mixed")


def test_the_candidate_s_own_measurements_are_no_baseline(tmp_path):
    """A copy of the candidate among the baselines widened the envelope to hold it: a
    candidate 20 % slower than the one real baseline run passed (exit 0, "unchanged"); so did
    a merge compared with its own shards.  Refused now; a baseline run that shares only some
    of the candidate's measurements loses those, noted."""
    b1 = _run(tmp_path, "b1")
    slow = _run(tmp_path, "slow", _cases(**{i: dict(time_ms=t * 1.2) for i, t in
                                            (("torch", 0.1), ("disjoint_block", 0.2),
                                             ("spin_lock", 0.25))}))
    assert cmp.exit_code(cmp.compare(b1, slow)) == 1
    shutil.copytree(slow, tmp_path / "bl" / "run-2")
    shutil.copytree(b1, tmp_path / "bl" / "run-1")
    with pytest.raises(cmp.CompareError, match=r"run-2 holds only measurements the candidate "
                       r".*slow holds too \(a copy\): it would widen"):
        cmp.compare(tmp_path / "bl", slow)
    text, code = cmp.run_cli(tmp_path / "bl", slow, "5%", "table")
    assert code == 2 and "holds only measurements the candidate" in text
    with pytest.raises(cmp.CompareError, match="holds only measurements the candidate"):
        cmp.compare(tmp_path / "bl" / "run-2", slow)           # alone, too: itself, no baseline
    # a merge against its own shards
    s0, s1 = _shards(tmp_path)
    merge(tmp_path / "m", [s0, s1])
    with pytest.raises(cmp.CompareError, match=r"s0 holds only measurements the candidate .*m "
                       r"holds too \(a shard merged into .*m: its merged_from names it\)"):
        cmp.compare([s0, s1], tmp_path / "m")
    # a baseline run that holds one of the candidate's measurements and two of its own: the
    # shared record is dropped from it, the rest compared
    mine = [r for r in load_records(slow).to_dict("records") if r["implementation"] == "torch"]
    part = _run(tmp_path, "part", mine + _cases(drop=("torch",)))
    res = cmp.compare(part, slow)
    assert any(f"1 of baseline {part}'s 3 case(s) are measurements the candidate {slow} holds "
               "too: not counted as baseline" in n for n in res.notes)
    assert _impls(res.regressions) == ["disjoint_block", "spin_lock"]
    assert "torch" not in _impls(res.cases)


def test_a_merge_against_its_own_shard_says_why_nothing_is_left(tmp_path):
    """`compare MERGE SHARD0`: every case the merge shares with the shard is the shard's own
    measurement, dropped from the baseline; the error said "no common case: baseline has 3
    case(s), candidate 3, none with the same key", which was false."""
    s0, s1 = _shards(tmp_path)
    merge(tmp_path / "m", [s0, s1])
    with pytest.raises(cmp.CompareError) as e:
        cmp.compare(tmp_path / "m", s0)
    assert str(e.value) == (
        "every case the baseline shares with the candidate is the candidate's own measurement "
        f"({tmp_path / 'm'} holds the candidate {s0}'s measurements (a shard merged into "
        f"{tmp_path / 'm'}: its merged_from names it)); nothing left to compare")
    text, code = cmp.run_cli(tmp_path / "m", s0, "5%", "table")
    assert code == 2 and "no common case" not in text
    # runs that share no case at all still say so
    other = _run(tmp_path, "other", [synthetic.record(implementation="torch", rows=64)])
    with pytest.raises(cmp.CompareError, match="no common case"):
        cmp.compare(other, s0)


def test_the_one_run_note_and_the_noise_rule_say_why(tmp_path):
    """Of several baseline runs, the note on cases judged against one run's time blamed
    shards, a run stopped early or cases added since, also where both runs held the case but
    one failed it, or one's record was the candidate's own; and where no case was judged on
    time at all, the summary and the JSON's noise.rule still said "between-run envelope"."""
    whole = _run(tmp_path, "whole")
    failed = _run(tmp_path, "failed", _cases(torch=dict(status="error", error="boom")))
    res = cmp.compare([whole, failed], _run(tmp_path, "cand"))
    note = next(n for n in res.notes if "judged against one baseline run's time" in n)
    assert note.startswith("1 gated case(s) are judged against one baseline run's time: the "
                           "other baseline run(s) failed 1;")
    assert "shards" not in note
    # a record ok but of a wrong result, or not repeatable though deterministic by design,
    # gives no time either: said as what it is, not as a failure (each once, by cause)
    wrong = _run(tmp_path, "wrong", _cases(torch=dict(correct=False),
                                           disjoint_block=dict(deterministic=False,
                                                               distinct_results=2)))
    res = cmp.compare([whole, wrong], _run(tmp_path, "cand2"))
    note = next(n for n in res.notes if "judged against one baseline run's time" in n)
    assert note.startswith("2 gated case(s) are judged against one baseline run's time: the "
                           "other baseline run(s) got a wrong result (correct False) in 1, did "
                           "not repeat the bits of 1 though deterministic by design;")
    assert "did not time" not in note
    # a merge beside another whole run, compared with one of its shards: the merge's record
    # of the shard's case is the candidate's own
    s0, s1 = _shards(tmp_path)
    merge(tmp_path / "m", [s0, s1])
    res = cmp.compare([tmp_path / "m", whole], s0)
    note = next(n for n in res.notes if "judged against one baseline run's time" in n)
    assert "hold only the candidate's own measurement of 1 (no baseline)" in note
    assert "shards" not in note
    # every candidate case failed: no case judged on time, and said so
    broken = _run(tmp_path, "broken", _cases(**{i: dict(status="error", error="boom") for i in
                                                ("torch", "disjoint_block", "spin_lock")}))
    res = cmp.compare([whole, _run(tmp_path, "whole2")], broken)
    assert "no gated case judged on time" in res.summary() and "envelope" not in res.summary()
    noise = json.loads(cmp.render(res, "json"))["noise"]
    assert (noise["rule"], noise["envelope_cases"], noise["one_run_cases"]) == ("none", 0, 0)


def test_a_speed_up_that_is_host_time_in_a_disturbed_baseline_is_noise(tmp_path):
    """The one-run rule took a slowdown whose GPU time stayed put for host time in a disturbed
    run (noise), but the same pair the other way round read as an improvement of the code.
    Now the mirror image holds: a speed-up whose GPU time is no faster is noise."""
    steady = dict(time_ms=0.300, gpu_time_ms=0.090, spread=0.02)
    disturbed = dict(time_ms=0.600, gpu_time_ms=0.090, spread=0.3)
    a = _run(tmp_path, "a", _cases(torch=steady))
    b = _run(tmp_path, "b", _cases(torch=disturbed))

    def torch(res):
        return next(c for c in res.cases if c.key["implementation"] == "torch")
    slower = torch(cmp.compare(a, b))
    assert slower.verdict == stats.NOISE and "not gated" in slower.detail
    faster = torch(cmp.compare(b, a))
    assert faster.verdict == stats.NOISE and faster.rule == stats.SINGLE_UNSTEADY
    assert "host time in an unsteady run, not an improvement" in faster.detail
    # a speed-up the GPU time shows is one
    fast_gpu = _run(tmp_path, "c", _cases(torch=dict(steady, gpu_time_ms=0.060)))
    assert torch(cmp.compare(b, fast_gpu)).verdict == stats.IMPROVEMENT
    # a baseline without a GPU time: its call time bounds its GPU time from above only, so it
    # cannot show the GPU unchanged: the speed-up stands
    no_gpu = _run(tmp_path, "d", _cases(torch=dict(disturbed, gpu_time_ms=None)))
    assert torch(cmp.compare(no_gpu, a)).verdict == stats.IMPROVEMENT


def test_call_and_gpu_time_that_moved_apart_are_a_flag(tmp_path):
    """The one-run unsteady rule took any GPU time no slower (or no faster) than the
    baseline's for "within the threshold": a call time 50 % faster whose GPU time was 2.2x
    slower (0.090 -> 0.200 ms) was noise, "the candidate's GPU time is within the threshold
    of the baseline's".  Now only a GPU time within the threshold either way makes it noise;
    one that moved the other way beyond it is a flag that says so, never a verdict."""
    disturbed = dict(time_ms=0.600, gpu_time_ms=0.090, spread=0.3)
    a = _run(tmp_path, "a", _cases(torch=disturbed))
    b = _run(tmp_path, "b", _cases(torch=dict(time_ms=0.300, gpu_time_ms=0.200, spread=0.02)))

    def torch(res):
        return next(c for c in res.cases if c.key["implementation"] == "torch")
    said = "call time 50% faster but GPU time 122% slower: host and GPU disagree"
    res = cmp.compare(a, b)
    faster = torch(res)
    assert faster.verdict == stats.FLAG and faster.rule == stats.SINGLE_UNSTEADY
    assert said in faster.detail and "within the threshold" not in faster.detail
    assert faster.flags == [f"time_ms: {said}, neither a regression nor an improvement"]
    assert not res.improvements and not res.regressions and res.count(stats.NOISE) == 0
    assert "1 flagged (call and GPU time moved apart)" in res.summary()
    doc = json.loads(cmp.render(res, "json"))
    assert doc["counts"]["flagged"] == 1 and doc["counts"]["noise"] == 0
    assert said in cmp.render(res, "markdown").split("### Flags (1)")[1]
    # the reverse: a call time 2x slower whose GPU time is 55 % faster is no regression
    slower = torch(cmp.compare(b, a))
    assert slower.verdict == stats.FLAG and cmp.exit_code(cmp.compare(b, a)) == 0
    assert "call time 100% slower but GPU time 55% faster: host and GPU disagree" in \
        slower.detail
    # a GPU time that moved the same way leaves the verdict; one within the threshold either
    # way (here 4 % faster) is noise, as before
    same = _run(tmp_path, "c", _cases(torch=dict(time_ms=0.300, gpu_time_ms=0.045)))
    assert torch(cmp.compare(a, same)).verdict == stats.IMPROVEMENT
    level = _run(tmp_path, "d", _cases(torch=dict(time_ms=0.300, gpu_time_ms=0.0865)))
    kept = torch(cmp.compare(a, level))
    assert kept.verdict == stats.NOISE and not kept.flags
    assert "GPU time is within the threshold of the baseline's" in kept.detail


def test_the_committed_same_commit_pair_has_no_improvement_either_way():
    """h200-quick-runs' two runs at c0f77f1: torch_compile LayerNorm's call time 1.66x apart
    on host time, GPU time level.  run-1 against run-2 was noise, run-2 against run-1 an
    improvement."""
    from pathlib import Path
    runs = Path(__file__).resolve().parents[1] / "results" / "h200-quick-runs"
    for a, b in (("run-1", "run-2"), ("run-2", "run-1")):
        res = cmp.compare(runs / a, runs / b)
        assert not res.regressions and not res.improvements, (a, b)


def test_a_gate_that_judges_none_of_its_cases_is_refused(tmp_path):
    """Every gated case unjudged -- failed on both sides, or missing from a candidate whose
    config never planned it -- gave "OK: 0 regressions" and exit 0: a gate that looked at
    nothing passed.  Refused now (exit 2), as a selection that gates nothing is; one gated case
    judged on time is enough to gate."""
    failed = dict(status="error", error="boom")
    base = _run(tmp_path, "base", _cases(spin_lock=failed))
    cand = _run(tmp_path, "cand", _cases(spin_lock=failed))
    with pytest.raises(cmp.CompareError, match=r"no gated case was judged: of 1 gated case\(s\), "
                       r"1 without a time on a side .*whatever the runs hold"):
        cmp.compare(base, cand, only="spin_lock")
    res = cmp.compare(base, cand, only="spin_lock,torch")       # torch judged on time
    assert cmp.exit_code(res) == 0 and res.count(stats.UNCHANGED) + res.count(stats.NOISE) == 1


def test_a_change_the_gpu_time_confirms_is_no_noise_under_a_widened_threshold(tmp_path):
    """One baseline run, the candidate unsteady: the threshold widened by its p20-p80 span
    (here to about 41 %) hid a 30 % slowdown as noise though the GPU time, steady, was 30 %
    slower too.  A GPU time that moved the same way beyond the threshold makes the call-time
    change the regression (or improvement) it is; one that stayed put leaves it noise."""
    a = _run(tmp_path, "a", _cases(torch=dict(time_ms=0.300, gpu_time_ms=0.250, spread=0.02)))

    def torch(base, cand):
        return next(c for c in cmp.compare(base, cand).cases
                    if c.key["implementation"] == "torch")
    slower = _run(tmp_path, "b", _cases(torch=dict(time_ms=0.390, gpu_time_ms=0.325,
                                                   spread=0.3)))
    case = torch(a, slower)
    assert case.rule == stats.SINGLE_UNSTEADY and case.threshold > 0.35
    assert case.verdict == stats.REGRESSION, case.detail
    assert "call time 30% slower and GPU time 30% slower, both beyond the 5.0% threshold" \
        in case.detail
    faster = torch(slower, a)
    assert faster.verdict == stats.IMPROVEMENT, faster.detail
    # the GPU time within the threshold: the unsteadiness, noise as before
    level = _run(tmp_path, "c", _cases(torch=dict(time_ms=0.390, gpu_time_ms=0.255,
                                                  spread=0.3)))
    assert torch(a, level).verdict == stats.NOISE
    # a baseline without a GPU time: its call time bounds its GPU time from above, so a GPU
    # time beyond it confirms a slowdown, never a speed-up
    no_gpu = _run(tmp_path, "d", _cases(torch=dict(time_ms=0.300, gpu_time_ms=None,
                                                   spread=0.02)))
    assert torch(no_gpu, slower).verdict == stats.REGRESSION
    no_gpu_slow = _run(tmp_path, "e", _cases(torch=dict(time_ms=0.390, gpu_time_ms=None,
                                                        spread=0.3)))
    assert torch(no_gpu_slow, a).verdict == stats.NOISE


def test_a_host_bound_case_is_not_gated_tighter_for_being_unsteady(tmp_path):
    """One baseline run, a host-bound case (host time 67 % of the call): judged at 3x the
    threshold.  Steady, a change of 10 % in call and GPU time was noise (inside 15 %); the
    same change in a candidate a little unsteady (p20-p80 about 12 % of its median) regressed:
    the GPU-time confirmation gated it at the bare 5 % instead of the case's own 15 %, so a
    disturbed run failed the gate where a steady one passed.  Now the confirmation gates at
    the threshold the case had before widening."""
    host = dict(time_ms=0.300, gpu_time_ms=0.100, spread=0.02)
    a = _run(tmp_path, "a", _cases(torch=host))

    def torch(cand):
        res = cmp.compare(a, cand)
        return res, next(c for c in res.cases if c.key["implementation"] == "torch")
    for name, spread in (("steady", 0.02), ("unsteady", 0.1)):
        cand = _run(tmp_path, name, _cases(torch=dict(time_ms=0.330, gpu_time_ms=0.110,
                                                      spread=spread)))
        res, case = torch(cand)
        assert case.verdict == stats.NOISE and cmp.exit_code(res) == 0, (name, case.detail)
    assert case.rule == stats.SINGLE_UNSTEADY
    # beyond the case's 15 %, the GPU time confirming it: the regression it is
    far = _run(tmp_path, "far", _cases(torch=dict(time_ms=0.360, gpu_time_ms=0.120, spread=0.15)))
    res, case = torch(far)
    assert case.verdict == stats.REGRESSION and "15.0% threshold" in case.detail, case.detail
