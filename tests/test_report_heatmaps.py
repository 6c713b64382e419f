"""The shape heatmaps (GROUPS, determinism, speedup) stay readable at any shape count:
at most heatmap.MAX_COLS columns a panel, cell numbers only where they fit their cell, and
every label — the colour bar's included — inside the figure (report/plots.py, heatmap.py)."""
from __future__ import annotations

import matplotlib as mpl
import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

import synthetic
from normbench.harness.report import plots
from normbench.harness.report.coverage import last_of_each_key
from normbench.harness.report.document import Report
from normbench.harness.report.fmt import competing, plain
from normbench.harness.report.heatmap import MAX_COLS, MAX_HEIGHT, column_chunks

DET_LABEL = "distinct results (1 = bitwise deterministic)"


def _records(n_rows: int, n_d: int, impls=("disjoint_block", "torch")):
    """Two norms × N_ROWS × N_D shapes; disjoint_block at GROUPS 16 and 64."""
    recs, seed = [], 0
    for norm in ("layernorm", "rmsnorm"):
        for rows in [1024 * (k + 1) for k in range(n_rows)]:
            for d in [256 * (k + 1) for k in range(n_d)]:
                for impl in impls:
                    for g in ((16, 64) if impl == "disjoint_block" else ("-",)):
                        seed += 1
                        recs.append(synthetic.record(
                            norm=norm, implementation=impl, rows=rows, d=d, groups=g,
                            groups_effective=None if g == "-" else float(g), seed=seed,
                            time_ms=1e-6 * rows * d * (1.1 if g == 16 else 1.0)))
    return pd.DataFrame(recs)


def _draw(monkeypatch, records, sections, module=plots, encode=True):
    """Run the plot SECTIONS (whose figures MODULE's _png encodes) over RECORDS; the figures
    they made and the report.  ENCODE False: the figures are kept and not encoded (the
    report's PNGs empty) — for a test that only lays the figures out and reads them, as
    savefig's own layout pass and the PNG encoding were about 40 % of the 300-shape test."""
    import seaborn as sns
    df, _ = last_of_each_key(plain(records))
    figs, real = [], module._png
    monkeypatch.setattr(module, "_png",
                        lambda fig: (figs.append(fig), real(fig) if encode else b"")[1])
    rep = Report(title="t")
    with mpl.rc_context():
        sns.set_theme(style="whitegrid", context="notebook")
        for section in sections:
            section(rep, df, competing(df), synthetic.meta(), plots._palette(df), "torch", False)
    return figs, rep


def _inside(fig, artist, draw: bool = True) -> bool:
    """Whether ARTIST lies inside FIG once laid out (DRAW False: FIG was just drawn)."""
    if draw:
        fig.draw_without_rendering()
    bb = artist.get_window_extent(fig.canvas.get_renderer())
    return bb.x0 >= -1 and bb.y0 >= -1 and bb.x1 <= fig.bbox.width + 1 and bb.y1 <= fig.bbox.height + 1


def _heatmap_axes(fig):
    return [ax for ax in fig.axes if ax.images and ax.get_xticklabels()
            and ax.get_xticklabels()[0].get_text()]


def test_column_chunks_are_even_and_cover_every_column():
    assert column_chunks(5) == [range(0, 5)]
    assert column_chunks(MAX_COLS) == [range(0, MAX_COLS)]
    chunks = column_chunks(300)
    assert [c.start for c in chunks[1:]] == [c.stop for c in chunks[:-1]]
    assert chunks[0].start == 0 and chunks[-1].stop == 300
    assert max(map(len, chunks)) <= MAX_COLS and max(map(len, chunks)) - min(map(len, chunks)) <= 1


