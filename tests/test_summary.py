"""harness/summary.py's answer against hand-computed figures, the README table it generates,
and the terminal tables (CPU only, no kernels)."""
from __future__ import annotations

import itertools

import io
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

import synthetic
from normbench.harness import summary
from normbench.harness.report.answer import markdown_table
from normbench.harness.report.terminal import print_tables
from normbench.harness.schema import case_id
from normbench.harness.store import load_records

ROOT = Path(__file__).resolve().parent.parent


def _shape(**kw):
    """One shape: a deterministic strategy (2 GROUPS), a nondeterministic one, two peers."""
    common = dict(norm="layernorm", rows=4096, d=1024, **kw)
    return [
        synthetic.record(implementation="det_a", kind="strategy", deterministic_by_design=True,
                         groups=8, groups_effective=8, time_ms=0.050, **common),
        synthetic.record(implementation="det_a", kind="strategy", deterministic_by_design=True,
                         groups=16, groups_effective=16, time_ms=0.040, seed=3, **common),
        synthetic.record(implementation="nondet_b", kind="strategy", deterministic_by_design=False,
                         deterministic=False, distinct_results=3, time_ms=0.030, **common),
        synthetic.record(implementation="peer_c", kind="baseline", deterministic_by_design=True,
                         time_ms=0.060, **common),
        synthetic.record(implementation="peer_d", kind="baseline", deterministic_by_design=True,
                         time_ms=0.100, spread=0.5, **common),
        # faster, but incorrect: never competes
        synthetic.record(implementation="peer_e", kind="baseline", time_ms=0.001, correct=False,
                         **common),
    ]


def test_answer_by_hand():
    a = summary.answer(pd.DataFrame(_shape()))
    assert len(a) == 1
    r = a.iloc[0]
    assert (r.det_impl, r.det_groups, r.nondet_impl, r.peer_impl) == ("det_a", "16", "nondet_b", "peer_c")
    assert r.det_us == pytest.approx(40.0) and r.nondet_us == pytest.approx(30.0)
    assert r.peer_us == pytest.approx(60.0)
    assert r.det_over_nondet == pytest.approx(40 / 30)
    assert r.peer_over_det == pytest.approx(60 / 40)
    # synthetic samples span ±1 %: p20/p80 from them, by hand
    xs = sorted(synthetic.samples(0.040, 0.01, 10, 3))
    p20 = xs[1] + (xs[2] - xs[1]) * 0.8
    assert r.det_p20_us == pytest.approx(p20 * 1000)
    assert r.fastest == "nondet"
    assert (r.passing, r.recorded) == (4, 5)
    assert "decided_on" not in a.columns            # no GPU time: nothing invented


def test_a_determinism_broken_by_design_is_listed_among_the_failures_and_marked():
    """A strategy deterministic by design whose repeats gave other bits competes as
    nondeterministic, but `run --strict` fails the run over it while the report's failures
    section left it out and the terminal showed its time plain: listed there now, with why,
    and marked in the table."""
    from normbench.harness.report import sections
    from normbench.harness.report.document import Report
    recs = _shape()
    recs[0] = {**recs[0], "deterministic": False, "distinct_results": 2}   # det_a at 8
    bad = pd.Series(recs[0])
    assert sections._failure_kind(bad) == "not deterministic, though by design"
    # in R repeats and the last timed call, as the README and export say it: "3 distinct
    # results over its repeats" read impossible at 2 repeats
    assert sections._failure_text(bad).startswith(
        f"2 distinct results in {int(bad['repeats'])} repeats")
    both = pd.Series({**recs[0], "distinct_results": 3, "repeats": 2, "last_call_compared": True})
    assert sections._failure_text(both).startswith(
        "3 distinct results in 2 repeats and the last timed call")
    df = pd.DataFrame([recs[0], *recs[2:]])          # det_a's only record
    out = io.StringIO()
    print_tables(df, {}, Console(file=out, width=250, color_system=None))
    assert "nondet ✗" in out.getvalue() and "yet its repeats differed" in out.getvalue()
    rep = Report("r")
    sections.failures_section(rep, df)
    text = rep.markdown()
    assert "(2)" in text and "not deterministic, though by design" in text


