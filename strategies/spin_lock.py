"""spin_lock — the Triton layer-norm tutorial's scheme: a lock per partial row, then a reduce.

Row r takes the lock of partial row r mod GROUPS (an atomic_cas spin), and the first writer
(told by a per-group count) stores its contribution while later writers read-modify-write.
GROUPS runs as min(GROUPS, rows) (partition "modulo": any GROUPS up to rows gives every
partial row a row).  Writers per slot: ⌈rows/GROUPS⌉, serialised by the lock.  Which row
arrives first depends on timing, so the fp32 sums — and the bits — can change between runs:
nondeterministic.
Workspace: fp32 [GROUPS, d] partials (×2 with dβ, never zeroed thanks to the first-writer
count) plus 2·GROUPS·chunks int32 locks and counts, zeroed on every call.  A row wider than one
block locks each column chunk separately, so the lock is held only for one chunk's update.
"""
import torch
import triton
import triton.language as tl

from . import _tuning
from ._contention import Contention
from ._launch import launch, prepare, scratch
from ._registry import register
from .reduce import reduce_partials
from .rowgrad import accumulate_rows


@triton.jit
def _locked_update(PW, PB, Lock, Count, base, cols, col_mask, gw, gb, HAS_MEAN: tl.constexpr):
    # COMBINE of rowgrad.accumulate_rows: one chunk's read-modify-write under its lock
    offs = base + cols
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count, cache_modifier=".cg")
    pw = tl.sum(gw, axis=0)
    pb = tl.sum(gb, axis=0)
    if count == 0:
        # first writer: nothing to read, so the workspace needs no zeroing
        tl.atomic_xchg(Count, 1)
    else:
        pw += tl.load(PW + offs, mask=col_mask, other=0.0, cache_modifier=".cg")
        if HAS_MEAN:
            pb += tl.load(PB + offs, mask=col_mask, other=0.0, cache_modifier=".cg")
    tl.store(PW + offs, pw, mask=col_mask)
    if HAS_MEAN:
        tl.store(PB + offs, pb, mask=col_mask)
    # every thread's store must be done before any thread lets the next writer in
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _spin_lock_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, Locks, ROWS, N, G, NCHUNK,
                      stride_x, stride_dy, stride_dx,
                      HAS_MEAN: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr, RELOAD: tl.constexpr):
    row = tl.program_id(0)
    rows = (row + tl.arange(0, 1)).to(tl.int64)
    row_mask = rows < ROWS
    group = row % G
    base = group.to(tl.int64) * N
    Lock = Locks + group * NCHUNK
    Count = Locks + G * NCHUNK + group * NCHUNK
    accumulate_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, stride_dx, N,
                    PW, PB, Lock, Count, base, HAS_MEAN, 1, BLOCK_D, ONE_CHUNK, RELOAD,
                    _locked_update)


def _launch_rule(d: int) -> dict:
    """The one-row rule, but 8 warps for short rows: the locked read-modify-write of a short
    row goes faster with more threads (tune-4, 65536 × 1024: 8 warps 323 / 249 µs against 4
    warps 361 / 271, LN / RMS)."""
    p = _tuning.ONE_ROW.params(d)
    if p["block_d"] <= 1024:
        p["num_warps"] = 8
    return p


def auto_groups(rows: int, d: int, sms: int, launch) -> int:
    """A lock serialises whole-row updates, so it needs many partial rows to keep waiters
    few (tune-1: 4·SMs fastest at d=4096, SMs at d=8192)."""
    return max(1, min(4 * sms if d <= 4096 else sms, rows))


@register("spin_lock", kind="strategy", deterministic_by_design=False, uses_groups=True,
          launch=_tuning.Rule(_launch_rule, ignores=_tuning.ONE_TILE_ROW.ignores), auto_groups=auto_groups, partition="modulo",
          # partial rows, never zeroed, plus a lock and a first-writer count per group and chunk
          contention=Contention(writers="rows/groups", partial_rows="groups", counters_per_chunk=2),
          reduce_kernel=True)
def backward(x, dy, weight, mean, rstd, *, groups):
    """Triton tutorial: atomic_cas spin lock per group, first-writer count, then a reduce."""
    c = prepare(x, dy, weight, mean, rstd)
    p = backward.params(c.d)
    nchunk = _tuning.cdiv(c.d, p["block_d"])
    pw, pb = scratch(groups, c.d, c.has_mean, x.device)
    locks = torch.zeros(2 * groups * nchunk, dtype=torch.int32, device=x.device)
    launch(_spin_lock_kernel, (c.sig, groups),
           (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw, pb if pb is not None else pw, locks),
           lambda: ((c.rows,), (c.rows, c.d, groups, nchunk, *c.strides),
                    dict(HAS_MEAN=c.has_mean, BLOCK_D=p["block_d"], ONE_CHUNK=p["one_chunk"],
                         RELOAD=p["reload"], num_warps=p["num_warps"])))
    return c.outputs(*reduce_partials(pw, pb, c.weight))
