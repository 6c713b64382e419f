"""The answer per shape — the one place that says what competes, what a shape is and which
record is best.  Pure pandas; the report's answer section, its README table and the
end-of-run terminal tables all call it."""
from __future__ import annotations

import numpy as np
import pandas as pd

from normbench.harness import hostload
from normbench.harness.cells import is_missing
from normbench.harness.stats import is_time
from normbench.harness.text import count

# What identifies a shape, in the order tables sort by.
SHAPE = ("norm", "rows", "d", "dtype", "weight_dtype")


def is_true(v) -> bool:
    """A boolean cell that is True: Python or numpy bool, or the text 'true' (a CSV column of
    a run with failed records loads as text)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return isinstance(v, str) and v.strip().lower() == "true"


def is_false(v) -> bool:
    if isinstance(v, (bool, np.bool_)):
        return not bool(v)
    return isinstance(v, str) and v.strip().lower() == "false"


def as_bool(v) -> bool | None:
    """A boolean cell as the boolean it holds or spells (records read as text, as a library
    client may load them: bool("False") is True), None where it holds neither (missing,
    empty, other text)."""
    if isinstance(v, str):
        return True if is_true(v) else False if is_false(v) else None
    return None if is_missing(v) else bool(v)


NOT_REPEATABLE = "not deterministic, though by design"     # what a not_repeatable record is


def not_repeatable(rec) -> bool:
    """A record of an implementation deterministic by design whose repeats gave other bits:
    its claim broken (`run --strict` fails it; the report lists it among the failures and the
    terminal table marks it, though it competes as nondeterministic)."""
    return is_true(rec.get("deterministic_by_design")) and is_false(rec.get("deterministic"))


def times(df: pd.DataFrame, col: str = "time_ms") -> pd.Series:
    """A numeric column as float64 with NaN for missing (from any loader's dtype)."""
    if col not in df.columns:
        return pd.Series(np.nan, index=df.index, dtype="float64")
    return pd.Series(pd.to_numeric(df[col], errors="coerce").to_numpy(dtype="float64",
                                                                         na_value=np.nan),
                     index=df.index)


def competing(df: pd.DataFrame) -> pd.DataFrame:
    """Records that compete: status ok, a correct result, a positive finite median time."""
    if df.empty:
        return df
    t = times(df)
    ok = (df["status"].astype("object") == "ok").to_numpy(dtype=bool) \
        & df["correct"].map(is_true).to_numpy(dtype=bool) & np.isfinite(t.to_numpy()) \
        & (t.to_numpy() > 0)
    return df[ok]


def best_groups(df: pd.DataFrame) -> pd.DataFrame:
    """Per shape and implementation, the fastest competing record (over its GROUPS values)."""
    good = competing(df)
    if good.empty:
        return good
    idx = times(good).groupby([good[k] for k in (*SHAPE, "implementation")],
                              dropna=False).idxmin()
    return good.loc[idx.dropna().values]


# ---------------------------------------------------------------------------------------------
# the answer: best deterministic, best nondeterministic, best peer

ROLES = ("det", "nondet", "peer")
ROLE_TEXT = {"det": "best deterministic", "nondet": "best nondeterministic", "peer": "best peer"}
SPREAD_MARK = 1.15        # p80 / p20 above this: the samples spread widely (†)
CONTENDED_MARK = "‡"      # host-bound and measured next to other cases (harness/hostload.py)


def role(row) -> str | None:
    """det: a strategy deterministic by design and not measured otherwise; nondet: any other
    strategy; peer: a baseline (kind), whatever its determinism."""
    kind = row.get("kind")
    if kind == "baseline":
        return "peer"
    if kind not in ("strategy", None) and not (isinstance(kind, float) and np.isnan(kind)):
        return None
    by_design, measured = row.get("deterministic_by_design"), row.get("deterministic")
    if is_true(by_design) and not is_false(measured):
        return "det"
    if not is_true(by_design) and not is_false(by_design) and is_true(measured):
        return "det"                     # an old record without the flag: as measured
    return "nondet"


def recorded_roles(row) -> set:
    """The roles whose `{role}_recorded` counts a record: its role, and det for a strategy
    deterministic by design whose repeats differed (it competes as nondet; its det role reads
    "none passed", never "not in run")."""
    roles = {role(row)}
    if row.get("kind") != "baseline" and is_true(row.get("deterministic_by_design")):
        roles.add("det")
    return roles


def has_gpu_time(df: pd.DataFrame) -> bool:
    """True when the run measured GPU time (the column exists and holds a number)."""
    return "gpu_time_ms" in df.columns and bool(np.isfinite(times(competing(df),
                                                                  "gpu_time_ms")).any())


def answer(df: pd.DataFrame, order: str = "sorted") -> pd.DataFrame:
    """One row per shape (sorted by SHAPE, or order="run": as first recorded).

    For each role r in ROLES: r_impl, r_groups, r_groups_effective, r_us, r_p20_us, r_p80_us,
    r_pct_copy, r_spread (p80/p20), r_contended (harness/hostload.py flags it: host-bound and
    measured next to other cases), and with GPU time r_gpu_us, r_host_us.  Then
    det_over_nondet (t_det / t_nondet: what determinism costs, > 1 slower), peer_over_det
    (t_peer / t_det, > 1: ours is faster; `lead` reads peer_us against det_us, not this
    rounded ratio, against TIE), fastest (the role of the fastest of the three, the first in
    ROLES on an exact tie: `tied` says which others are level with it), passing / recorded
    (implementations), r_recorded (implementations of role r recorded at the shape, whatever
    its status: 0 where the run has none), and with GPU time r_gpu_best_impl and
    r_gpu_best_us (the role's least GPU time over its competing records, which need not be its
    fastest per call), gpu_fastest (the role with the least of those) and decided_on ("GPU"
    or "host", with why); peer_out (the peers recorded at the shape without a competing record
    there, each with why: `_out`; `peers_out` says so in a sentence); devices (the `device` of
    the records the shape's ratios compare — each role's fastest — each once: more than one,
    and its ratios compare machines — mixed_devices says so; a slower record of another device
    compares nothing)."""
    gpu = has_gpu_time(df)
    if df.empty:
        return pd.DataFrame(columns=list(SHAPE))
    # One pass over the columns this reads, then per shape positions into them: slicing the
    # whole frame per shape (every column, sample text included) cost ~10 ms a shape.
    df = df[[c for c in dict.fromkeys((*SHAPE, *USED)) if c in df.columns]]
    df = df.reset_index(drop=True)
    comp = competing(df).index.to_numpy()
    is_comp = np.zeros(len(df), dtype=bool)
    is_comp[comp] = True
    recs = df.to_dict("records")
    roles = np.full(len(df), None, dtype=object)
    roles[comp] = [role(recs[i]) for i in comp]
    all_roles = [recorded_roles(r) for r in recs]
    impl = df["implementation"].to_numpy(dtype=object)
    num = {c: times(df, c).to_numpy() for c in NUMBERS}
    t, gpu_t = num["time_ms"], num["gpu_time_ms"]
    out = []
    keys = [df[k] for k in SHAPE]
    for shape, idx in df.groupby(keys, sort=(order == "sorted"), dropna=False).groups.items():
        row = dict(zip(SHAPE, shape))
        at = idx.to_numpy()
        g = at[is_comp[at]]
        row["recorded"] = _nunique(impl[at])
        row["passing"] = _nunique(impl[g])
        shown = []                  # each role's fastest: the records behind the ratios
        for r in ROLES:
            of_r = g[roles[g] == r]
            best = of_r[np.argmin(t[of_r])] if len(of_r) else None
            shown.append(None if best is None else df.iloc[best])   # its values as loaded
            _fill(row, r, best, shown[-1], num, gpu)
            if gpu:
                row[f"{r}_gpu_best_impl"], row[f"{r}_gpu_best_us"] = _gpu_best(of_r, gpu_t, impl)
            mine = at[[r in all_roles[i] for i in at]]
            row[f"{r}_recorded"] = _nunique(impl[mine])
            if r == "peer":
                row["peer_out"] = _out([recs[i] for i in mine], set(impl[of_r]))
        row["devices"] = (() if "device" not in df.columns else tuple(dict.fromkeys(
            str(b["device"]) for b in shown if b is not None and not is_missing(b["device"]))))
        row["det_over_nondet"] = _ratio(row["det_us"], row["nondet_us"])
        row["peer_over_det"] = _ratio(row["peer_us"], row["det_us"])
        row["fastest"] = _argmin({r: row[f"{r}_us"] for r in ROLES})
        if gpu:
            row["gpu_fastest"] = _argmin({r: row[f"{r}_gpu_best_us"] for r in ROLES})
            row["decided_on"] = _decided_on(row)
        out.append(row)
    return pd.DataFrame(out)


# The columns answer() reads (role's, _fill's, hostload.contention_note's, the devices');
# the others (the samples' text among them) it leaves behind before its loop.  NUMBERS: those
# it reads as numbers (times(): NaN where missing or not a number).
NUMBERS = ("time_ms", "time_p20_ms", "time_p80_ms", "pct_copy", "gpu_time_ms",
           "host_overhead_ms")
ROLE_COLUMNS = ("kind", "deterministic_by_design", "deterministic")     # what role() reads
USED = ("implementation", "status", "correct", "groups", "groups_effective", "device",
        "concurrent_cases", "hostname", *ROLE_COLUMNS, *NUMBERS)


def _nunique(values) -> int:
    """Distinct present values, as pandas' nunique counts them."""
    return len({v for v in values if not is_missing(v)})


OUT_WHY = ("skipped", "error", "timeout", "incorrect", "no time")   # the order they are told


def why_out(rec) -> str:
    """Why a record does not compete: its status where not ok ("skipped": not run, e.g. its
    package not installed; "error", "timeout": it ran and failed), "incorrect" for a result
    not found correct against fp64, "no time" for one without a positive finite median."""
    status = str(rec["status"])
    if status != "ok":
        return status
    return "no time" if is_true(rec.get("correct")) else "incorrect"


def why_none(recs) -> str:
    """Why an implementation none of whose records `recs` (one shape's, as dicts) competes
    did not: "skipped" where every one was skipped (not run), else the first other reason of
    its records (why_out) — what the README table, the report and the terminal all say."""
    for rec in recs:
        why = why_out(rec)
        if why != "skipped":
            return why
    return "skipped"


def _out(recs: list, competed: set) -> tuple:
    """((implementation, why), ...) for each implementation of `recs` (one shape's records of
    one role, as dicts) absent from `competed`: why_none of its records."""
    mine: dict[str, list] = {}
    for rec in recs:
        if rec["implementation"] not in competed:
            mine.setdefault(rec["implementation"], []).append(rec)
    return tuple((name, why_none(r)) for name, r in mine.items())


def peers_out(a: pd.DataFrame) -> str:
    """One sentence, "" where none: at how many of answer() `a`'s shapes a peer was recorded
    without competing, which ones and why (not measured: skipped; failed: error, timeout,
    incorrect, no time) — the best peer, and each peer ÷ det ratio, is the best of the peers
    that passed, which need not be the fastest peer of the plan."""
    if "peer_out" not in a.columns:
        return ""
    at = [o for o in a["peer_out"] if isinstance(o, tuple) and o]
    if not at:
        return ""
    whys = dict.fromkeys([*OUT_WHY, *(why for o in at for _, why in o)])
    names = {w: list(dict.fromkeys(n for o in at for n, why in o if why == w)) for w in whys}
    parts = [", ".join(n) + (" not measured (skipped)" if w == "skipped" else f" failed ({w})")
             for w, n in names.items() if n]
    who = "a peer was" if len({n for o in at for n, _ in o}) == 1 else "peers were"
    return (f"At {len(at)} of {count(len(a), 'shape')} {who} recorded but did not compete — "
            f"{'; '.join(parts)} — so the best peer there is the best of those that passed.")


def mixed_devices(a: pd.DataFrame) -> str | None:
    """One line where, at some shape of answer() `a`, the records compared (each role's
    fastest) were measured on more than one device (a cluster of mixed GPU models, a
    --force-resume on another GPU): the ratios there divide one machine's time by another's.
    None where every shape's compared records are one device's."""
    if "devices" not in a.columns:
        return None
    mixed = [d for d in a["devices"] if len(d) > 1]
    if not mixed:
        return None
    names = ", ".join(dict.fromkeys(n for d in mixed for n in d))
    return (f"At {len(mixed)} of {count(len(a), 'shape')} the records compared were measured "
            f"on different devices ({names}): their ratios compare machines, not strategies.")


def _fill(row: dict, r: str, at, best, num: dict, gpu: bool) -> None:
    """Role r's columns of `row` from its fastest record `best` (None where the role has
    none), at position `at` of the NUMBERS arrays `num`."""
    def us(col):
        v = np.nan if best is None else num[col][at]
        return float(v) * 1000 if np.isfinite(v) else np.nan
    row[f"{r}_impl"] = None if best is None else best["implementation"]
    row[f"{r}_groups"] = None if best is None else best.get("groups")
    row[f"{r}_groups_effective"] = None if best is None else best.get("groups_effective")
    row[f"{r}_us"], row[f"{r}_p20_us"], row[f"{r}_p80_us"] = (
        us("time_ms"), us("time_p20_ms"), us("time_p80_ms"))
    pct = np.nan if best is None else num["pct_copy"][at]
    row[f"{r}_pct_copy"] = float(pct) if np.isfinite(pct) else np.nan
    row[f"{r}_spread"] = _ratio(row[f"{r}_p80_us"], row[f"{r}_p20_us"])
    row[f"{r}_contended"] = best is not None and hostload.contention_note(best) is not None
    if gpu:
        row[f"{r}_gpu_us"] = us("gpu_time_ms")
        host = us("host_overhead_ms")
        row[f"{r}_host_us"] = host if np.isfinite(host) else (
            row[f"{r}_us"] - row[f"{r}_gpu_us"])


def _gpu_best(at: np.ndarray, gpu_t: np.ndarray, impl: np.ndarray) -> tuple[str | None, float]:
    """(implementation, µs) of the least GPU time (gpu_t, ms) among a role's competing
    records (positions `at`) — not the GPU time of its fastest record per call: a record
    slower per call can be the faster on the GPU.  (None, NaN) where the role has none, or
    where one of its records has no usable GPU time (it might have been the GPU's fastest:
    unknown)."""
    if not len(at):
        return None, np.nan
    t = gpu_t[at]
    if not (np.isfinite(t) & (t > 0)).all():
        return None, np.nan
    return impl[at[np.argmin(t)]], float(t.min()) * 1000


def _ratio(a, b) -> float:
    return float(a) / float(b) if np.isfinite(a) and np.isfinite(b) and b > 0 else np.nan


def _argmin(values: dict) -> str | None:
    finite = {k: v for k, v in values.items() if np.isfinite(v)}
    return min(finite, key=finite.get) if finite else None


TIE = 0.015      # two medians closer than this are a tie: the spread of same-commit reruns


def tied(a, b) -> bool:
    """Two finite positive times within TIE of each other (the slower at most 1 + TIE times
    the faster): neither is the faster one; an exact tie included, and exactly TIE apart at
    any scale (a relative epsilon absorbs the rounding of the product, so 10.15 against 10.0
    reads as 101.5 against 100 does).  The one verdict the bullet, the README table's bold
    and italics, the terminal's stars and decided_on all read."""
    if not (is_time(a) and is_time(b)):
        return False
    a, b = float(a), float(b)
    return max(a, b) <= min(a, b) * (1 + TIE) * (1 + 1e-12)


def lead(other, ours) -> str | None:
    """Our time against another's, read with `tied`: "faster" (ours, beyond a tie), "level"
    (within TIE either way) or "slower"; None where either is not a finite positive time.
    From the two times, never from their rounded ratio, so that it agrees with the bold."""
    if not (is_time(other) and is_time(ours)):
        return None
    return "level" if tied(other, ours) else "faster" if float(other) > float(ours) else "slower"


def _decided_on(row: dict) -> str:
    """Where the ranking of this shape is decided: "GPU"; "host", and why — the role fastest
    per call (its fastest record per call) is not the role fastest on the GPU (each role's
    least GPU time over its records, _gpu_best), by more than a tie (TIE) on one clock or the
    other; or "" when unknown (a role with a call time but no usable GPU-best).  The same
    winner on both clocks is "GPU", whose host overhead is noted where it exceeds its GPU
    time."""
    call, gpu = row["fastest"], row["gpu_fastest"]
    if call is None or gpu is None:
        return ""
    if any(np.isfinite(row[f"{r}_us"]) and not np.isfinite(row[f"{r}_gpu_best_us"])
           for r in ROLES):
        return ""                  # a role without a (usable) GPU time: unknown
    if call != gpu:
        if (tied(row[f"{gpu}_us"], row[f"{call}_us"])                      # per call
                and tied(row[f"{call}_gpu_best_us"], row[f"{gpu}_gpu_best_us"])):  # GPU
            return (f"tie: {ROLE_TEXT[call]} and {ROLE_TEXT[gpu]} within {TIE:.1%} on both "
                    "clocks")
        other = row[f"{gpu}_gpu_best_impl"]      # named where not the record shown per call
        named = f" ({other})" if other != row[f"{gpu}_impl"] else ""
        return f"host: {ROLE_TEXT[call]} is fastest per call, {ROLE_TEXT[gpu]}{named} on the GPU"
    host, g = row[f"{call}_host_us"], row[f"{call}_gpu_us"]
    if np.isfinite(host) and np.isfinite(g) and host > g:
        return (f"GPU (the same winner on both clocks; its host overhead, {host:.1f} µs, "
                f"exceeds its GPU time, {g:.1f} µs)")
    return "GPU"
