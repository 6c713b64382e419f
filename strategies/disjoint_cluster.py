"""disjoint_cluster — each row split between the two CTAs of a thread-block cluster.

Issue 16's rows of 16384 at 4096 rows are 31.03 rows an SM: the 32nd row of 4 programs alone
is ~3 % of the call, and each program's fill and end are paid over few rows (docs/PERF_NOTES.md,
rounds 27 and 37).  quack splits such a row across a 2-CTA cluster; Triton 3.6 cannot reduce a
tensor laid across a cluster's CTAs (bench/cluster_probe.py).  So here each CTA holds its own
half of the row in a layout of its own, and only the two halves' row sums cross: stored to
global memory, a cluster barrier (release / acquire at cluster scope), the partner's read back
from L2 — one exchange of two fp32 numbers a row, in PTX (strategies/_cluster_kernel.py).

Cluster c of C takes rows c, c + C, … (dealt round-robin, as disjoint_strided's); CTA k of it
owns columns [k·H, (k + 1)·H) of every row, H = pow2(d) / 2, staged in shared memory as
disjoint_smem stages whole rows (cp.async, a ring of stages).  Both CTAs add the same two
numbers for the row sums (IEEE addition commutes), so both halves of dx use the same c1, c2.
Each CTA sums dy·x̂ and dy of its half over the cluster's rows in registers (fp32, row order)
and stores its half of partial row c; the same fixed-order reduce as disjoint_block's
(`reduce.reduce_partials`) sums the C partial rows: one writer per slot, no atomics, bitwise
deterministic.  GROUPS counts clusters (partial rows); a cluster is two CTAs on two SMs.

Where it runs: compiled code on a GPU with clusters (compute capability 9.0 on), rows wider
than 2048 and at most 16384 whose width, strides and pointers allow cp.async copies of 4 bytes
or more (`plan`); elsewhere disjoint_strided runs, over twice GROUPS programs, and a record's
`notes` say so.  A tuning option of issue 16, measured in round 37 (docs/PERF_NOTES.md).
"""
from __future__ import annotations

import math
from typing import NamedTuple

from . import _device, _tuning
from ._contention import Contention
from ._registry import register, register_unavailable
from .disjoint_smem import MAX_STAGES, vec_width

NAME = "disjoint_cluster"
MIN_D, MAX_D = 2049, 16384


def _rule(d: int) -> dict:
    """Launch parameters at d: 16 warps a CTA (fewer where a half row is narrower than one
    copy a thread), stages from `inflight` bytes of x and dy ahead a CTA (num_stages 0) or as
    given, the reduce as a programmatic dependent (`pdl`, where the GPU can).  Round 37 timed
    it 1.34–1.48× slower than disjoint_strided; round 38 the row sums' exchange one row ahead
    of dx, slower still (and its partial rows wrong: removed)."""
    return dict(num_warps=16, num_stages=0, inflight=128 * 1024, pdl=True)


