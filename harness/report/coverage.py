"""Which records the report reads, and how much of the planned run they are.

One record per case key: the last of each, as `compare` takes it (a hand-joined records.csv
can hold a case twice; `run` never writes one).  And how much of the plan the directory
holds, from meta.json: a run stopped before its end (`completed: false`), one shard of a
sharded run (`shard`: the whole plan's keys and this shard's), a merge with missing shards
or one stopped part-way (`merge`).  The report says so at its top, and an implementation
the plan has at a shape but this directory does not is "not measured here", not "not in run".
Pure: meta and records in, text out."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pandas as pd

from normbench.harness import schema, summary
from normbench.harness.cells import is_missing

NAMED = 6        # implementations named in the warning before "and N more"


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

    @property
    def incomplete(self) -> bool:
        return self.warning is not None

    def unmeasured(self, shape, role: str) -> bool:
        """True where the plan may have an implementation of `role` at `shape` that has no
        record here (an implementation with no record anywhere here may be of any role)."""
        if not self.incomplete:
            return False
        if self.missing is None:           # the plan is not recorded: it may have been
            return True
        s = shape_key(shape)
        return any(sh == s and role in (self.roles or {}).get(impl, summary.ROLES)
                   for sh, impl in self.missing)


def coverage(df: pd.DataFrame, meta: dict) -> Coverage:
    """How much of the planned run `df` (this directory's records) is, from `meta`."""
    here = set(case_keys(df))
    shard, merge = meta.get("shard"), meta.get("merge")
    if isinstance(shard, dict) and isinstance(shard.get("plan_keys"), list):
        plan = [str(k) for k in shard["plan_keys"]]
        mine = [str(k) for k in shard.get("keys") or []]
        held = sum(k in here for k in mine)
        part = f"this shard's part is {len(mine)} case(s)"
        if held < len(mine):
            part += f", {len(mine) - held} of them not recorded (the shard stopped early)"
        text = (f"shard {shard.get('spec') or '?'} of a sharded run: "
                f"{sum(k in here for k in plan)} of the plan's {len(plan)} cases are recorded here ({part}); the other shards "
                "hold the rest — `normbench merge` joins them into the whole run")
        return _known(df, text, plan, here)
    if isinstance(merge, dict):
        size = merge.get("plan_size")
        of = f"{len(df)} of {size if size is not None else '?'} planned cases are recorded here"
        gone = [str(k) for k in merge.get("missing_keys") or []]
        if merge.get("finished") is False:
            return Coverage(f"the merge of {merge.get('shards', '?')} shard(s) stopped before "
                            f"it finished: {of}", planned=size, missing=None)
        if gone:
            return _known(df, f"merged with missing shards (merge --allow-partial): {len(gone)} "
                          f"of the plan's {size} cases are in no shard given",
                          sorted(here) + [k for k in gone if k not in here], here, size)
        if merge.get("missing"):             # a count without the keys
            return Coverage(f"merged with missing shards: {of}", planned=size, missing=None)
        if meta.get("completed") is False:
            return Coverage("merged from shards of which one stopped before it finished "
                            f"(meta.json `completed: false`): {of}", planned=size,
                            missing=None)
    if meta.get("completed") is False:
        return Coverage("the run stopped before it finished (meta.json `completed: false`: "
                        "interrupted, or stopped by a fault): "
                        f"{len(df)} records are here; meta.json does not record how many cases "
                        "were planned — `run … --out DIR --resume` measures the rest",
                        missing=None)
    return Coverage()


def _known(df: pd.DataFrame, text: str, plan: list[str], here: set,
           planned: int | None = None) -> Coverage:
    """A Coverage whose plan keys are known: names what is missing, by implementation."""
    absent = [k for k in plan if k not in here]
    missing = set()
    for k in absent:
        p = k.split("|")
        if len(p) == len(schema.KEY):
            missing.add((tuple(p[i] for i in _SHAPE_AT), p[_IMPL_AT]))
    by_impl = Counter(k.split("|")[_IMPL_AT] if "|" in k else k for k in absent)
    if by_impl:
        names = [f"{i} ({n})" for i, n in by_impl.most_common(NAMED)]
        more = f" and {len(by_impl) - NAMED} more" if len(by_impl) > NAMED else ""
        text += "; not measured here, cases by implementation: " + ", ".join(names) + more
    roles: dict[str, set] = {}
    for _, r in df.iterrows():
        got = roles.setdefault(r["implementation"], set())
        got.add(summary.role(r))
        if r.get("kind") != "baseline" and summary.is_true(r.get("deterministic_by_design")):
            got.add("det")              # det by design: the det role's, as summary counts it
    unseen = {impl for _, impl in missing if impl not in roles}
    if unseen:
        roles.update(_registered_roles(unseen))
    return Coverage(text, planned=planned if planned is not None else len(plan),
                    missing=frozenset(missing), roles=roles)


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
