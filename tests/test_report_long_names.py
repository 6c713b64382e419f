"""Legal implementation names of any length give a whole, readable report: file stems cut to
fit with their de-duplication suffix and extension (report/document.py, build.py), and plot
labels shortened, unique, while the tables keep the full name (report/plots.py)."""
from __future__ import annotations

import warnings

import pandas as pd

import synthetic
from normbench.harness.report import build_report, write_report


def _grouped(name, gs=(2, 4)):
    return [synthetic.record(implementation=name, groups=g, groups_effective=g, rows=r,
                             time_ms=0.01 * g + r / 1e5, writers_per_slot=1, workspace_bytes=64,
                             kind="strategy", seed=g + r)
            for g in gs for r in (64, 128)]


def test_a_200_character_name_with_two_groups_is_reported(tmp_path):
    long = "s" * 200
    twin = "s" * 199 + "t"           # the same first 120 characters: a "-2" stem
    recs = _grouped(long) + _grouped(twin) + [synthetic.record(implementation="torch", rows=r)
                                              for r in (64, 128)]
    run_dir = synthetic.write_run(tmp_path / "run", recs, synthetic.meta())
    written = write_report(run_dir, baseline=long)
    pngs = sorted(p.name for p in (run_dir / "plots").iterdir())
    groups = [n for n in pngs if n.startswith("groups_")]
    assert len(groups) == 2 and all(len(n) <= 124 for n in pngs), pngs
    assert any(n.startswith("speedup_vs_sss") for n in pngs)
    assert (run_dir / "report.html").is_file() and (run_dir / "report.md").is_file()
    assert {"report.html", "report.md"} <= set(written)
    assert long in (run_dir / "report.md").read_text()          # the tables: the full name


def test_plot_labels_are_short_and_keep_distinct_names_distinct():
    from normbench.harness.report.plots import LABEL_MAX, plot_labels
    names = ["torch", "a" * 41, "s" * 200, "s" * 199 + "t", "s" * 201, "s" * 202,
             "a" * 26 + "…" + "a" * 13]     # what a cut name would read, already taken
    labels = plot_labels(names)
    assert list(labels) == names and len(set(labels.values())) == len(names)
    assert all(len(v) <= LABEL_MAX for v in labels.values())
    assert labels["torch"] == "torch" and labels["a" * 26 + "…" + "a" * 13] == "a" * 26 + "…" + "a" * 13
    assert labels["s" * 199 + "t"].endswith("t")                 # the end that tells them apart


def test_a_128_character_name_leaves_every_plot_readable():
    """A legend entry or tick label of 128 characters collapsed the axes: matplotlib warned
    'constrained_layout not applied' and cut every other label."""
    long = "x" * 128
    recs = _grouped(long) + _grouped("grouped_atomic")
    recs += [synthetic.record(implementation="torch", rows=r) for r in (64, 128)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rep = build_report(pd.DataFrame(recs), synthetic.meta(), baseline=long)
    assert not [w for w in caught if "constrained_layout" in str(w.message)]
    assert {"samples", "roofline", "bandwidth_rmsnorm", "determinism",
            "workspace_vs_writers"} <= {f.name for f in rep.figures}
    md = rep.markdown()
    assert "plot failed" not in md and f"| {long}" in md        # the tables: the full name
