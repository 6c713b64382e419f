"""harness/compare.py and harness/stats.py on synthetic runs (CPU only)."""
from __future__ import annotations

import json

import pytest

import synthetic
from normbench.harness import compare as cmp
from normbench.harness import stats


def _cases(**over):
    """Three cases of a small run; `over` maps implementation -> record overrides."""
    base = [dict(implementation="torch", time_ms=0.100),
            dict(implementation="disjoint_block", groups=64, groups_effective=64, time_ms=0.080,
                 writers_per_slot=1),
            dict(implementation="atomic", time_ms=0.090, writers_per_slot=8192)]
    out = []
    for kw in base:
        kw = {"rows": 8192, "d": 4096, "seed": len(out), **kw}
        kw.update(over.get(kw["implementation"], {}))
        out.append(synthetic.record(**kw))
    return out


def _runs(tmp_path, cand_over=None, base_over=None, cand_meta=None, base_meta=None):
    a = synthetic.write_run(tmp_path / "base", _cases(**(base_over or {})),
                            synthetic.meta(**(base_meta or {})))
    b = synthetic.write_run(tmp_path / "cand", _cases(**(cand_over or {})),
                            synthetic.meta(**(cand_meta or {})))
    return a, b


def test_identical_runs_exit_0(tmp_path):
    a, b = _runs(tmp_path)
    result = cmp.compare(a, b)
    assert cmp.exit_code(result) == 0
    assert len(result.cases) == 3 and not result.regressions and not result.improvements
    assert all(c.verdict == stats.UNCHANGED for c in result.cases)
    text, code = cmp.run_cli(a, b, "5%", "table")
    assert code == 0 and "OK: 0 regressions" in text


def test_20pct_slowdown_with_tight_samples_is_a_regression(tmp_path):
    a, b = _runs(tmp_path, cand_over={"disjoint_block": dict(time_ms=0.096, spread=0.01)})
    result = cmp.compare(a, b, threshold=0.05)
    assert cmp.exit_code(result) == 1
    (reg,) = result.regressions
    assert reg.key["implementation"] == "disjoint_block"
    assert reg.method == stats.MANN_WHITNEY and reg.p_value < stats.ALPHA
    assert reg.ratio == pytest.approx(1.2, rel=1e-6)
    md = cmp.render(result, "markdown")
    assert md.splitlines()[0].startswith(":x: **normbench compare** — REGRESSION: 1 regression")
    assert "+20.0%" in md and "Mann-Whitney" in md


def test_fewer_samples_fall_back_to_p20_p80(tmp_path):
    few = dict(n_samples=3)
    base_over = {k: few for k in ("torch", "disjoint_block", "atomic")}
    a, b = _runs(tmp_path, base_over=base_over, cand_over={
        "torch": dict(n_samples=3, time_ms=0.120, spread=0.01),            # disjoint: regression
        "atomic": dict(n_samples=3, time_ms=0.090 * 1.08, spread=0.30),    # overlapping: noise
        "disjoint_block": few})
    result = cmp.compare(a, b)
    by_impl = {c.key["implementation"]: c for c in result.cases}
    assert by_impl["torch"].verdict == stats.REGRESSION and by_impl["torch"].method == stats.INTERVALS
    assert by_impl["atomic"].verdict == stats.NOISE and by_impl["atomic"].method == stats.INTERVALS
    assert cmp.exit_code(result) == 1


@pytest.mark.parametrize("shift,spread", [(1.03, 0.30), (1.08, 0.30)])
def test_difference_inside_noise_is_not_a_regression(tmp_path, shift, spread):
    wide = dict(spread=spread)
    base_over = {k: wide for k in ("torch", "disjoint_block", "atomic")}
    a, b = _runs(tmp_path, base_over=base_over,
                 cand_over={"torch": dict(time_ms=0.100 * shift, spread=spread),
                            "disjoint_block": wide, "atomic": wide})
    result = cmp.compare(a, b, threshold=0.05)
    assert cmp.exit_code(result) == 0
    torch_case = next(c for c in result.cases if c.key["implementation"] == "torch")
    expected = stats.UNCHANGED if shift < 1.05 else stats.NOISE
    assert torch_case.verdict == expected
    if expected == stats.NOISE:
        assert torch_case.method == stats.MANN_WHITNEY and torch_case.p_value >= stats.ALPHA


def test_improvement_is_flagged_not_failed(tmp_path):
    a, b = _runs(tmp_path, cand_over={"atomic": dict(time_ms=0.060)})
    result = cmp.compare(a, b)
    assert cmp.exit_code(result) == 0
    (imp,) = result.improvements
    assert imp.key["implementation"] == "atomic"
    md = cmp.render(result, "markdown")
    assert md.index("### Regressions (0)") < md.index("### Improvements (1)") < md.index("### Flags")


