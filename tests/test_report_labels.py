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
    and the determinism matrix keeps both records, each under its own label."""
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
    assert ["disjoint_block (G=6→5)", "disjoint_block (G=5)", "torch"] in rows   # determinism
    md = rep.markdown()
    answer = md.split("## Failures")[0]
    assert "disjoint_block (G=6→5)" in answer and "disjoint_block (G=6)" not in answer
    pred = next(t for t in md.split("\n\n") if "| measured µs |" in t)
    assert "disjoint_block (G=6→5)" in pred and "disjoint_block (G=5)" in pred
