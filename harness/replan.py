"""The plan of a run directory, rebuilt from its meta.json as `run --resume` plans it again:
the config it ran (`config_text`, overrides applied), for a config that names no
implementations those the run planned (`plan_implementations`: the ones available where it
started, planned_implementations), narrowed by the `--only` of its invocations (each
invocation's `only`; one from before that was recorded, read from its `argv`).  The report
of a run stopped before its end (harness/report/coverage.py) counts the cases planned with it
and names those it did not record.

Pure but for the registry (strategies: whether an implementation uses GROUPS, which multiplies
its cases); without one, or for a plugin not loaded here, that is read from its records.
`settings_differ` says what differs between the run's config and another (a resume refused)."""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from normbench.harness import schema
from normbench.harness.config import ConfigError, Sweep, parse_config
from normbench.harness.plan import NO_GROUPS, expand

_IMPL_AT, _GROUPS_AT = schema.KEY.index("implementation"), schema.KEY.index("groups")


@dataclass(frozen=True)
class Plan:
    keys: tuple[str, ...]      # the plan's case keys, in plan order
    # False: a run from before plan_implementations whose config names none: the plan holds
    # the implementations recorded here; the machine that measured may have planned others
    whole: bool = True


def planned_implementations(meta: dict, held: Iterable[str], known: list[str],
                            available: Iterable[str]) -> tuple[list[str], bool]:
    """The implementations the plan of a run with `meta` holds where its config names none,
    and whether meta.json lists them: its `plan_implementations` (True); for a run written
    before that was recorded (False), those `held` (its records') and those `available`, in
    `known`'s order, a held one not known last."""
    listed = meta.get("plan_implementations")
    if listed is not None:
        return [str(n) for n in listed], True
    held, available = {str(n) for n in held}, set(available)
    names = [n for n in known if n in held or n in available]
    return names + sorted(held - set(known)), False


def invocation_only(entry: dict) -> set[str] | None:
    """The implementations one invocation's `--only` narrowed the plan to (None: it ran the
    whole plan): its `only` where recorded, else the `--only` words of its argv (the CLI's
    `--only NAMES` / `--only=NAMES`, repeatable, comma-separated)."""
    if "only" in entry:
        return None if entry["only"] is None else {str(n) for n in entry["only"]}
    argv = [str(w) for w in entry.get("argv") or []]
    given = [argv[i + 1] if w == "--only" else w[len("--only="):]
             for i, w in enumerate(argv)
             if (w == "--only" and i + 1 < len(argv)) or w.startswith("--only=")]
    return {n.strip() for v in given for n in v.split(",") if n.strip()} if given else None


def narrowed_only(meta: dict) -> set[str] | None:
    """The implementations the run's --only narrowed its plan to (None: the whole plan, or no
    invocation recorded)."""
    return _narrowed(meta)[1]


def _invocations(meta: dict) -> list[dict]:
    """meta's invocations (a run written before they were kept: its first argv)."""
    return [e for e in meta.get("invocations") or
            ([{"argv": meta["argv"]}] if meta.get("argv") else []) if isinstance(e, dict)]


def _narrowed(meta: dict) -> tuple[bool, set[str] | None]:
    """(whether meta.json records its invocations, the union of their --only: None where one
    ran the whole plan).  A merge's are its shards' (each one's in `merged_from`: the top
    level keeps only what every shard agrees on, and their command lines differ) and those of
    the resumes of the merged directory since."""
    entries = _invocations(meta)
    shards = meta.get("merged_from") if isinstance(meta.get("merge"), dict) else None
    if isinstance(shards, list):
        each_shard = [_invocations(s) if isinstance(s, dict) else [] for s in shards]
        if not each_shard or not all(each_shard):      # a shard's --only unknown
            return False, None
        entries = [e for s in each_shard for e in s] + \
                  [e for e in entries if not any(e in s for s in each_shard)]
    each = [invocation_only(e) for e in entries]
    if not entries or any(s is None for s in each):
        return bool(entries), None
    return True, set().union(*each)


def _uses_groups() -> dict[str, bool]:
    """Each registered implementation's uses_groups ({} where the registry cannot load)."""
    try:
        from normbench import strategies
        return {n: bool(strategies.get(n).uses_groups) for n in strategies.known()}
    except Exception:                      # a broken plugin must not cost the report
        return {}


