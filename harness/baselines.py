"""Which baseline runs and records `compare` counts: each measurement once.

    base = distinct(runs)      # runs: compare_rules.Run, in the order given
    base.runs, base.notes      # the runs counted, and what was dropped (one line each)
    base.indexes               # per run counted: case key -> record (compare_rules.index)
    base.records(key)          # the case's baseline records, each measurement once
    base.holders(key)          # the runs counted for it: all, less those whose record of
                               # it is another run's measurement
    base.held[i]               # every case key run i holds (its shared records included)
    base.without(key)          # why runs counted hold no record of it: lack / own / shared
    base.own_in                # the runs that held the candidate's own measurements, each
                               # with whose (the candidate's shard, a copy)

A run counts once however it is reached: the same directory given twice (by path), a copy of a
run directory, or the shards of a sharded run beside their merge (a merge copies its shards'
records as they are).  Counted twice, one measurement would make a between-run envelope of no
spread, and switch off the one-baseline rule (the widened threshold of an unsteady case, 3x for
a host-bound one).  A record is the same measurement as another where it is of the same case,
started at the same time on the same host and GPU, and recorded the same status, duration and
time samples and medians of every metric (MEASURED_BY); a record that does not say when it
started is never taken for another.  The runs are taken largest first (most cases): a run
whose every record is a measurement an earlier one holds is dropped, noted (as a shard of a
merge where the merge's merged_from names it, else as a copy); a run that holds some of them
keeps its own, and the shared ones count once (noted too).  The candidate's own measurements
are no baseline for it: a baseline run that holds only them (a copy of the candidate, the
shards of a merged candidate) is refused, one that holds some of them loses those (noted).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from normbench.harness import schema
from normbench.harness.compare_rules import Run, index, isna

# what identifies one measurement of a case, besides its key and every metric's time columns
MEASURED_BY = ("started_at", "hostname", "gpu_uuid", "gpu_index", "status", "duration_s")


@dataclass
class Baselines:
    runs: list[Run]
    indexes: list[dict]               # per run: case key -> record, shared measurements dropped
    dup_keys: list[int]               # per run: case keys it holds more than once
    notes: list[str] = field(default_factory=list)
    shared: Counter = field(default_factory=Counter)   # case key -> records dropped as shared
    held: list[frozenset] = field(default_factory=list)  # per run: every case key it holds
    own: Counter = field(default_factory=Counter)      # case key -> records dropped as the
    # candidate's own measurements
    own_in: list[str] = field(default_factory=list)    # "m holds c's measurements (why)"

    def records(self, key: tuple) -> list[dict]:
        return [b[key] for b in self.indexes if key in b]

    def holders(self, key: tuple) -> int:
        """The runs counted for the case: every run counted, less those whose record of it
        is a measurement another run holds (a case missing from the candidate regresses where
        each of them holds it ok)."""
        return len(self.runs) - self.shared[key]

    def without(self, key: tuple) -> Counter:
        """How many runs counted hold no record of the case, by why: "lack" (the run does not
        hold it: a shard, a run stopped early, a case added since), "own" (its record was the
        candidate's own measurement), "shared" (its record is another run's measurement,
        counted there)."""
        own, shared = self.own[key], self.shared[key]
        return +Counter(lack=len(self.runs) - len(self.records(key)) - own - shared, own=own,
                        shared=shared)


def measurement(rec: dict) -> tuple | None:
    """The identity of the measurement a record holds (MEASURED_BY, the key, every metric's
    median and samples); None where it does not say when it started."""
    if isna(rec.get("started_at")):
        return None
    cols = [*schema.KEY, *MEASURED_BY]
    for col in schema.metrics().values():
        cols += [c for c in (col.name, col.samples) if c]
    return tuple(_value(rec.get(c)) for c in cols)


def _value(v):
    if isna(v):
        return None
    if isinstance(v, float):          # a float as CSV and parquet give it back alike
        return f"{v:.12g}"
    return str(v).strip()


def same_dir(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return a == b


class CandidateCopy(ValueError):
    """A baseline run holds only measurements the candidate holds (its copy, its shards)."""


def distinct(runs: list[Run], candidate: Run | None = None) -> Baselines:
    """The baseline runs and records that count (module docstring), in the order given.  A
    measurement the candidate holds is no baseline for it: a run that holds only such
    measurements (a copy of the candidate, the shards of a merged candidate) raises
    CandidateCopy; a run that holds some of them loses those records, noted."""
    kept: list[Run] = []
    for r in runs:
        if not any(same_dir(r.dir, k.dir) for k in kept):
            kept.append(r)
    notes = []
    if len(kept) < len(runs):
        notes.append(f"{len(runs) - len(kept)} baseline run(s) given more than once: each "
                     "counted once")
    indexed = [index(r.records) for r in kept]
    own: list[set] = [set() for _ in kept]    # per run: its keys dropped as the candidate's
    if candidate is not None:
        indexed = _without_candidate(kept, indexed, candidate, notes, own)
    seen: dict[tuple, int] = {}               # measurement -> the run that holds it
    shared: dict[int, dict[tuple, int]] = {}  # run -> {its case key: the run that holds it}
    for i in sorted(range(len(kept)), key=lambda i: -len(indexed[i][0])):
        for key, rec in indexed[i][0].items():
            m = measurement(rec)
            if m is None:
                continue
            if m in seen:
                shared.setdefault(i, {})[key] = seen[m]
            else:
                seen[m] = i
    drop = {i for i, keys in shared.items() if len(keys) == len(indexed[i][0])}
    out = Baselines([], [], [], notes)
    for i, run in enumerate(kept):
        idx, dups = indexed[i]
        keys = shared.get(i, {})
        where = ", ".join(dict.fromkeys(kept[j].dir for j in keys.values()))
        if i in drop:
            notes.append(f"baseline {run.dir} holds only measurements {where} hold(s) too "
                         f"({_why(run, [kept[j] for j in keys.values()])}): counted once, "
                         f"not as a run of its own")
            continue
        if keys:
            notes.append(f"{len(keys)} of baseline {run.dir}'s {len(idx)} case(s) are "
                         f"measurements {where} hold(s) too: each counted once")
            out.shared.update(list(keys))
            idx = {k: v for k, v in idx.items() if k not in keys}
        if own[i]:
            out.own.update(own[i])
            out.own_in.append(f"{run.dir} holds the candidate {candidate.dir}'s "
                              f"measurements ({_why(candidate, [run])})")
        out.held.append(frozenset(indexed[i][0]))
        out.runs.append(run)
        out.indexes.append(idx)
        out.dup_keys.append(dups)
    return out


def _without_candidate(kept: list[Run], indexed: list, candidate: Run,
                       notes: list[str], dropped: list[set]) -> list:
    """The baseline runs' indexes less the records that are the candidate's own measurements
    (a baseline made of the candidate would widen the envelope to hold it: module docstring);
    `dropped[i]` receives run i's keys so dropped."""
    cand = {m for rec in index(candidate.records)[0].values() if (m := measurement(rec))}
    if not cand:
        return indexed
    out = []
    for run, (idx, dups), mine in zip(kept, indexed, dropped):
        own = {k for k, rec in idx.items() if measurement(rec) in cand}
        mine.update(own)
        if own and len(own) == len(idx):
            raise CandidateCopy(
                f"baseline {run.dir} holds only measurements the candidate {candidate.dir} "
                f"holds too ({_why(run, [candidate])}): it would widen the baselines' "
                "envelope to hold the candidate")
        if own:
            notes.append(f"{len(own)} of baseline {run.dir}'s {len(idx)} case(s) are "
                         f"measurements the candidate {candidate.dir} holds too: not counted "
                         "as baseline")
            idx = {k: v for k, v in idx.items() if k not in own}
        out.append((idx, dups))
    return out


def _why(run: Run, holders: list[Run]) -> str:
    """'a shard merged into H' where a holder's merged_from names the run (its directory, or
    its shard and start time: a directory moved since), else 'a copy'."""
    shard = run.meta.get("shard")
    spec = shard.get("spec") if isinstance(shard, dict) else None
    for h in holders:
        entries = h.meta.get("merged_from")
        for e in entries if isinstance(entries, list) else []:
            if not isinstance(e, dict):
                continue
            d = e.get("dir")
            if (d and (same_dir(str(d), run.dir) or Path(str(d)).name == Path(run.dir).name)
                    or spec and e.get("shard") == spec
                    and e.get("started_at") == run.meta.get("started_at")):
                return f"a shard merged into {h.dir}: its merged_from names it"
    return "a copy"
