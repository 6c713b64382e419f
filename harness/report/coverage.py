"""Which records the report reads, and how much of the planned run they are.

One record per case key: the last of each, as `compare` takes it (a hand-joined records.csv
can hold a case twice; `run` never writes one).  And how much of the plan the directory
holds, from meta.json: a run stopped before its end (`completed: false`; its plan rebuilt
from its config, plan_implementations and --only, as `run --resume` plans it:
harness/replan.py), one shard of a sharded run (`shard`: the whole plan's keys and this
shard's), a merge with missing shards or one stopped part-way (`merge`), a run still
measuring (its lock held).  The report says so at its top, naming the cases not recorded
where the plan is known, and an implementation the plan has at a shape but this directory
does not is "not measured here", not "not in run".  Pure: meta, records and whether the
directory is locked (store.in_use, the caller's look) in, text out (but for the registry
replan reads: whether an implementation uses GROUPS)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from normbench.harness import replan, schema, summary
from normbench.harness.cells import is_missing
from normbench.harness.rundir import StoreError, check_meta_types

NAMED = 6        # cases named one by one in the warning; more: counted by implementation,
                 # NAMED of them named before "and N more"


def _part(v) -> str:
    """A key value as case_id writes it: 4096 for the 4096.0 of a float column."""
    if is_missing(v):
        return ""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def case_keys(df: pd.DataFrame) -> list[str]:
    """Each record's case key ('|'.join of schema.KEY), normalised as the plan writes it."""
    cols = [df[k] if k in df.columns else pd.Series([None] * len(df), index=df.index)
            for k in schema.KEY]
    return ["|".join(_part(v) for v in vals) for vals in zip(*cols)]