def test_answer_both_clocks():
    recs = _shape()
    gpu = {"det_a": 0.035, "nondet_b": 0.010, "peer_c": 0.050, "peer_d": 0.09, "peer_e": 0.001}
    for r in recs:
        r["gpu_time_ms"] = gpu[r["implementation"]]
        r["host_overhead_ms"] = r["time_ms"] - r["gpu_time_ms"] if r["time_ms"] else None
    a = summary.answer(pd.DataFrame(recs)).iloc[0]
    assert a.det_gpu_us == pytest.approx(35.0) and a.gpu_fastest == "nondet"
    # nondet wins on both clocks (the ranking is the GPU's), its host overhead (20 µs) noted
    assert a.decided_on.startswith("GPU (the same winner on both clocks; its host overhead, "
                                   "20.0 µs")
    recs[2]["gpu_time_ms"] = 0.045                 # now the det strategy is fastest on the GPU
    a = summary.answer(pd.DataFrame(recs)).iloc[0]
    assert a.decided_on == ("host: best nondeterministic is fastest per call, "
                            "best deterministic on the GPU")
    # a flip within 1.5 % on both clocks is a tie, not the host deciding
    tie = [dict(r) for r in recs]
    tie[1]["gpu_time_ms"] = 0.0349                # det 40 µs a call, 34.9 on the GPU
    tie[2]["time_ms"], tie[2]["gpu_time_ms"] = 0.0399, 0.0352   # nondet 39.9 / 35.2
    a = summary.answer(pd.DataFrame(tie)).iloc[0]
    assert a.fastest == "nondet" and a.gpu_fastest == "det" and a.decided_on.startswith("tie:")
    # a role with a call time but no GPU time: unknown, not a verdict without it
    recs[2]["gpu_time_ms"] = None
    assert summary.answer(pd.DataFrame(recs)).iloc[0].decided_on == ""
    recs[2]["gpu_time_ms"] = 0.0                  # a broken GPU time: unknown, no division
    assert summary.answer(pd.DataFrame(recs)).iloc[0].decided_on == ""


def test_the_gpu_winner_is_each_roles_least_gpu_time_not_its_call_time_best():
    """peer_d is slower per call than peer_c (the peer shown) but the fastest of all on the
    GPU: the ranking is the host's, though every record shown is slower on the GPU than
    ours.  Comparing the GPU times of each role's call-time best said "GPU"."""
    recs = _shape()
    gpu = {"det_a": 0.035, "nondet_b": 0.030, "peer_c": 0.050, "peer_d": 0.020, "peer_e": 0.001}
    for r in recs:
        r["gpu_time_ms"] = gpu[r["implementation"]]
    a = summary.answer(pd.DataFrame(recs)).iloc[0]
    assert (a.fastest, a.peer_impl, a.peer_gpu_us) == ("nondet", "peer_c", pytest.approx(50.0))
    assert (a.gpu_fastest, a.peer_gpu_best_impl) == ("peer", "peer_d")
    assert a.peer_gpu_best_us == pytest.approx(20.0)
    assert a.decided_on == ("host: best nondeterministic is fastest per call, best peer "
                            "(peer_d) on the GPU")
    # a passing record of a role without a GPU time might be its GPU best: unknown
    recs[4]["gpu_time_ms"] = None
    assert summary.answer(pd.DataFrame(recs)).iloc[0].decided_on == ""


def _readme_tables() -> list[list[str]]:
    """The tables of README's results section, in order, each as its lines."""
    text = (ROOT / "README.md").read_text()
    lines = text[text.index("## Results on the H200"):].splitlines()
    tables, k = [], 0
    while k < len(lines):
        if lines[k].startswith("| "):
            table = list(itertools.takewhile(lambda x: x.startswith("|"), lines[k:]))
            tables.append(table)
            k += len(table)
        else:
            k += 1
    return tables


