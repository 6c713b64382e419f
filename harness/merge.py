"""`merge OUT DIR1 DIR2 …`: one run directory from the shard directories of one plan.

Refused (MergeError, one line) when the shards cannot make one honest run: not shards, of
different plans or shard counts, one shard (I/N) given twice, from different configs (hash),
GPU models, package versions, plugins (or their versions) or commits, a shard a run still
holds (measuring or resuming it: its records so far are not the shard's), a case held by two
shards, a record the store would refuse, or cases that no shard holds (named;
`allow_partial` merges what exists and says so in meta.json); a shard whose records cannot
be read is StoreError (load_records) — either before the output directory is made.  The
records are written through the store, in plan order, all at once (RunStore.append_many:
one write of records.csv, one of records.parquet); a merge stopped before it finished (a
signal, a full disk) leaves meta.json saying `merge.finished: false`, and a merge into that
directory replaces what it wrote (`unfinished`: not once a `--resume` has run there).
meta.json's top level holds what every shard's agrees on — a key they differ in (a GPU's
UUID or clocks, cpu_model, the environment, argv, workers ...) is null there, named in
`merge.differs` and kept in each shard's merged_from entry, the
TRITON_*/CUDA_*/PYTORCH_*/NORMBENCH_* variables set differently in
`merge.environment_differs` — whatever order the shards are given in (and
`plugins` whatever order they loaded in: kept in one order, _plugins_in_order); the
copy ceiling is the shards' median, the times span them all.  `merged_from` has one entry per
shard with its own: where, when, on which host and GPUs, its copy ceiling, environment,
command lines and resumes; `merge` (shards, partial, missing cases) replaces `shard` and
`resumes`.  Each record keeps the `pct_copy` of the GPU that measured it.
"""
from __future__ import annotations

import json
import os
import re
import statistics
from pathlib import Path

from normbench.harness.schema import COLUMNS
from normbench.harness.store import (RunStore, StoreError, check_not_in_use, check_record,
                                     in_use, is_run_dir, load_meta, load_records)

# meta keys that must agree between shards, besides every "*_version" key
SAME = (("config_hash", "config"), ("device_name", "GPU model"), ("git_commit", "commit"),
        ("interpreted", "timer"))
NAMED = 5                     # cases named in a message before "… and N more"


class MergeError(Exception):
    """The shards cannot be merged; one-line message."""


def _names(keys: list[str]) -> str:
    shown = ", ".join(keys[:NAMED])
    return shown + (f" … and {len(keys) - NAMED} more" if len(keys) > NAMED else "")


def _version_keys(metas: list[dict]) -> list[str]:
    keys = {k for m in metas for k in m if k.endswith("_version") and k != "format_version"}
    return sorted(keys)


def versions(meta: dict) -> dict:
    """What a run was measured with: every top-level "*_version" key, each package of
    "package_versions" (the peers, numpy, ...) as "package_versions.NAME" and each plugin
    loaded (meta's `plugins`) as "plugins.NAME" (plugin_versions)."""
    out = {k: meta.get(k) for k in _version_keys([meta])}
    pkgs = meta.get("package_versions")
    if isinstance(pkgs, dict):
        out.update({f"package_versions.{n}": v for n, v in sorted(pkgs.items())})
    out.update({f"plugins.{n}": v for n, v in sorted((plugin_versions(meta) or {}).items())})
    return out


UNVERSIONED = "no version known"      # a plugin loaded from a module no distribution installed


def plugin_versions(meta: dict) -> dict[str, str] | None:
    """meta's `plugins` as {name: version}: a plugin installed by a distribution under the
    distribution's name, one on PYTHONPATH under its module's, with UNVERSIONED — loaded,
    whatever its code.  None where meta does not say (written before plugins were kept)."""
    plugins = meta.get("plugins")
    if not isinstance(plugins, list):
        return None
    out = {}
    for p in plugins:
        if isinstance(p, dict) and (name := p.get("distribution") or p.get("module")):
            out[str(name)] = str(p["version"]) if p.get("version") else UNVERSIONED
    return out