def last_of_each_key(df: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """(the last record of each case key, how many earlier ones were set aside) — the
    record `compare` uses (harness/compare_rules.index)."""
    if df.empty:
        return df, 0
    dup = pd.Series(case_keys(df), index=df.index).duplicated(keep="last")
    return df[~dup.to_numpy()], int(dup.sum())


def duplicates_warning(n: int) -> str:
    return (f"records.csv holds {n} earlier record(s) of a case key recorded again later: the "
            "report uses the last record of each key, as `compare` does; the earlier ones "
            "appear only under \"All records\".")


_SHAPE_AT = [schema.KEY.index(k) for k in summary.SHAPE]
_IMPL_AT = schema.KEY.index("implementation")


def shape_key(values) -> tuple:
    """A shape (summary.SHAPE values) in the normalised form of a plan key's parts."""
    return tuple(_part(v) for v in values)


@dataclass
class Coverage:
    warning: str | None = None     # the report's top line; None: the whole plan is here
    planned: int | None = None     # cases in the plan, where meta.json records it
    # (shape_key, implementation) in the plan but not recorded here; None: plan unknown
    missing: frozenset | None = frozenset()
    roles: dict | None = None      # implementation -> its roles (records here, else registry)
    # the plan may also hold implementations with no record here (which, meta.json does not
    # say: a run from before plan_implementations whose config names none)
    open_plan: bool = False

    @property
    def incomplete(self) -> bool:
        return self.warning is not None

    def unmeasured(self, shape, role: str) -> bool:
        """True where the plan may have an implementation of `role` at `shape` that has no
        record here (an implementation with no record anywhere here may be of any role)."""
        if not self.incomplete:
            return False
        if self.missing is None or self.open_plan:     # the plan is not (all) known: it may
            return True                                # have been
        s = shape_key(shape)
        return any(sh == s and role in (self.roles or {}).get(impl, summary.ROLES)
                   for sh, impl in self.missing)


def check_meta(meta: dict) -> None:
    """StoreError (one line, naming meta.json and the field) unless each field coverage
    reads is absent, null or of its type (rundir.check_meta_types; load_meta checks the same
    of every meta.json it reads)."""
    check_meta_types(meta)


def coverage(df: pd.DataFrame, meta: dict, live: bool = False) -> Coverage:
    """How much of the planned run `df` (this directory's records) is, from `meta`.
    live: a run holds the directory's lock (store.in_use) — it is still measuring.
    A meta.json field of the wrong type: StoreError (check_meta)."""
    check_meta(meta)
    here = set(case_keys(df))
    shard = meta.get("shard")
    if isinstance(shard, dict) and isinstance(shard.get("plan_keys"), list):
        plan = [str(k) for k in shard["plan_keys"]]
        mine = [str(k) for k in shard.get("keys") or []]
        if not live and all(k in here for k in plan):
            return Coverage()       # the whole plan (--shard 0/1, the other shards empty)
        held = sum(k in here for k in mine)
        part = f"this shard's part is {len(mine)} case(s)"
        if held < len(mine):
            why = "it is still running: its lock is held" if live else "the shard stopped early"
            part += f", {len(mine) - held} of them not recorded ({why})"
        text = (f"shard {shard.get('spec') or '?'} of a sharded run: "
                f"{sum(k in here for k in plan)} of the plan's {len(plan)} cases are recorded here ({part}); the other shards "
                "hold the rest — `normbench merge` joins them into the whole run")
        return _known(df, text, plan, here)
    merge = meta.get("merge") if isinstance(meta.get("merge"), dict) else {}
    # a plain run (no merge, no forced resume) stopped or still running: its plan rebuilt
    plan = replan.rebuild(meta, here) if not merge and not _forced(meta) and \
        (live or meta.get("completed") is False) else None
    absent = [k for k in plan.keys if k not in here] if plan is not None else []
    text, planned = _cause(meta, merge, len(df), live, plan, absent)
    gone = [str(k) for k in merge.get("missing_keys") or []]
    if text is None:
        return Coverage()
    if gone:
        return _known(df, text, sorted(here) + [k for k in gone if k not in here], here, planned)
    if plan is not None:
        return _known(df, text, list(plan.keys), here, planned, named=False,
                      whole=plan.whole)
    return Coverage(text, planned=planned, missing=None)


def _forced(meta: dict) -> bool:
    """A resume forced onto another config: the plans recorded before are not the
    directory's any more."""
    return any(isinstance(e, dict) and e.get("forced") for e in meta.get("resumes") or [])


def _cause(meta: dict, merge: dict, n: int, live: bool, plan: replan.Plan | None = None,
           absent: list[str] = ()) -> tuple[str | None, int | None]:
    """(why a directory that is no shard holds less than its plan, the plan's size where
    meta knows it); (None, None) where it holds all of it.  `merge`: meta's, or {}.
    `plan`: the plan rebuilt from meta.json (None: not known), `absent` its keys not here."""
    size = merge.get("plan_size")
    if plan is not None and plan.whole:
        size = len(plan.keys)
    # a forced resume ran another config: the merge's plan is not this directory's any more
    if _forced(meta) or (isinstance(size, int) and n > size):
        size = None
    of = f"{n} of {size} planned cases are recorded here" if size is not None else \
        f"{n} records are here"
    if plan is not None:
        of += _named(absent, plan.whole)
    gone, stopped = merge.get("missing_keys") or [], _stopped_shards(meta)
    if live:
        return f"it is still running (its lock is held): {of} so far", size
    if meta.get("completed") is True and not gone and not merge.get("missing"):
        return None, None                    # the facts, whatever an older merge entry says
    if merge.get("finished") is False:
        return (f"the merge of {merge.get('shards', '?')} shard(s) stopped before it "
                f"finished: {of}"), size
    if gone and stopped and merge.get("shards") == merge.get("count"):
        return (f"merged (merge --allow-partial) from every shard, shard(s) {stopped} having "
                f"stopped before they finished: {len(gone)} of the plan's {size or '?'} cases "
                "were not measured"), size
    if gone:
        return (f"merged with missing shards (merge --allow-partial): {len(gone)} of the "
                f"plan's {size or '?'} cases are in no shard given"), size
    if merge.get("missing"):                 # a count without the keys
        return f"merged with missing shards: {of}", size
    if meta.get("completed") is not False:
        return None, None
    if merge and not _resumed_since_merge(meta):
        who = f"shard(s) {stopped}" if stopped else "one of its shards"
        return (f"merged, and {who} stopped before finishing (meta.json `completed: false`): "
                f"{of}"), size
    what = "a resume of this merged run" if merge else "the run"
    known = "" if size is not None or plan is not None else \
        "; meta.json does not record how many cases were planned"
    rest = "every planned case is recorded: `run … --out DIR --resume` marks it finished" \
        if plan is not None and plan.whole and not absent else \
        "`run … --out DIR --resume` measures the rest"
    return (f"{what} stopped before it finished (meta.json `completed: false`: interrupted, "
            f"or stopped by a fault): {of}{known} — {rest}"), size


def _named(absent: list[str], whole: bool = True) -> str:
    """'; not measured here: …' — each case where they are few (NAMED or fewer), else how
    many of each implementation.  whole=False: the plan is known for the implementations
    recorded here only (replan.Plan.whole), and the text says so."""
    if not whole:
        return ("; meta.json does not record which implementations were planned (it predates "
                "plan_implementations, and its config names none): cases of others may be "
                "missing too" + (f"; of those recorded here, not measured here: "
                                 f"{_cases(absent)}" if absent else
                                 "; those recorded here have every case planned for them"))
    return f"; not measured here: {_cases(absent)}" if absent else ""


def _cases(absent: list[str]) -> str:
    """Case keys as people read them (schema.case_label), or counted by implementation."""
    if len(absent) <= NAMED:
        return ", ".join(schema.case_label(dict(zip(schema.KEY, k.split("|"))))
                         if k.count("|") == len(schema.KEY) - 1 else k for k in absent)
    by_impl = Counter(k.split("|")[_IMPL_AT] if "|" in k else k for k in absent)
    names = [f"{i} ({n})" for i, n in by_impl.most_common(NAMED)]
    more = f" and {len(by_impl) - NAMED} more" if len(by_impl) > NAMED else ""
    return f"{len(absent)} cases, by implementation: " + ", ".join(names) + more


def _stopped_shards(meta: dict) -> str:
    """The shards of a merge that stopped before they finished (merged_from), named."""
    return ", ".join(str(s.get("shard")) for s in meta.get("merged_from") or []
                     if isinstance(s, dict) and s.get("completed") is False)


def _resumed_since_merge(meta: dict) -> bool:
    """A merged directory resumed: its last `resumes` entry is later than every shard's end
    (a merge before shards' resumes moved to merged_from copied the first shard's)."""
    last = (meta.get("resumes") or [None])[-1]
    ends = [str(s.get("ended_at") or "") for s in meta.get("merged_from") or []
            if isinstance(s, dict)]
    return isinstance(last, dict) and str(last.get("at") or "") > max(ends, default="")


def _known(df: pd.DataFrame, text: str, plan: list[str], here: set,
           planned: int | None = None, named: bool = True, whole: bool = True) -> Coverage:
    """A Coverage whose plan keys are known: names what is missing (named=False: `text`
    does already).  whole=False: the plan may hold implementations with no record here."""
    absent = [k for k in plan if k not in here]
    missing = set()
    for k in absent:
        p = k.split("|")
        if len(p) == len(schema.KEY):
            missing.add((tuple(p[i] for i in _SHAPE_AT), p[_IMPL_AT]))
    if named:
        text += _named(absent)
    roles: dict[str, set] = {}
    for _, r in df.iterrows():
        roles.setdefault(r["implementation"], set()).update(summary.recorded_roles(r))
    unseen = {impl for _, impl in missing if impl not in roles}
    if unseen:
        roles.update(_registered_roles(unseen))
    return Coverage(text, planned=planned if planned is not None or not whole else len(plan),
                    missing=frozenset(missing), roles=roles, open_plan=not whole)


def _registered_roles(names: set) -> dict:
    """The role of each implementation with no record here, from the registry where this
    installation knows it (as fmt.registry_index orders the report); one it does not know
    is left out: it may be of any role."""
    try:
        from normbench import strategies
        known = set(strategies.known())
        return {n: {summary.role({"kind": e.kind,
                                  "deterministic_by_design": e.deterministic_by_design})}
                for n in names if n in known for e in [strategies.get(n)]}
    except Exception:                       # a broken plugin must not cost the report
        return {}
