"""The report's first section — per shape, the best deterministic strategy, the best
nondeterministic one and the best peer, the ratios between them and each one's p20–p80
spread, in µs — and the README's results table generated from a run.  The figures come from
harness/summary.py; this module only lays them out."""
from __future__ import annotations

import numpy as np
import pandas as pd

from normbench.harness import hostload, summary
from normbench.harness.summary import CONTENDED_MARK, ROLE_TEXT, ROLES, SPREAD_MARK
from normbench.harness.text import count

from .coverage import Coverage
from .document import Report, md_table
from .fmt import finite, fmt_int, fmt_ratio, fmt_us, impl_label, show_weight

NORM_SHORT = {"layernorm": "LN", "rmsnorm": "RMS"}


def _shape_cols(a: pd.DataFrame, many_dtypes: bool) -> pd.DataFrame:
    t = pd.DataFrame({"norm": a["norm"],
                      "rows × d": [f"{fmt_int(r)} × {fmt_int(d)}" for r, d in zip(a["rows"], a["d"])]})
    t["dtype"] = [f"{x}/{w}" if many_dtypes else str(x)
                  for x, w in zip(a["dtype"], a["weight_dtype"])]
    return t


def _spread(lo, hi) -> str:
    return f"{fmt_us(lo)}–{fmt_us(hi)}" if finite(lo) and finite(hi) else ""


def _none(n: int, unmeasured: bool) -> str:
    """A role without a competing record at a shape: "none passed" where the run recorded
    such implementations there; "not measured here" where the plan may have one this
    directory lacks (an incomplete run: coverage.py); else "not in run"."""
    return "none passed" if n else "not measured here" if unmeasured else "not in run"


def unmeasured(a: pd.DataFrame, cov: Coverage | None, r: str) -> list[bool]:
    """Per answer row: may the plan have an implementation of role r there, unrecorded?"""
    return [cov is not None and cov.unmeasured(shape, r)
            for shape in a[list(summary.SHAPE)].itertuples(index=False, name=None)]