def version_name(key: str) -> str:
    """A key of versions() as a reader names it: "torch" (torch_version), "liger-kernel"
    (package_versions.liger-kernel), "plugin h5plug" (plugins.h5plug)."""
    group, dot, name = key.partition(".")
    if not dot:
        return key.removesuffix("_version")
    return f"plugin {name}" if group == "plugins" else name


# what run --shard writes into meta.json's "shard" (harness/shard.meta_entry), by type
_ENTRY = {"index": int, "count": int, "spec": str, "plan_digest": str, "plan_size": int,
          "plan_keys": list, "keys": list}


def _check_entry(d: Path, entry) -> None:
    """A shard entry as run --shard writes it, or a one-line MergeError naming the field."""
    where = f"{d / 'meta.json'}: shard"
    if not isinstance(entry, dict):
        raise MergeError(f"{where}: expected a mapping, got {type(entry).__name__}")
    for key, typ in _ENTRY.items():
        v = entry.get(key)
        if not isinstance(v, typ) or isinstance(v, bool):
            raise MergeError(f"{where}.{key}: expected {typ.__name__}, got "
                             f"{'nothing' if v is None else type(v).__name__}")
    for key in ("plan_keys", "keys"):
        if not all(isinstance(k, str) for k in entry[key]):
            raise MergeError(f"{where}.{key}: expected a list of case keys (strings)")
    if not 0 <= entry["index"] < entry["count"]:
        raise MergeError(f"{where}.index: {entry['index']} is not in [0, {entry['count']})")


def _hex_id(value) -> bool:
    return isinstance(value, str) and re.fullmatch(r"[0-9a-fA-F]{7,40}", value) is not None


def _full_commits(commits: list) -> list:
    """Each commit id as the longest id given that it abbreviates (git's 7-digit short id and
    the full one name one commit: NORMBENCH_GIT_COMMIT=$(git rev-parse --short HEAD) on one
    machine, the checkout's HEAD on another); ids of 7 hex digits or more only."""
    ids = sorted({c.lower() for c in commits if _hex_id(c)}, key=len, reverse=True)
    return [next(i for i in ids if i.startswith(c.lower())) if _hex_id(c) else c
            for c in commits]


def check(dirs: list[Path], metas: list[dict]) -> None:
    """Raise MergeError unless the shards come from one plan, config, GPU model and stack."""
    for d, m in zip(dirs, metas):
        if not m.get("shard"):
            raise MergeError(f"{d} is not a shard (no 'shard' in its meta.json; "
                             "shards come from run --shard I/N)")
        _check_entry(d, m["shard"])
    first = metas[0]["shard"]
    for d, m in zip(dirs[1:], metas[1:]):
        s = m["shard"]
        if s.get("count") != first.get("count"):
            raise MergeError(f"different shard counts: {dirs[0]} is {first.get('spec')}, "
                             f"{d} is {s.get('spec')}")
        if s.get("plan_digest") != first.get("plan_digest"):
            raise MergeError(f"different plans: {dirs[0]} ({first.get('plan_size')} cases, "
                             f"plan {first.get('plan_digest')}) and {d} ({s.get('plan_size')} "
                             f"cases, plan {s.get('plan_digest')})")
    given: dict[int, Path] = {}
    for d, m in zip(dirs, metas):
        # an attempt of a shard beside its rerun: which one's records and meta are the
        # shard's is the user's to say, not the merge's
        i = m["shard"]["index"]
        if i in given:
            raise MergeError(f"shard {m['shard']['spec']} is given twice: {given[i]} and {d} "
                             "(give one directory per shard)")
        given[i] = d
    stacks = [(d, {k: m.get(k) for k, _ in SAME} | versions(m)) for d, m in zip(dirs, metas)]
    # a plugin only a resume loaded is compared too (the shards lack it: None)
    keys = sorted({k for _, v in stacks for k in v}
                  | {k for d, m in zip(dirs, metas) for _, v in _resumes(d, m) for k in v})
    stacks = [(d, {k: v.get(k) for k in keys}) for d, v in stacks]
    plugins = [k for k in keys if k.startswith("plugins.")]
    stacks += [s for d, m in zip(dirs, metas) for s in _resumes(d, m, plugins)]
    checks = list(SAME) + [(k, version_name(k) + " version") for k in keys
                           if k not in dict(SAME)]
    for key, what in checks:
        has = [(d, v[key]) for d, v in stacks if key in v]
        got = [g for _, g in has]
        same = _full_commits(got) if key == "git_commit" else got
        values = {repr(s): (d, g) for (d, g), s in zip(has, same)}
        if len(values) > 1:
            (d1, v1), (d2, v2) = list(values.values())[:2]
            raise MergeError(f"different {what}: {d1} has {key}={v1!r}, {d2} has {key}={v2!r}")