def _groups_rule(rows: int, d: int, sms: int, launch) -> int:
    """One cluster of two CTAs (one an SM) for every two SMs."""
    return max(1, min(sms // 2, rows))


class Plan(NamedTuple):
    """How the kernel runs a call: `half` columns a CTA (a power of two), `vec` elements a
    copy, `warps`, `stages` half rows of x and dy in shared memory; half = 0: not split
    (disjoint_strided runs)."""
    half: int
    vec: int
    warps: int
    stages: int


NOT_SPLIT = Plan(0, 0, 0, 0)


def plan(p, d: int, elem: int, w_elem: int, smem: int, units=()) -> Plan:
    """The Plan at launch parameters p for rows of d elements of `elem` bytes, a weight of
    `w_elem`, `smem` bytes of shared memory a CTA and the other `units` a copy must divide
    (row strides, pointer offsets in elements)."""
    if not MIN_D <= d <= MAX_D:
        return NOT_SPLIT
    vec = vec_width(elem, d, *units)
    if not vec:
        return NOT_SPLIT
    half = _tuning.pow2(d) // 2
    warps = max(1, min(p["num_warps"], half // (vec * 32)))
    stage = half * elem * 2
    st = p["num_stages"] or 1 + math.ceil(p["inflight"] / stage)
    st = min(st, MAX_STAGES)
    while st > 0 and st * stage + half * w_elem + 2048 > smem:
        st -= 1
    return Plan(half, vec, warps, st) if st else NOT_SPLIT


def plan_of(x, dy, dx, weight, p) -> Plan:
    """`plan` for this call (dx: the output)."""
    units = [x.stride(0), dy.stride(0), dx.stride(0)]
    for t in (x, dy, dx):
        units.append(0 if t.data_ptr() % 16 == 0 else 1)
    return plan(p, x.shape[1], x.element_size(), weight.element_size(),
                _device.smem_per_program(x.device), units)


# the partial rows and each cluster's exchange words (`_words`: 8 fp32) — for a split row;
# where a row is not split, disjoint_strided runs over about twice the partial rows and no
# words, which this model does not count.  Declared once, for either registration below.
CONTENTION = Contention(writers=1, partial_rows="groups", bytes_per_group=32)
_WHY = _device.gluon_unavailable((9, 0), "thread-block clusters", "_cluster_kernel")
if _WHY:
    register_unavailable(NAME, kind="strategy", reason=_WHY, deterministic_by_design=True,
                         uses_groups=True, contention=CONTENTION, reduce_kernel=True,
                         doc="each row split between the two CTAs of a cluster (Gluon, sm_90)")
else:
    import torch

    from ._cluster_kernel import cluster_kernel, layouts
    from . import _launch
    from ._launch import _consts, _stream, kept, prepare, scratch
    from .reduce import reduce_partials
    from . import disjoint_strided

    _PLANS: dict = {}
    _RUNS: dict = {}

    def launch_clusters(kernel, key, tensors: tuple, setup) -> None:
        """Launch `kernel`, compiled as a one-CTA kernel, over grid[0] clusters of two CTAs.
        Triton 3.6 launches clusters only for a kernel compiled with num_ctas > 1, and such a
        kernel's stores of a tensor replicated across the cluster are the first CTA's alone;
        so the kernel is compiled with num_ctas = 1 and launched with its metadata's num_ctas
        set to 2: the launcher then asks for 2·grid[0] CTAs in clusters of two
        (CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), CTAs 2c and 2c + 1 forming cluster c.
        `setup()` returns (grid, scalars, meta) as for `_launch.launch`; kept per key and
        device.  The launch goes straight to the compiled kernel's launcher every time, even
        where `_launch.launch` would not (NORMBENCH_FAST_LAUNCH=0, a launch hook): through
        `kernel[grid]` the kernel would run without clusters, and wrong."""
        if _launch.captured(kernel, tensors, setup, "clusters of 2"):   # capture(): record
            return
        dev = torch.cuda.current_device()
        run = None if _tuning.OVERRIDE else _RUNS.get((kernel, dev, key))
        if run is None:
            grid, scalars, meta = setup()
            compiled = kernel.warmup(*tensors, *scalars, grid=grid, **meta)
            consts = _consts(kernel, meta, len(tensors) + len(scalars))
            metadata = list(compiled.packed_metadata)     # (num_warps, num_ctas, shared)
            metadata[1] = 2
            run = (compiled.run, grid[0], compiled.function, tuple(metadata),
                   (*scalars, *consts))
            if not _tuning.OVERRIDE:
                _RUNS[(kernel, dev, key)] = run
        go, g0, function, metadata, tail = run
        go(g0, 1, 1, _stream(dev), function, metadata, None, None, None, *tensors, *tail)

    def _words(clusters: int, device):
        """The row sums' exchange words: fp32 [clusters, 2 slots, 2 CTAs, 2], kept between
        calls like `_launch.scratch`; every word is written before it is read in a call."""
        return kept(device, lambda: torch.empty(clusters * 8, dtype=torch.float32, device=device),
                    "cluster-words", clusters)

    @register(NAME, kind="strategy", deterministic_by_design=True, uses_groups=True,
              launch=_tuning.Rule(_rule), auto_groups=_groups_rule, contention=CONTENTION,
              reduce_kernel=True)
    def backward(x, dy, weight, mean, rstd, *, groups):
        """Each row split between the two CTAs of a cluster, their row sums swapped through L2."""
        c = prepare(x, dy, weight, mean, rstd)
        p = backward.params(c.d)
        key = (c.sig, c.x.device)
        m = None if _tuning.OVERRIDE else _PLANS.get(key)
        if m is None:
            m = plan_of(c.x, c.dy, c.dx, c.weight, p)
            if not _tuning.OVERRIDE:
                _PLANS[key] = m
        if not m.half:
            # twice the programs, capped as the registry caps GROUPS: each a row or more
            per = _tuning.cdiv(c.rows, 2 * groups)
            return disjoint_strided.backward(x, dy, weight, mean, rstd,
                                             groups=_tuning.cdiv(c.rows, per))
        pw, pb = scratch(groups, c.d, c.has_mean, c.x.device)
        words = _words(groups, c.x.device)
        pdl = _device.pdl_on(p, c.x.device)
        tensors = (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw, pb if pb is not None else pw,
                   words)

        def setup():
            sx, sdy, sdx = c.strides
            lay, flat = layouts(m.vec, m.warps)
            meta = dict(HAS_MEAN=c.has_mean, HALF=m.half, VEC=m.vec, STAGES=m.stages, PDL=pdl,
                        layout=lay, flat=flat, num_warps=m.warps)
            return (groups,), (c.rows, c.d // m.vec, sx // m.vec, sdy // m.vec, sdx // m.vec), meta

        launch_clusters(cluster_kernel, (c.sig, groups, pdl, m), tensors, setup)
        return c.outputs(*reduce_partials(pw, pb, c.weight, pdl))

    def _notes(x, dy, weight, mean, rstd) -> str:
        p = backward.params(x.shape[1])
        m = plan_of(x, dy, x, weight, p)
        if not m.half:
            return "not split: disjoint_strided runs (see disjoint_cluster.plan)"
        return (f"a row in two halves of {m.half} on a 2-CTA cluster, "
                f"{m.vec * x.element_size()}-byte copies, {m.stages} stages, {m.warps} warps")

    backward.notes = _notes