def test_300_shapes_draw_readable_panels(monkeypatch):
    """300 shapes: a 40-inch figure of 300 columns was numbers on numbers and labels on
    labels.  Every axes now has at most MAX_COLS shape labels, every shape is drawn once
    per heatmap, each figure stays within the size cap, and the cell numbers left lie
    inside their cells."""
    figs, rep = _draw(monkeypatch, _records(10, 15),
                      (plots._plot_group_heatmaps, plots._plot_determinism, plots._plot_speedup),
                      encode=False)
    assert figs
    names = [f.name for f in rep.figures]
    assert {"groups_disjoint_block", "determinism", "speedup_vs_torch"} <= set(names)
    shown = {}
    for fig in figs:
        w, h = fig.get_size_inches()
        assert w <= 40.5 and h <= MAX_HEIGHT + 4
        fig.draw_without_rendering()
        r = fig.canvas.get_renderer()
        title = fig._suptitle.get_text().split(" (shapes")[0]
        for ax in _heatmap_axes(fig):
            labels = [t.get_text() for t in ax.get_xticklabels()]
            assert len(labels) <= MAX_COLS
            shown.setdefault(title, []).extend(labels)
            cols = ax.images[0].get_array().shape[1]
            for t in ax.texts:
                assert t.get_window_extent(r).width <= ax.bbox.width / cols
        assert _inside(fig, fig._suptitle, draw=False)      # drawn above, unchanged since
    assert len(shown) == 3
    for labels in shown.values():
        assert len(labels) == len(set(labels)) == 300


def test_cell_numbers_are_left_out_where_a_column_is_too_narrow():
    """A cell text wider than its column is not drawn (anywhere in that figure), and the
    caption says so; where the columns have room every text stays."""
    values = pd.DataFrame(np.arange(40.0).reshape(2, 20), index=["a", "b"],
                          columns=[f"shape {k}" for k in range(20)])
    annot = np.full(values.shape, "123456.7 µs", dtype=object)
    kw = dict(extra_w=3.0, panel_h=3.4, xlabel="shape", ylabel="", title="t")
    norm = mcolors.Normalize(0, 40)
    [(fig, _, kept)] = plots._heatmap_figures(values, annot, "viridis", norm, "v",
                                              col_w=0.3, **kw)
    assert not kept and not any(ax.texts for ax in fig.axes)
    [(fig, _, kept)] = plots._heatmap_figures(values, annot, "viridis", norm, "v",
                                              col_w=1.2, **kw)
    assert kept and sum(len(ax.texts) for ax in fig.axes) == 40
    assert "Cell numbers left out" in plots._heatmap_caption("c.", False, (1, 20, 20), 1)
    assert plots._heatmap_caption("c.", True, (1, 20, 20), 1) == "c."


def test_a_heatmap_of_many_panels_splits_into_figures_under_the_height_cap():
    # 130 shapes: 5 panels of 26, two a figure at this panel height: 3 figures, the last of
    # one panel, as 400 shapes made 7 (2 × 6 + 1) at several times the cost
    values = pd.DataFrame(np.ones((30, 130)), index=[f"r{k}" for k in range(30)],
                          columns=[f"s{k}" for k in range(130)])
    figs = plots._heatmap_figures(values, np.full(values.shape, "", dtype=object), "viridis",
                                  mcolors.Normalize(0, 2), "v", col_w=1.0, extra_w=3.5,
                                  panel_h=0.42 * 30 + 1.8, xlabel="x", ylabel="", title="T")
    assert len(figs) > 1
    assert [s for _, s, _ in figs][0][0] == 1 and figs[-1][1][1] == 130
    assert all(f._suptitle.get_text().startswith("T (shapes ") for f, _, _ in figs)
    assert plots._heatmap_figure_name("determinism", 0) == "determinism"
    assert plots._heatmap_figure_name("determinism", 1) == "determinism_part2"


@pytest.mark.parametrize("n_impls,n_d", [(1, 1), (2, 3), (5, 48)])
def test_the_determinism_colour_bar_label_is_inside_the_figure(monkeypatch, n_impls, n_d):
    """results/h200-general-fp-2ec3192 (96 shapes, 5 rows): the 45° shape labels took the
    height the colour bar's label needs and its top was cut off; so at one or two rows."""
    impls = ("torch", "liger", "quack", "torch_compile", "disjoint_strided")[:n_impls]
    # laid out as the report lays it out, not encoded: _inside draws the figure itself
    figs, _ = _draw(monkeypatch, _records(1, n_d, impls), (plots._plot_determinism,),
                    encode=False)
    assert figs
    for fig in figs:
        labels = [ax.yaxis.label for ax in fig.axes if ax.get_ylabel() == DET_LABEL]
        assert len(labels) == 1
        assert _inside(fig, labels[0])
