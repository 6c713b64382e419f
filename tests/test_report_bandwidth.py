"""The bandwidth figures stay readable at any number of d values: a dtype mix's d values wrap
into rows of at most MAX_D panels, each panel its full width, and rows past the height cap go
to further figures (report/plots_bandwidth.py)."""
from __future__ import annotations

import pandas as pd

import synthetic
import test_report_heatmaps as heatmaps
from normbench.harness.report import plots_bandwidth as pb


def _records(n_d: int, dtypes=(("bf16", "fp32"),)):
    recs, seed = [], 0
    for dtype, wdt in dtypes:
        for rows in (1024, 4096):
            for d in [256 * (k + 1) for k in range(n_d)]:
                for impl in ("disjoint_block", "torch"):
                    seed += 1
                    recs.append(synthetic.record(
                        norm="rmsnorm", implementation=impl, rows=rows, d=d, dtype=dtype,
                        weight_dtype=wdt, seed=seed, time_ms=1e-6 * rows * d))
    return pd.DataFrame(recs)


def _draw(monkeypatch, records):
    return heatmaps._draw(monkeypatch, records, (pb.plot_bandwidth,), module=pb)


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]


def test_panel_rows_wrap_each_dtype_mix_evenly():
    assert pb.panel_rows({"a": [1, 2, 3]}) == [("a", [1, 2, 3])]
    rows = pb.panel_rows({"a": list(range(14)), "b": list(range(14))})
    assert [dt for dt, _ in rows] == ["a"] * 3 + ["b"] * 3
    assert [len(ds) for _, ds in rows] == [5, 4, 5] * 2
    assert sum((ds for dt, ds in rows if dt == "a"), []) == list(range(14))
    # each mix its own d values
    assert pb.panel_rows({"a": list(range(7)), "b": [8192]}) == [
        ("a", [0, 1, 2, 3]), ("a", [4, 5, 6]), ("b", [8192])]


def test_a_dtype_mix_measured_at_fewer_d_values_gets_no_empty_panel(monkeypatch):
    """The d values were taken per norm: bf16/fp32 at 7 d values beside fp32/fp32 at d=8192
    alone drew 16 panels, 9 of them empty (bf16/fp32 at 8192, fp32/fp32 at the other 7 and
    a hidden one), and the empty rows pushed real panels into a _part2 figure.  Now each mix
    gets a panel per d value it was measured at: 8, each with its lines."""
    recs = _records(7)
    recs = pd.concat([recs, _records(1, (("fp32", "fp32"),)).assign(d=8192)],
                     ignore_index=True)
    figs, _ = _draw(monkeypatch, recs)
    (fig,) = figs
    panels = _panels(fig)
    assert len(panels) == 8 and all(ax.lines for ax in panels)
    titles = sorted(ax.get_title() for ax in panels)
    assert titles.count("rmsnorm, d=8192, fp32/fp32") == 1
    assert not any("8192, bf16" in t for t in titles)
    assert sum("fp32/fp32" in t for t in titles) == 1
    # the height cap fitting two rows of panels: bf16/fp32's two rows and fp32/fp32's one
    # are three, two figures, none of its rows empty
    monkeypatch.setattr(pb, "MAX_HEIGHT", 8.0)
    figs, _ = _draw(monkeypatch, recs)
    assert [len(_panels(f)) for f in figs] == [7, 1]
    assert all(ax.lines for f in figs for ax in _panels(f))


def test_fourteen_d_values_draw_full_width_panels(monkeypatch):
    """14 d values took 14 panels across the 40-inch cap: 2.7 inches each, their titles on
    one another.  Now rows of at most MAX_D, every panel as wide as a run of few d values
    draws it, every d drawn once per dtype mix, one GB/s scale per dtype mix."""
    figs, rep = _draw(monkeypatch, _records(14, (("bf16", "fp32"), ("fp16", "fp16"))))
    (fig,) = figs
    panels = _panels(fig)
    assert len(panels) == 28 and len({ax.get_title() for ax in panels}) == 28
    w, _ = fig.get_size_inches()
    assert w <= 40
    fig.draw_without_rendering()
    assert min(ax.bbox.width for ax in panels) / fig.dpi >= 2.9
    tops = {ax.get_title().split(", ")[-1]: set() for ax in panels}
    for ax in panels:
        tops[ax.get_title().split(", ")[-1]].add(ax.get_ylim())
    assert all(len(v) == 1 for v in tops.values()), tops
    small, _ = _draw(monkeypatch, _records(3))
    small_w = min(ax.bbox.width for ax in _panels(small[-1])) / small[-1].dpi
    assert min(ax.bbox.width for ax in panels) / fig.dpi >= 0.9 * small_w


def test_rows_past_the_height_cap_go_to_further_figures(monkeypatch):
    monkeypatch.setattr(pb, "MAX_HEIGHT", 8.0)              # two rows of panels a figure
    figs, rep = _draw(monkeypatch, _records(14))            # three rows: two figures
    assert len(figs) == 2
    assert [len(_panels(f)) for f in figs] == [9, 5]
    assert [f.name for f in rep.figures] == ["bandwidth_rmsnorm", "bandwidth_rmsnorm_part2"]
    assert [f.title for f in rep.figures] == [
        f"rmsnorm: achieved GB/s and % of copy ceiling (part {k} of 2)" for k in (1, 2)]
