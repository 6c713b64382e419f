"""The report's figures (matplotlib Agg, seaborn theme): bandwidth, GROUPS heatmaps,
determinism, speedup against a baseline, workspace against contention."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd

from normbench.harness.schema import compared_calls
from normbench.harness.summary import is_true
from .document import PlotFigure, Report
from .heatmap import column_chunks, fit, panels_per_figure
from .fmt import (SHAPE, best_per_impl, competing, finite, fmt_int, fmt_ratio, groups_ran,
                  impl_label, impl_order, implementation_order, shape_label, short,
                  show_weight, uses_groups)


# ---------------------------------------------------------------------------------------------
# plots

def _palette(df: pd.DataFrame) -> dict:
    """implementation -> colour, in display order: one colour per implementation in every plot."""
    import seaborn as sns
    colors = sns.color_palette("tab10", 10) + sns.color_palette("Dark2", 8)
    return {impl: colors[i % len(colors)] for i, impl in enumerate(implementation_order(df))}


# A figure names an implementation in at most this many characters: a legend entry or tick
# label of 128 left the axes no room at all (constrained_layout gave up, every other label
# was cut).  The tables keep the full name.
LABEL_MAX = 40


def plot_labels(names, width: int = LABEL_MAX) -> dict:
    """name -> its label in a figure: the name where it fits in WIDTH characters, else its
    start and end around '…' (names often differ at the end: a suffix, a version); distinct
    names keep distinct labels, a number before the end where start and end agree."""
    names = [str(n) for n in names]
    out, taken = {}, {n for n in names if len(n) <= width}
    head = width * 2 // 3

    def cut(n: str, tag: str) -> str:
        return n[:head] + tag + n[len(n) - max(0, width - head - len(tag)):]
    for n in names:
        if len(n) <= width:
            out[n] = n
            continue
        label, k = cut(n, "…"), 2
        while label in taken:
            label, k = cut(n, f"…#{k}…"), k + 1
        taken.add(label)
        out[n] = label
    return out


def _relabelled(df: pd.DataFrame, comp: pd.DataFrame, palette: dict):
    """DF, COMP and PALETTE with each implementation under its plot label, for the figures
    drawn from the frames' names as they are (plots_answer's); text beside them names none."""
    labels = plot_labels(palette)
    if all(k == v for k, v in labels.items()):
        return df, comp, palette

    def rename(frame):
        return frame.assign(implementation=frame["implementation"].map(lambda x: labels.get(x, x)))
    return rename(df), rename(comp), {labels[k]: c for k, c in palette.items()}


def _new_figure(w: float, h: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(min(w, 40), min(h, 40)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _heatmap(fig, ax, values: pd.DataFrame, annot, cmap, norm, fontsize: int = 8):
    """Annotated heatmap (imshow + text; NaN cells grey).  seaborn.heatmap redraws the whole
    figure to check label overlap, which costs about a second per panel on a small CPU."""
    import matplotlib as mpl
    data = np.ma.masked_invalid(values.to_numpy(dtype=float))
    cm = (mpl.colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad="#dddddd")
    im = ax.imshow(data, cmap=cm, norm=norm, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(values.shape[1]), labels=[str(c) for c in values.columns])
    ax.set_yticks(range(values.shape[0]), labels=[str(r) for r in values.index])
    ax.grid(False)
    for i in range(values.shape[0]):
        for j in range(values.shape[1]):
            t = annot[i][j]
            if not t:
                continue
            v = data[i, j]
            if np.ma.is_masked(v):
                color = "0.3"
            else:
                r, g, b, _ = cm(norm(v))
                color = "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"
            # out of the layout: a cell text left in lies inside its cell (heatmap.fit drops
            # every one where any does not), and constrained layout measured each of
            # thousands of them in every draw
            ax.text(j, i, t, ha="center", va="center", fontsize=fontsize, color=color,
                    in_layout=False)
    return im


def _heatmap_figures(values: pd.DataFrame, annot, cmap, norm, label: str, *, col_w: float,
                     extra_w: float, panel_h: float, min_w: float = 0.0, xlabel: str,
                     ylabel: str, title: str) -> list[tuple]:
    """VALUES (a row per line, a column per shape) as heatmaps of at most heatmap.MAX_COLS
    columns a panel, panels stacked under one colour bar up to heatmap.MAX_HEIGHT inches a
    figure, further figures after: [(figure, its shape columns (first, last, of), whether
    its cells kept their numbers)].  A run of up to MAX_COLS shapes draws one figure of one
    panel, COL_W inches a column plus EXTRA_W, PANEL_H high (at least MIN_W wide)."""
    chunks = column_chunks(values.shape[1])
    per_fig = panels_per_figure(panel_h)
    groups = [chunks[i:i + per_fig] for i in range(0, len(chunks), per_fig)]
    annot = np.asarray(annot, dtype=object)
    out = []
    for part in groups:
        width = max(col_w * max(len(c) for c in part) + extra_w, min_w)
        fig = _new_figure(width, panel_h * len(part))
        axes = list(fig.subplots(len(part), 1, squeeze=False)[:, 0])
        for ax, cols in zip(axes, part):
            im = _heatmap(fig, ax, values.iloc[:, cols.start:cols.stop],
                          annot[:, cols.start:cols.stop], cmap, norm)
            ax.set_ylabel(ylabel)
            _slant_xticks(ax)
        axes[-1].set_xlabel(xlabel)
        fig.colorbar(im, ax=axes, label=label)
        first, last = part[0].start + 1, part[-1].stop
        fig.suptitle(title if len(groups) == 1 else
                     f"{title} (shapes {first}–{last} of {values.shape[1]})")
        out.append((fig, (first, last, values.shape[1]), fit(fig, axes)))
    return out


def _heatmap_figure_name(name: str, k: int) -> str:
    """The file stem of a heatmap's K-th figure (from 0): the first keeps NAME."""
    return name if k == 0 else f"{name}_part{k + 1}"


