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

from .coverage import last_of_each_key
from .fmt import finite, fmt_int, fmt_ratio, fmt_us


KEY = ("norm", "dtype", "weight_dtype", "rows", "d")       # a table's, then a row's
# What the cells read of a record (_text's, hostload.contention_note's, summary.why_out's)
CELL = ("implementation", "time_ms", "gpu_time_ms", "host_overhead_ms", "groups",
        "groups_effective", "status", "correct", "concurrent_cases", "hostname",
        "deterministic", "deterministic_by_design")


def _where(frame, cols=KEY) -> dict:
    """{(frame's values at `cols`): the label of its first row so} — a lookup per shape in
    place of filtering the whole frame for each shape and implementation."""
    at = {}
    for label, key in zip(frame.index, zip(*(frame[c] for c in cols))):
        at.setdefault(key, label)
    return at


def _text(r: dict, g: float, gpu: bool) -> tuple[str, bool]:
    """(one record's cell text: call time, GPU time g (ms, NaN for none), GROUPS, ‡;
    whether it carries ‡)."""
    txt = fmt_us(float(r["time_ms"]) * 1000)
    if gpu:
        txt += " / " + (fmt_us(g * 1000) if np.isfinite(g) else "–")
    if r["groups"] not in ("-", None) and finite(r["groups_effective"]):
        txt += f" G{int(r['groups_effective'])}"
    contended = hostload.contention_note(r) is not None
    return txt + (f" {summary.CONTENDED_MARK}" if contended else ""), contended


def print_tables(df, meta: dict, console) -> None:
    if df.empty:
        return
    # a case recorded more than once (a hand-joined records.csv, resumed): its last record,
    # as the report, compare and export take it
    df = last_of_each_key(df)[0].reset_index(drop=True)
    ans = summary.answer(df)
    best = summary.best_groups(df)
    # the deterministic role's records: ◆ shows the answer's det record, which need not be its
    # implementation's best GROUPS (a faster GROUPS measured nondeterministic competes as nondet)
    who = df[[c for c in summary.ROLE_COLUMNS if c in df.columns]].to_dict("records")
    best_det = summary.best_groups(df[[summary.role(r) == "det" for r in who]])
    # each lookup built once: a record (by label) as the cells read it, a shape's answer row,
    # an implementation's best (and best deterministic) record at a shape
    recs = df[[c for c in CELL if c in df.columns]].to_dict("records")
    gpu_ms = summary.times(df, "gpu_time_ms").to_numpy()
    ans_at = _where(ans.reset_index(drop=True))
    best_at, det_at = (_where(f, (*KEY, "implementation")) for f in (best, best_det))
    gpu = "decided_on" in ans.columns
    impls = list(dict.fromkeys(df["implementation"]))
    clock = "call µs / GPU µs" if gpu else "median µs"
    tail = ["det÷nondet", "peer÷det"] + (["decided on"] if gpu else [])
    keys = df[[*KEY, "implementation"]]
    for (norm, dtype, wdt), part in keys.groupby(["norm", "dtype", "weight_dtype"], sort=False):
        title = escape(f"{norm}, {dtype} (weight {wdt}) — {clock}, best GROUPS per "
                       "implementation")
        contended = split = broken = False   # a cell carries the mark: its legend is due
        body = []                   # per shape: (its label, a cell per implementation, the tail)
        for (rows, d), shape in part.groupby(["rows", "d"], sort=True):
            key = (norm, dtype, wdt, rows, d)
            a = ans.iloc[ans_at[key]] if key in ans_at else None
            fastest = np.nan if a is None or is_missing(a["fastest"]) else a[f"{a['fastest']}_us"]
            mine_at: dict = {}                       # each one's records here, in order
            for label, n in zip(shape.index, shape["implementation"]):
                mine_at.setdefault(n, []).append(label)
            cells = []
            for n in impls:
                rec = best_at.get((*key, n))
                if rec is None:         # none competed: why, as summary's answer says it
                    mine = mine_at.get(n)
                    cells.append("" if mine is None else
                                 f"[red]✗ {escape(summary.why_none([recs[i] for i in mine]))}[/]")
                    continue
                shown = [(rec, "")]
                if a is not None and n == a["det_impl"]:
                    det = det_at[(*key, n)]
                    shown = [(det, "◆")] + ([] if det == rec else [(rec, "nondet")])
                lines = []
                for label, mark in shown:
                    r = recs[label]
                    txt, c = _text(r, gpu_ms[label], gpu)
                    contended |= c
                    us = float(r["time_ms"]) * 1000
                    if us == fastest or summary.tied(us, fastest):     # ties: every one ★
                        txt = f"[bold green]★ {txt}[/]"
                    if mark == "◆":
                        txt = f"[bold cyan]◆ {txt}[/]"
                    elif mark:
                        txt, split = f"{txt} {mark}", True
                    elif summary.not_repeatable(r):
                        txt, broken = f"{txt} [red]nondet ✗[/]", True
                    lines.append(txt)
                cells.append("\n".join(lines))
            ratios = ["" if a is None else fmt_ratio(a[c])
                      for c in ("det_over_nondet", "peer_over_det")]
            extra = [escape(str(a["decided_on"])) if a is not None else ""] if gpu else []
            body.append((f"{fmt_int(rows)} × {fmt_int(d)}", cells, ratios + extra))
        caption = _caption(contended, gpu, meta, split, broken)
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


def _caption(contended: bool, gpu: bool, meta: dict, split: bool = False,
             broken: bool = False) -> str:
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
    if broken:
        caption += ("\nnondet ✗: deterministic by design, yet its repeats differed — it competes "
                    "as nondeterministic; run --strict fails it, the report lists it")
    if contended:
        caption += (f"\n{summary.CONTENDED_MARK} host-bound and measured next to other cases "
                    "on its host: may be inflated by host contention")
    if not gpu:
        caption += "\nGPU time not measured: call time as the host sees it"
    if meta.get("interpreted"):
        caption += "\nCPU wall-clock under the Triton interpreter: not GPU performance"
    return caption