def _measuring(meta: dict) -> list[tuple[int, dict]]:
    """(number, entry) of each `--resume` in meta's `resumes` that may have measured records:
    one that counted none (`measured: 0`) added nothing to compare or fold in; one without
    the count (written before resumes counted, or killed before it could) may have."""
    return [(i, e) for i, e in enumerate(meta.get("resumes") or [], 1) if isinstance(e, dict)
            and not (type(e.get("measured")) is int and e["measured"] < 1)]


def _resumes(d: Path, meta: dict, plugins=()) -> list[tuple[str, dict]]:
    """What each `--resume` of a shard measured with (its `resumes` entries: config, device,
    commit and versions, where the entry records them — entries written before they did hold
    only the config and device): compared with the other shards' as the shards' own are.
    plugins: the "plugins.NAME" keys compared — one an entry that records its plugins lacks
    is None there (resumed without it), as for a shard that lacks it."""
    out = []
    for i, e in _measuring(meta):
        v = {k: e[k] for k, _ in SAME if k in e} | versions(e)
        if plugin_versions(e) is not None:
            v = {k: None for k in plugins} | v
        if not e.get("forced"):         # a plain resume matched the config (hash or text)
            v.pop("config_hash", None)
        out.append((f"{d} (its resume {i})", v))
    return out


def is_merged(run_dir: str | os.PathLike) -> bool:
    """run_dir holds a merge of shards (its meta.json has `merge`); False where it holds no
    run or its meta cannot be read (the store refuses that itself)."""
    try:
        return isinstance(load_meta(run_dir).get("merge"), dict)
    except (OSError, StoreError):
        return False


def unfinished(meta: dict) -> bool:
    """meta.json's is a merge's that stopped before it finished (a signal, a full disk:
    `merge.finished` false) and that no `run --resume` has run in since (no `resumes`: one
    may have measured records there): what its directory holds is only a copy of its
    shards' records, and a merge into it writes over it — the same merge run again finishes
    the job."""
    info = meta.get("merge")
    return isinstance(info, dict) and info.get("finished") is False and not meta.get("resumes")