def _add_heatmaps(rep, figs: list[tuple], name: str, title: str, caption: str) -> None:
    """_heatmap_figures' figures into the report: NAME, NAME_part2 ..., each captioned."""
    for k, (fig, shapes, kept) in enumerate(figs):
        rep.figure(PlotFigure(_heatmap_figure_name(name, k), title, _png(fig),
                              _heatmap_caption(caption, kept, shapes, len(figs))))


def _heatmap_caption(caption: str, kept: bool, shapes: tuple, parts: int) -> str:
    """CAPTION with what a figure of several (SHAPES: first, last, of) leaves to others,
    and that its cells lost their numbers where they had no room."""
    first, last, n = shapes
    where = f" Shapes {first}–{last} of {n} (this heatmap spans {parts} figures)." if parts > 1 else ""
    return caption + where + ("" if kept else " Cell numbers left out: the cells are too "
                              "small for them.")


def plots_section(rep: Report, df: pd.DataFrame, meta: dict, baseline: str, interp: bool) -> None:
    import matplotlib as mpl
    import seaborn as sns
    with mpl.rc_context():                   # the theme must not leak into the caller's matplotlib
        sns.set_theme(style="whitegrid", context="notebook")
        _plots(rep, df, meta, baseline, interp)


def _plots(rep: Report, df: pd.DataFrame, meta: dict, baseline: str, interp: bool) -> None:
    rep.h(2, "Plots", "plots")
    comp = competing(df)
    if interp:
        rep.p("Timings below are CPU wall-clock under the Triton interpreter.")
    palette = _palette(df)
    from .plots_answer import plot_roofline, plot_samples
    from .plots_bandwidth import plot_bandwidth
    short = _relabelled(df, comp, palette)
    for section in (plot_samples, plot_roofline, plot_bandwidth, _plot_group_heatmaps,
                    _plot_determinism, _plot_speedup, _plot_workspace):
        # plots_answer's figures label with the frames' names: they get the short ones;
        # the sections here name implementations in text too, and shorten their labels only
        d, c, p = short if section in (plot_samples, plot_roofline) else (df, comp, palette)
        try:
            section(rep, d, c, meta, p, baseline, interp)
        except Exception as e:                # one bad plot must not cost the whole report
            name = section.__name__.removeprefix("_").removeprefix("plot_")
            rep.warn(f"{name} plot failed: {type(e).__name__}: {e}")


