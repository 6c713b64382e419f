"""harness/compare.py and harness/stats.py on synthetic runs (CPU only)."""
from __future__ import annotations

import itertools
import json

import pytest

import synthetic
from normbench.harness import compare as cmp
from normbench.harness import stats
from normbench.harness.store import load_records


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
    base_over = {k: few for k in ("torch", "disjoint_block")}
    # p20-p80 9.6 % wide: steady; 0.2 ms: not host-bound
    base_over["atomic"] = dict(n_samples=3, spread=0.08, time_ms=0.200)
    a, b = _runs(tmp_path, base_over=base_over, cand_over={
        "torch": dict(n_samples=3, time_ms=0.120, spread=0.01),            # disjoint: regression
        "atomic": dict(n_samples=3, time_ms=0.200 * 1.08, spread=0.08),    # overlapping: noise
        "disjoint_block": few})
    result = cmp.compare(a, b)
    by_impl = {c.key["implementation"]: c for c in result.cases}
    assert by_impl["torch"].verdict == stats.REGRESSION and by_impl["torch"].method == stats.INTERVALS
    assert by_impl["atomic"].verdict == stats.NOISE and by_impl["atomic"].method == stats.INTERVALS
    assert cmp.exit_code(result) == 1


@pytest.mark.parametrize("shift,spread", [(1.03, 0.30), (1.08, 0.30), (1.30, 0.30)])
def test_difference_inside_noise_is_not_a_regression(tmp_path, shift, spread):
    # p20-p80 36 % of the median on both sides: unsteady, the threshold widened to 41 %
    wide = dict(spread=spread)
    base_over = {k: wide for k in ("torch", "disjoint_block", "atomic")}
    a, b = _runs(tmp_path, base_over=base_over,
                 cand_over={"torch": dict(time_ms=0.100 * shift, spread=spread),
                            "disjoint_block": wide, "atomic": wide})
    result = cmp.compare(a, b, threshold=0.05)
    assert cmp.exit_code(result) == 0
    torch_case = next(c for c in result.cases if c.key["implementation"] == "torch")
    # beyond the 5 % asked for, inside the widened threshold: noise, shown (not 'unchanged')
    assert torch_case.verdict == (stats.UNCHANGED if shift < 1.05 else stats.NOISE)
    assert torch_case.rule == stats.SINGLE_UNSTEADY
    assert torch_case.threshold == pytest.approx(0.05 + 0.36, abs=0.01)


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
    assert reg.verdict == stats.NOT_COMPARED     # deterministic by design: its time no speed
    assert "deterministic True -> False (distinct_results 3, repeats 5)" in reg.regressions


def test_nondeterministic_by_design_flip_is_a_flag(tmp_path):
    a, b = _runs(tmp_path, cand_over={"atomic": dict(deterministic=False, distinct_results=4)})
    result = cmp.compare(a, b)
    assert cmp.exit_code(result) == 0 and not result.regressions
    atomic = next(c for c in result.cases if c.key["implementation"] == "atomic")
    assert atomic.flags == ["deterministic True -> False (distinct_results 4, repeats 5): "
                            "not deterministic_by_design, a flag"]


def test_correctness_and_status_regressions_and_one_sided_cases(tmp_path):
    base = _cases()
    cand = _cases(torch=dict(correct=False),
                  atomic=dict(status="error", error="RuntimeError: illegal memory access"))
    cand.append(synthetic.record(implementation="spin_lock", groups=64, groups_effective=64))
    a = synthetic.write_run(tmp_path / "a", base + [synthetic.record(rows=64)], synthetic.meta())
    b = synthetic.write_run(tmp_path / "b", cand, synthetic.meta())
    result = cmp.compare(a, b)
    assert cmp.exit_code(result) == 1
    texts = {c.key["implementation"]: c.regressions for c in result.regressions
             if c.key["rows"] == "8192"}
    assert any(t.startswith("correct True -> False") for t in texts["torch"])
    assert texts["atomic"] == ["status ok -> error (error RuntimeError: illegal memory access)"]
    # the baseline's rows=64 case, ok there, is missing from the candidate: a regression
    (gone,) = result.missing
    assert gone.regressions == ["missing from the candidate run (ok in every baseline run)"]
    assert gone.key["rows"] == "64" and gone.is_regression and gone.cand_status == "missing"
    assert result.only_baseline == [] and len(result.only_candidate) == 1
    assert "1 missing from the candidate" in result.summary()
    md = cmp.render(result, "markdown")
    assert "missing from the candidate run" in md and "only in candidate" in md
    # --common: compared on the cases both hold, the one-sided ones listed
    common = cmp.compare(a, b, common=True)
    assert not common.missing and len(common.only_baseline) == 1
    assert "only in baseline" in cmp.render(common, "markdown")
    # the counts add up: every gated case counted once
    doc = json.loads(cmp.render(result, "json"))["counts"]
    assert sum(doc[k] for k in ("regressions", "improvements", "noise", "unchanged",
                                "not_compared")) == doc["gated"]
    table = cmp.render(result, "table")
    assert "illegal memory access" in table


def test_json_format_parses(tmp_path):
    a, b = _runs(tmp_path, cand_over={"disjoint_block": dict(time_ms=0.096)})
    doc = json.loads(cmp.render(cmp.compare(a, b), "json"))
    assert doc["exit_code"] == 1 and doc["counts"]["regressions"] == 1
    assert doc["counts"]["common"] == 3 and doc["method"] == cmp.METHOD
    assert doc["noise"]["baseline_runs"] == 1 and doc["metric"] == "call"
    case = next(c for c in doc["cases"] if c["implementation"] == "disjoint_block")
    assert case["verdict"] == "regression" and case["ratio"] == pytest.approx(1.2)
    # the key's integer fields are numbers, as in records.csv; the rest of the key text
    rows, d = case["case_id"].split("|")[2:4]
    assert (case["rows"], case["d"]) == (int(rows), int(d))
    assert all(isinstance(c["rows"], int) and isinstance(c["d"], int) for c in doc["cases"])
    assert isinstance(case["norm"], str) and isinstance(case["groups"], str)
    with pytest.raises(ValueError):
        cmp.render(cmp.compare(a, b), "yaml")


def test_parse_threshold():
    assert cmp.parse_threshold("5%") == pytest.approx(0.05)
    assert cmp.parse_threshold("0.05") == pytest.approx(0.05)
    assert cmp.parse_threshold("5") == pytest.approx(0.05)
    assert cmp.parse_threshold(0.1) == pytest.approx(0.1)
    assert cmp.parse_threshold("100%") == pytest.approx(1.0)
    assert cmp.parse_threshold(" 5 %") == pytest.approx(0.05)
    assert cmp.parse_threshold("1e-2") == pytest.approx(0.01)
    # ASCII digits only, as a config's numbers: float() also read '５%' and '1_0%' (10 %)
    for bad in ("-1%", "abc", "-0.1", "inf", "%", "５%", "1_0%", "nan", "0x1"):
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


@pytest.mark.parametrize("threshold", [0.05, 0.35, 1.0, 3.0])
def test_an_improvement_is_the_mirror_image_at_any_threshold(threshold):
    """Faster by the factor that is a regression slower: at a threshold of 100 % or more,
    1 - threshold was 0 or less, and a 100x speedup outside the noise was 'unchanged' while
    a 100x slowdown regressed (one run, and the several-run envelope alike)."""
    f = 1.01 * (1 + threshold)
    base, iv = (0.99, 1.01), dict(base_interval=(0.99, 1.01))
    slow = stats.judge(1.0, f, threshold, cand_interval=(0.99 * f, 1.01 * f), **iv)
    fast = stats.judge(1.0, 1 / f, threshold, cand_interval=(0.99 / f, 1.01 / f), **iv)
    assert (slow.verdict, fast.verdict) == (stats.REGRESSION, stats.IMPROVEMENT)
    inside = 0.99 * (1 + threshold)
    assert stats.judge(1.0, 1 / inside, threshold, **iv).verdict == stats.UNCHANGED
    bases = [stats.Side(1.0, *base), stats.Side(1.02, 1.01, 1.03)]
    cand = stats.Side(1 / f, 0.99 / f, 1.01 / f)
    assert stats.judge_case(bases, cand, threshold).verdict == stats.IMPROVEMENT
    if threshold == 0.05:          # a faster case's note names the factor beyond() judged
        j = stats.judge_case([stats.Side(1.0, 0.8, 1.3)], stats.Side(0.951, 0.9, 0.99), 0.05)
        assert "1.052x faster is beyond the 5.0% threshold" in j.detail, j.detail
    hundredfold = stats.Side(0.01, 0.0099, 0.0101)     # host-bound: 3x the threshold
    assert stats.judge_case([bases[0]], hundredfold, threshold,
                            host_bound=True).verdict == stats.IMPROVEMENT


# --- several baseline runs, the single-run rule, the gate's selection, --common, --metric ---

_CLOCK = itertools.count(1)


def _one(tmp_path, name, meta=None, **over):
    """A run of its own: its records started at a time of their own (the same time, samples
    and duration as another run's would be the same measurement, counted once)."""
    recs, n = _cases(**over), next(_CLOCK)
    for r in recs:
        r["started_at"] = f"2025-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
    return synthetic.write_run(tmp_path / name, recs, synthetic.meta(**(meta or {})))