def answer_table(df: pd.DataFrame, cov: Coverage | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the table as shown, summary.answer's figures behind it)."""
    a = summary.answer(df)
    if a.empty:
        return pd.DataFrame(), a
    t = _shape_cols(a, show_weight(df))
    gpu = "decided_on" in a.columns
    for r in ROLES:
        t[ROLE_TEXT[r]] = [impl_label(i, g, ge) if isinstance(i, str) else _none(n, u)
                           for i, g, ge, n, u in zip(a[f"{r}_impl"], a[f"{r}_groups"],
                                                     a[f"{r}_groups_effective"],
                                                     a[f"{r}_recorded"], unmeasured(a, cov, r))]
        t[f"{r} µs"] = [fmt_us(v) + (" †" if finite(s) and s > SPREAD_MARK else "")
                        + (f" {CONTENDED_MARK}" if c else "")
                        for v, s, c in zip(a[f"{r}_us"], a[f"{r}_spread"], a[f"{r}_contended"])]
        t[f"{r} p20–p80 µs"] = [_spread(lo, hi) for lo, hi in zip(a[f"{r}_p20_us"], a[f"{r}_p80_us"])]
        if gpu:
            t[f"{r} GPU µs"] = a[f"{r}_gpu_us"].map(fmt_us)
    t["det ÷ nondet"] = a["det_over_nondet"].map(fmt_ratio)
    t["peer ÷ det"] = a["peer_over_det"].map(fmt_ratio)
    if gpu:
        t["decided on"] = a["decided_on"]
    t["passing"] = [f"{p}/{n}" for p, n in zip(a["passing"], a["recorded"])]
    return t, a


def _range(values) -> str:
    v = np.asarray([x for x in values if finite(x)], dtype=float)
    if not len(v):
        return ""
    return (f"median **{fmt_ratio(np.median(v))}** (range {fmt_ratio(v.min())}–"
            f"{fmt_ratio(v.max())}, {count(len(v), 'shape')})")


def _leads(a: pd.DataFrame) -> str:
    """'the deterministic strategy is faster on N, level on K and slower on M of T shapes'
    over answer() `a`'s shapes with both a peer and a deterministic time: a lead within
    summary.TIE (the spread of same-commit reruns) is no lead either way."""
    leads = [v for v in map(summary.lead, a["peer_us"], a["det_us"]) if v]
    n = {k: leads.count(k) for k in ("faster", "level", "slower")}
    return (f"the deterministic strategy is faster on {n['faster']}, level (within "
            f"{summary.TIE:.1%}) on {n['level']} and slower on {n['slower']} of "
            f"{count(sum(n.values()), 'shape')}.")


def _never_both(a: pd.DataFrame) -> str:
    """Why no shape has a peer ÷ det ratio where the run records both roles: the role that
    never passed (status ok, correct, a time) at a shape where the other did — or neither,
    or each somewhere but never at one shape."""
    det, peer = (bool(np.isfinite(a[f"{r}_us"].astype(float)).any()) for r in ("det", "peer"))
    if det and not peer:
        return "No peer (baseline) passed on a shape where a deterministic strategy passed."
    if peer and not det:
        return "No deterministic strategy passed on a shape where a peer (baseline) passed."
    if not (det or peer):
        return "Neither a deterministic strategy nor a peer (baseline) passed on any shape."
    return "No shape has both a deterministic strategy and a peer (baseline) passing."


ROLE_NOUN = {"det": "deterministic strategy", "nondet": "nondeterministic strategy",
             "peer": "peer (baseline)"}


def _unrecorded(a: pd.DataFrame, roles) -> str:
    """'this run records no deterministic strategy and no peer (baseline)' for the roles no
    record of the run holds, at any shape and whatever its status; "" where each has one."""
    none = [ROLE_NOUN[r] for r in roles if not a[f"{r}_recorded"].any()]
    return "this run records no " + " and no ".join(none) if none else ""


def answer_section(rep: Report, df: pd.DataFrame, cov: Coverage | None = None) -> None:
    rep.h(2, "The answer: best deterministic, best nondeterministic and best peer, per shape",
          "answer")
    if df.empty:
        rep.p("This run holds no records.")
        return
    table, a = answer_table(df, cov)
    n = len(a)
    lines = []
    if not a["passing"].any():
        lines.append("**No implementation passed (status ok and correct) on any shape** — "
                     "see the failures below.")
    else:
        cost = _range(a["det_over_nondet"])
        lines.append("What determinism costs — t(best deterministic) ÷ t(best nondeterministic): "
                     + (cost + "; below 1 the deterministic strategy is the faster one."
                        if cost else "not measurable here ("
                        + (_unrecorded(a, ("det", "nondet")) or "no shape has both a "
                           "deterministic and a nondeterministic strategy passing") + ")."))
        peer = _range(a["peer_over_det"])
        if peer:
            lines.append(f"Against the best peer — t(best peer) ÷ t(best deterministic): {peer}; "
                         + _leads(a))
        else:
            missing = _unrecorded(a, ("det", "peer"))
            lines.append(f"Against the best peer: not measurable here ({missing})." if missing
                         else _never_both(a))
        away = sum(u and not isinstance(i, str)
                   for u, i in zip(unmeasured(a, cov, "peer"), a["peer_impl"]))
        if away:
            lines[-1] += (f" At {away} of {n} shapes no peer passed here, and a peer of the "
                          "plan may be among the cases not measured here (see the warning "
                          "above).")
        if out := summary.peers_out(a):
            lines[-1] += " " + out
        contended = sum(int(a[f"{r}_contended"].sum()) for r in ROLES)
        if contended:
            lines.append(contended_line(contended, "\"Measured next to other cases\""))
        if "decided_on" in a.columns:
            lines.append(_decided_line(a["decided_on"]))
        else:
            lines.append("GPU time not measured: every time here is the whole call as the host "
                         "sees it.")
    if mixed := summary.mixed_devices(a):
        rep.warn(mixed)
    rep.bullets(lines)
    rep.table(table, cls="answer")
    rep.p("Only records with status ok and a correct result compete; a grouped implementation "
          "competes with its best GROUPS. \"Deterministic\" = a strategy deterministic by design "
          "whose repeats were also bitwise identical; \"nondeterministic\" = any other strategy; "
          "a peer is a baseline (kind). Times are medians in µs with the p20–p80 interval of "
          f"the samples; † marks p80/p20 > {SPREAD_MARK}; {CONTENDED_MARK} a host-bound time "
          "measured next to other cases. det ÷ nondet = t_det / t_nondet; "
          "peer ÷ det = t_peer / t_det (> 1: the deterministic strategy is faster; within "
          f"{summary.TIE:.1%} of 1 either way, a tie: the spread of same-commit reruns). "
          "\"passing\" counts implementations that passed out of those recorded for the shape. "
          "A role without a time: \"none passed\" (recorded there, none competed), \"not "
          "measured here\" (the plan may have one this directory has no record of: an "
          "incomplete run), \"not in run\"."
          + (" GPU µs is the GPU time of the role's record shown. \"decided on\" compares the "
             "role fastest per call with the role fastest on the GPU — each role's least GPU "
             "time over all its passing records, which may be another record than the one "
             f"shown: \"GPU\" where they are the same role, \"host\" where they differ by more "
             f"than {summary.TIE:.1%} on one clock, a tie within it on both, blank where a "
             "passing record has no usable GPU time (or none passed)."
             if "decided_on" in a.columns else ""))


def _decided_line(decided: pd.Series) -> str:
    """The bullet counting where the ranking is decided; unknown shapes (blank) apart."""
    v = decided.fillna("").astype(str)
    known = int((v != "").sum())
    why = "a record passing there has no usable GPU time, or none passed"
    if not known:
        return (f"Both clocks: where the ranking is decided is unknown at all {len(v)} shapes: "
                f"{why} (column \"decided on\").")
    text = (f"Both clocks: the ranking is decided on the host at "
            f"{int(v.str.startswith('host').sum())} of {known} shapes")
    if known < len(v):
        text += f" where it is known; unknown at {len(v) - known} ({why})"
    return text + " (column \"decided on\")."


# ---------------------------------------------------------------------------------------------
# the README's results table

def _short_names(names) -> dict:
    """Names without the leading `_`-separated words they all share ('disjoint_block',
    'disjoint_fused' -> 'block', 'fused'); one name, or nothing shared, stays whole."""
    names = sorted({n for n in names if isinstance(n, str)})
    parts = [n.split("_") for n in names]
    k = 0
    while len(names) > 1 and all(len(p) > k + 1 for p in parts) and \
            len({p[k] for p in parts}) == 1:
        k += 1
    return {n: "_".join(p[k:]) for n, p in zip(names, parts)}


def contended_line(n: int, see: str) -> str:
    """The sentence under a table of which `n` times carry CONTENDED_MARK (`see`: where the
    records are listed)."""
    return (f"{n} of the times in this table are marked {CONTENDED_MARK}: host-bound calls "
            "measured while other cases ran on the same host; they may be inflated by host "
            f"contention (see {see}).")


def _cell(us, spread, bold: bool, contended: bool = False) -> str:
    if not finite(us):
        return ""
    s = fmt_us(us) + (" †" if finite(spread) and spread > SPREAD_MARK else "") \
        + (f" {CONTENDED_MARK}" if contended else "")
    return f"**{s}**" if bold else s


def _leads_row(us, fastest) -> bool:
    """Bold: the row's fastest time, or one within summary.TIE of it (a tie: no single
    fastest is claimed, every time tied with the fastest is bold)."""
    return finite(us) and (us == fastest or summary.tied(us, fastest))


def _peer_cell(why: str | None) -> str:
    """What a peer's cell says at a shape where it was recorded without competing
    (summary.answer's peer_out), never a blank for one that ran (a blank reads as "not
    measured"): "✗" for a result not found correct against fp64, "✗ error" / "✗ timeout" for
    a case that ran and failed (as the terminal says), "✗ no time" for one without a positive
    finite median.  A skipped case (not run: a package not installed) stays blank; the note
    above the table (summary.peers_out) names it."""
    return "" if why in (None, "skipped") else "✗" if why == "incorrect" else f"✗ {why}"


def markdown_table(df: pd.DataFrame) -> str:
    """The README's results table from a run: shape, ours (the best deterministic strategy, and
    which; "✗ none passed" where it recorded some and none passed), its % of the copy
    ceiling, each peer's best time, and t(best peer) / t(ours).
    Shapes in run order; µs; the row's fastest in bold, and every time within summary.TIE
    (1.5 %) of it: a tie bolds both; † a wide spread (p80/p20 > 1.15); ‡ a time host contention
    may have inflated (as report.md marks it; a sentence under the table counts them); ✗ a peer whose result
    failed against fp64 there (it does not compete), ✗ error / ✗ timeout one whose case
    failed there (_peer_cell), a blank one skipped there or never recorded; the ratio in
    italics where ours is slower by more than a tie.  It is against the peers that passed:
    summary.peers_out, above the table in report-table.md, names those that did not."""
    a = summary.answer(df, order="run")
    if a.empty:
        return "(no records)\n"
    best = summary.best_groups(df)
    peers = list(dict.fromkeys(df.loc[df["kind"] == "baseline", "implementation"].dropna()))
    short = _short_names(a["det_impl"])
    many = df[["dtype", "weight_dtype"]].drop_duplicates().shape[0] > 1
    rows, marked = [], 0             # marked: the cells that carry CONTENDED_MARK
    # best's shapes, each peer's records and the times, read once, not once a shape: selecting
    # best's rows of a shape, then a peer's, copied every column of them (a take per column),
    # 9 s for a run of 50 shapes and three peers; a peer's cell is its first such record's
    keys = [tuple(x) for x in best[list(summary.SHAPE)].itertuples(index=False)] \
        if len(best) else []
    of_peer = {p: (best["implementation"] == p).to_numpy(dtype=bool, na_value=False)
               for p in peers} if len(best) else {}
    t_ms, p20, p80 = (summary.times(best, c).to_numpy()
                      for c in ("time_ms", "time_p20_ms", "time_p80_ms"))
    for _, r in a.iterrows():
        key = tuple(r[k] for k in summary.SHAPE)
        at_shape = np.array([k == key for k in keys], dtype=bool)
        peer_t, out = {}, dict(r["peer_out"])
        for p in peers:
            hit = np.flatnonzero(at_shape & of_peer[p]) if len(best) else ()
            if len(hit):
                i = hit[0]
                t = t_ms[i] * 1000
                lo, hi = p20[i], p80[i]
                # ‡ as summary.answer marks report.md's cells: hostload.contention_note
                peer_t[p] = (t, hi / lo if finite(lo) and lo > 0 else np.nan,
                             hostload.contention_note(best.iloc[i]) is not None)
        fastest = min([r["det_us"]] + [v[0] for v in peer_t.values()],
                      key=lambda v: v if finite(v) else np.inf)
        row = {"norm": NORM_SHORT.get(r["norm"], r["norm"]),
               "rows × d": f"{fmt_int(r['rows'])} × {fmt_int(r['d'])}"}
        if many:
            row["dtype"] = f"{r['dtype']}/{r['weight_dtype']}"
        ours = _cell(r["det_us"], r["det_spread"], _leads_row(r["det_us"], fastest),
                     bool(r["det_contended"]))
        marked += bool(ours) and bool(r["det_contended"])
        # ours recorded there, none competing: said as a failed peer is, never a blank
        row["ours"] = f"{ours} {short[r['det_impl']]}" if ours else \
            "✗ none passed" if r.get("det_recorded", 0) else ""
        row["% copy"] = f"{r['det_pct_copy']:.0f} %" if finite(r["det_pct_copy"]) else ""
        for p in peers:
            t, s, c = peer_t.get(p, (np.nan, np.nan, False))
            row[p] = _cell(t, s, _leads_row(t, fastest), c) or _peer_cell(out.get(p))
            marked += finite(t) and c
        ratio = r["peer_over_det"]
        row["vs best peer"] = ("" if not finite(ratio) else f"*{fmt_ratio(ratio)}*"
                               if summary.lead(r["peer_us"], r["det_us"]) == "slower"
                               else fmt_ratio(ratio))
        rows.append(row)
    text = "\n".join(md_table(pd.DataFrame(rows))) + "\n"
    if marked:
        text += "\n" + contended_line(marked, "report.md's \"Measured next to other cases\"") \
            + "\n"
    return text
