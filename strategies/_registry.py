"""The registry: a strategy or baseline is one decorated function.

    @register("disjoint_block", kind="strategy", deterministic_by_design=True, uses_groups=True)
    def backward(x, dy, weight, mean, rstd, *, groups): ...

The harness discovers implementations through this registry only.
"""
from __future__ import annotations

import importlib
import math
import os
from dataclasses import dataclass, field
from typing import Callable

import torch

from . import _device, _tuning
from ._args import check_args

KINDS = ("strategy", "baseline")


def _no_workspace(rows: int, d: int, groups: int | None, has_bias: bool) -> int:
    return 0


@dataclass
class Entry:
    name: str
    kind: str
    deterministic_by_design: bool
    uses_groups: bool
    fn: Callable | None
    available: bool = True
    reason: str = ""
    doc: str = ""
    # (rows, d, sm_count) -> GROUPS used when groups=None
    auto_groups: Callable[[int, int, int], int] | None = None
    # (rows, d, groups_effective, has_bias) -> fp32 workspace bytes
    workspace: Callable[[int, int, int | None, bool], int] = field(default=_no_workspace)
    # (rows, groups_effective) -> writers into one dγ slot
    writers: Callable[[int, int | None], int] | None = None
    # (rows, d, groups, device) -> effective GROUPS, cached for the hot path of backward()
    _groups: dict = field(default_factory=dict, repr=False, compare=False)

    def effective_groups(self, rows: int, d: int, groups: int | None,
                         device: torch.device | str | None = None) -> int | None:
        """The number of partial rows actually used for this call (None if groups are unused).

        More partial rows than rows would leave some empty, so GROUPS is capped so that every
        partial row receives at least one row."""
        if not self.uses_groups:
            return None
        if groups is None:
            groups = self.auto_groups(rows, d, _device.sm_count(device)) if self.auto_groups else 1
        per = math.ceil(rows / groups)
        return math.ceil(rows / per)

    def workspace_bytes(self, rows: int, d: int, groups: int | None, has_bias: bool = True) -> int:
        return self.workspace(rows, d, self.effective_groups(rows, d, groups), has_bias)

    def writers_per_slot(self, rows: int, d: int, groups: int | None) -> int | None:
        if self.writers is None:
            return None
        return self.writers(rows, self.effective_groups(rows, d, groups))

    def backward(self, x, dy, weight, mean, rstd, groups=None):
        """dx, dγ, dβ (dβ None for RMSNorm, i.e. mean=None).  Raises ValueError on bad arguments."""
        if not self.available:
            raise RuntimeError(f"implementation {self.name!r} is not available: {self.reason}")
        check_args(x, dy, weight, mean, rstd, groups)
        if not self.uses_groups:
            return self.fn(x, dy, weight, mean, rstd, groups=None)
        # every call asks: a dict hit, nothing more — except while launch parameters are
        # overridden (bench/tune.py), since the auto GROUPS of disjoint_block follows the warps
        key = (*x.shape, groups, x.device)
        g = None if _tuning.OVERRIDE else self._groups.get(key)
        if g is None:
            g = self.effective_groups(key[0], key[1], groups, key[3])
            if not _tuning.OVERRIDE:
                self._groups[key] = g
        return self.fn(x, dy, weight, mean, rstd, groups=g)


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


_REGISTRY: dict[str, Entry] = {}
_plugins_loaded = False


def register(name: str, *, kind: str, deterministic_by_design: bool, uses_groups: bool,
             auto_groups=None, workspace=None, writers=None, doc: str = ""):
    """Decorator registering `fn(x, dy, weight, mean, rstd, *, groups)` under `name`."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")

    def deco(fn):
        if name in _REGISTRY and _REGISTRY[name].fn is fn:
            return fn                      # the same module imported twice
        add(Entry(
            name=name, kind=kind, deterministic_by_design=deterministic_by_design,
            uses_groups=uses_groups, fn=fn, doc=doc or _first_line(fn.__doc__), auto_groups=auto_groups,
            workspace=workspace or _no_workspace, writers=writers))
        return fn
    return deco


def add(entry: Entry) -> Entry:
    """Register a ready-made Entry (a subclass may, for example, settle `available` lazily)."""
    if entry.name in _REGISTRY:
        raise ValueError(f"implementation {entry.name!r} registered twice")
    _REGISTRY[entry.name] = entry
    return entry


def register_unavailable(name: str, *, kind: str, reason: str, deterministic_by_design: bool = False,
                         uses_groups: bool = False, doc: str = "") -> None:
    """Record an optional implementation that cannot run here, and why."""
    _REGISTRY.setdefault(name, Entry(name=name, kind=kind, deterministic_by_design=deterministic_by_design,
                                     uses_groups=uses_groups, fn=None, available=False,
                                     reason=reason, doc=doc))


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for mod in filter(None, (m.strip() for m in os.environ.get("NORMBENCH_PLUGINS", "").split(","))):
        importlib.import_module(mod)


def known() -> list[str]:
    """Every registered name, available or not."""
    _load_plugins()
    return list(_REGISTRY)


def names() -> list[str]:
    """Names of the implementations that can run here."""
    _load_plugins()
    return [n for n, e in _REGISTRY.items() if e.available]


def get(name: str) -> Entry:
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown implementation {name!r}; known: {', '.join(_REGISTRY)}") from None


def entries() -> list[Entry]:
    _load_plugins()
    return list(_REGISTRY.values())