def merge(out: str | os.PathLike, dirs: list[str | os.PathLike], *,
          allow_partial: bool = False) -> dict:
    """Merge `dirs` into the new run directory `out` — or one that holds a merge that did
    not finish (`unfinished`), which it replaces; returns its meta."""
    out, dirs = Path(out), [Path(d) for d in dirs]
    if not dirs:
        raise MergeError("no shard directories given")
    seen: dict[Path, Path] = {}
    for d in dirs:
        if not is_run_dir(d):
            raise MergeError(f"{d} is not a run directory (no records.csv / meta.json)")
        if d.resolve() == out.resolve():
            raise MergeError(f"the output {out} is one of the shards")
        if d.resolve() in seen:
            raise MergeError(f"shard {d} is given twice (also as {seen[d.resolve()]})")
        seen[d.resolve()] = d
    for d in dirs:
        # a shard a run still measures (or resumes) holds only its records so far: merged,
        # they made a finished merge that said the shard had stopped before finishing
        if in_use(d):
            try:
                check_not_in_use(d)
            except StoreError as e:
                raise MergeError(f"shard {e}: merge once that run has finished") from None
    metas = [load_meta(d) for d in dirs]
    check(dirs, metas)
    frames = [load_records(d) for d in dirs]
    plan = metas[0]["shard"]["plan_keys"]
    in_plan = set(plan)
    owner: dict[str, Path] = {}
    rows: dict[str, dict] = {}
    for d, f in zip(dirs, frames):
        extra = [c for c in f.columns if c not in COLUMNS]
        if extra:
            raise MergeError(f"{d} has columns this version does not know ({', '.join(extra)})")
        for rec in f.to_dict("records"):
            cid = rec["case_id"]
            if cid in owner:
                raise MergeError(f"{d} holds case {cid} twice" if owner[cid] == d else
                                 f"case {cid} is in two shards: {owner[cid]} and {d}")
            if cid not in in_plan:
                raise MergeError(f"{d} holds case {cid}, which is not in the plan")
            try:        # refused here, not by the store after the output is made
                check_record(rec)
            except ValueError as e:
                raise MergeError(f"{d}: case {cid}: {e}") from None
            owner[cid] = d
            rows[cid] = rec
    missing = [k for k in plan if k not in rows]
    if missing and not allow_partial:
        have = sorted({m["shard"]["spec"] for m in metas})
        raise MergeError(f"{len(missing)} of {len(plan)} cases are in no shard (shards given: "
                         f"{', '.join(have)}): {_names(missing)}; --allow-partial merges "
                         "what exists")
    meta = _merged_meta(dirs, metas, plan, missing)
    hint = "merge into a new or empty directory (merge's first argument)"
    with RunStore(out, occupied_hint=hint, replaces=unfinished) as store:
        # not complete until every record is in: a merge stopped by a full disk or a signal
        # leaves a directory that says so, not one a report reads as the whole run
        store.write_meta({**meta, "completed": False,
                          "merge": {**meta["merge"], "finished": False}})
        # one write of records.csv for them all: appended one by one, each rewrote the whole
        # file (2,080 records took 56 s, 7,488 took 226 s)
        store.append_many(rows[k] for k in plan if k in rows)
        store.flush()                  # records.parquet too, before meta says it is finished
        store.write_meta(meta)
        return store.meta


# meta keys of the merged run as a whole, which no merged_from entry repeats where the shards
# agree on them: those check() compares (SAME, every "*_version" key, package_versions, the
# plugins' versions), the config's and the format's; every other key is a fact of the shard's
# machine or command (its GPU and clocks, cpu_model, environment, argv and invocations,
# workers and gpus ...), kept per shard
_OF_THE_RUN = {*dict(SAME), "config_name", "config_text", "format", "format_version",
               "package_versions", "plugins", "shard", "merge", "merged_from", "resumes"}
# what the merge writes at the top level itself, from every shard (not "the same or null")
_COMPUTED = ("merged_from", "merge", "copy_ceiling_gbps", "started_at", "ended_at",
             "completed", "git_dirty", "git_commit", "hostname")


