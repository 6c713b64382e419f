"""The report's bandwidth figures: achieved GB/s against rows, a panel per d and dtype mix
(each mix at the d values it was measured at), and the % of the run's copy ceiling beside
it.  A dtype mix's d values wrap into rows of at
most MAX_D panels (past that the figure's 40-inch cap squeezed ten or more d values into
slivers), and rows of panels past the height cap go to further figures
(`bandwidth_<norm>_part2`, ...)."""
from __future__ import annotations

import numpy as np

from .document import PlotFigure
from .fmt import best_per_impl, fmt_int, impl_order, no_ceiling, one_copy_ceiling
from .heatmap import MAX_HEIGHT, column_chunks, panels_per_figure
from .plots import _new_figure, _png, plot_labels

MAX_D = 6            # panels a row of one dtype mix holds
PANEL_W, PANEL_H = 4.2, 3.3
EXTRA_W, EXTRA_H = 2.2, 0.6      # the legend beside, the title above


def panel_rows(ds: dict[str, list]) -> list[tuple[str, list]]:
    """The figure's rows of panels: each dtype mix (the keys of `ds`, in order) with the d
    values it was measured at (its own: a mix measured at fewer d values gets no empty
    panel) in rows of at most MAX_D, as even as they go (14 values: 5, 4, 5)."""
    return [(dt, [d_values[i] for i in chunk]) for dt, d_values in ds.items()
            for chunk in column_chunks(len(d_values), MAX_D)]


def plot_bandwidth(rep, df, comp, meta, palette, baseline, interp):
    rep.h(3, "Achieved bandwidth against rows")
    copy = one_copy_ceiling(df, meta)
    best = best_per_impl(comp)
    if not best.empty:
        best = best.copy()
        missing = ~np.isfinite(best["gbps"])
        best.loc[missing, "gbps"] = (best.loc[missing, "bytes_moved"]
                                     / (best.loc[missing, "time_ms"] * 1e-3) / 1e9)
        best = best[np.isfinite(best["gbps"])]
    if best.empty:
        rep.p("Skipped: no record passed (status ok and correct) with a bandwidth.")
        return
    rep.p("GB/s = bytes_moved / median time, best GROUPS per implementation; one line per "
          f"implementation, one panel per d and dtype/weight dtype measured (each dtype mix at "
          f"its own d values, in rows of at most {MAX_D}; panels of one dtype mix share their "
          "GB/s scale)."
          + (f" Right axis: % of this run's copy ceiling ({copy:.0f} GB/s"
             + (", dashed)." if not interp else "; its line not drawn under the interpreter).")
             if copy else f" {no_ceiling(meta)}: the % axis is left out."))
    for norm in sorted(best["norm"].dropna().unique()):
        sub = best[best["norm"] == norm].assign(
            dtypes=lambda x: x["dtype"].astype(str) + "/" + x["weight_dtype"].astype(str))
        dts = sorted(sub["dtypes"].unique())
        ds = {dt: sorted(sub.loc[sub["dtypes"] == dt, "d"].unique()) for dt in dts}
        top = {}
        for dt in dts:                    # one scale per dtype mix, whatever row a panel is in
            t = float(sub.loc[sub["dtypes"] == dt, "gbps"].max())
            if copy and not interp:
                t = max(t, copy)
            top[dt] = t * 1.06 if t > 0 else 1
        rows = panel_rows(ds)
        per_fig = panels_per_figure(PANEL_H, MAX_HEIGHT - EXTRA_H)
        parts = [rows[i:i + per_fig] for i in range(0, len(rows), per_fig)]
        impls = impl_order(sub["implementation"].unique(), palette)
        for k, part in enumerate(parts):
            fig = _figure(sub, part, impls, palette, norm, copy, interp, top)
            of = f" (part {k + 1} of {len(parts)})" if len(parts) > 1 else ""
            fig.suptitle(f"{norm}: achieved bandwidth{of}"
                         + (" (CPU wall-clock, interpreter)" if interp else ""))
            name = f"bandwidth_{norm}" + (f"_part{k + 1}" if k else "")
            rep.figure(PlotFigure(name, f"{norm}: achieved GB/s and % of copy ceiling{of}",
                                  _png(fig)))


def _figure(sub, part, impls, palette, norm, copy, interp, top):
    from matplotlib.lines import Line2D
    ncols = max(len(row_ds) for _, row_ds in part)
    fig = _new_figure(PANEL_W * ncols + EXTRA_W, PANEL_H * len(part) + EXTRA_H)
    axes = fig.subplots(len(part), ncols, squeeze=False)
    for i, (dt, row_ds) in enumerate(part):
        for j in range(ncols):
            ax = axes[i][j]
            if j >= len(row_ds):          # a shorter last row of its dtype mix
                ax.set_visible(False)
                continue
            d = row_ds[j]
            _panel(ax, sub[(sub["dtypes"] == dt) & (sub["d"] == d)].sort_values("rows"),
                   impls, palette, copy, interp, last=j == len(row_ds) - 1)
            ax.set_ylim(0, top[dt])
            ax.set_title(f"{norm}, d={fmt_int(d)}, {dt}", fontsize=10)
            ax.set_xlabel("rows")
            ax.set_ylabel("GB/s" if j == 0 else "")
    label = plot_labels(palette)
    handles = [Line2D([], [], color=palette[x], marker="o", label=label[x]) for x in impls]
    fig.legend(handles=handles, loc="outside right center", frameon=False)
    return fig


def _panel(ax, cell, impls, palette, copy, interp, last: bool) -> None:
    """One d and dtype mix: a line per implementation over log2 rows, the copy ceiling
    dashed, and the % axis on the last panel of its row."""
    import seaborn as sns
    present = [x for x in impls if x in set(cell["implementation"])]
    if present:
        sns.lineplot(data=cell, x="rows", y="gbps", hue="implementation", hue_order=present,
                     palette={x: palette[x] for x in present}, marker="o", ax=ax,
                     legend=False, estimator=None)
    if len(cell):                         # log2 rows; one value: a decade around it,
        ax.set_xscale("log", base=2)      # never a linear 1950-2150 axis
        ticks = sorted(cell["rows"].unique())
        if len(ticks) == 1:
            ax.set_xlim(ticks[0] / 2, ticks[0] * 2)
        ax.set_xticks(ticks)
        ax.set_xticklabels([fmt_int(v) for v in ticks], rotation=30)
        ax.minorticks_off()
    if copy and not interp:
        ax.axhline(copy, ls="--", color="0.4", lw=1)
    if copy and last:
        sec = ax.secondary_yaxis("right", functions=(lambda g, c=copy: g / c * 100,
                                                     lambda p, c=copy: p * c / 100))
        sec.set_ylabel("% of copy ceiling")