@pytest.mark.parametrize("bad", [0.0, -0.05])
def test_a_time_of_zero_or_less_is_no_time(tmp_path, bad):
    """An ok record timed 0 or less (broken, hand-edited) is one without the gated time, as
    export takes it: the candidate's is a regression (it was an improvement of ratio 0); a
    baseline's is no time (the case is not compared) and does not make the case host-bound."""
    assert stats.judge(1.0, bad, 0.05).verdict == stats.NOT_COMPARED
    assert stats.judge_case([stats.Side(1.0)], stats.Side(bad), 0.05).verdict == stats.NOT_COMPARED
    def timed(name, impl, t=bad):            # a record as written, then its time broken
        recs = _cases()
        for r in recs:
            if r["implementation"] == impl:
                r["time_ms"] = t
        return synthetic.write_run(tmp_path / name, recs, synthetic.meta())
    a, b = _one(tmp_path, "a"), timed("b", "torch")
    res = cmp.compare(a, b)
    (reg,) = res.regressions
    assert reg.key["implementation"] == "torch" and reg.verdict == stats.NOT_COMPARED
    assert reg.ratio is None and reg.cand_ms == pytest.approx(bad)      # shown as recorded
    assert reg.regressions == [f"time_ms: none > 0 in the candidate's ok record ({bad:g}) "
                               "(the baseline has one)"]
    assert not res.improvements and cmp.exit_code(res) == 1
    res = cmp.compare(b, a)                  # the baseline's: not compared, not a regression
    torch = next(c for c in res.cases if c.key["implementation"] == "torch")
    assert torch.verdict == stats.NOT_COMPARED and cmp.exit_code(res) == 0
    # beside a baseline run timed 0.2 ms, a run's 0 would have made disjoint_block host-bound
    # (threshold x 3): +12 % passed as noise
    b0 = timed("b0", "disjoint_block")
    b1 = _one(tmp_path, "b1", disjoint_block=dict(time_ms=0.2))
    c = _one(tmp_path, "c", disjoint_block=dict(time_ms=0.224))
    (reg,) = cmp.compare([b0, b1], c).regressions
    assert reg.key["implementation"] == "disjoint_block" and reg.rule == stats.SINGLE
    # nor does a candidate's GPU time of 0 pass an unsteady call-time slowdown as host time
    from normbench.harness.compare_rules import gpu_change
    base = [{"time_ms": 0.2, "gpu_time_ms": 0.1}]
    assert gpu_change(base, {"gpu_time_ms": 0.1}) == stats.GpuChange(1.0)
    assert gpu_change(base, {"gpu_time_ms": bad}) is None


def test_several_baseline_runs_give_an_envelope(tmp_path):
    b1 = _one(tmp_path, "b1", disjoint_block=dict(time_ms=0.200))
    b2 = _one(tmp_path, "b2", disjoint_block=dict(time_ms=0.220))          # 10 % apart
    inside = _one(tmp_path, "inside", disjoint_block=dict(time_ms=0.225))  # < 0.220 x 1.05
    outside = _one(tmp_path, "outside", disjoint_block=dict(time_ms=0.240))
    res = cmp.compare([b1, b2], inside)
    case = next(c for c in res.cases if c.key["implementation"] == "disjoint_block")
    assert case.verdict == stats.UNCHANGED and case.rule == stats.ENVELOPE
    assert case.spread == pytest.approx(0.1, rel=1e-6) and case.base_runs == 2
    assert cmp.exit_code(res) == 0
    # one baseline run, the same candidate: 12.5 % slower, a regression
    assert cmp.exit_code(cmp.compare(b1, inside)) == 1
    res = cmp.compare([b1, b2], outside)
    (reg,) = res.regressions
    assert reg.rule == stats.ENVELOPE and "2 baseline runs span" in reg.detail
    doc = json.loads(cmp.render(res, "json"))
    assert doc["noise"]["baseline_runs"] == 2 and len(doc["baselines"]) == 2


def test_a_directory_of_runs_is_a_baseline(tmp_path):
    _one(tmp_path / "history", "r1")
    _one(tmp_path / "history", "r2", disjoint_block=dict(time_ms=0.088))
    cand = _one(tmp_path, "cand", disjoint_block=dict(time_ms=0.090))
    res = cmp.compare(tmp_path / "history", cand)
    assert len(res.baseline_dirs) == 2 and cmp.exit_code(res) == 0
    with pytest.raises(cmp.CompareError, match="holds none"):
        (tmp_path / "empty").mkdir()
        cmp.compare(tmp_path / "empty", cand)


def test_any_path_like_baseline_is_one_directory(tmp_path):
    """compare(p, cand) with an os.PathLike that is not a str or Path raised TypeError ("'PL'
    object is not iterable"): it was taken for a list of directories.  Any os.PathLike, and
    bytes, is one directory (a directory of runs too); the candidate likewise."""
    class PL:
        def __init__(self, p): self.p = str(p)
        def __fspath__(self): return self.p

    _one(tmp_path / "history", "r1")
    _one(tmp_path / "history", "r2", disjoint_block=dict(time_ms=0.088))
    cand = _one(tmp_path, "cand", disjoint_block=dict(time_ms=0.090))
    for base, c in ((PL(tmp_path / "history"), PL(cand)),
                    (bytes(tmp_path / "history"), bytes(cand)), ([PL(tmp_path / "history")], cand)):
        res = cmp.compare(base, c)
        assert len(res.baseline_dirs) == 2 and cmp.exit_code(res) == 0
    with pytest.raises(cmp.CompareError, match=r"not a run directory: .*nope$"):
        cmp.compare(PL(tmp_path / "nope"), cand)
    with pytest.raises(cmp.CompareError, match=r"the candidate must be one run directory; "
                                               r"\S*history holds 2$"):
        cmp.compare(cand, PL(tmp_path / "history"))


