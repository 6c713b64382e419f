"""Layout of the report's shape heatmaps (GROUPS, determinism, speedup): how many shape
columns a panel holds, how panels stack into figures, and fitting a drawn figure — cell
numbers only where a cell has room for them, every label inside the figure."""
from __future__ import annotations

import math

# A panel draws at most this many shape columns (an inch each, their 45° labels apart):
# past it, a figure of the 40-inch cap squeezed 96 or 1,200 columns into text on text.
MAX_COLS = 32
# A figure stacks panels up to this height (inches), as the figure size cap; more panels go
# to further figures.
MAX_HEIGHT = 40.0


def column_chunks(n: int, most: int = MAX_COLS) -> list[range]:
    """N columns in as few panels of at most MOST as hold them, the panels as even as they
    go (70 columns: 24, 23, 23, not 32, 32, 6)."""
    k = max(1, math.ceil(n / most))
    bounds = [round(i * n / k) for i in range(k + 1)]
    return [range(a, b) for a, b in zip(bounds, bounds[1:])]


def panels_per_figure(panel_h: float, most_h: float = MAX_HEIGHT) -> int:
    """How many panels of PANEL_H inches stack into one figure (one at least)."""
    return max(1, int(most_h // panel_h))


def cells_fit(fig, axes, renderer) -> bool:
    """Whether every cell text of AXES (each a heatmap whose image is its first) lies
    within its cell once FIG is laid out: its width within the column's, its height within
    the row's."""
    for ax in axes:
        if not ax.texts or not ax.images:
            continue
        rows, cols = ax.images[0].get_array().shape[:2]
        col_px, row_px = ax.bbox.width / cols, ax.bbox.height / rows
        for t in ax.texts:
            bb = t.get_window_extent(renderer)
            if bb.width > 0.92 * col_px or bb.height > 0.95 * row_px:
                return False
    return True


def fit(fig, axes, tries: int = 3) -> bool:
    """Lay FIG out; drop the cell texts of AXES everywhere where any does not fit its cell
    (a column too narrow for its text: numbers on numbers), then grow FIG by whatever still
    lies outside it (a colour bar's label longer than its bar, which constrained layout
    cannot shorten; a title wider than the axes).  Returns whether the cell texts stayed."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    kept = cells_fit(fig, axes, renderer)
    if not kept:
        for ax in axes:
            for t in list(ax.texts):
                t.remove()
    for _ in range(tries):
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        dpi = fig.dpi
        box = fig.get_tightbbox(renderer)          # inches
        w, h = fig.get_size_inches()
        # twice the larger overhang: a label centred on its bar moves by half the growth
        grow_w = 2 * max(0.0, -box.x0, box.x1 - w)
        grow_h = 2 * max(0.0, -box.y0, box.y1 - h)
        if grow_w <= 1 / dpi and grow_h <= 1 / dpi:
            break
        fig.set_size_inches(w + grow_w + (0.1 if grow_w else 0), h + grow_h + (0.1 if grow_h else 0))
    return kept
