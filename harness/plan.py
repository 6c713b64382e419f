"""Plan: a validated `Sweep` -> the list of cases to measure, plus a rough runtime estimate.

The plan is the cartesian product

    norm x dtype x weight_dtype x shape x implementation [x groups]

where a shape is (d, rows) from ``d`` x ``rows`` (or ``d`` x ``batch`` x ``seq``, rows =
batch*seq), or one entry of ``shapes`` in the given order.  ``groups`` multiplies only the
implementations that use it; the others get groups "-" once.  The order is fixed (norm, dtype,
weight_dtype, d, rows, implementation, groups, each axis in the config's order), so the same
config always gives the same plan.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass

from normbench.harness.config import Sweep
from normbench.harness.model import bytes_moved
from normbench.harness.schema import case_id

NO_GROUPS = "-"


@dataclass(frozen=True)
class Case:
    """One measurement to make: a shape, dtypes and one implementation."""

    norm: str
    implementation: str
    rows: int
    d: int
    dtype: str
    weight_dtype: str            # resolved: never "same"
    groups: str                  # "64", "auto", or "-" when the implementation has no groups
    batch: int | None = None     # set when the config used batch/seq
    seq: int | None = None

    @property
    def key(self) -> str:
        """The record key (harness.schema.case_id): unique within a plan.  Read from the
        fields as they are (vars): asdict's deep copy made it ~50 µs, three a case, and a
        plan of 131072 cases took 13 s to expand."""
        return case_id(vars(self))

    @property
    def groups_arg(self) -> int | str | None:
        """`groups` as an implementation takes it: an int, "auto", or None (not used)."""
        if self.groups == NO_GROUPS:
            return None
        return self.groups if self.groups == "auto" else int(self.groups)


def _shapes(sweep: Sweep) -> Iterator[tuple[int, int, int | None, int | None]]:
    """(d, rows, batch, seq) in plan order."""
    if sweep.shapes is not None:
        for s in sweep.shapes:
            yield s.d, s.rows, None, None
        return
    for d in sweep.d:
        if sweep.rows is not None:
            for rows in sweep.rows:
                yield d, rows, None, None
        else:
            for b in sweep.batch:
                for s in sweep.seq:
                    yield d, b * s, b, s


def expand(sweep: Sweep, uses_groups: Callable[[str], bool],
           available: Iterable[str]) -> list[Case]:
    """All cases of `sweep`, in the fixed order of the module docstring.

    `uses_groups(name)` says whether an implementation takes a GROUPS argument; it is called
    for every implementation in the plan, including named ones that are not available here
    (those stay in the plan so that the runner can record them as skipped).
    `available`: the implementations to run when the config names none, in their given order.

    Cases with equal keys are dropped after the first: the key holds rows, not batch and seq,
    so batch/seq pairs with the same product (2x8 and 4x4) run once, as the first pair; and
    ``weight_dtype: [same, fp32]`` with ``dtype: fp32`` gives fp32 once.
    """
    names = list(sweep.implementations) if sweep.implementations is not None \
        else list(available)
    group_axis = {name: ([str(g) for g in sweep.groups] if uses_groups(name) else [NO_GROUPS])
                  for name in names}
    cases: list[Case] = []
    seen: set[str] = set()
    for norm in sweep.norm:
        for dtype in sweep.dtype:
            for wd in sweep.weight_dtype:
                weight_dtype = dtype if wd == "same" else wd
                for d, rows, batch, seq in _shapes(sweep):
                    for name in names:
                        for groups in group_axis[name]:
                            case = Case(norm=norm, implementation=name, rows=rows, d=d,
                                        dtype=dtype, weight_dtype=weight_dtype, groups=groups,
                                        batch=batch, seq=seq)
                            if case.key not in seen:
                                seen.add(case.key)
                                cases.append(case)
    return cases


# Rough costs.  GPU: the timing budgets dominate; each distinct Triton specialization compiles
# once.  Interpreter (Triton on CPU): measured on a 2-core CPU (session 52, after the
# interpreter's set-up was taken out of each launch, strategies/_interpret.py), LN bf16, a
# call costs 20-50 ms, plus ~3.5 ms a row for the one-row kernels (atomic 256 × 64: 0.90 s;
# the row loop's: 74-86 ms) plus a part that grows with rows·d (disjoint_block 64 × 1024:
# 0.28 s, atomic 0.24 s); torch calls are ~100x cheaper (not told apart here).  At the old
# constants (0.15 s, 15 ms, 1e-5 s) the CPU default run read "about 2.2 min" and took 31 s.
STARTUP_S = 5.0                  # importing torch/triton, device set-up, copy ceiling
GPU_CASE_OVERHEAD_S = 0.05       # inputs, reference, correctness check
GPU_LAUNCH_S = 50e-6             # one call from Python, for small shapes
GPU_COMPARE_BPS = 1e12           # bytes/s for a repeat's run + bitwise compare
# per (implementation, norm, dtype, weight_dtype, d): Triton's JIT (and quack's) with a cold
# cache.  H200, 2026-11-30: default.yaml (48 such groups, 144 records) ran 376 s against an
# estimate of 105 s at 1.5 s; peers.yaml right after it, caches warm, 150 s.
GPU_COMPILE_S = 5.0
CPU_CALL_S = 0.03                # interpreter: fixed cost of one call
CPU_ROW_S = 0.0035               # interpreter: cost per row per call (one-row kernels)
CPU_ELEMENT_S = 2e-6             # interpreter: cost per element of x (rows*d) per call
CPU_MIN_TIMED_CALLS = 3          # the CPU timer's minimum number of samples


def estimate_seconds(cases: Iterable[Case], sweep: Sweep, interpreted: bool,
                     unavailable: Collection[str] = ()) -> float:
    """A rough estimate of the wall time of running `cases` (for a progress line or a
    warning, not a promise).  A case of an implementation in `unavailable` (one the machine
    that measures lacks) costs nothing: measure records it `skipped` without a call."""
    cases = [c for c in cases if c.implementation not in unavailable]
    if not cases:
        return 0.0
    warm_s, rep_s = sweep.timing.warmup_ms / 1e3, sweep.timing.rep_ms / 1e3
    repeats = sweep.determinism.repeats
    total = STARTUP_S
    if interpreted:
        for c in cases:
            call = CPU_CALL_S + CPU_ROW_S * c.rows + CPU_ELEMENT_S * c.rows * c.d
            timed = max(rep_s, CPU_MIN_TIMED_CALLS * call)
            total += max(warm_s, call) + timed + repeats * call   # + first call, repeats-1
        return total
    compiled = {(c.implementation, c.norm, c.dtype, c.weight_dtype, c.d) for c in cases}
    total += GPU_COMPILE_S * len(compiled)
    for c in cases:
        nbytes = bytes_moved(c.norm, c.rows, c.d, c.dtype, c.weight_dtype)
        per_call = GPU_LAUNCH_S + nbytes / GPU_COMPARE_BPS
        total += GPU_CASE_OVERHEAD_S + warm_s + rep_s + (1 + repeats) * 2 * per_call
    return total