def test_an_unreadable_directory_among_the_runs_is_an_error(tmp_path):
    """A subdirectory of a directory of runs that cannot be read was skipped without a word:
    the gate compared against the runs left ("one baseline run").  It is an error (exit 2)
    naming it.  Run without CAP_DAC_OVERRIDE (as root: setpriv drops it), so that the
    permission bits hold."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("root without setpriv: permission bits do not hold")
        prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"]
    _one(tmp_path / "runs", "a")
    locked = _one(tmp_path / "runs", "c", disjoint_block=dict(time_ms=0.2))
    cand = _one(tmp_path, "cand")
    locked.chmod(0)
    try:
        r = subprocess.run([*prefix, sys.executable, str(root / "run_bench.py"), "compare",
                            str(tmp_path / "runs"), str(cand)], cwd=root, capture_output=True,
                           text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(root)})
    finally:
        locked.chmod(0o700)
    assert r.returncode == 2, r.stdout + r.stderr
    assert f"cannot compare: cannot read {locked} in the directory of runs {tmp_path / 'runs'}: " \
           "Permission denied" in r.stdout and "Traceback" not in r.stderr
    assert cmp.exit_code(cmp.compare(tmp_path / "runs", cand)) == 0    # readable: both runs


def _torch_case(a, b):
    return next(c for c in cmp.compare(a, b).cases if c.key["implementation"] == "torch")


def test_single_run_unsteady_is_wider_and_host_bound_is_wider(tmp_path):
    # spread 0.30 -> p20-p80 spans ~36 % of the median: unsteady, the threshold 5 + 36 %:
    # a 30 % change is inside it
    a = _one(tmp_path, "a", torch=dict(spread=0.3))
    b = _one(tmp_path, "b", torch=dict(spread=0.3, time_ms=0.130))
    case = _torch_case(a, b)
    assert case.verdict == stats.NOISE and case.rule == stats.SINGLE_UNSTEADY
    assert "+30.0% is beyond the 5.0% threshold but inside the widened" in case.detail
    # ... but a slowdown far beyond the unsteadiness is not exempt: 3x, the candidate alone
    # unsteady (the regression brought the jitter), is caught
    b3 = _one(tmp_path, "b3", torch=dict(spread=0.3, time_ms=0.300))
    case = _torch_case(_one(tmp_path, "a1"), b3)
    assert case.verdict == stats.REGRESSION and case.rule == stats.SINGLE_UNSTEADY
    assert "threshold widened to 41" in case.detail
    # ... unless the candidate's GPU time shows the GPU work unchanged: host time in a
    # disturbed run (the baseline recorded no GPU time: its call time bounds it)
    b3g = _one(tmp_path, "b3g", torch=dict(spread=0.3, time_ms=0.300, gpu_time_ms=0.090))
    case = _torch_case(_one(tmp_path, "a3"), b3g)
    assert case.verdict == stats.NOISE and "host time in an unsteady run" in case.detail
    b3s = _one(tmp_path, "b3s", torch=dict(spread=0.3, time_ms=0.300, gpu_time_ms=0.250))
    assert _torch_case(_one(tmp_path, "a4"), b3s).verdict == stats.REGRESSION
    # host-bound is decided by the baseline: a candidate whose added host time crosses half
    # the call does not loosen its own threshold
    g = dict(time_ms=0.100, gpu_time_ms=0.052)                     # host 48 %: not host-bound
    case = _torch_case(_one(tmp_path, "g3", torch=g),
                       _one(tmp_path, "g4", torch=dict(time_ms=0.110, gpu_time_ms=0.052)))
    assert case.rule == stats.SINGLE and case.verdict == stats.REGRESSION
    # medians under 0.1 ms are host-bound: 10 % is inside 3 x 5 %, 20 % is not
    a = _one(tmp_path, "a2", torch=dict(time_ms=0.090))
    b = _one(tmp_path, "b10", torch=dict(time_ms=0.099))
    case = next(c for c in cmp.compare(a, b).cases if c.key["implementation"] == "torch")
    assert case.verdict == stats.NOISE and case.rule == stats.SINGLE_HOST      # 10 % > 5 %
    assert case.threshold == pytest.approx(0.15)
    b = _one(tmp_path, "b20", torch=dict(time_ms=0.108))
    assert [c.key["implementation"] for c in cmp.compare(a, b).regressions] == ["torch"]


def test_only_and_exclude_choose_what_is_gated(tmp_path):
    a = _one(tmp_path, "a")
    b = _one(tmp_path, "b", torch=dict(time_ms=0.200), atomic=dict(correct=False))
    assert len(cmp.compare(a, b).regressions) == 2
    res = cmp.compare(a, b, only="kind:strategy", exclude="atomic")
    assert cmp.exit_code(res) == 0 and len(res.ungated) == 2
    torch_case = next(c for c in res.cases if c.key["implementation"] == "torch")
    assert not torch_case.gated and torch_case.verdict == stats.REGRESSION
    assert torch_case.flags == []           # its time verdict is listed in the time tables
    assert "not gated" in cmp.render(res, "markdown") and "(not gated)" in cmp.render(res)
    res = cmp.compare(a, b, only=["torch"])
    assert [c.key["implementation"] for c in res.regressions] == ["torch"]
    with pytest.raises(cmp.CompareError, match="--only: no case has implementation 'trch'"):
        cmp.compare(a, b, only="trch")
    # blanks around a kind are stripped, as around a name (it said "no case has kind ' strategy'")
    res = cmp.compare(a, b, only="kind: strategy", exclude=" kind :baseline ")
    assert res.selection == "--only kind:strategy --exclude kind:baseline"
    assert sorted(c.key["implementation"] for c in res.regressions) == ["atomic"]
    # a selection that gates nothing is refused, as a typo would be
    with pytest.raises(cmp.CompareError, match="leave no case to gate"):
        cmp.compare(a, b, exclude="torch,disjoint_block,atomic")
    with pytest.raises(cmp.CompareError, match="leave no case"):
        cmp.compare(a, b, only="torch", exclude="torch")
    for empty in ("", ","):
        with pytest.raises(cmp.CompareError, match="--only: no implementation named"):
            cmp.compare(a, b, only=empty)


def test_an_ungated_case_s_events_are_listed_once_in_every_format(tmp_path):
    """Outside --only: a correctness regression is one 'not gated' row, a time regression one
    row of the time tables, a missing case one row; never again as a flag (the markdown's
    Flags count was inflated by the copies)."""
    a = synthetic.write_run(tmp_path / "a", _cases() + [synthetic.record(
        implementation="atomic", rows=64)], synthetic.meta())
    b = _one(tmp_path, "b", atomic=dict(correct=False), disjoint_block=dict(time_ms=0.2))
    res = cmp.compare(a, b, only="torch")
    assert cmp.exit_code(res) == 0 and all(c.flags == [] for c in res.cases)
    md = cmp.render(res, "markdown")
    assert "### Flags (2)" in md and md.count("correct True -&gt; False") == 1
    assert md.count("missing from the candidate run") == 1
    assert md.count("| disjoint_block G=64") == 1                       # the time row only
    table = cmp.render(res, "table")
    assert table.count("correct True -> False") == 1 and table.count("missing from the candidate run") == 1
    assert table.count("disjoint_block G=64") == 1
    doc = json.loads(cmp.render(res, "json"))
    texts = [t for c in doc["cases"] for t in c["regressions"] + c["flags"]]
    assert len(texts) == 2 and not any(c["regression"] for c in doc["cases"])


def test_only_judges_a_selection_the_candidate_dropped_and_refuses_one_it_alone_holds(tmp_path):
    """--only a strategy the candidate lost entirely is its regression (missing), not 'nothing
    to gate'; --only a strategy only the candidate holds, ok, gates nothing: refused."""
    a = _one(tmp_path, "a")
    gone = synthetic.write_run(tmp_path / "gone", [r for r in _cases()
                                                   if r["implementation"] != "disjoint_block"],
                               synthetic.meta())
    res = cmp.compare(a, gone, only="disjoint_block")
    assert cmp.exit_code(res) == 1 and [c.cand_status for c in res.regressions] == ["missing"]
    assert "missing from the candidate run (ok in every baseline run)" in cmp.render(res)
    with pytest.raises(cmp.CompareError, match="--only disjoint_block leave no case to gate"):
        cmp.compare(a, gone, only="disjoint_block", common=True)     # listed, not judged
    new = synthetic.write_run(tmp_path / "new", _cases() + [synthetic.record(
        implementation="spin_lock", groups=64, groups_effective=64)], synthetic.meta())
    with pytest.raises(cmp.CompareError, match="--only spin_lock leave no case to gate"):
        cmp.compare(a, new, only="spin_lock")
    res = cmp.compare(a, new, only="spin_lock,torch")
    assert cmp.exit_code(res) == 0 and sum(c.gated for c in res.cases) == 1


def test_only_and_exclude_given_twice_add_up_on_the_command_line(tmp_path):
    """As run's --only: `--only torch --only atomic` gates both (the last alone was kept: a CI
    gate narrower than written, passing a torch regression)."""
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    a = _one(tmp_path, "a")
    b = _one(tmp_path, "b", torch=dict(time_ms=0.200))
    for sel, code in ((["--only", "torch", "--only", "atomic"], 1),
                      (["--only", "atomic", "--only", "torch"], 1),
                      (["--only", "atomic,disjoint_block", "--only", "atomic"], 0),
                      (["--exclude", "torch", "--exclude", "atomic"], 0),
                      (["--exclude", "atomic", "--exclude", "torch"], 0)):
        r = CliRunner().invoke(app, ["compare", str(a), str(b), "--format", "json", *sel])
        assert r.exit_code == code, (sel, r.output)
        gated = {c["implementation"] for c in json.loads(r.stdout)["cases"] if c["gated"]}
        assert gated == ({"torch", "atomic"} if sel[0] == "--only" and code else
                         {"atomic", "disjoint_block"} if sel[0] == "--only" else
                         {"disjoint_block"}), sel


def test_common_compares_two_configs(tmp_path):
    a = _one(tmp_path, "a")
    b = synthetic.write_run(tmp_path / "b", _cases()[:2] + [synthetic.record(rows=64)],
                            synthetic.meta(config_name="other"))
    with pytest.raises(cmp.CompareError, match="--common"):
        cmp.compare(a, b)
    res = cmp.compare(a, b, common=True)
    assert len(res.cases) == 2 and cmp.exit_code(res) == 0
    assert any("--common: only the 2 case(s)" in n for n in res.notes)
    assert "| flag | only in candidate |" not in cmp.render(res, "markdown")


def test_metric_gpu_on_interpreter_runs_blames_the_timer_as_export_does(tmp_path):
    """No harness records GPU time under the Triton interpreter: `re-run on a harness that
    records it` would send the user after one that does not exist.  The hint is export's:
    the run timed the interpreter (a GPU run without it still predates the harness)."""
    from normbench.harness import export as ex

    def run(name, timer):
        recs = [synthetic.record(implementation=n, timer=timer) for n in ("torch", "atomic")]
        return synthetic.write_run(tmp_path / name, recs, synthetic.meta(
            timer=timer, interpreted=timer == "cpu_wall"))
    a, b = run("a", "cpu_wall"), run("b", "cpu_wall")
    with pytest.raises(cmp.CompareError) as e:
        cmp.compare(a, b, metric="gpu")
    said = str(e.value)
    assert "re-run on a harness" not in said
    assert said.endswith("; GPU time is measured on a GPU only: this run timed the Triton "
                         "interpreter; compare with --metric call")
    with pytest.raises(ex.ExportError) as e:
        ex.export(a, "bencher", metric="gpu")
    assert str(e.value).endswith("(GPU time is measured on a GPU only: this run timed the "
                                 "Triton interpreter; export with --metric call)")
    with pytest.raises(cmp.CompareError, match="; the run recorded no gpu_time_ms: compare "
                       "with --metric call, or re-run on a harness that records it$"):
        cmp.compare(run("g", "cuda_event"), run("g2", "cuda_event"), metric="gpu")


def test_metric_gpu(tmp_path):
    a, a2 = _one(tmp_path, "a"), _one(tmp_path, "a2")
    with pytest.raises(cmp.CompareError, match="--metric gpu: .* has no gpu_time_ms"):
        cmp.compare(a, a2, metric="gpu")

    def gpu(t, spread=0.01):
        return dict(gpu_time_ms=t, gpu_time_p20_ms=t * (1 - spread), gpu_time_p80_ms=t * (1 + spread))
    g = {"torch": gpu(0.050), "disjoint_block": gpu(0.040), "atomic": gpu(0.085)}
    a = _one(tmp_path, "ga", **g)
    # call time 30 % slower (host), GPU time unchanged: gpu passes, call (host-bound) fails
    b = _one(tmp_path, "gb", torch=dict(time_ms=0.130, **gpu(0.050)),
             disjoint_block=g["disjoint_block"], atomic=g["atomic"])
    assert cmp.exit_code(cmp.compare(a, b, metric="gpu")) == 0
    assert cmp.exit_code(cmp.compare(a, b, metric="call")) == 1
    b = _one(tmp_path, "gc", torch=gpu(0.056), disjoint_block=g["disjoint_block"],
             atomic=g["atomic"])
    res = cmp.compare(a, b, metric="gpu")
    (reg,) = res.regressions
    assert reg.key["implementation"] == "torch" and reg.method == stats.INTERVALS
    assert "gpu_time_ms" in res.method and json.loads(cmp.render(res, "json"))["metric"] == "gpu"


