"""The figures beside the answer: every timed sample per shape, and bytes moved against time
with the measured copy ceiling (a roofline for a memory-bound pass)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from .document import PlotFigure
from .fmt import (SHAPE, best_per_impl, finite, impl_order, na, no_ceiling, one_copy_ceiling,
                  shape_label, show_weight)
from .plots import _new_figure, _png


def samples_us(v) -> list[float]:
    """time_samples_ms of one record, in µs: a JSON string or a list/array (either loader)."""
    if not isinstance(v, (list, tuple)) and na(v):
        return []
    if isinstance(v, (bytes, str)):
        try:
            v = json.loads(v)
        except ValueError:
            return []
    try:
        xs = [float(x) * 1000 for x in v]
    except (TypeError, ValueError):
        return []
    return [x for x in xs if math.isfinite(x)]


MAX_SAMPLE_PANELS = 24


def plot_samples(rep, df, comp, meta, palette, baseline, interp):
    rep.h(3, "Every sample, per shape")
    best = best_per_impl(comp)
    if best.empty:
        rep.p("Skipped: no record passed (status ok and correct).")
        return
    best = best.assign(us=[samples_us(v) for v in best["time_samples_ms"]])
    best = best[best["us"].map(len) > 0]
    if best.empty:
        rep.p("Skipped: no passing record kept its samples (time_samples_ms).")
        return
    many_w = show_weight(df)
    shapes = best.sort_values(list(SHAPE)).drop_duplicates(list(SHAPE))
    if len(shapes) > MAX_SAMPLE_PANELS:     # a panel a shape: past a few dozen, unreadable and slow
        rep.p(f"{MAX_SAMPLE_PANELS} of the {len(shapes)} shapes, spread over their order (every "
              "shape's samples are in records.csv, time_samples_ms).")
        pick = np.linspace(0, len(shapes) - 1, MAX_SAMPLE_PANELS).round().astype(int)
        shapes = shapes.iloc[sorted(set(pick))]
    n = len(shapes)
    ncols = min(3, n)
    nrows = math.ceil(n / ncols)
    n_impl = best["implementation"].nunique()
    fig = _new_figure(5.2 * ncols + 1.5, (0.32 * n_impl + 1.3) * nrows + 0.6)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    rng = np.random.default_rng(0)                 # jitter only: the same picture every time
    for k, (_, sh) in enumerate(shapes.iterrows()):
        ax = axes[k // ncols][k % ncols]
        key = tuple(sh[c] for c in SHAPE)
        cell = best[[tuple(r) == key for r in best[list(SHAPE)].itertuples(index=False)]]
        impls = impl_order(cell["implementation"].unique(), palette)
        for y, impl in enumerate(impls):
            r = cell[cell["implementation"] == impl].iloc[0]
            xs = np.asarray(r["us"])
            ax.scatter(xs, y + rng.uniform(-0.18, 0.18, len(xs)), s=7, color=palette[impl],
                       alpha=0.55, linewidths=0)
            ax.plot([np.median(xs)] * 2, [y - 0.32, y + 0.32], color="0.1", lw=1.6)
        ax.set_yticks(range(len(impls)), labels=impls)
        ax.set_ylim(len(impls) - 0.5, -0.5)
        lo = min(min(v) for v in cell["us"])
        hi = max(max(v) for v in cell["us"])
        if hi / lo > 4:
            import matplotlib.ticker as mticker
            ax.set_xscale("log")
            # ticks at 1, 2 and 5 a decade, labelled: a span of 100–956 µs had no tick label
            # at all with the decades' alone
            ax.xaxis.set_major_locator(mticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(mticker.NullFormatter())
            ax.tick_params(axis="x", labelsize=8)
        ax.set_title(shape_label(sh, many_w), fontsize=10)
        ax.set_xlabel("µs per call")
    for k in range(n, nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle("Every timed sample (dots) and the median (bar), best GROUPS per implementation"
                 + (" — CPU wall-clock, interpreter" if interp else ""))
    rep.figure(PlotFigure("samples", "Every timed sample per shape", _png(fig),
                          "One row per implementation (its best GROUPS), one dot per sample; "
                          "colour is the implementation; the bar is the median the tables use."))


def plot_roofline(rep, df, comp, meta, palette, baseline, interp):
    rep.h(3, "Bytes moved against time")
    best = best_per_impl(comp)
    best = best[np.isfinite(best["bytes_moved"]) & (best["bytes_moved"] > 0)] if len(best) else best
    if best.empty:
        rep.p("Skipped: no record passed with a bytes-moved model.")
        return
    copy = one_copy_ceiling(df, meta)
    fig = _new_figure(8.0, 5.2)
    ax = fig.subplots()
    for impl in impl_order(best["implementation"].unique(), palette):
        s = best[best["implementation"] == impl]
        ax.scatter(s["bytes_moved"], s["time_ms"] * 1000, color=palette[impl], s=40,
                   edgecolors="0.2", linewidths=0.5, label=impl, alpha=0.9)
    nb = best["bytes_moved"].astype(float)
    lo, hi = float(nb.min()), float(nb.max())
    lo, hi = (lo / 2, hi * 2) if hi / lo < 4 else (lo / 1.3, hi * 1.3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    if copy:
        xs = np.geomspace(lo, hi, 50)
        ax.plot(xs, xs / (copy * 1e9) * 1e6, color="0.3", ls="--", lw=1.2,
                label=f"copy ceiling {copy:.0f} GB/s")
    ax.set_xlabel("bytes moved (minimal model)")
    ax.set_ylabel("median µs per call")
    fig.legend(loc="outside right center", frameon=False)
    fig.suptitle("Bytes moved against time" + (" — CPU wall-clock, interpreter" if interp else ""))
    rep.figure(PlotFigure("roofline", "Bytes moved against time", _png(fig),
                          "One point per shape and implementation (best GROUPS); colour is the "
                          "implementation. "
                          + ("The dashed line is the time a pass would take at this run's "
                             "measured device-to-device copy ceiling: points near it are "
                             "bandwidth-bound, points far above it are not."
                             if copy else f"{no_ceiling(meta)}: no line is drawn.")))
