"""The end-of-run tables in the terminal (rich): per (norm, dtype, weight dtype), shape ×
implementation median µs of the best GROUPS, the best deterministic strategy marked ◆, the
fastest of the shape ★ (every time within summary.TIE of the fastest: a tie marks each), and
the ratios of harness/summary.py's answer."""
from __future__ import annotations

import numpy as np
from rich.markup import escape
from rich.table import Table

from normbench.harness import hostload, summary
from normbench.harness.cells import is_missing

from .fmt import finite, fmt_int, fmt_ratio, fmt_us


def _why_not(rec) -> str:
    """What a cell without a time says: the record's status, or, where it ran (status ok),
    "wrong" for a result that failed against fp64 and "no time" for one without a positive
    finite median (`summary.competing`)."""
    status = str(rec["status"])
    if status != "ok":
        return status
    return "no time" if summary.is_true(rec.get("correct")) else "wrong"


def print_tables(df, meta: dict, console) -> None:
    if df.empty:
        return
    ans = summary.answer(df)
    best = summary.best_groups(df)
    gpu = "decided_on" in ans.columns
    impls = list(dict.fromkeys(df["implementation"]))
    clock = "call µs / GPU µs" if gpu else "median µs"
    for (norm, dtype, wdt), part in df.groupby(["norm", "dtype", "weight_dtype"], sort=False):
        t = Table(title=escape(f"{norm}, {dtype} (weight {wdt}) — {clock}, best GROUPS per "
                               "implementation"))
        contended = False          # a cell of this table carries the mark: its legend is due
        t.add_column("rows × d")
        for n in impls:
            t.add_column(escape(str(n)), justify="right")
        t.add_column("det÷nondet", justify="right")
        t.add_column("peer÷det", justify="right")
        if gpu:
            t.add_column("decided on")
        for (rows, d), shape in part.groupby(["rows", "d"], sort=True):
            sel = ans[(ans.norm == norm) & (ans.dtype == dtype) & (ans.weight_dtype == wdt)
                      & (ans.rows == rows) & (ans.d == d)]
            a = sel.iloc[0] if len(sel) else None
            fastest = np.nan if a is None or is_missing(a["fastest"]) else a[f"{a['fastest']}_us"]
            cells = []
            for n in impls:
                rec = best[(best.norm == norm) & (best.dtype == dtype) & (best.weight_dtype == wdt)
                           & (best.rows == rows) & (best.d == d) & (best.implementation == n)]
                if rec.empty:
                    mine = shape[shape.implementation == n]
                    cells.append("" if mine.empty else f"[red]✗ {escape(_why_not(mine.iloc[0]))}[/]")
                    continue
                r = rec.iloc[0]
                us = float(r["time_ms"]) * 1000
                txt = fmt_us(us)
                if gpu:
                    g = summary.times(rec, "gpu_time_ms").iloc[0]
                    txt += " / " + (fmt_us(g * 1000) if np.isfinite(g) else "–")
                if r["groups"] not in ("-", None) and finite(r["groups_effective"]):
                    txt += f" G{int(r['groups_effective'])}"
                if hostload.contention_note(r) is not None:
                    txt += f" {summary.CONTENDED_MARK}"
                    contended = True
                if us == fastest or summary.tied(us, fastest):     # ties: every one ★
                    txt = f"[bold green]★ {txt}[/]"
                if a is not None and n == a["det_impl"]:
                    txt = f"[bold cyan]◆ {txt}[/]"
                cells.append(txt)
            ratios = ["" if a is None else fmt_ratio(a[c])
                      for c in ("det_over_nondet", "peer_over_det")]
            extra = [escape(str(a["decided_on"])) if a is not None else ""] if gpu else []
            t.add_row(f"{fmt_int(rows)} × {fmt_int(d)}", *cells, *ratios, *extra)
        t.caption = _caption(contended, gpu, meta)
        console.print(t)


def _caption(contended: bool, gpu: bool, meta: dict) -> str:
    """The legend of one table: the ‡ line only where a cell carries the mark (a record
    measured next to others that is not host-bound carries none)."""
    caption = (f"★ fastest, or tied with it (within {summary.TIE:.1%})   ◆ best deterministic   "
               "✗ incorrect/error   det÷nondet: what determinism costs   "
               "peer÷det: > 1 ours is faster")
    if contended:
        caption += (f"\n{summary.CONTENDED_MARK} host-bound and measured next to other cases "
                    "on its host: may be inflated by host contention")
    if not gpu:
        caption += "\nGPU time not measured: call time as the host sees it"
    if meta.get("interpreted"):
        caption += "\nCPU wall-clock under the Triton interpreter: not GPU performance"
    return caption