@pytest.mark.parametrize("fmt", ["table", "markdown", "json"])
def test_every_exit_code_explains_itself_on_stdout(tmp_path, fmt):
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    a, a2 = _one(tmp_path, "a"), _one(tmp_path, "a2")
    b = _one(tmp_path, "b", meta=dict(device_name="NVIDIA A100"))
    c = _one(tmp_path, "c", torch=dict(time_ms=0.200))
    runner = CliRunner()
    for args, code in (([a, a2], 0), ([a, c], 1), ([a, b], 2), ([a], 2), ([a, a], 2),
                       ([a, c, "--threshold", "x"], 2), ([a, a2, "--metric", "gpu"], 2),
                       ([a, a2, "--bogus"], 2), ([a, a2, "--metric", "foo"], 2), ([], 2)):
        r = runner.invoke(app, ["compare", *map(str, args), "--format", fmt])
        assert r.exit_code == code, (args, r.output)
        out = r.stdout
        assert out.strip(), (args, fmt)
        if fmt == "json":
            assert json.loads(out)["exit_code"] == code
        if code == 2:
            assert "OK:" not in out and ("cannot compare" in out or "threshold" in out
                                                or "baseline directory" in out
                                                or "bad argument" in out)


def test_a_candidate_that_is_a_baseline_is_refused_and_versions_are_noted(tmp_path):
    a = _one(tmp_path, "a")
    with pytest.raises(cmp.CompareError, match="is also a baseline run"):
        cmp.compare([a, _one(tmp_path, "a2")], a)
    b = _one(tmp_path, "b", meta=dict(triton_version="3.6.0",
                                      package_versions={"quack-kernels": "0.2.0"}))
    a = _one(tmp_path, "a3", meta=dict(package_versions={"quack-kernels": "0.1.0"}))
    (note,) = [n for n in cmp.compare(a, b).notes if "other versions" in n]
    assert "triton 3.2.0 -> 3.6.0" in note and "quack-kernels 0.1.0 -> 0.2.0" in note
    # a package named at the top and in package_versions is one change, said once
    c = _one(tmp_path, "c", meta=dict(torch_version="2.14.0", triton_version="3.6.0",
                                      package_versions={"torch": "2.14.0", "triton": "3.6.0"}))
    d = _one(tmp_path, "d", meta=dict(package_versions={"torch": synthetic.meta()["torch_version"],
                                                       "triton": "3.2.0"}))
    (note,) = [n for n in cmp.compare(d, c).notes if "other versions" in n]
    assert note.count("triton 3.2.0 -> 3.6.0") == 1 and note.count("torch ") == 1, note
    # a CUDA build at the top, the plain version in package_versions: still one change
    e = _one(tmp_path, "e", meta=dict(torch_version="2.11.0+cu130",
                                      package_versions={"torch": "2.11.0"}))
    f = _one(tmp_path, "f", meta=dict(torch_version="2.12.0+cu130",
                                      package_versions={"torch": "2.12.0"}))
    (note,) = [n for n in cmp.compare(e, f).notes if "other versions" in n]
    assert note.count("torch ") == 1 and "torch 2.11.0+cu130 -> 2.12.0+cu130" in note, note


def _plugin(dist, version, module=None):
    return {"source": "entry point", "module": module or f"{dist}.impl", "entry_point": dist,
            "distribution": dist, "version": version}


def test_a_plugin_changed_between_the_runs_is_noted(tmp_path):
    """A plugin's version moving (or a plugin loaded by one run only) said nothing: meta.json
    did not record plugins.  It is noted as a package's is; a plugin on PYTHONPATH (no
    distribution) is named by its module; a run written before `plugins` was kept, which
    cannot say, is no change."""
    local = {"source": "NORMBENCH_PLUGINS", "module": "my_local_norm", "entry_point": None,
             "distribution": None, "version": None}
    a = _one(tmp_path, "a", meta=dict(plugins=[_plugin("nb-p", "0.1"), _plugin("nb-q", "1.0")]))
    b = _one(tmp_path, "b", meta=dict(plugins=[_plugin("nb-p", "0.2"), local]))
    (note,) = [n for n in cmp.compare(a, b).notes if "other versions" in n]
    assert ("plugin nb-p 0.1 -> 0.2" in note and "plugin nb-q 1.0 -> not loaded" in note
            and "plugin my_local_norm not loaded -> no version known" in note), note
    c = _one(tmp_path, "c", meta=dict(plugins=[_plugin("nb-p", "0.1"), _plugin("nb-q", "1.0")]))
    old = _one(tmp_path, "old")                      # no `plugins`: an older run
    for base, cand in ((a, c), (old, a), (a, old)):
        assert not [n for n in cmp.compare(base, cand).notes if "other versions" in n]


def test_a_candidate_whose_every_case_failed_is_regressions_not_refused(tmp_path):
    """A CUDA fault that fails every case: its records have no time at all, and each is a
    status regression (exit 1), not a run that 'cannot be compared' (exit 2)."""
    failed = dict(status="error", error="RuntimeError: CUDA error", time_ms=None,
                  time_p20_ms=None, time_p80_ms=None, time_samples_ms=None, gpu_time_ms=None)
    a = _one(tmp_path, "a")
    b = _one(tmp_path, "b", **{i: failed for i in ("torch", "disjoint_block", "atomic")})
    res = cmp.compare(a, b)
    assert cmp.exit_code(res) == 1 and len(res.regressions) == 3
    assert all(c.regressions[0].startswith("status ok -> error") for c in res.regressions)
    # a run with ok records and no GPU time is still refused for --metric gpu, with the hint
    with pytest.raises(cmp.CompareError, match="no gpu_time_ms .* compare with --metric call"):
        cmp.compare(_one(tmp_path, "c", **{i: dict(gpu_time_ms=None)
                                         for i in ("torch", "disjoint_block", "atomic")}),
                    a, metric="gpu")


def test_a_baseline_given_twice_counts_once(tmp_path):
    """The same run twice would be an envelope of no spread, switching the single-run
    widening off: it is counted once, noted."""
    b1 = _one(tmp_path, "b1", disjoint_block=dict(time_ms=0.200))
    cand = _one(tmp_path, "cand", disjoint_block=dict(time_ms=0.209))
    once, twice = cmp.compare(b1, cand), cmp.compare([b1, tmp_path / "b1" / "." , b1], cand)
    assert [c.verdict for c in once.cases] == [c.verdict for c in twice.cases]
    assert [c.base_runs for c in twice.cases] == [1, 1, 1]
    assert any("given more than once" in n for n in twice.notes)


def test_one_measurement_seen_twice_counts_once(tmp_path):
    """A copy of a baseline run, or the shards of a sharded run beside their merge, hold the
    same measurements as the run: counted as runs of their own they made an envelope of no
    spread, switching off the one-baseline rule (a 30 % slower unsteady case and a 10 % slower
    host-bound one regressed where one baseline run calls them noise / unchanged).  Each
    measurement counts once, the dropped runs noted; a run of its own still counts."""
    import shutil
    from normbench.harness.merge import merge
    b = _one(tmp_path, "b", torch=dict(spread=0.3))
    cand = _one(tmp_path, "cand", torch=dict(spread=0.3, time_ms=0.130),
                disjoint_block=dict(time_ms=0.088))

    def judged(res):
        return {c.key["implementation"]: (c.verdict, c.rule, c.base_runs) for c in res.cases}
    once = cmp.compare(b, cand)
    assert cmp.exit_code(once) == 0 and judged(once)["torch"][:2] == (stats.NOISE,
                                                                    stats.SINGLE_UNSTEADY)
    assert judged(once)["disjoint_block"][1] == stats.SINGLE_HOST
    shutil.copytree(b, tmp_path / "b-copy")
    twice = cmp.compare([b, tmp_path / "b-copy"], cand)
    assert judged(twice) == judged(once) and cmp.exit_code(twice) == 0
    assert twice.baseline_dirs == [str(b)] and "one baseline run" in twice.summary()
    assert f"baseline {tmp_path / 'b-copy'} holds only measurements {b} hold(s) too (a copy): " \
           "counted once, not as a run of its own" in twice.notes
    # run --shard 0/2, --shard 1/2 and merge m1 s0 s1, the three in one directory of runs
    recs = load_records(b).to_dict("records")
    plan = [r["case_id"] for r in recs]
    for i, part in enumerate((recs[:1], recs[1:])):
        shard = {"index": i, "count": 2, "spec": f"{i}/2", "plan_digest": "p", "plan_size": 3,
                 "plan_keys": plan, "keys": [r["case_id"] for r in part]}
        synthetic.write_run(tmp_path / "runs" / f"s{i}", part, synthetic.meta(shard=shard))
    merge(tmp_path / "runs" / "m1", [tmp_path / "runs" / "s0", tmp_path / "runs" / "s1"])
    beside = cmp.compare(tmp_path / "runs", cand)
    assert judged(beside) == judged(once) and cmp.exit_code(beside) == 0
    assert beside.baseline_dirs == [str(tmp_path / "runs" / "m1")]
    assert sum(f"(a shard merged into {tmp_path / 'runs' / 'm1'}: its merged_from names it)"
               in n for n in beside.notes) == 2
    # a run that shares one measurement (torch's) and measured the others itself: those
    # make an envelope, torch's is one run's; a case it shares is still in every run
    r = _one(tmp_path, "r", disjoint_block=dict(time_ms=0.084))
    shared = [x for x in recs if x["implementation"] == "torch"]
    own = [x for x in load_records(r).to_dict("records") if x["implementation"] != "torch"]
    synthetic.write_run(tmp_path / "r2", shared + own, synthetic.meta())
    res = cmp.compare([b, tmp_path / "r2"], cand)
    got = judged(res)
    assert got["torch"] == judged(once)["torch"]
    assert got["disjoint_block"][1:] == got["atomic"][1:] == (stats.ENVELOPE, 2)
    assert f"1 of baseline {tmp_path / 'r2'}'s 3 case(s) are measurements {b} hold(s) too: " \
           "each counted once" in res.notes
    gone = synthetic.write_run(tmp_path / "gone", [x for x in load_records(cand).to_dict(
        "records") if x["implementation"] != "torch"], synthetic.meta())
    (miss,) = cmp.compare([b, tmp_path / "r2"], gone).regressions
    assert miss.regressions == ["missing from the candidate run (ok in every baseline run)"]