@pytest.mark.parametrize("k,run", [(0, "h200-general-a156a9d"),
                                   (1, "h200-general-5120-1277d54"),
                                   (2, "h200-targets-narrow-7168-654e8d3"),
                                   (3, "h200-general-fp-2ec3192"),
                                   (4, "h200-targets-narrow"),
                                   (5, "h200-targets-widest"),
                                   (6, "h200-targets-widest-12288"),
                                   (7, "h200-targets-narrow-ln"),
                                   (8, "h200-targets-narrow-rms"),
                                   (9, "h200-targets-widest-12288-ln"),
                                   (10, "h200-targets-narrow-rms-rest"),
                                   (11, "h200-targets-narrow-ln-3072"),
                                   (12, "h200-targets-narrow-ln-rest"),
                                   (13, "h200-targets-narrow-ln-3072-peers"),
                                   (14, "h200-targets-narrow-rms-a61b342"),
                                   (15, "h200-targets-narrow-rms-8192"),
                                   (16, "h200-targets-widest-rms-4096"),
                                   (17, "h200-targets-widest-12288-63cd8b2"),
                                   (18, "h200-targets-widest-16384-ln-608c60e"),
                                   (19, "h200-targets-widest-16384-rms-608c60e"),
                                   (20, "h200-targets-widest-16384-ln-0cfdd30"),
                                   (21, "h200-targets-widest-16384-fp32-81b4803"),
                                   (22, "h200-targets-narrow-fp32-8192-024c97d"),
                                   (23, "h200-targets-narrow-fp32-7168-2bf2f0f"),
                                   (24, "h200-targets-widest-12288-rms-8f97145"),
                                   (25, "h200-targets-widest-16384-ln-c0f77f1"),
                                   (26, "h200-targets-widest-16384-ln-bf16-cf581b8"),
                                   (27, "h200-targets-widest-16384-rms-fp32w-f7a40c4"),
                                   (28, "h200-targets-widest-16bit-layernorm-22ed27a"),
                                   (29, "h200-targets-widest-16bit-rmsnorm-22ed27a"),
                                   (30, "h200-targets-widest-16384-ln16-e4bba9f"),
                                   (31, "h200-targets-widest-16384-ln16-2858cdd"),
                                   (32, "h200-targets-narrow-rms-7168-2858cdd"),
                                   (33, "h200-targets-narrow-ln-7168-2858cdd"),
                                   (34, "h200-targets-bf16"),
                                   (35, "h200-targets-fp-wide"),
                                   (36, "h200-peers"),
                                   (37, "h200-targets-wide"),
                                   (39, "h200-targets-fp")])
def test_markdown_table_reproduces_the_readme(k, run):
    """README's results tables are `report --markdown-table` of their runs, line for line
    (both weight dtypes, in run order)."""
    ours = markdown_table(load_records(ROOT / "results" / run)).splitlines()
    assert ours == _readme_tables()[k]


# The README's prose counts of ours against the best peer, beside the tables: (the sentence
# with the counts as fields, the runs it reads — where a shape is in several, the last one's
# record stands — and the dtype mix it counts, None for every mix).
LEADS = "faster at {faster}, level (within 1.5 %) at {level} and slower at {slower} of"
README_COUNTS = [
    ("**Against the peers**: ours is " + LEADS + " {n} lines, all four with fp32",
     ["h200-targets-narrow"], None),
    ("**Against the peers**: ours is " + LEADS + " {n} lines;", ["h200-targets-widest"], None),
    ("Ours is " + LEADS + " {n} lines: **with fp32 activations",
     ["h200-targets-narrow-rms-rest"], None),
    ("**Fastest call**: with a bf16 weight ours is " + LEADS + " {n} norm × shape pairs",
     ["h200-targets-bf16"], ("bf16", "bf16")),
    ("with an fp32 weight faster at {faster}, level at {level} and slower at {slower} of {n} "
     "— slower at RMS 65536 × 1024", ["h200-targets-bf16"], ("bf16", "fp32")),
    ("**Fastest, per weight dtype:** with a bf16 weight ours is " + LEADS + " {n} shapes",
     ["h200-peers"], ("bf16", "bf16")),
    ("with an fp32 weight faster at {faster}, level at {level} and slower at {slower} of {n} "
     "— quack is faster", ["h200-peers"], ("bf16", "fp32")),
    ("normbench strategy is " + LEADS + " the {n} norm × shape pairs of the runs (each pair by "
     "its latest run)", ["h200-peers", "h200-targets-wide", "h200-targets-wide-ln"],
     ("bf16", "bf16")),
    ("ours is faster at {faster}, level at {level} and slower at {slower} of the {n} shapes of "
     "`h200-peers`", ["h200-peers"], ("bf16", "fp32")),
    ("faster at {faster}, level at {level} and slower at {slower} of the {n} of "
     "`h200-targets-wide`", ["h200-targets-wide"], ("bf16", "fp32")),
    ("with an fp16 weight ours is faster at {faster}, level at {level} and slower at {slower} of "
     "{n} shapes", ["h200-targets-fp"], ("fp16", "fp16")),
    ("with an fp32 weight faster at {faster}, level at {level} and slower at {slower} of {n} — "
     "at LayerNorm rows read twice", ["h200-targets-fp"], ("fp16", "fp32")),
    ("**By call time** ahead at {faster} of {n}.", ["h200-general-a156a9d"], None),
    ("**By call time** ahead at {faster} of {n}.", ["h200-general-fp-2ec3192"], None),
]


