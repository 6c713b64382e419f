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