def test_the_summary_counts_only_gated_cases_missing(tmp_path):
    """A case outside --only missing from the candidate is not one of the gated cases: the
    summary's counts stay those of the gated ones (as the CI gate reads them)."""
    a = _one(tmp_path, "a")
    b = synthetic.write_run(tmp_path / "b", [r for r in _cases()
                                            if r["implementation"] != "torch"], synthetic.meta())
    res = cmp.compare(a, b, only="kind:strategy")
    assert cmp.exit_code(res) == 0 and "missing" not in res.summary().split(" of ")[0]
    assert "2 unchanged of 2 gated cases" in res.summary()
    res = cmp.compare(a, b)                                   # gated: a regression
    assert res.summary().startswith("REGRESSION: 1 regression (1 missing from the candidate)")
    # a missing case the baseline had failed is a flag, not counted among the regressions
    a2 = _one(tmp_path, "a2", torch=dict(status="error", error="x", time_ms=None))
    res = cmp.compare(a2, b)
    assert cmp.exit_code(res) == 0 and res.summary().startswith("OK: 0 regressions, ")


def test_a_case_new_in_the_candidate_that_fails_by_itself_regresses(tmp_path):
    """A strategy added since the baseline has no time to judge, but its error, a wrong
    result or unrepeatable bits (deterministic by design) fail the gate; ok, it is listed."""
    a = _one(tmp_path, "a")
    new = dict(implementation="disjoint_strided", rows=8192, d=4096, groups=64,
               groups_effective=64, seed=9)
    for over, text in ((dict(status="error", error="RuntimeError: boom"),
                        "status error (RuntimeError: boom)"),
                       (dict(correct=False), "correct False (max_rel_err"),
                       (dict(deterministic=False, deterministic_by_design=True),
                        "deterministic False (distinct_results")):
        b = synthetic.write_run(tmp_path / f"b{len(text)}", _cases()
                                + [synthetic.record(**new, **over)], synthetic.meta())
        res = cmp.compare(a, b)
        (reg,) = res.regressions
        assert reg.key["implementation"] == "disjoint_strided" and text in reg.regressions[0]
        assert cmp.exit_code(res) == 1 and "disjoint_strided" in cmp.render(res, "markdown")
        assert json.loads(cmp.render(res, "json"))["counts"]["common"] == 3   # not the new one
        assert cmp.exit_code(cmp.compare(a, b, only="kind:baseline")) == 0   # not gated
        assert cmp.exit_code(cmp.compare(a, b, common=True)) == 0            # listed only
    b = synthetic.write_run(tmp_path / "ok", _cases() + [synthetic.record(**new)],
                            synthetic.meta())
    res = cmp.compare(a, b)
    assert cmp.exit_code(res) == 0 and len(res.only_candidate) == 1


def test_the_api_refuses_a_threshold_or_alpha_that_would_gate_nothing(tmp_path):
    a, b = _runs(tmp_path, cand_over={"torch": dict(time_ms=0.300)})
    for bad in (float("nan"), -0.1, float("inf")):
        with pytest.raises(cmp.CompareError, match="threshold must be a finite fraction"):
            cmp.compare(a, b, threshold=bad)
    with pytest.raises(cmp.CompareError, match="alpha must be in"):
        cmp.compare(a, b, alpha=2)
    assert cmp.exit_code(cmp.compare(a, b, threshold=0.05)) == 1


def _one_sided_runs(tmp_path):
    """A baseline with a rows=64 case the candidate lacks; a candidate with a new spin_lock."""
    a = synthetic.write_run(tmp_path / "a", _cases() + [synthetic.record(rows=64)],
                            synthetic.meta())
    b = synthetic.write_run(tmp_path / "b", _cases() + [synthetic.record(
        implementation="spin_lock", groups=64, groups_effective=64)], synthetic.meta())
    return a, b


def test_summary_counts_one_sided_cases_in_both_modes(tmp_path):
    a, b = _one_sided_runs(tmp_path)
    # without --common the baseline's extra case is judged (missing), not "only in baseline"
    text = cmp.compare(a, b).summary()
    assert "1 case(s) missing from the candidate, 1 only in candidate." in text
    assert "only in baseline" not in text
    text = cmp.compare(a, b, common=True).summary()
    assert "1 case(s) only in baseline, 1 only in candidate (listed, not judged)." in text


def test_common_lists_one_sided_cases(tmp_path):
    a, b = _one_sided_runs(tmp_path)
    res = cmp.compare(a, b, common=True)
    gone, new = "torch rmsnorm 64x1024 bf16/fp32", "spin_lock G=64 rmsnorm 1024x1024 bf16/fp32"
    assert res.only_baseline == [gone] and res.only_candidate == [new]
    table = cmp.render(res, "table")
    assert "One-sided cases" in table and gone in table and new in table
    md = cmp.render(res, "markdown")
    assert ("<details><summary>1 case(s) only in baseline, 1 only in candidate (--common: "
            "listed, not judged)</summary>") in md
    assert f"| {gone} | baseline |" in md and f"| {new} | candidate |" in md
    assert "| flag | only in" not in md            # listed, not flagged: nothing judged


def test_the_time_of_a_wrong_result_is_not_judged(tmp_path):
    """A wrong result's time is no speed: where the candidate's result is incorrect, or every
    ok baseline run's, its time is neither an improvement nor in the geomean (compare
    counted all-zero gradients 250x faster as an improvement, the geomean 0.110) — the
    correctness regression or flag says why; a baseline run whose result was wrong is left
    out of the time a right candidate is judged against."""
    a, b = _runs(tmp_path, cand_over={"atomic": dict(time_ms=0.0005, correct=False)})
    res = cmp.compare(a, b)
    atomic = next(c for c in res.cases if c.key["implementation"] == "atomic")
    assert atomic.verdict == stats.NOT_COMPARED and atomic.ratio is None
    assert atomic.is_regression and res.count(stats.IMPROVEMENT) == 0
    assert res.geomean_ratio() is None or res.geomean_ratio() > 0.5
    c, d = _runs(tmp_path / "both", base_over={"atomic": dict(correct=False)},
                 cand_over={"atomic": dict(time_ms=0.0005, correct=False)})
    res = cmp.compare(c, d)
    atomic = next(x for x in res.cases if x.key["implementation"] == "atomic")
    assert atomic.verdict == stats.NOT_COMPARED and not atomic.is_regression
    assert "correct False on both sides" in atomic.flags
    e, f = _runs(tmp_path / "right", base_over={"atomic": dict(correct=False)},
                 cand_over={"atomic": dict(time_ms=0.0005)})
    atomic = next(x for x in cmp.compare(e, f).cases if x.key["implementation"] == "atomic")
    assert atomic.verdict == stats.NOT_COMPARED


def test_the_time_of_an_unrepeatable_result_is_not_judged(tmp_path):
    """Bits that did not repeat, where the strategy is deterministic by design, broke its
    contract: as a wrong result's, its time is no speed (compare counted such a candidate 2x
    faster as an improvement in the table and the JSON, a regression in markdown, and its 0.5
    in the geomean) — the determinism regression or flag says why.  Not by design, its time
    is judged as any other."""
    fast = dict(time_ms=0.0005, deterministic=False, distinct_results=3)
    a, b = _runs(tmp_path, cand_over={"disjoint_block": fast})
    res = cmp.compare(a, b)
    blk = next(c for c in res.cases if c.key["implementation"] == "disjoint_block")
    assert blk.verdict == stats.NOT_COMPARED and blk.ratio is None and blk.is_regression
    assert res.count(stats.IMPROVEMENT) == 0 and not res.improvements
    assert res.geomean_ratio() is None or res.geomean_ratio() > 0.5
    doc = next(c for c in json.loads(cmp.render(res, "json"))["cases"]
               if c["implementation"] == "disjoint_block")
    assert doc["verdict"] != stats.IMPROVEMENT and doc["regression"] is True
    assert "improvement" not in cmp.render(res, "table").split("\n", 1)[1]   # past the summary
    c, d = _runs(tmp_path / "both", base_over={"disjoint_block": dict(deterministic=False)},
                 cand_over={"disjoint_block": fast})
    res = cmp.compare(c, d)
    blk = next(x for x in res.cases if x.key["implementation"] == "disjoint_block")
    assert blk.verdict == stats.NOT_COMPARED and not blk.is_regression and not res.improvements
    assert "deterministic False on both sides" in blk.flags
    e, f = _runs(tmp_path / "atomic", cand_over={"atomic": fast})    # not by design
    atomic = next(x for x in cmp.compare(e, f).cases if x.key["implementation"] == "atomic")
    assert atomic.verdict == stats.IMPROVEMENT