def _leads_over(runs: list[str], mix) -> dict:
    """Ours against the best peer (summary.lead) at each shape of the runs, the last run's
    record standing where several have the shape: the counts of faster, level and slower."""
    verdict = {}
    for run in runs:
        a = summary.answer(load_records(ROOT / "results" / run))
        for _, r in a.iterrows():
            if mix is None or (r["dtype"], r["weight_dtype"]) == mix:
                verdict[tuple(r[k] for k in summary.SHAPE)] = summary.lead(r["peer_us"],
                                                                           r["det_us"])
    n = {k: list(verdict.values()).count(k) for k in ("faster", "level", "slower")}
    return {**n, "n": sum(n.values())}


@pytest.mark.parametrize("claim,runs,mix", README_COUNTS, ids=[
    "+".join(runs) + ("" if mix is None else "-" + "/".join(mix)) for _, runs, mix in README_COUNTS])
def test_readme_counts_of_leads_are_the_runs(claim, runs, mix):
    """A README sentence counting where ours is the faster call says what summary.lead says
    of its runs: it claimed "the fastest call at all 14 shapes" of h200-peers where the report
    counts one tie (RMS 65536 × 1024, 112.3 against quack's 113.9 µs) and "at 48 of 50 lines"
    of h200-targets-narrow where it counts 46, 3 level and 1 slower."""
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert claim.format(**_leads_over(runs, mix)) in readme


def test_terminal_tables_mark_winners_and_ratios():
    buf = io.StringIO()
    print_tables(pd.DataFrame(_shape()), {}, Console(file=buf, width=250, color_system=None))
    text = buf.getvalue()
    assert "★ 30.0" in text and "◆ 40.0 G16" in text
    assert "1.33" in text and "1.50" in text and "GPU time not measured" in text
    assert "✗ incorrect" in text and "✗ ok" not in text  # peer_e: ran, wrong against fp64


def test_terminal_legend_of_the_contention_mark_only_where_a_cell_carries_it():
    """‡ needs host-bound as well as measured next to other cases: records measured side by
    side that are not host-bound (2 ms calls without a GPU time) carry no ‡, nor their
    legend; one host-bound record (50 µs) carries both."""
    def table(time_ms):
        recs = _shape()
        for r in recs:
            r.update(concurrent_cases=3, hostname="node7")
            if r["status"] == "ok":
                r["time_ms"] = time_ms if r["implementation"] == "det_a" else 2.0 + r["time_ms"]
        buf = io.StringIO()
        print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=250, color_system=None))
        return buf.getvalue()
    slow, fast = table(3.0), table(0.05)
    assert summary.CONTENDED_MARK not in slow
    assert f"{summary.CONTENDED_MARK} host-bound" in fast and "G8 ‡" in fast