@pytest.mark.parametrize("meta_change,reason", [
    (dict(device_name="NVIDIA A100-SXM4-80GB"), "different devices"),
    (dict(config_name="quick"), "different configs"),
    (dict(interpreted=True, timer="cpu_wall"), "timer mismatch"),
])
def test_incomparable_runs_exit_2(tmp_path, meta_change, reason):
    a, b = _runs(tmp_path, cand_meta=meta_change)
    with pytest.raises(cmp.CompareError, match=reason) as err:
        cmp.compare(a, b)
    assert "\n" not in str(err.value)
    text, code = cmp.run_cli(a, b, "0.05", "markdown")
    assert code == cmp.EXIT_INCOMPARABLE == 2 and reason in text


def test_no_common_case_exit_2(tmp_path):
    a = synthetic.write_run(tmp_path / "a", [synthetic.record(rows=1024)], synthetic.meta())
    b = synthetic.write_run(tmp_path / "b", [synthetic.record(rows=2048)], synthetic.meta())
    with pytest.raises(cmp.CompareError, match="no common case"):
        cmp.compare(a, b)


def test_deterministic_to_nondeterministic_is_a_regression(tmp_path):
    a, b = _runs(tmp_path, cand_over={"disjoint_block": dict(deterministic=False,
                                                              distinct_results=3)})
    result = cmp.compare(a, b)
    assert cmp.exit_code(result) == 1
    (reg,) = result.regressions
    assert reg.verdict == stats.UNCHANGED                  # same speed, still a regression
    assert "deterministic True -> False (3 distinct results of 5 repeats)" in reg.regressions


def test_correctness_and_status_regressions_and_one_sided_cases(tmp_path):
    base = _cases()
    cand = _cases(torch=dict(correct=False),
                  atomic=dict(status="error", error="RuntimeError: illegal memory access"))
    cand.append(synthetic.record(implementation="spin_lock", groups=64, groups_effective=64))
    a = synthetic.write_run(tmp_path / "a", base + [synthetic.record(rows=64)], synthetic.meta())
    b = synthetic.write_run(tmp_path / "b", cand, synthetic.meta())
    result = cmp.compare(a, b)
    assert cmp.exit_code(result) == 1
    texts = {c.key["implementation"]: c.regressions for c in result.regressions}
    assert any(t.startswith("correct True -> False") for t in texts["torch"])
    assert texts["atomic"] == ["status ok -> error: RuntimeError: illegal memory access"]
    assert len(result.only_baseline) == 1 and len(result.only_candidate) == 1
    md = cmp.render(result, "markdown")
    assert "only in baseline" in md and "only in candidate" in md
    table = cmp.render(result, "table")
    assert "illegal memory access" in table


def test_json_format_parses(tmp_path):
    a, b = _runs(tmp_path, cand_over={"disjoint_block": dict(time_ms=0.096)})
    doc = json.loads(cmp.render(cmp.compare(a, b), "json"))
    assert doc["exit_code"] == 1 and doc["counts"]["regressions"] == 1
    assert doc["counts"]["common"] == 3 and doc["method"] == cmp.METHOD
    case = next(c for c in doc["cases"] if c["implementation"] == "disjoint_block")
    assert case["verdict"] == "regression" and case["ratio"] == pytest.approx(1.2)
    with pytest.raises(ValueError):
        cmp.render(cmp.compare(a, b), "yaml")


def test_parse_threshold():
    assert cmp.parse_threshold("5%") == pytest.approx(0.05)
    assert cmp.parse_threshold("0.05") == pytest.approx(0.05)
    assert cmp.parse_threshold("5") == pytest.approx(0.05)
    assert cmp.parse_threshold(0.1) == pytest.approx(0.1)
    assert cmp.parse_threshold("100%") == pytest.approx(1.0)
    for bad in ("-1%", "abc", "-0.1", "inf", "%"):
        with pytest.raises(ValueError):
            cmp.parse_threshold(bad)


def test_stats_judge_pure():
    tight = synthetic.samples(1.0, 0.01, 10)
    slow = [x * 1.2 for x in tight]
    j = stats.judge(1.0, 1.2, 0.05, base_samples=tight, cand_samples=slow)
    assert j.verdict == stats.REGRESSION and j.method == stats.MANN_WHITNEY
    j = stats.judge(1.0, 0.8, 0.05, base_samples=tight, cand_samples=[x * 0.8 for x in tight])
    assert j.verdict == stats.IMPROVEMENT
    j = stats.judge(1.0, 1.2, 0.05)                        # no noise data at all
    assert j.verdict == stats.REGRESSION and j.method == stats.THRESHOLD_ONLY
    j = stats.judge(1.0, 1.2, 0.05, base_interval=(0.9, 1.25), cand_interval=(1.1, 1.3))
    assert j.verdict == stats.NOISE and j.method == stats.INTERVALS
    assert stats.judge(None, 1.0, 0.05).verdict == stats.NOT_COMPARED
    assert stats.parse_samples("[1, 2, null, \"x\"]") == [1.0, 2.0]
    assert stats.parse_samples("not json") == [] and stats.parse_samples(None) == []
    assert stats.geomean([1.0, 4.0]) == pytest.approx(2.0)