def test_a_faster_case_that_regressed_is_printed_as_a_regression(tmp_path):
    """A gated case faster beyond the threshold that regressed otherwise (here `deterministic`
    blanked though by design) is one regression in every format: the table and the JSON
    printed 'improvement' (the JSON beside "regression": true) where markdown counted it a
    regression."""
    a, b = _runs(tmp_path, cand_over={"disjoint_block": dict(time_ms=0.0005,
                                                              deterministic=None)})
    res = cmp.compare(a, b)
    blk = next(c for c in res.cases if c.key["implementation"] == "disjoint_block")
    assert blk.verdict == stats.IMPROVEMENT and blk.is_regression and not res.improvements
    doc = next(c for c in json.loads(cmp.render(res, "json"))["cases"]
               if c["implementation"] == "disjoint_block")
    assert doc["verdict"] == stats.REGRESSION and doc["regression"] is True
    assert "improvement" not in cmp.render(res, "table").split("\n", 1)[1]   # past the summary


def test_markdown_noise_count_matches_summary(tmp_path):
    # both inside the noise (p20-p80 36 % wide: threshold widened to 41 %), torch also
    # without `deterministic` though deterministic by design: a regression, so not "within
    # noise" in the summary nor the details block (an unrepeatable one would not be timed)
    wide = dict(spread=0.30)
    base_over = {k: wide for k in ("torch", "disjoint_block", "atomic")}
    a, b = _runs(tmp_path, base_over=base_over, cand_over={
        "torch": dict(time_ms=0.108, spread=0.30, deterministic=None,
                      deterministic_by_design=True),
        "atomic": dict(time_ms=0.090 * 1.08, spread=0.30), "disjoint_block": wide})
    res = cmp.compare(a, b)
    assert sum(c.verdict == stats.NOISE for c in res.cases) == 2 and res.count(stats.NOISE) == 1
    md = cmp.render(res, "markdown")
    assert "1 within noise" in md and "1 change(s) beyond the threshold but inside" in md


def test_a_case_not_ok_in_the_baseline_is_judged_in_the_candidate(tmp_path):
    """A candidate ok record where no baseline record is ok is judged as a new case is (a
    wrong result, unrepeatable bits where deterministic by design); a failure where no
    baseline run failed (skipped -> error) regresses; a status change is never 'unchanged'."""
    err, skip = dict(status="error", error="boom"), dict(status="skipped")
    a = _one(tmp_path, "a", disjoint_block=err, atomic=err)
    for over, text in ((dict(correct=False), "correct False (max_rel_err"),
                       (dict(deterministic=False), "deterministic False (distinct_results")):
        atomic = over if "deterministic" in over else {}   # not deterministic by design
        res = cmp.compare(a, _one(tmp_path, f"b{len(text)}", disjoint_block=over, atomic=atomic))
        (reg,) = res.regressions
        assert reg.key["implementation"] == "disjoint_block" and cmp.exit_code(res) == 1
        assert reg.regressions == [f"{reg.regressions[0].split(':')[0]}: no ok baseline "
                                   "record (baseline error), judged as a new case"]
        assert text in reg.regressions[0] and "status error -> ok" in reg.flags
    res = cmp.compare(a, _one(tmp_path, "fine"))           # error -> ok, fine: a flag
    assert cmp.exit_code(res) == 0 and len([c for c in res.cases if c.flags]) == 2
    # skipped -> error / timeout regresses; error -> timeout is a change, flagged
    s = _one(tmp_path, "s", torch=skip, disjoint_block=skip, atomic=err)
    t = _one(tmp_path, "t", torch=err, disjoint_block=dict(status="timeout"),
             atomic=dict(status="timeout"))
    res = cmp.compare(s, t)
    by = {c.key["implementation"]: c for c in res.cases}
    assert by["torch"].regressions == ["status skipped -> error, failed in no baseline run "
                                       "(error boom)"]
    assert by["disjoint_block"].is_regression and not by["atomic"].is_regression
    assert by["atomic"].flags == ["status error -> timeout"]
    assert "unchanged failures" not in cmp.render(res, "markdown")
    # the same status on both sides is the unchanged one, collapsed
    res = cmp.compare(_one(tmp_path, "u", disjoint_block=skip, atomic=err),
                      _one(tmp_path, "u2", disjoint_block=skip, atomic=err))
    assert cmp.exit_code(res) == 0
    assert "2 case(s) not ok on both sides, the same status" in cmp.render(res, "markdown")
    # ... and a comparison of nothing else judges nothing: refused, not "OK"
    with pytest.raises(cmp.CompareError, match=r"no gated case was judged: of 3 gated"):
        cmp.compare(s, _one(tmp_path, "s2", torch=skip, disjoint_block=skip, atomic=err))
    # mixed baselines: ok / skipped -> error regresses, ok / error -> error is a flag
    res = cmp.compare([_one(tmp_path, "o"), s], _one(tmp_path, "e", torch=err, atomic=err))
    by = {c.key["implementation"]: c for c in res.cases}
    assert by["torch"].regressions == ["status ok/skipped -> error, failed in no baseline run "
                                       "(error boom)"]
    assert not by["atomic"].regressions and by["atomic"].flags == [
        "status ok in 1 of 2 baseline runs -> error"]


def test_a_gated_property_none_in_an_ok_candidate_record_regresses(tmp_path):
    """correct / deterministic blanked (or the column gone) in an ok candidate record where
    the baseline has it regress, as a missing time does (a flag where deterministic is not by
    design); a baseline without it is a run before the column: the candidate's False is judged
    as a new case's, and none on both sides says nothing."""
    none = dict(correct=None, deterministic=None)
    a = _one(tmp_path, "a")
    res = cmp.compare(a, _one(tmp_path, "b", disjoint_block=none, atomic=none))
    by = {c.key["implementation"]: c for c in res.cases}
    assert by["disjoint_block"].regressions == [
        "correct: none in the candidate's ok record (the baseline has True)",
        "deterministic: none in the candidate's ok record (the baseline has True)"]
    assert by["atomic"].regressions == [
        "correct: none in the candidate's ok record (the baseline has True)"]
    assert by["atomic"].flags == ["deterministic: none in the candidate's ok record (the "
                                  "baseline has True): not deterministic_by_design, a flag"]
    assert cmp.exit_code(res) == 1
    # a column the candidate's records lack altogether: every ok record regresses
    gone = tmp_path / "gone"
    gone.mkdir()
    df = load_records(_one(tmp_path, "g"))
    df.drop(columns="correct").to_csv(gone / "records.csv", index=False)
    (gone / "meta.json").write_text(json.dumps(synthetic.meta()))
    res = cmp.compare(a, gone)
    assert len(res.regressions) == 3 and all(
        c.regressions == ["correct: none in the candidate's ok record (the baseline has True)"]
        for c in res.regressions)
    # the baseline lacks it: False is judged as a new case's, True and none say nothing
    old = _one(tmp_path, "old", **{i: none for i in ("torch", "disjoint_block", "atomic")})
    res = cmp.compare(old, _one(tmp_path, "c", disjoint_block=dict(correct=False),
                                atomic=dict(deterministic=False)))
    (reg,) = res.regressions
    assert reg.key["implementation"] == "disjoint_block" and reg.regressions == [
        reg.regressions[0].split(":")[0] + ": no correct in any ok baseline record, judged "
        "as a new case"] and reg.regressions[0].startswith("correct False (max_rel_err")
    both = cmp.compare(old, _one(tmp_path, "d", **{i: none for i in ("torch", "disjoint_block",
                                                                      "atomic")}))
    assert cmp.exit_code(both) == 0 and not any(c.flags or c.regressions for c in both.cases)
    # a column not gated stays so (last_call_compared: records before session 43 lack it)
    lcc = {i: dict(last_call_compared=True) for i in ("torch", "disjoint_block", "atomic")}
    assert cmp.exit_code(cmp.compare(_one(tmp_path, "new", **lcc), _one(tmp_path, "e"))) == 0


def test_baseline_runs_of_different_commits_are_refused_unless_mixed(tmp_path):
    """Baseline runs of two commits would make an envelope of the change between them: a
    candidate 29 % slower than the first run read 'unchanged inside the envelope'.  Refused
    (exit 2) unless --mixed-baselines; a config or version difference is said in the summary
    and the notes."""
    b1 = _one(tmp_path, "b1", disjoint_block=dict(time_ms=0.080))
    b2 = _one(tmp_path, "b2", meta=dict(git_commit="9aeab51" + "0" * 33),
              disjoint_block=dict(time_ms=0.101))
    cand = _one(tmp_path, "cand", disjoint_block=dict(time_ms=0.103))     # 29 % over b1
    with pytest.raises(cmp.CompareError, match=r"baseline runs were measured at different "
                       r"commits \(0123456 in .*b1, 9aeab51 in .*b2\).*--mixed-baselines"):
        cmp.compare([b1, b2], cand)
    text, code = cmp.run_cli([b1, b2], cand, "5%", "markdown")
    assert code == 2 and "different commits" in text
    res = cmp.compare([b1, b2], cand, mixed_baselines=True)
    assert cmp.exit_code(res) == 0 and res.baseline_mix == {
        "commits": f"0123456 in {b1}, 9aeab51 in {b2}"}
    assert "2 baseline runs of different commits: the envelope includes that change" in \
        res.summary()
    assert any(n.startswith("the baseline runs differ in commits (0123456 in ") for n in res.notes)
    assert json.loads(cmp.render(res, "json"))["noise"]["baselines_differ_in"] == res.baseline_mix
    # config text and versions: not refused, said
    b3 = _one(tmp_path, "b3", meta=dict(config_hash="def456", torch_version="2.7.0"))
    res = cmp.compare([b1, b3], cand)
    assert set(res.baseline_mix) == {"configs", "versions"}
    assert "of different configs and versions: the envelope includes" in res.summary()
    assert any("torch 2.6.0 -> 2.7.0 in" in n and "hash def456" in n for n in res.notes)
    # one commit: nothing said (and one run has no envelope to mix)
    same = cmp.compare([b1, _one(tmp_path, "b4")], cand)
    assert not same.baseline_mix and "differ" not in " ".join(same.notes)
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    r = CliRunner().invoke(app, ["compare", str(b1), str(b2), str(cand), "--mixed-baselines"])
    assert r.exit_code == 0 and "different commits" in " ".join(r.output.split())