def test_a_terminal_table_wider_than_the_console_is_split_never_cut():
    """With many implementations rich fitted the table to the console by cutting cells with
    "…": a median of 1 500 538 µs read "15005…" (100 times too small) and two columns were
    both headed "h5_d…".  At 100 columns every number and every header is now printed whole
    (the implementations split over several tables, each with the shapes' column), the ratios
    and the legend once, after the last."""
    names = ["torch", "atomic", "grouped_atomic", "spin_lock", "disjoint_block",
             "disjoint_fused", "disjoint_strided", "disjoint_smem", "h5_dup_one", "h5_dup_two",
             "h5_slow", "liger", "quack"]
    recs = [synthetic.record(implementation=n, rows=65536, d=4096, spread=0.0,
                             time_ms=1500.538 if n == "h5_slow" else 0.0123 * (k + 1))
            for k, n in enumerate(names)]
    buf = io.StringIO()
    print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=100, color_system=None))
    text = buf.getvalue()
    assert "…" not in text and max(map(len, text.splitlines())) <= 100
    headers = [c.strip() for line in text.splitlines() if line.startswith("┃")
               for c in line.strip("┃").split("┃")]
    assert sorted(h for h in headers if h in names) == sorted(names)     # each once, whole
    assert "1500538" in text and "★ 12.3" in text and "◆ 61.5" in text
    tables = text.count("┏")
    assert tables > 1 and text.count("65536 × 4096") == tables    # the shape in each
    assert text.count("det÷nondet") == 2 and text.count("★ fastest") == 1   # header, legend


def test_markdown_table_marks_an_incorrect_peer():
    """A peer measured at a shape but wrong against fp64 there shows as ✗, not as a blank
    (which would read as "not run") nor as its time (it does not compete)."""
    table = markdown_table(pd.DataFrame(_shape()))
    header, _, row = table.splitlines()
    cells = dict(zip((c.strip() for c in header.strip("|").split("|")),
                     (c.strip() for c in row.strip("|").split("|"))))
    assert cells["peer_e"] == "✗" and cells["peer_c"] == "60.0" and cells["vs best peer"] == "1.50"


def test_markdown_table_marks_ours_where_none_passed():
    """Every deterministic strategy recorded at a shape failed (an error, a wrong result):
    "ours" said nothing — a blank, read as "not run" — where a failed peer shows ✗ and
    report.md's answer says "none passed".  It says "✗ none passed" now; a run that
    recorded no deterministic strategy at all still leaves it blank."""
    recs = _shape()
    for r in recs[:2]:
        r.update(status="error", error="boom", time_ms=None)

    def ours(recs):
        header, _, row = markdown_table(pd.DataFrame(recs)).splitlines()
        cells = dict(zip((c.strip() for c in header.strip("|").split("|")),
                         (c.strip() for c in row.strip("|").split("|"))))
        return cells["ours"], cells["peer_c"]
    assert ours(recs) == ("✗ none passed", "**60.0**")
    recs[1].update(status="ok", error=None, time_ms=0.040, correct=False)   # wrong, not faster
    assert ours(recs)[0] == "✗ none passed"
    assert ours(recs[2:])[0] == ""                                       # none recorded


def test_records_of_different_devices_compared_at_a_shape_are_named_in_report_and_terminal():
    """A cluster of mixed GPU models, or a --force-resume on another GPU: the answer divided
    an H100 time by an A100 time and nothing said so.  The report's answer section and the
    terminal table's legend say at how many shapes, naming the devices; a run measured on
    one device says nothing."""
    from normbench.harness.report import build_report
    a100 = "NVIDIA A100-SXM4-80GB"
    recs = _shape() + _shape(dtype="fp16")
    for r in recs[6:]:
        if r["implementation"] == "peer_c":
            r["device"] = a100                  # the peer measured elsewhere, at one shape
    a = summary.answer(pd.DataFrame(recs))
    assert list(a["dtype"]) == ["bf16", "fp16"] and [len(d) for d in a["devices"]] == [1, 2]
    line = (f"At 1 of 2 shapes the records compared were measured on different devices "
            f"({synthetic.DEVICE}, {a100}): their ratios compare machines, not strategies.")
    assert summary.mixed_devices(a) == line
    assert f"> **Warning:** {line}" in build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    buf = io.StringIO()
    print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=400, color_system=None))
    text = " ".join(buf.getvalue().split())
    assert "At 1 of 1 shape the records compared were measured on different devices" in text
    assert text.count("compare machines") == 1            # the fp16 table's only
    same = _shape()
    assert summary.mixed_devices(summary.answer(pd.DataFrame(same))) is None
    assert "different devices" not in build_report(pd.DataFrame(same), synthetic.meta()).markdown()


