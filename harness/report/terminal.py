"""The end-of-run tables in the terminal (rich): per (norm, dtype, weight dtype), shape ×
implementation median µs of the best GROUPS, the best deterministic strategy marked ◆ (its
deterministic record: a faster GROUPS of it measured nondeterministic follows on a second
line, marked nondet), the fastest of the shape ★ (every time within summary.TIE of the
fastest: a tie marks each), and the ratios of harness/summary.py's answer, under a note naming
the peers recorded at a shape without competing there (summary.peers_out: peer÷det is against
those that passed).  A table wider than the console is split by implementations over as few
tables as fit, never cut."""
from __future__ import annotations

import numpy as np
from rich.markup import escape
from rich.table import Table

from normbench.harness import hostload, summary
from normbench.harness.cells import is_missing

from .fmt import finite, fmt_int, fmt_ratio, fmt_us


def _at(frame, key: tuple, impl):
    """The rows of `frame` at shape key = (norm, dtype, weight dtype, rows, d) of `impl`."""
    norm, dtype, wdt, rows, d = key
    return frame[(frame.norm == norm) & (frame.dtype == dtype) & (frame.weight_dtype == wdt)
                 & (frame.rows == rows) & (frame.d == d) & (frame.implementation == impl)]


def _text(r, gpu: bool) -> tuple[str, bool]:
    """(one record's cell text: call time, GPU time, GROUPS, ‡; whether it carries ‡)."""
    txt = fmt_us(float(r["time_ms"]) * 1000)
    if gpu:
        g = summary.times(r.to_frame().T, "gpu_time_ms").iloc[0]
        txt += " / " + (fmt_us(g * 1000) if np.isfinite(g) else "–")
    if r["groups"] not in ("-", None) and finite(r["groups_effective"]):
        txt += f" G{int(r['groups_effective'])}"
    contended = hostload.contention_note(r) is not None
    return txt + (f" {summary.CONTENDED_MARK}" if contended else ""), contended


def print_tables(df, meta: dict, console) -> None:
    if df.empty:
        return
    ans = summary.answer(df)
    best = summary.best_groups(df)
    # the deterministic role's records: ◆ shows the answer's det record, which need not be its
    # implementation's best GROUPS (a faster GROUPS measured nondeterministic competes as nondet)
    det_rows = df[[summary.role(r) == "det" for _, r in df.iterrows()]]
    best_det = summary.best_groups(det_rows)
    gpu = "decided_on" in ans.columns
    impls = list(dict.fromkeys(df["implementation"]))
    clock = "call µs / GPU µs" if gpu else "median µs"
    tail = ["det÷nondet", "peer÷det"] + (["decided on"] if gpu else [])
    for (norm, dtype, wdt), part in df.groupby(["norm", "dtype", "weight_dtype"], sort=False):
        title = escape(f"{norm}, {dtype} (weight {wdt}) — {clock}, best GROUPS per "
                       "implementation")
        contended = split = False   # a cell of this table carries the mark: its legend is due
        body = []                   # per shape: (its label, a cell per implementation, the tail)
        for (rows, d), shape in part.groupby(["rows", "d"], sort=True):
            key = (norm, dtype, wdt, rows, d)
            sel = ans[(ans.norm == norm) & (ans.dtype == dtype) & (ans.weight_dtype == wdt)
                      & (ans.rows == rows) & (ans.d == d)]
            a = sel.iloc[0] if len(sel) else None
            fastest = np.nan if a is None or is_missing(a["fastest"]) else a[f"{a['fastest']}_us"]
            cells = []
            for n in impls:
                rec = _at(best, key, n)
                if rec.empty:
                    mine = shape[shape.implementation == n]
                    cells.append("" if mine.empty else
                                 f"[red]✗ {escape(summary.why_out(mine.iloc[0]))}[/]")
                    continue
                shown = [(rec.iloc[0], "")]
                if a is not None and n == a["det_impl"]:
                    det = _at(best_det, key, n).iloc[0]
                    shown = [(det, "◆")] + ([] if det.name == rec.index[0] else
                                            [(rec.iloc[0], "nondet")])
                lines = []
                for r, mark in shown:
                    txt, c = _text(r, gpu)
                    contended |= c
                    us = float(r["time_ms"]) * 1000
                    if us == fastest or summary.tied(us, fastest):     # ties: every one ★
                        txt = f"[bold green]★ {txt}[/]"
                    if mark == "◆":
                        txt = f"[bold cyan]◆ {txt}[/]"
                    elif mark:
                        txt, split = f"{txt} {mark}", True
                    lines.append(txt)
                cells.append("\n".join(lines))
            ratios = ["" if a is None else fmt_ratio(a[c])
                      for c in ("det_over_nondet", "peer_over_det")]
            extra = [escape(str(a["decided_on"])) if a is not None else ""] if gpu else []
            body.append((f"{fmt_int(rows)} × {fmt_int(d)}", cells, ratios + extra))
        caption = _caption(contended, gpu, meta, split)
        these = ans[(ans.norm == norm) & (ans.dtype == dtype) & (ans.weight_dtype == wdt)]
        for note in (summary.mixed_devices(these), summary.peers_out(these)):
            if note:
                caption += "\n" + escape(note)
        for t in _fitting(console, title, impls, body, tail, caption):
            console.print(t)