def rebuild(meta: dict, here: Iterable[str], also: Iterable[str] = ()) -> Plan | None:
    """The plan of the run `meta` describes, rebuilt (the module docstring); `here`: the case
    keys its directory holds; `also`: case keys of other runs, read only for whether an
    implementation uses GROUPS (compare's baseline, for a strategy the candidate's registry
    and this one lack).  None where meta.json cannot say it: no config_text that parses,
    no invocation recorded (its --only unknown), an implementation whose use of GROUPS
    neither the registry here nor a record of it tells, or a record here outside the plan
    rebuilt (it is then not the plan that was measured: a resume on a cluster plans every
    implementation known, a registry changed since)."""
    text = meta.get("config_text")
    recorded, only = _narrowed(meta)
    if not isinstance(text, str) or not recorded:
        return None
    try:
        sweep = parse_config(text, "meta.json config_text")
    except ConfigError:
        return None
    here = set(here)
    groups: dict[str, set] = {}
    for k in (*here, *also):
        p = k.split("|")
        if len(p) == len(schema.KEY):
            groups.setdefault(p[_IMPL_AT], set()).add(p[_GROUPS_AT])
    held = {k.split("|")[_IMPL_AT] for k in here if len(k.split("|")) == len(schema.KEY)}
    registry = _uses_groups()
    if sweep.implementations is not None:
        names, whole = list(sweep.implementations), True
    else:
        names, whole = planned_implementations(meta, held, list(registry), ())
    if only is not None:
        whole = whole or only <= set(names)     # every name --only gave has a record here
        names = [n for n in names if n in only]
    if any(n not in registry and n not in groups for n in names):
        return None
    # as `run` plans: every case of the config, then those --only keeps
    keys = tuple(c.key for c in expand(sweep, lambda n: registry[n] if n in registry else
                                       groups.get(n, {NO_GROUPS}) != {NO_GROUPS}, names)
                 if c.implementation in names)
    return Plan(keys, whole) if here <= set(keys) else None


SHOWN_SETTINGS = 6       # settings named one by one in a refusal; more: "and N more"


def settings_differ(meta: dict, sweep: Sweep) -> str:
    """'; settings that differ: shapes [[4,64]] in the run, unset here; rows unset in the
    run, [4] here' -- the validated settings of the run's config (meta.json's config_text,
    read as its path read it) against `sweep`'s, field by field (timing.rep_ms); or that
    they are the same and only the text differs (a comment: the hash of a config file is
    its text's).  '' where config_text is absent or no longer validates."""
    text = meta.get("config_text")
    if not isinstance(text, str):
        return ""
    try:
        old = parse_config(text, str(meta.get("config_path") or "meta.json config_text"))
    except (ConfigError, ValueError, TypeError):
        return ""
    a, b = _flat_settings(old), _flat_settings(sweep)
    keys = [k for k in dict.fromkeys([*a, *b]) if a.get(k) != b.get(k)]
    if not keys:
        return "; its settings are this one's: only the config's text differs"
    shown = [f"{k} {_setting(a.get(k))} in the run, {_setting(b.get(k))} here"
             for k in keys[:SHOWN_SETTINGS]]
    more = f"; and {len(keys) - SHOWN_SETTINGS} more" if len(keys) > SHOWN_SETTINGS else ""
    return "; settings that differ: " + "; ".join(shown) + more


def _flat_settings(sweep: Sweep) -> dict:
    """A sweep's validated settings (config_hash hashes them), nested ones as timing.rep_ms."""
    out = {}
    for k, v in sweep.model_dump(exclude={"source_text", "source_path"}, mode="json").items():
        for kk, vv in (v.items() if isinstance(v, dict) else [(None, v)]):
            out[k if kk is None else f"{k}.{kk}"] = json.dumps(
                _as_written(vv), separators=(",", ":"), ensure_ascii=False)
    return out


def _as_written(v):
    """A setting as a config writes it: a shape [4,64], a whole number 1 (not 1.0)."""
    if isinstance(v, list):
        return [_as_written(x) for x in v]
    if isinstance(v, dict) and set(v) == {"rows", "d"}:
        return [v["rows"], v["d"]]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _setting(v: str | None) -> str:
    if v is None or v == "null":
        return "unset"
    return v if len(v) <= 60 else v[:57] + "…"