def test_a_record_of_another_device_that_no_ratio_compares_raises_no_warning():
    """The devices were every competing record's at the shape, so a slower peer (peer_d) or
    a slower GROUPS of ours (det_a G8) measured on another GPU warned 'their ratios compare
    machines' though no ratio reads it; only each role's fastest counts, and where one of
    those is another device's the warning stands."""
    from normbench.harness.report import build_report
    a100 = "NVIDIA A100-SXM4-80GB"
    recs = _shape()
    for r in recs:
        if r["implementation"] == "peer_d" or r["groups"] == "8":
            r["device"] = a100
    a = summary.answer(pd.DataFrame(recs))
    assert a.iloc[0].devices == (synthetic.DEVICE,)
    assert summary.mixed_devices(a) is None
    assert "different devices" not in build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    buf = io.StringIO()
    print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=400, color_system=None))
    assert "compare machines" not in buf.getvalue()
    recs[2]["device"] = a100                    # the best nondeterministic: det ÷ nondet reads it
    assert summary.answer(pd.DataFrame(recs)).iloc[0].devices == (synthetic.DEVICE, a100)


# ---------------------------------------------------------------------------------------------
# a varied run: what answer() and the terminal tables give for it is pinned (tests/data/)

def _varied(gpu: bool = False) -> list[dict]:
    """sweep_records() at four (dtype, weight dtype) pairs, both norms, with a GPU time on
    most records (gpu), some measured next to other cases, on another device, incorrect,
    timed out, and a peer (quack) at some shapes beside the skipped liger."""
    out = []
    k = 0
    for dtype, wdt in (("bf16", "fp32"), ("fp16", "fp16"), ("fp32", "fp32"), ("bf16", "bf16")):
        for r in synthetic.sweep_records():
            k += 1
            r = dict(r, dtype=dtype, weight_dtype=wdt)
            if r["status"] == "ok":
                if gpu and k % 7:
                    r["gpu_time_ms"] = r["time_ms"] * (0.6 + (k % 5) / 10)
                    r["host_overhead_ms"] = r["time_ms"] * 0.3 if k % 3 else None
                if k % 11 == 0:
                    r.update(concurrent_cases=3, hostname="node7")
                if k % 13 == 0:
                    r["device"] = "NVIDIA A100-SXM4-80GB"
                if k % 17 == 0:
                    r["correct"] = False
                if k % 19 == 0 and r["implementation"] == "torch":
                    r.update(status="timeout", time_ms=None)
            out.append(r)
            if r["implementation"] == "liger" and k % 2:
                out.append(dict(r, implementation="quack", kind="baseline", status="ok",
                                correct=True, time_ms=0.05 + (k % 9) / 100, groups="-",
                                time_p20_ms=0.049, time_p80_ms=0.052, deterministic=True,
                                deterministic_by_design=True))
    for r in out:
        r["case_id"] = case_id(r)
    return out


def _varied_outputs(tmp: Path) -> dict[str, str]:
    """{fixture name: text} of print_tables (split with GPU time, at 100 columns) and of
    answer() (sorted and in run order) for _varied, with and without GPU time, from the
    records as built, as report.fmt.plain has them and as the store loads them (`tmp`: a
    directory for the run): the tables alike from each."""
    from normbench.harness.report.fmt import plain
    out = {}
    for gpu in (False, True):
        raw = pd.DataFrame(_varied(gpu))
        stored = load_records(synthetic.write_run(tmp / str(gpu), _varied(gpu)))
        for df in (raw, plain(raw), stored):
            buf = io.StringIO()             # whole without GPU time; split with it
            print_tables(df, {"interpreted": gpu}, Console(file=buf, width=100 if gpu else 250,
                                                         color_system=None))
            text = buf.getvalue()
            name = f"varied_{'gpu' if gpu else 'call'}_tables.txt"
            assert out.setdefault(name, text) == text
        for df, order in ((plain(raw), "sorted"), (stored, "run")) if gpu else ((raw, "run"),):
            out["varied_answer.csv"] = (out.get("varied_answer.csv", "")
                                        + summary.answer(df, order).to_csv())
    return out