def _merged_meta(dirs, metas, plan, missing) -> dict:
    # in shard order, whatever order the shards were given in: the result is the same
    order = sorted(range(len(dirs)), key=lambda i: metas[i]["shard"]["index"])
    dirs, metas = [dirs[i] for i in order], [metas[i] for i in order]
    meta, differs = _agreed(metas)
    # one the shards still differ in (plugins of one version loaded from other modules or
    # sources) is null at the top: each shard's stays in its entry, as a machine's facts do
    own = [k for k in differs if k in _OF_THE_RUN and k not in _COMPUTED]
    sources = []
    for d, m in zip(dirs, metas):
        # each shard's resumes stay in its entry: a resume of the merged directory starts a
        # list of its own
        sources.append({"dir": str(d), "shard": m["shard"]["spec"],
                        "cases": len(m["shard"].get("keys") or []),
                        **{k: m.get(k) for k in ("hostname", "gpus", "copy_ceiling_gbps",
                                                 "started_at", "ended_at", "completed",
                                                 "git_dirty")},
                        **{k: v for k, v in m.items() if k not in _OF_THE_RUN
                           and k not in versions(m)},
                        **{k: m.get(k) for k in own},
                        "resumes": m.get("resumes") or []})
    ceilings = [s["copy_ceiling_gbps"] for s in sources if s["copy_ceiling_gbps"]]
    started = [m["started_at"] for m in metas if m.get("started_at")]
    ended = [m["ended_at"] for m in metas if m.get("ended_at")]
    meta.update(
        merged_from=sources,
        merge={"shards": len(dirs), "count": metas[0]["shard"]["count"],
               "plan_size": len(plan), "partial": bool(missing), "missing": len(missing),
               "missing_keys": missing, "finished": True,
               "differs": [k for k in differs if k not in _COMPUTED],
               "environment_differs": environment_differs(metas)},
        copy_ceiling_gbps=statistics.median(ceilings) if ceilings else None,
        started_at=min(started) if started else None, ended_at=max(ended) if ended else None,
        completed=not missing and all(m.get("completed") for m in metas),
        git_dirty=_dirty([m.get("git_dirty") for m in metas]
                         + [e.get("git_dirty") for m in metas for _, e in _measuring(m)
                            if "git_commit" in e]),
        git_commit=max(_full_commits([m.get("git_commit") for m in metas]),
                       key=lambda c: len(c) if isinstance(c, str) else -1))
    if len({s["hostname"] for s in sources}) > 1:
        meta["hostname"] = ", ".join(dict.fromkeys(str(s["hostname"]) for s in sources))
    return meta


def _agreed(metas: list[dict]) -> tuple[dict, list[str]]:
    """The top level of a merge: each key (but a shard's `shard` and `resumes`) with the value
    every shard has (a shard without the key has null), else null; and the keys whose values
    differ, sorted — each shard's own is in its merged_from entry.  `plugins` are compared
    as a set (_plugins_in_order)."""
    keys = dict.fromkeys(k for m in metas for k in m if k not in ("shard", "resumes"))
    meta, differs = {}, []
    for k in keys:
        values = [_plugins_in_order(m.get(k)) if k == "plugins" else m.get(k) for m in metas]
        same = all(v == values[0] for v in values[1:])
        meta[k] = values[0] if same else None
        if not same:
            differs.append(k)
    return meta, sorted(differs)


def _plugins_in_order(plugins):
    """meta's `plugins` in one order: the modules NORMBENCH_PLUGINS named, by module, then the
    entry points, by name (the order they load in, but for the order NORMBENCH_PLUGINS gives).
    Shards that loaded the same plugins in another order (NORMBENCH_PLUGINS=a,b and b,a) ran
    the same plugin code: compared in load order they differed, and the merged meta.json
    recorded no plugins at all, at the top or in any merged_from entry."""
    if not isinstance(plugins, list):
        return plugins

    def key(p):
        text = json.dumps(p, sort_keys=True, default=str)
        if not isinstance(p, dict):
            return (2, "", "", text)
        return (p.get("source") != "NORMBENCH_PLUGINS", str(p.get("entry_point") or ""),
                str(p.get("module") or ""), text)
    return sorted(plugins, key=key)


def environment_differs(metas: list[dict]) -> list[str]:
    """The TRITON_*/CUDA_*/PYTORCH_*/NORMBENCH_* variables (meta's `environment`, and that of
    each `--resume` of a shard that measured records: its `resumes` entry's) that are not set
    alike in every shard — set differently, or set in some shards only."""
    envs = [m.get("environment") if isinstance(m.get("environment"), dict) else {}
            for m in metas]
    envs += [e["environment"] for m in metas for _, e in _measuring(m)
             if isinstance(e.get("environment"), dict)]
    names = {k for e in envs for k in e}
    return sorted(k for k in names if len({repr(e.get(k)) for e in envs}) > 1)


__all__ = ["MergeError", "StoreError", "check", "is_merged", "merge", "unfinished"]


def _dirty(flags: list):
    """The merged tree's state: dirty if any shard's was, unknown (None) if any shard's was
    unknown, else clean."""
    if any(f is True for f in flags):
        return True
    return None if any(f is None for f in flags) else False