def _plot_group_heatmaps(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    rep.h(3, "Time over GROUPS × rows")
    grouped = comp[np.isfinite(comp["groups_effective"])]
    impls = impl_order(df.loc[df["groups"].map(uses_groups) | np.isfinite(df["groups_effective"]),
                          "implementation"].unique(), palette)
    if not impls:
        rep.p("Skipped: no implementation in this run uses GROUPS.")
        return
    many_w = show_weight(df)
    label = plot_labels(palette)
    notes = []
    for impl in impls:
        sub = grouped[grouped["implementation"] == impl]
        gvals = sorted(sub["groups_effective"].unique())
        # a shape measured at one GROUPS only would be a one-cell column at 1.000: left out
        per_shape = sub.groupby(list(SHAPE), dropna=False)["groups_effective"].transform("nunique")
        sub = sub[per_shape > 1]
        if sub.empty:
            notes.append(f"`{impl}`: skipped — " + (
                f"only one GROUPS value per shape measured and passing ({', '.join(fmt_int(g) for g in gvals)})"
                if gvals else "no passing record with a GROUPS value"))
            continue
        gvals = sorted(sub["groups_effective"].unique())
        # One axes: a row per GROUPS, a column per shape with rows varying fastest, so
        # neighbouring columns show how the best GROUPS moves with rows.
        sub = sub.sort_values(["norm", "dtype", "weight_dtype", "d", "rows"])
        sub = sub.assign(col=[shape_label(r, many_w) for _, r in sub.iterrows()])
        cols = sub["col"].drop_duplicates().tolist()
        piv = (sub.pivot_table(index="groups_effective", columns="col", values="time_ms",
                               aggfunc="min").reindex(columns=cols)) * 1000      # µs
        rel = piv / piv.min(axis=0)
        annot = piv.map(short).to_numpy()
        rel.index = [fmt_int(v) for v in piv.index]
        hi = max(float(np.nanmax(rel.to_numpy())), 1.01)
        figs = _heatmap_figures(rel, annot, "rocket_r", mcolors.Normalize(vmin=1, vmax=hi),
                                "÷ best GROUPS", col_w=0.95, extra_w=3.2,
                                panel_h=max(4.0, 0.42 * len(gvals) + 2.6),
                                xlabel="shape (norm rows×d dtype)", ylabel="GROUPS (effective)",
                                title=f"{label[impl]}: median µs per GROUPS and shape")
        _add_heatmaps(rep, figs, f"groups_{impl}", f"{impl}: time over GROUPS × rows",
                      "Numbers are median µs; colour is the time relative to the best GROUPS "
                      "for the same shape (1 = best; grey = not measured or not passing). "
                      "Passing records only.")
    rep.bullets(notes)


def _slant_xticks(ax) -> None:
    """Long shape labels at 45°, anchored at their right end under the tick."""
    ax.tick_params(axis="x", labelrotation=45)
    for lab in ax.get_xticklabels():
        lab.set_horizontalalignment("right")
        lab.set_rotation_mode("anchor")


def _compared_calls(df) -> str:
    """What the run's distinct_results count among: the last timed call only where its records
    compared it (last_call_compared; records before session 43 compared the repeats only)."""
    judged = df.loc[df["distinct_results"].map(finite), "last_call_compared"].map(is_true)
    if len(judged) and judged.all():
        return compared_calls("R", True)
    if judged.any():
        return compared_calls("R", False) + " (and the last timed call where a record compared it)"
    return compared_calls("R", False)


def _plot_determinism(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    among = _compared_calls(df)
    rep.h(3, f"Determinism: distinct results in {among}")
    if df.empty:
        rep.p("Skipped: no records.")
        return
    if interp:
        rep.p("Under the Triton interpreter the programs run one at a time, in order: a race "
              "cannot show, so these verdicts say nothing of a GPU's.")
    many_w = show_weight(df)
    multi_g = df.groupby("implementation")["groups"].nunique()
    # A row per GROUPS asked for (the case's key), not per GROUPS that ran: a strategy caps
    # GROUPS by the rows, so one value asked runs different counts at different shapes and
    # would split into rows grey where it ran.  The count that ran is in the cell instead.
    named = df["implementation"].map(lambda i: multi_g.get(i, 0) > 1)
    label = plot_labels(palette)
    short = [label.get(str(r.implementation), str(r.implementation)) for r in df.itertuples()]
    d2 = df.assign(
        row=[impl_label(s, r.groups, None) if g else s
             for r, g, s in zip(df.itertuples(), named, short)],
        ran=[groups_ran(r.groups, r.groups_effective) if g else ""
             for r, g in zip(df.itertuples(), named)],
        asked=pd.to_numeric(df["groups"], errors="coerce"),        # "auto": NaN, first
        col=[shape_label(r, many_w) for _, r in df.iterrows()])
    rows_order = []
    for impl in impl_order(d2["implementation"].unique(), palette):
        labels = d2.loc[d2["implementation"] == impl, ["row", "asked"]].drop_duplicates("row")
        rows_order += list(labels.sort_values("asked", na_position="first")["row"])
    shape_order = (d2.sort_values(list(SHAPE), key=lambda s: s.map(str) if s.dtype == object else s)
                   ["col"].drop_duplicates().tolist())
    val = pd.DataFrame(np.nan, index=rows_order, columns=shape_order)
    txt = pd.DataFrame("", index=rows_order, columns=shape_order)
    for _, r in d2.iterrows():
        if r["status"] == "ok" and finite(r["distinct_results"]):
            k = float(r["distinct_results"])
            if np.isnan(val.at[r["row"], r["col"]]) or k > val.at[r["row"], r["col"]]:
                val.at[r["row"], r["col"]] = k
                txt.at[r["row"], r["col"]] = (f"{fmt_int(k)}/{fmt_int(r['repeats'])}"
                                              + (f"\n→{r['ran']}" if r["ran"] else ""))
        elif not txt.at[r["row"], r["col"]]:
            txt.at[r["row"], r["col"]] = "–" if r["status"] == "ok" else str(r["status"])
    if val.isna().all().all():
        rep.p("Skipped: no record measured determinism (distinct_results).")
        return
    vmax = max(2.0, float(np.nanmax(val.to_numpy())))
    cmap = mcolors.LinearSegmentedColormap.from_list("det", ["#1a9850", "#fee08b", "#d73027"])
    nondet_design = df[(df["deterministic"].map(lambda v: v is False))
                       & (df["deterministic_by_design"].map(lambda v: v is True))]
    # the caption says among what; fit() grows a figure its colour bar's label outgrows
    figs = _heatmap_figures(val, txt.to_numpy(), cmap, mcolors.Normalize(vmin=1, vmax=vmax),
                            "distinct results (1 = bitwise deterministic)", col_w=1.0,
                            extra_w=3.5, panel_h=max(3.4, 0.42 * len(rows_order) + 1.8),
                            xlabel="shape", ylabel="", title="Distinct bit patterns of (dx, dγ, dβ)")
    _add_heatmaps(rep, figs, "determinism", "Determinism matrix",
                  f"k/R: k distinct bit patterns of (dx, dγ, dβ) in {among}; a row per GROUPS "
                  "asked for where an implementation ran with several (→n under k/R: the "
                  "GROUPS that ran there, where the strategy capped them); grey: not measured "
                  "(error/skip/timeout).")
    if not nondet_design.empty:
        rep.warn("implementations deterministic by design gave differing results: "
                 + ", ".join(sorted({impl_label(r['implementation'], r['groups'], r['groups_effective'])
                                     for _, r in nondet_design.iterrows()})) + ".")


def _plot_speedup(rep, df, comp, meta, palette, baseline, interp):
    import matplotlib.colors as mcolors
    rep.h(3, f"Speedup against `{baseline}`")
    impls = set(df["implementation"].dropna())
    if baseline not in impls:
        rep.p(f"Skipped: the baseline `{baseline}` is not in this run "
              f"(implementations: {', '.join(impl_order(impls, palette)) or 'none'}).")
        return
    best = best_per_impl(comp)
    base = best[best["implementation"] == baseline]
    if base.empty:
        rep.p(f"Skipped: `{baseline}` is in this run but never passed (status ok and correct); "
              "see the failures section.")
        return
    others = best[best["implementation"] != baseline]
    if others.empty:
        rep.p(f"Skipped: no other implementation passed to compare with `{baseline}`.")
        return
    many_w = show_weight(df)
    bt = {tuple(r[k] for k in SHAPE): float(r["time_ms"]) for _, r in base.iterrows()}
    cols = (best.sort_values(list(SHAPE)).apply(lambda r: shape_label(r, many_w), axis=1)
            .drop_duplicates().tolist())
    rows_order = impl_order(others["implementation"].unique(), palette)
    sp = pd.DataFrame(np.nan, index=rows_order, columns=cols)
    for _, r in others.iterrows():
        t0 = bt.get(tuple(r[k] for k in SHAPE))
        if t0:
            sp.at[r["implementation"], shape_label(r, many_w)] = t0 / float(r["time_ms"])
    if sp.isna().all().all():
        rep.p(f"Skipped: `{baseline}` passed on no shape where another implementation passed.")
        return
    label = plot_labels(palette)
    sp.index = [label[x] for x in sp.index]
    lg = np.log2(sp)
    lim = max(0.25, float(np.nanmax(np.abs(lg.to_numpy()))))
    annot = sp.map(lambda v: f"{fmt_ratio(v)}×" if finite(v) else "")     # 0.00123×, not 0.00×
    # at least the title's width: a run of one or two shapes cut it off at both sides
    figs = _heatmap_figures(lg, annot.to_numpy(), "RdYlGn", mcolors.Normalize(vmin=-lim, vmax=lim),
                            f"log2 speedup vs {label[baseline]}", col_w=1.0, extra_w=3.5,
                            min_w=6.5, panel_h=max(3.4, 0.45 * len(rows_order) + 2.0),
                            xlabel="shape", ylabel="",
                            title=f"Speedup = t({label[baseline]}) / t(implementation)\n"
                                  "best GROUPS each; > 1 is faster")
    _add_heatmaps(rep, figs, f"speedup_vs_{baseline}", f"Speedup against {baseline}",
                  "Grey: no passing result for that implementation or for the baseline.")


def _plot_workspace(rep, df, comp, meta, palette, baseline, interp):
    rep.h(3, "Workspace against writers per slot")
    pts = comp[np.isfinite(comp["workspace_bytes"]) & (comp["workspace_bytes"] > 0)
               & np.isfinite(comp["writers_per_slot"]) & (comp["writers_per_slot"] > 0)]
    left_out = sorted(set(comp["implementation"]) - set(pts["implementation"]))
    if pts.empty:
        rep.p("Skipped: no passing record has both a workspace and a writers-per-slot model.")
        return
    markers = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
    label = plot_labels(palette)
    fig = _new_figure(7.5, 5.0)
    ax = fig.subplots()
    for k, impl in enumerate(impl_order(pts["implementation"].unique(), palette)):
        s = pts[pts["implementation"] == impl]
        ax.scatter(s["writers_per_slot"], s["workspace_bytes"], color=palette[impl],
                   marker=markers[k % len(markers)], s=60, edgecolors="0.2", linewidths=0.6,
                   label=label[impl], alpha=0.85)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("writers per dγ slot (contention model)")
    ax.set_ylabel("fp32 workspace bytes")
    fig.legend(loc="outside right center", frameon=False)
    fig.suptitle("Workspace against contention (the model, per passing record)")
    rep.figure(PlotFigure("workspace_vs_writers", "Workspace against writers per slot", _png(fig),
                          "Each point is one passing record; colour and marker are its "
                          "implementation (times are in the plots above)."
                          + (f" Not drawn (no workspace or no writers model): "
                             f"{', '.join(left_out)}." if left_out else "")))