def test_a_new_case_that_failed_is_listed_once_and_the_counts_add_up(tmp_path):
    """A case only in the candidate that failed by itself was listed twice (a regression, and
    again as a flag "only in candidate"), and the summary's "N only in candidate" held it
    too: 10 regressions and 240 only in candidate sharing 10.  Now it is one of the cases,
    listed once in every format; the summary and the JSON say how many of those only in the
    candidate are among the cases (only_candidate keeps its meaning: every such case)."""
    a = _one(tmp_path, "a")
    bad = synthetic.record(implementation="disjoint_strided", rows=8192, d=4096, groups=64,
                           groups_effective=64, seed=9, correct=False)
    ok = synthetic.record(implementation="spin_lock", rows=8192, d=4096, groups=64,
                          groups_effective=64, seed=10)
    b = synthetic.write_run(tmp_path / "b", _cases() + [bad, ok], synthetic.meta())
    bad_l, ok_l = "disjoint_strided G=64 rmsnorm 8192x4096", "spin_lock G=64 rmsnorm 8192x4096"
    res = cmp.compare(a, b)
    assert res.summary().endswith("2 only in candidate (1 failed by themselves, counted "
                                  "above; 1 listed, not judged).")
    assert "4 gated cases" in res.summary() and len(res.regressions) == 1
    md = cmp.render(res, "markdown")
    assert md.count(f"| {bad_l}") == 1 and md.count(f"| {ok_l}") == 1, md
    assert "### Regressions (1)" in md and "### Flags (1)" in md
    assert cmp.render(res, "table").count(bad_l) == 1
    doc = json.loads(cmp.render(res, "json"))
    assert doc["counts"]["only_candidate"] == 2 and doc["counts"]["only_candidate_judged"] == 1
    assert [c["baseline_runs"] for c in doc["cases"]].count(0) == 1
    assert len(doc["only_candidate"]) == 2 and "only_candidate_judged" in doc["method"]
    # not gated: reported once, as "not gated", not again as a flag
    res = cmp.compare(a, b, only="kind:baseline")
    md = cmp.render(res, "markdown")
    assert md.count(f"| {bad_l}") == 1 and "| not gated |" in md
    assert cmp.render(res, "table").count(bad_l) == 1
    # --common judges no new case: both listed, the summary as before
    res = cmp.compare(a, b, common=True)
    assert res.summary().endswith("2 only in candidate (listed, not judged).")


def test_a_run_that_holds_less_than_its_plan_is_noted(tmp_path):
    """compare said "N missing from the candidate" of a candidate that was one shard, or a
    run stopped early, without saying so (report and export do): now each such run gets
    their caveat, one note naming it, in every format."""
    a = _one(tmp_path, "a")
    plan = [r["case_id"] for r in _cases()]
    shard = synthetic.write_run(tmp_path / "shard", _cases()[:1], synthetic.meta(
        shard={"spec": "0/2", "plan_keys": plan, "keys": plan[:1]}))
    res = cmp.compare(a, shard)
    assert len(res.regressions) == 2
    (note,) = [n for n in res.notes if "incomplete" in n]
    assert note.startswith(f"candidate {shard}: incomplete run: shard 0/2 of a sharded run: 1 "
                           "of the plan's 3 cases are recorded here")
    assert note in json.loads(cmp.render(res, "json"))["notes"]
    assert "shard 0/2 of a sharded run" in cmp.render(res, "markdown")
    assert "shard 0/2 of a sharded run" in " ".join(cmp.render(res, "table").split())
    stopped = _one(tmp_path, "stopped", meta=dict(completed=False))
    res = cmp.compare(stopped, a)
    (note,) = [n for n in res.notes if "incomplete" in n]     # report's own words follow
    assert note.startswith(f"baseline {stopped}: incomplete run: the run stopped before it "
                           "finished (meta.json `completed: false`")
    assert not [n for n in cmp.compare(a, _one(tmp_path, "whole", meta=dict(
        completed=True))).notes if "incomplete" in n]
    # a meta field of the wrong type (the API takes any dict): one line, exit 2, no traceback
    recs, again = load_records(a), load_records(_one(tmp_path, "again"))
    with pytest.raises(cmp.CompareError, match="cannot read candidate's meta: .*completed"):
        cmp.compare_records(recs, again, synthetic.meta(), synthetic.meta(completed="no"))


@pytest.mark.parametrize("field,value", [("config_name", ["a"]), ("started_at", 1733430000),
                                         ("hostname", ["h"])])
def test_a_meta_field_compare_reads_of_another_type_is_one_line(tmp_path, field, value):
    """A baseline whose meta.json holds `"config_name": ["a"]` was a traceback (TypeError:
    unhashable, exit 1).  Refused by name as any mistyped meta field is: exit 2, one line."""
    a, b = _runs(tmp_path, base_meta={field: value})
    with pytest.raises(cmp.CompareError, match=f"meta.json: {field}: expected str, got "
                                               f"{type(value).__name__}"):
        cmp.compare(a, b)
    text, code = cmp.run_cli(a, b, "0.05", "markdown")
    assert code == 2 and f"{field}: expected str" in text


def test_the_table_fits_its_terminal_and_its_encoding_and_keeps_paths_whole(tmp_path):
    """compare's table was drawn 160 columns wide whatever the terminal (in 80 columns every
    row wrapped into a jumble), with rich's box characters whatever stdout could show (under
    PYTHONIOENCODING=latin-1 the borders printed as \\u250f… escapes), and its lines of text
    were cut at 160 columns, a long candidate path broken over two lines.  The CLI now gives
    its terminal's width and stdout's encoding; verdicts and numbers are never cut."""
    a, b = _runs(tmp_path / ("d" * 200), cand_over={"disjoint_block": dict(time_ms=0.096)})
    res = cmp.compare(a, b)
    for width in (160, 100, 80, 40):
        text = cmp.render(res, "table", width=width)
        assert f"candidate: {b} (" in text and f"baseline:  {a} (" in text, text
        assert "…" not in text and "+20.0%" in text, text
        assert "regression" in [w.strip(";") for w in text.split()], text    # not folded
        drawn = [ln for ln in text.splitlines() if ln[:1] in "┏┃│┡└"]
        assert all(len(ln) <= width for ln in drawn), text
    assert "┃" in cmp.render(res, "table", width=160)
    ascii_ = cmp.render(res, "table", encoding="latin-1")
    assert not any("\u2500" <= ch <= "\u257f" for ch in ascii_) and "+---" in ascii_, ascii_


def test_the_cli_draws_the_table_for_stdouts_encoding(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent
    a, b = _runs(tmp_path, cand_over={"disjoint_block": dict(time_ms=0.096)})
    r = subprocess.run([sys.executable, str(root / "run_bench.py"), "compare", str(a), str(b)],
                       cwd=root, capture_output=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(root), "PYTHONIOENCODING": "latin-1"})
    out = r.stdout.decode("latin-1")
    assert r.returncode == 1 and "REGRESSION: 1 regression" in out, out + r.stderr.decode()
    assert "+20.0%" in out and "\\u25" not in out and "+---" in out, out


def test_a_shard_that_holds_its_whole_plan_is_no_partial_run(tmp_path):
    """--shard 0/1 (a job array of one task) holds every case of the plan: compare noted it
    as "incomplete run: ... the other shards hold the rest", and judged the cases its plan
    never held as an interrupted run's, regressions, where a plain run's are flags."""
    a = _one(tmp_path, "a")
    plan = [r["case_id"] for r in _cases()]
    whole = _one(tmp_path, "whole", meta=dict(shard={"spec": "0/1", "plan_keys": plan,
                                                     "keys": plan}))
    res = cmp.compare(a, whole)
    assert not [n for n in res.notes if "incomplete" in n], res.notes


