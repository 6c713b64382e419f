"""The contention model of a strategy, declared as data with its registration.

    @register("mine", ..., contention=Contention(writers="rows/groups", partial_rows="groups"))

How many writers add into one fp32 dγ slot, and the workspace a call allocates: fp32 partial
rows of d (×2 with dβ), int32 counters per partial row and column chunk (locks), and a fixed
number of bytes.  `Entry.writers_per_slot` / `workspace_bytes` evaluate it (the report draws
its widget from those); `describe()` is the same model as JSON-ready text.

A partial row can be the output itself: `atomic`'s one fp32 [d] buffer is returned as dγ (dβ)
when the weight is fp32 (`partial_rows_are_fp32_output`), so with an fp32 weight it is no
workspace — its write is the output's, which `bytes_moved` counts — and only a weight of another
dtype (or none given: the model then counts it) makes it one.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from . import _tuning

WRITERS = ("rows", "rows/groups")
_FP32 = ("fp32", torch.float32)         # a weight dtype as a record names it, or torch's


@dataclass(frozen=True)
class Contention:
    # "rows": every row adds into the slot; "rows/groups": row r into partial row r mod GROUPS,
    # ⌈rows/GROUPS⌉ writers; an int: that many (1: one writer, no contention)
    writers: str | int
    # fp32 partial rows of d columns: "groups" (GROUPS of them) or a number (1: one [d] buffer)
    partial_rows: str | int = 0
    # int32 counters per partial row and column chunk (spin_lock: a lock and a first-writer count)
    counters_per_chunk: int = 0
    # bytes a partial row beyond its d columns (disjoint_cluster: a cluster's exchange words)
    bytes_per_group: int = 0
    # bytes beyond those (disjoint_fused: two int32 grid counters)
    fixed_bytes: int = 0
    # the partial rows are the dγ (dβ) output when the weight is fp32 (atomic's one [d] buffer,
    # returned as it is): no workspace then
    partial_rows_are_fp32_output: bool = False

    def __post_init__(self):
        if not (self.writers in WRITERS or (type(self.writers) is int and self.writers >= 1)):
            raise ValueError(f"writers must be one of {WRITERS} or an int >= 1, got {self.writers!r}")
        if not (self.partial_rows == "groups"
                or (type(self.partial_rows) is int and self.partial_rows >= 0)):
            raise ValueError(f"partial_rows must be 'groups' or an int >= 0, got {self.partial_rows!r}")
        # the byte and counter counts too: a text one made every record of a plugin's strategy
        # a TypeError, a negative one a workspace of fewer than 0 bytes (one line at load, here)
        for name in ("counters_per_chunk", "bytes_per_group", "fixed_bytes"):
            value = getattr(self, name)
            if not (type(value) is int and value >= 0):
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if type(self.partial_rows_are_fp32_output) is not bool:
            raise ValueError("partial_rows_are_fp32_output must be True or False, got "
                             f"{self.partial_rows_are_fp32_output!r}")

    def writers_per_slot(self, rows: int, groups: int | None) -> int:
        """Writers into one dγ slot at `groups` partial rows (the effective GROUPS)."""
        if self.writers == "rows":
            return rows
        if self.writers == "rows/groups":
            return math.ceil(rows / groups)
        return self.writers

    def workspace(self, rows: int, d: int, groups: int | None, has_bias: bool, *,
                  weight_dtype=None) -> int:
        """Bytes of workspace one call allocates at `groups` (the effective GROUPS) with a
        weight of `weight_dtype` ("fp32", "bf16", "fp16" or a torch dtype; None: not known,
        counted as a weight whose dγ is not the partial rows themselves)."""
        partial = groups if self.partial_rows == "groups" else self.partial_rows
        if self.partial_rows_are_fp32_output and weight_dtype in _FP32:
            partial = 0
        nbytes = partial * d * 4 * (2 if has_bias else 1)
        if self.counters_per_chunk:
            nbytes += self.counters_per_chunk * groups * _tuning.cdiv(d, _tuning.block_d(d)[0]) * 4
        if self.bytes_per_group:
            nbytes += self.bytes_per_group * groups
        return nbytes + self.fixed_bytes

    def describe(self) -> dict:
        """The model as JSON-ready data, with its formulas spelled out."""
        w = {"rows": "rows", "rows/groups": "⌈rows/GROUPS⌉"}.get(self.writers, str(self.writers))
        parts = []
        if self.partial_rows:
            n = "GROUPS·" if self.partial_rows == "groups" else (
                f"{self.partial_rows}·" if self.partial_rows != 1 else "")
            parts.append(f"{n}d·4 B (×2 with dβ)" + (
                ", none with an fp32 weight (the output)" if self.partial_rows_are_fp32_output
                else ""))
        if self.counters_per_chunk:
            parts.append(f"{self.counters_per_chunk}·GROUPS·chunks·4 B")
        if self.bytes_per_group:
            parts.append(f"{self.bytes_per_group}·GROUPS B")
        if self.fixed_bytes:
            parts.append(f"{self.fixed_bytes} B")
        return {**asdict(self), "writers_formula": w, "workspace_formula": " + ".join(parts) or "0"}