def _fitting(console, title: str, impls: list, body: list, tail: list, caption: str) -> list:
    """The table, whole where it fits the console's width; else its implementations' columns
    split over as few tables as fit (each with the shape's column, the last with the ratios
    and the legend): rich fits a table too wide by cutting its cells with "…", which made a
    median of 1 500 538 µs read "15005…" and two columns both "h5_d…".  Where even one
    implementation a table is too wide, cells fold onto more lines, never cut."""
    for k in range(1, len(impls) + 1):
        size = -(-len(impls) // k)
        parts = [range(i, min(i + size, len(impls))) for i in range(0, len(impls), size)]
        tables = [_table(title if len(parts) == 1 else
                         f"{title} ({j + 1} of {len(parts)})", impls, body, cols,
                         tail if j == len(parts) - 1 else [],
                         caption if j == len(parts) - 1 else None)
                  for j, cols in enumerate(parts)]
        wide = console.options.update_width(1 << 16)     # the width it needs, not the console's
        if all(console.measure(t, options=wide).maximum <= console.width for t in tables):
            break
    return tables


def _table(title: str, impls: list, body: list, cols: range, tail: list, caption) -> Table:
    """One table of the implementations at `cols` (indices into impls), every shape a row."""
    t = Table(title=title, caption=caption)
    t.add_column("rows × d", overflow="fold")
    for k in cols:
        t.add_column(escape(str(impls[k])), justify="right", overflow="fold")
    for h in tail:
        t.add_column(h, justify="left" if h == "decided on" else "right", overflow="fold")
    for label, cells, after in body:
        t.add_row(label, *(cells[k] for k in cols), *(after if tail else []))
    return t


def _caption(contended: bool, gpu: bool, meta: dict, split: bool = False) -> str:
    """The legend of one table: the ‡ line only where a cell carries the mark (a record
    measured next to others that is not host-bound carries none); the "nondet" line only
    where a ◆ cell shows a second, faster GROUPS measured nondeterministic."""
    caption = (f"★ fastest, or tied with it (within {summary.TIE:.1%})   ◆ best deterministic   "
               "✗ not competing, and why   det÷nondet: what determinism costs   "
               "peer÷det: > 1 ours is faster")
    if split:
        caption += ("\n◆ the best deterministic record; under it, marked nondet, the "
                    "implementation's faster GROUPS whose repeats differed (it competes as "
                    "nondeterministic)")
    if contended:
        caption += (f"\n{summary.CONTENDED_MARK} host-bound and measured next to other cases "
                    "on its host: may be inflated by host contention")
    if not gpu:
        caption += "\nGPU time not measured: call time as the host sees it"
    if meta.get("interpreted"):
        caption += "\nCPU wall-clock under the Triton interpreter: not GPU performance"
    return caption
