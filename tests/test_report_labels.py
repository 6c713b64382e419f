"""The report's implementation labels name the GROUPS that ran (harness/report/fmt.py)."""
from __future__ import annotations

import pandas as pd

import synthetic
from normbench.harness.report import build_report, plots
from normbench.harness.report.fmt import impl_label


def test_a_capped_groups_label_names_what_ran():
    assert impl_label("disjoint_block", "6", 5.0) == "disjoint_block (G=6→5)"
    assert impl_label("disjoint_block", "5", 5.0) == "disjoint_block (G=5)"
    assert impl_label("disjoint_block", "6", None) == "disjoint_block (G=6)"     # did not run
    assert impl_label("disjoint_block", "auto", 264.0) == "disjoint_block (G=auto→264)"
    assert impl_label("torch", "-", None) == "torch"


def test_groups_capped_to_the_same_count_stay_two_rows_of_the_report(monkeypatch):
    """10 rows: G=6 and G=5 both run 5 — the answer and the bandwidth-bound table say G=6→5,
    and the determinism matrix keeps both records, each in the row of the GROUPS asked for."""
    recs = [synthetic.record(implementation="disjoint_block", rows=10, d=33, groups=g,
                             groups_effective=5, time_ms=t, seed=g, kind="strategy",
                             deterministic_by_design=True)
            for g, t in ((6, 0.01), (5, 0.02))]
    recs.append(synthetic.record(implementation="torch", rows=10, d=33, time_ms=0.03))
    rows = []                        # the row labels of every heatmap drawn
    real = plots._heatmap
    monkeypatch.setattr(plots, "_heatmap", lambda fig, ax, values, *a, **k: (
        rows.append(list(values.index)), real(fig, ax, values, *a, **k))[1])
    rep = build_report(pd.DataFrame(recs), synthetic.meta())
    # determinism: a row per GROUPS asked for, in order (the cells say G=6 ran 5)
    assert ["disjoint_block (G=5)", "disjoint_block (G=6)", "torch"] in rows
    md = rep.markdown()
    answer = md.split("## Failures")[0]
    assert "disjoint_block (G=6→5)" in answer and "disjoint_block (G=6)" not in answer
    pred = next(t for t in md.split("\n\n") if "| measured µs |" in t)
    assert "disjoint_block (G=6→5)" in pred and "disjoint_block (G=5)" in pred


def test_the_determinism_matrix_has_a_row_per_groups_asked_for(monkeypatch):
    """G=3 and G=6 capped to different counts at different rows, and auto: one row each, full
    (not half grey: grey reads 'not measured'); the count that ran is in the cell where it is
    not the one asked for.  The title fits a figure of two shapes."""
    def rec(g, rows, geff):
        return synthetic.record(implementation="disjoint_strided", rows=rows, d=8, dtype="fp32",
                                weight_dtype="fp32", groups=g, groups_effective=geff,
                                distinct_results=1, repeats=2, seed=rows)
    recs = [rec("3", 19, 2), rec("3", 64, 3), rec("6", 19, 2), rec("6", 64, 4),
            rec("auto", 19, 5), rec("auto", 64, 7)]
    recs += [synthetic.record(implementation="torch", rows=r, d=8, dtype="fp32",
                              weight_dtype="fp32", repeats=2) for r in (19, 64)]
    seen = {}
    real = plots._heatmap

    def spy(fig, ax, values, annot, *a, **k):
        seen[tuple(values.index)] = (values, annot, fig)
        return real(fig, ax, values, annot, *a, **k)
    monkeypatch.setattr(plots, "_heatmap", spy)
    build_report(pd.DataFrame(recs), synthetic.meta())
    labels = ("disjoint_strided (G=auto)", "disjoint_strided (G=3)", "disjoint_strided (G=6)",
              "torch")
    values, annot, fig = seen[labels]
    assert not values.isna().any().any()
    assert [list(a) for a in annot] == [["1/2\n→5", "1/2\n→7"], ["1/2\n→2", "1/2"],
                                        ["1/2\n→2", "1/2\n→4"], ["1/2", "1/2"]]
    assert fig._suptitle.get_text() == "Distinct bit patterns of (dx, dγ, dβ)"


def test_the_determinism_wording_names_the_last_timed_call_only_where_compared():
    """Records from before last_call_compared (empty) compared the repeats only."""
    def md(flags):
        recs = [synthetic.record(implementation="torch", rows=r, d=8, repeats=2, seed=r,
                                 last_call_compared=f) for r, f in zip((16, 32), flags)]
        return build_report(pd.DataFrame(recs), synthetic.meta()).markdown()
    old = md([None, None])
    assert "### Determinism: distinct results in R repeats\n" in old
    assert "last timed call" not in old and "in R repeats; a row per GROUPS" in old
    new = md([True, True])
    assert "### Determinism: distinct results in R repeats and the last timed call\n" in new
    assert "in R repeats and the last timed call; a row per GROUPS" in new
    assert "(and the last timed call where a record compared it)" in md([True, None])