def test_a_case_the_candidates_own_config_never_planned_is_a_flag(tmp_path):
    """The same config name with other text (overrides: `run cpu d=[33]`), or an invocation
    narrowed by --only: a complete candidate that lacks a baseline case never planned it —
    a flag naming that, not "missing from the candidate run" as a regression (which it was,
    58 false regressions against the CPU default run).  A strategy the candidate's registry
    lost stays a regression whatever its config text, and so does a case missing from a
    complete candidate with the same config text and no --only."""
    from typer.testing import CliRunner
    from normbench.harness.cli import app
    runner = CliRunner()

    def run(out, *args):
        r = runner.invoke(app, ["run", "cpu", "rows=[5]", "norm=[rmsnorm]", "--only",
                                "torch,atomic", "--no-report", "--out", str(tmp_path / out),
                                *args])
        assert r.exit_code == 0, r.output
        return tmp_path / out

    def drop(run_dir, text):
        recs = (run_dir / "records.csv").read_text().splitlines()
        (run_dir / "records.csv").write_text("\n".join(r for r in recs if text not in r) + "\n")
        (run_dir / "records.parquet").unlink()

    def missing(cand):
        return [c for c in cmp.compare([base], cand).cases if c.cand_status == cmp.MISSING]
    base, cand = run("base", "d=[33, 80]"), run("cand", "d=[33]")
    gone = missing(cand)
    assert sorted(c.key["implementation"] for c in gone) == ["atomic", "torch"]
    assert {c.key["d"] for c in gone} == {"80"} and not any(c.regressions for c in gone)
    assert all(c.flags == ["missing from the candidate run: not in its plan (its config text "
                           "or --only differs from the baseline's; the candidate is complete)"]
               for c in gone)
    # other text, and atomic lost from the candidate's registry (not in its
    # plan_implementations, none of its records): still regressions — the plan is rebuilt
    # with every implementation the baseline planned
    lost = run("lost", "d=[33, 80]", "determinism.repeats=3")
    meta = json.loads((lost / "meta.json").read_text())
    meta["plan_implementations"] = [n for n in meta["plan_implementations"] if n != "atomic"]
    (lost / "meta.json").write_text(json.dumps(meta))
    drop(lost, '"atomic","strategy"')
    gone = missing(lost)
    assert len(gone) == 2 and all(c.regressions and not c.flags for c in gone)
    # a strategy lost from the candidate's registry and from compare's own (a plugin no longer
    # installed): the plan could not be rebuilt and every case of the candidate's narrower
    # config became a regression again; its use of GROUPS is read from the baseline's keys
    wide = run("wide", "rows=[5, 9]")
    lines = (wide / "records.csv").read_text().splitlines()
    lost_rows = [r.replace("|torch|", "|my_lost|").replace('"torch"', '"my_lost"')
                 for r in lines if '"torch","baseline"' in r]
    (wide / "records.csv").write_text("\n".join(lines + lost_rows) + "\n")
    (wide / "records.parquet").unlink()
    meta = json.loads((wide / "meta.json").read_text())
    meta["plan_implementations"] = [*meta["plan_implementations"], "my_lost"]
    meta["invocations"] = [{**i, "only": ["torch", "atomic", "my_lost"]}
                           for i in meta["invocations"]]
    (wide / "meta.json").write_text(json.dumps(meta))
    narrow = run("narrow", "rows=[5]", "d=[33]")
    meta = json.loads((narrow / "meta.json").read_text())      # as if run without --only
    meta["invocations"] = [{**i, "only": None} for i in meta["invocations"]]
    (narrow / "meta.json").write_text(json.dumps(meta))
    gone = {(c.key["implementation"], c.key["rows"], c.key["d"]): bool(c.regressions)
            for c in cmp.compare([wide], narrow).cases if c.cand_status == cmp.MISSING}
    assert gone.pop(("my_lost", "5", "33")) is True             # planned, lost: regresses
    assert len(gone) == 9 and not any(gone.values())            # never planned: flags
    # a gate of only such flags judged nothing: refused (exit 2), not "OK"
    r = runner.invoke(app, ["run", "cpu", "rows=[5]", "norm=[rmsnorm]", "d=[33, 80]", "--only",
                            "torch", "--no-report", "--out", str(tmp_path / "torch_only")])
    assert r.exit_code == 0, r.output
    with pytest.raises(cmp.CompareError, match=r"no gated case was judged: of 2 gated case\(s\), "
                       r"2 missing from the candidate, flags"):
        cmp.compare([base], tmp_path / "torch_only", only="atomic")
    # the same config text, a case dropped from the records of a complete run: a regression
    same = run("same", "d=[33, 80]")
    drop(same, ",80,")
    gone = missing(same)
    assert len(gone) == 2 and all(c.regressions and not c.flags for c in gone)


def test_compare_records_reads_boolean_cells_loaded_as_text(tmp_path):
    """compare_records on frames read as text (pd.read_csv(..., dtype=str), or
    keep_default_na=False): bool("False") is True, so a correctness regression (correct
    'True' -> 'False') and a deterministic-by-design case that stopped repeating passed the
    gate, their time left unjudged as no speed ("without a time on a side", exit 0), and a
    nondeterministic-by-design strategy's change ('False' by design) regressed.  Now a text
    cell reads as the boolean it spells, as summary and export read it."""
    import pandas as pd
    a, b = _runs(tmp_path, cand_over={"torch": dict(correct=False),
                                      "disjoint_block": dict(deterministic=False,
                                                             distinct_results=2),
                                      "atomic": dict(deterministic=False, distinct_results=2)})

    def text(run):
        return pd.read_csv(run / "records.csv", dtype=str, keep_default_na=False)
    res = cmp.compare_records(text(a), text(b), synthetic.meta(), synthetic.meta())
    by_impl = {c.key["implementation"]: c for c in res.cases}
    assert by_impl["torch"].regressions == [
        "correct True -> False (max_rel_err 0.5, tolerance 0.01, tolerance_dw -)"]
    assert by_impl["disjoint_block"].is_regression
    assert not by_impl["atomic"].is_regression and by_impl["atomic"].flags
    assert cmp.exit_code(res) == 1
    loaded = cmp.compare(a, b)             # as the store loads them: the same verdicts
    assert {c.case_id: (c.regressions, c.flags) for c in loaded.cases} == \
        {c.case_id: (c.regressions, c.flags) for c in res.cases}


def test_a_strategy_now_deterministic_by_design_that_does_not_repeat_regresses(tmp_path):
    """The baseline's strategy was not deterministic by design (its repeats differed, as
    allowed); the candidate's claims it and does not repeat: its time is no speed (not
    judged), and the gate read "deterministic False on both sides", a flag, exit 0 -- a case
    twice as slow with a broken claim passed.  The baseline's False was judged under no claim:
    the candidate's is judged as a new case's, a regression (as `run --strict` fails it)."""
    nondet = dict(deterministic=False, distinct_results=2, deterministic_by_design=False)
    a = _one(tmp_path, "a", disjoint_block=nondet)
    b = _one(tmp_path, "b", disjoint_block=dict(nondet, deterministic_by_design=True,
                                                time_ms=0.160))
    res = cmp.compare(a, b)
    (reg,) = res.regressions
    assert reg.key["implementation"] == "disjoint_block" and reg.verdict == stats.NOT_COMPARED
    assert reg.regressions == ["deterministic False (distinct_results 2, repeats 5) though "
                               "deterministic_by_design: no baseline record "
                               "deterministic_by_design, judged as a new case"], reg.regressions
    assert cmp.exit_code(res) == 1
    # both claiming it and both not repeating: an unchanged failure, a flag as before
    c = _one(tmp_path, "c", disjoint_block=dict(nondet, deterministic_by_design=True))
    res = cmp.compare(c, b)
    assert not res.regressions and "deterministic False on both sides" in \
        next(x for x in res.cases if x.key["implementation"] == "disjoint_block").flags


def test_a_key_field_that_is_no_ascii_integer_stays_text_in_json():
    """rows and d become JSON numbers where they are integers; a hand-made frame's '²' passed
    str.isdigit and then int() raised ValueError (compare_records with --format json)."""
    from normbench.harness.compare_render import _key_doc
    assert _key_doc({"rows": "4096", "d": "-1", "groups": "64"}) == {"rows": 4096, "d": -1,
                                                                     "groups": "64"}
    assert _key_doc({"rows": "²", "d": "６４"}) == {"rows": "²", "d": "６４"}


def test_a_merged_candidate_of_shards_narrowed_by_only_never_planned_what_only_left_out(tmp_path):
    """Shards run with `--only torch,disjoint_block` merge into a complete run whose top-level
    `invocations` are null (the shards' command lines differ; each one's is in merged_from):
    compare read that as "no --only" and judged the baseline's atomic cases, which the
    shards' plan never held, as regressions ("missing from the candidate run"), where the
    same run made without --shard gets flags.  A merge's --only is its shards'."""
    config = ("name: seed-worked-example\nnorm: [rmsnorm]\nrows: [8192]\nd: [4096]\n"
              "dtype: [bf16]\nweight_dtype: fp32\ngroups: [64]\n"
              "implementations: [torch, disjoint_block, atomic]\n")
    shared = dict(config_text=config, config_hash="c0ffee", completed=True)
    base = _one(tmp_path, "base", meta=dict(shared, invocations=[{"argv": [], "only": None}]))

    def shard(i, only):
        return {"dir": f"s{i}", "shard": f"{i}/2", "argv": ["run", "--shard", f"{i}/2"],
                "invocations": [{"argv": ["run", "--shard", f"{i}/2"], "only": only}]}

    def merged(name, only, missing_atomic=True):
        recs = [r for r in _cases() if not (missing_atomic and r["implementation"] == "atomic")]
        merge = {"shards": 2, "count": 2, "plan_size": len(recs), "partial": False,
                 "missing": 0, "missing_keys": [], "finished": True}
        return synthetic.write_run(tmp_path / name, recs, synthetic.meta(
            **shared, invocations=None, argv=None, merge=merge,
            merged_from=[shard(0, only), shard(1, only)]))

    gone = [c for c in cmp.compare(base, merged("narrowed", ["torch", "disjoint_block"])).cases
            if c.cand_status == cmp.MISSING]
    assert [c.key["implementation"] for c in gone] == ["atomic"]
    assert not gone[0].regressions and gone[0].flags[0].startswith(
        "missing from the candidate run: not in its plan"), gone[0].flags
    # shards that ran the whole plan: a case their merge lacks is a regression, as before
    (c,) = [c for c in cmp.compare(base, merged("whole", None)).cases
            if c.cand_status == cmp.MISSING]
    assert c.regressions and not c.flags
