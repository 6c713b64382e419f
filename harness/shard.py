"""Shards of a plan: `run CONFIG --shard I/N` measures a fixed 1/N part of it.

The parts are balanced by the plan's estimated cost (harness.plan's GPU model: timing budgets,
bytes, and each compile shared by the cases that reuse it) with the longest-first greedy rule:
cases in order of falling cost (plan order breaks ties) each go to the part with the least
cost so far (the lowest index breaks ties).  The estimate is the GPU's on every machine, and a
sharded run plans every known implementation (where a config names none, those unavailable
on a machine are recorded there as skipped), so the same config and I/N pick the same cases
everywhere — a login node, a CPU, any GPU.  A
shard's `meta.json` holds `shard`: its I/N, the whole plan's keys (so that `merge` can name
any case that no shard holds) and its own.
"""
from __future__ import annotations

import hashlib
import re
from collections import Counter

from normbench.harness import plan as _plan
from normbench.harness.config import Sweep
from normbench.harness.plan import Case


class ShardError(ValueError):
    """A bad --shard value; one line."""


MAX_SHARDS = 100_000     # far more than any cluster; a bound keeps the partition's lists sane


def parse(spec: str) -> tuple[int, int]:
    """'I/N' -> (I, N) with 0 <= I < N."""
    m = re.fullmatch(r"\s*([0-9]{1,9})\s*/\s*([0-9]{1,9})\s*", str(spec))
    if not m:
        raise ShardError(f"--shard: expected I/N (e.g. 0/4; N at most {MAX_SHARDS}), got {spec!r}")
    i, n = int(m.group(1)), int(m.group(2))
    if n < 1 or i >= n:
        raise ShardError(f"--shard {spec}: need 0 <= I < N, got I={i}, N={n}")
    if n > MAX_SHARDS:
        raise ShardError(f"--shard {spec}: N at most {MAX_SHARDS}, got {n}")
    return i, n


def case_costs(cases: list[Case], sweep: Sweep) -> list[float]:
    """Estimated seconds per case on a GPU; a compile is shared by the cases of its group."""
    group = lambda c: (c.implementation, c.norm, c.dtype, c.weight_dtype, c.d)  # noqa: E731
    sizes = Counter(group(c) for c in cases)
    costs = []
    for c in cases:
        alone = _plan.estimate_seconds([c], sweep, False) - _plan.STARTUP_S - _plan.GPU_COMPILE_S
        costs.append(alone + _plan.GPU_COMPILE_S / sizes[group(c)])
    return costs


def partition(costs: list[float], n: int) -> list[int]:
    """The part (0..n-1) of every item: longest first, each to the least loaded part."""
    load = [0.0] * n
    part = [0] * len(costs)
    for k in sorted(range(len(costs)), key=lambda k: (-costs[k], k)):
        j = min(range(n), key=lambda j: (load[j], j))
        part[k] = j
        load[j] += costs[k]
    return part


def select(cases: list[Case], sweep: Sweep, index: int, count: int) -> list[Case]:
    """Shard `index` of `count`, in plan order."""
    part = partition(case_costs(cases, sweep), count)
    return [c for c, p in zip(cases, part) if p == index]


def plan_digest(keys: list[str]) -> str:
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]


def meta_entry(cases: list[Case], mine: list[Case], index: int, count: int) -> dict:
    """What meta.json records about the shard."""
    keys = [c.key for c in cases]
    return {"index": index, "count": count, "spec": f"{index}/{count}",
            "plan_digest": plan_digest(keys), "plan_size": len(keys),
            "plan_keys": keys, "keys": [c.key for c in mine]}