def test_answer_and_terminal_tables_of_a_varied_run_are_as_pinned(tmp_path):
    """The answer and the end-of-run tables of a run with several norms, dtypes, weight
    dtypes, implementations, failed and skipped records, as written before answer() and
    print_tables stopped filtering the whole frame per shape (tests/data/varied_*; after a
    deliberate change of either, rewrite them with NORMBENCH_PIN=1)."""
    import os
    data = ROOT / "tests" / "data"
    for name, text in _varied_outputs(tmp_path).items():
        if os.environ.get("NORMBENCH_PIN"):
            (data / name).write_text(text, encoding="utf-8")
        assert text == (data / name).read_text(encoding="utf-8"), name


class _Counting(pd.DataFrame):
    """A records frame that counts the frames made from it still holding every record's
    samples (time_samples_ms): the copies of the whole records."""
    copies = 0

    @property
    def _constructor(self):
        return _Counting

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "time_samples_ms" in self.columns:
            _Counting.copies += 1


@pytest.mark.parametrize("show", ["answer", "tables"])
def test_answer_and_terminal_tables_copy_the_records_as_often_at_any_number_of_shapes(show):
    """answer() copied each shape's records, every column with the samples' text, several
    times a shape, and print_tables filtered the whole frame for each shape and
    implementation: ~10 ms a shape, 3 minutes for a 10 000-shape run's tables.  Both now copy
    the whole records a fixed number of times, at 4 shapes as at 32."""
    def copies(n_rows: int) -> int:
        df = _Counting(synthetic.sweep_records(rows_list=tuple(range(1024, 1024 + 64 * n_rows,
                                                                     64))))
        _Counting.copies = 0
        if show == "answer":
            summary.answer(df)
        else:
            print_tables(df, {}, Console(file=io.StringIO(), width=250, color_system=None))
        return _Counting.copies
    assert copies(1) == copies(8)


def test_terminal_says_why_a_strategy_did_not_compete_as_the_answer_does():
    """A strategy none of whose GROUPS competed at a shape: the terminal said the first
    record's reason, "✗ skipped" where its first GROUPS was skipped and another ran and
    failed; summary's rule (the README table's and report's) is "skipped" only where every
    record was, else the first other reason — here the error."""
    common = dict(norm="layernorm", rows=4096, d=1024)
    recs = [synthetic.record(implementation="nondet_b", kind="strategy", groups=64,
                             groups_effective=64, status="skipped",
                             error="needs more memory than is free", **common),
            synthetic.record(implementation="nondet_b", kind="strategy", groups=256,
                             groups_effective=256, status="error", error="RuntimeError",
                             **common),
            synthetic.record(implementation="det_a", kind="strategy",
                             deterministic_by_design=True, time_ms=0.04, **common)]
    buf = io.StringIO()
    print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=250, color_system=None))
    text = buf.getvalue()
    assert "✗ error" in text and "✗ skipped" not in text
    assert summary.why_none(recs[:2]) == "error"
    assert summary.why_none(recs[:1]) == "skipped"


def test_terminal_uses_the_last_record_of_a_case_recorded_twice_as_the_report_does():
    """A records.csv holding a case twice (a hand-joined file, resumed): the report, compare
    and export use its last record; the end-of-run table took the faster, earlier one — a
    1 µs atomic starred and det÷nondet 36528 beside a report saying 0.740."""
    recs = _shape()
    early = dict(recs[2], time_ms=0.001, time_p20_ms=0.001, time_p80_ms=0.001)
    recs = [early] + recs
    buf = io.StringIO()
    print_tables(pd.DataFrame(recs), {}, Console(file=buf, width=250, color_system=None))
    text = buf.getvalue()
    assert "1.00" not in text and "★ 30.0" in text and "1.33" in text
