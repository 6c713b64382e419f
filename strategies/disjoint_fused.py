"""disjoint_fused — disjoint_block in one launch: the partial rows and their reduce.

Each program computes its partial rows exactly as disjoint_block does.  Then, on a GPU where
all GROUPS programs fit at once — GROUPS ≤ SMs × the programs one SM holds, which the driver
answers for the compiled kernel (`_device.resident_programs`: registers, shared memory,
warps) — the grid synchronises once: the kernel is launched cooperatively (CUDA
guarantees that every program is resident at once, or refuses the launch), each program adds
one to a grid-wide arrival counter (release) and waits until it reads GROUPS (acquire); then
program p sums columns [p·RED_N, (p+1)·RED_N) of every partial row in fixed row order (the
same reduce_rows code as the two-pass schemes).  A departure counter lets the last program out
reset both counters, so a call needs no memset launch.

Under the Triton interpreter — programs run one after the other, so a waiting program would
wait for ever — and for more GROUPS than fit at once, a program that finishes its partial
rows takes a ticket instead (acq_rel atomic_add) and the one that draws the last ticket
reduces every column alone.  No program waits for another there, so it cannot deadlock.

With `tail` = K (a tuning option; no rule sets it), only the last K programs to finish wait:
each program takes a ticket (acq_rel atomic_add); those that draw one of the first P − K leave
at once, and the holders of the last K wait until every program has arrived, then sum
column slices k, k + K, … of RED_N columns each (k = ticket − (P − K)).  The waiters hold
tickets only once P − K programs have finished, so the rest — at most K, waiters included —
always fit: no cooperative launch is needed, only K ≤ the programs the GPU holds at once.
Under the interpreter K is 1 (the last ticket does it all: a waiter before the last program
would wait for ever there).

Either way the sum order is fixed: bitwise deterministic.  The counters are kept per device and
stream, as the partial rows are (`_launch.kept`): calls on two streams of one device each have
their own, while the kernels of one stream run in order.
"""
import functools

import torch
import triton
import triton.language as tl

from . import _device, _groups, _tuning
from ._contention import Contention
from ._launch import _key, prepare
from ._registry import register
from .disjoint_block import launch_partials, row_partials
from .reduce import outputs, reduce_rows, wide

_COUNTERS: dict[tuple, torch.Tensor] = {}


@triton.jit
def _fused_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, XS, DW, DB, Counter, ROWS, N, ROWS_PER_PROG,
                  stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr,
                  NUM_STAGES: tl.constexpr, PREFETCH: tl.constexpr, RELOAD: tl.constexpr,
                  W_TILE: tl.constexpr, COL_SPLIT: tl.constexpr, EXCHANGE: tl.constexpr,
                  SPIN: tl.constexpr, L2_AHEAD: tl.constexpr, INTERLEAVE: tl.constexpr,
                  GRID_SYNC: tl.constexpr, TAIL: tl.constexpr,
                  RED_G: tl.constexpr, RED_N: tl.constexpr, WIDE: tl.constexpr = False):
    row_partials(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                 stride_x, stride_dy, stride_dx, HAS_MEAN, BLOCK_R, BLOCK_D, ONE_CHUNK,
                 NUM_STAGES, PREFETCH, RELOAD, W_TILE, COL_SPLIT, EXCHANGE, SPIN, L2_AHEAD,
                 INTERLEAVE)
    # all of this program's partial stores precede its arrival (barrier, then release)
    tl.debug_barrier()
    P = tl.num_programs(0)
    G = P // COL_SPLIT          # partial rows (COL_SPLIT programs share each)
    if GRID_SYNC:
        tl.atomic_add(Counter, 1, sem="release")
        _wait_for_all(Counter, P)
        c0 = tl.program_id(0) * RED_N
        if c0 < N:
            _reduce_cols(PW, PB, DW, DB, G, N, c0, HAS_MEAN, RED_G, RED_N, WIDE)
        _depart(Counter, P)
    elif TAIL > 0:
        ticket = tl.atomic_add(Counter, 1, sem="acq_rel")
        first = P - TAIL
        if ticket >= first:
            _wait_for_all(Counter, P)
            tl.debug_barrier()      # the acquire above precedes every thread's reads
            for c0 in range((ticket - first) * RED_N, N, TAIL * RED_N):
                _reduce_cols(PW, PB, DW, DB, G, N, c0, HAS_MEAN, RED_G, RED_N, WIDE)
            _depart(Counter, TAIL)
    else:
        ticket = tl.atomic_add(Counter, 1, sem="acq_rel")
        if ticket == P - 1:
            # one program reads all GROUPS·d partials: whole-width tiles of about 8192 elements
            RG: tl.constexpr = 1 if BLOCK_D >= 8192 else 8192 // BLOCK_D
            for c0 in range(0, N, BLOCK_D):
                _reduce_cols(PW, PB, DW, DB, G, N, c0, HAS_MEAN, RG, BLOCK_D, WIDE)
            tl.atomic_xchg(Counter, 0)


@triton.jit
def _wait_for_all(Counter, P):
    """Wait until all P programs have arrived (acquire: their partial rows are visible)."""
    while tl.atomic_add(Counter, 0, sem="acquire") < P:
        pass


@triton.jit
def _reduce_cols(PW, PB, DW, DB, G, N, c0, HAS_MEAN: tl.constexpr, RED_G: tl.constexpr,
                 RED_N: tl.constexpr, WIDE: tl.constexpr):
    """dγ (and dβ) of columns [c0, c0 + RED_N): the G partial rows summed in fixed order."""
    reduce_rows(PW, DW, G, N, c0, RED_G, RED_N, WIDE)
    if HAS_MEAN:
        reduce_rows(PB, DB, G, N, c0, RED_G, RED_N, WIDE)


@triton.jit
def _depart(Counter, n):
    """One of the n waiters leaves; the last one out resets both counters (every waiter has
    left the wait by then) — so a call needs no memset launch."""
    if tl.atomic_add(Counter + 1, 1, sem="acq_rel") == n - 1:
        tl.atomic_xchg(Counter, 0)
        tl.atomic_xchg(Counter + 1, 0)


def _counter(device: torch.device) -> torch.Tensor:
    """The two grid counters of calls on `device`'s current stream (zero between calls: the
    last program out resets them; under the interpreter they are zeroed before each call).  Per stream: two streams' kernels running at once on one
    pair would count each other's programs."""
    key = _key(device, "grid counters")       # the kept workspaces' key: device and stream
    hit = _COUNTERS.get(key)
    if hit is None:
        with torch.inference_mode(False):     # kept past the call, reset in place below
            hit = _COUNTERS[key] = torch.zeros(2, dtype=torch.int32, device=device)
    elif _device.interpreted():
        # the interpreter runs the programs one by one from Python: a call interrupted among
        # them (Ctrl-C) leaves its tickets, and the next call's last ticket would never come
        # or come early.  A GPU grid always runs to its end, resetting them.
        hit.zero_()
    return hit


def _slice_tile(slices: int, groups: int, d: int, elements: int) -> tuple[int, int]:
    """(RED_G, RED_N) of `slices` programs summing `groups` partial rows of d: each a slice of
    RED_N ≥ d/slices columns (a power of two), RED_G partial rows a step — a tile of at most
    `elements`, at least one row, no more rows than a power of two past GROUPS."""
    red_n = _tuning.pow2(_tuning.cdiv(d, slices))
    return min(_tuning.pow2(groups), max(1, elements // red_n)), red_n


@functools.lru_cache(maxsize=None)
def reduce_tile(programs: int, d: int) -> tuple[int, int]:
    """(RED_G, RED_N) of the grid sync: every program a slice of the columns of all
    `programs` partial rows, a tile of at most 4096 elements a step."""
    return _slice_tile(programs, programs, d, 4096)


def tail_tile(tail: int, groups: int, d: int, warps: int) -> tuple[int, int]:
    """(RED_G, RED_N) of `tail` waiters summing `groups` partial rows of d — a tile of 32
    elements a thread of the program's `warps` (the row loop's registers are free by then)."""
    return _slice_tile(tail, groups, d, 32 * 32 * warps)


@register("disjoint_fused", kind="strategy", deterministic_by_design=True, uses_groups=True,
          launch=_tuning.ROW_LOOP, auto_groups=_groups.row_loop_programs,
          max_groups=_groups.row_loop_units,
          # the partial rows and two int32 grid counters
          contention=Contention(writers=1, partial_rows="groups", fixed_bytes=8))
def backward(x, dy, weight, mean, rstd, *, groups):
    """disjoint_block in a single launch: one grid-wide sync, then every program reduces a slice."""
    c = prepare(x, dy, weight, mean, rstd)
    dw, db = outputs(c.weight, c.has_mean)

    def meta(compile, programs):
        # the ticket path never reads RED_G/RED_N: fixed values there, no kernel per GROUPS
        ticket = dict(GRID_SYNC=False, TAIL=0, RED_G=1, RED_N=1, launch_cooperative_grid=False)
        if wide(programs, c.d):          # 64-bit offsets in the reduce (reduce.wide)
            ticket["WIDE"] = True
        p = backward.params(c.d)        # (meta runs where a launch is planned, not every call)
        if p.get("tail"):
            k = 1 if _device.interpreted() else min(p["tail"], programs)
            warps = _tuning.row_loop_warps(p, c.has_mean, c.x.element_size())
            red_g, red_n = tail_tile(k, programs // p["col_split"], c.d, warps)
            tail = dict(ticket, TAIL=k, RED_G=red_g, RED_N=red_n)
            if k == 1 or k <= _device.sm_count(x.device) * _device.resident_programs(
                    compile(**tail)):
                return tail
            return ticket
        if _device.interpreted():
            return ticket
        red_g, red_n = reduce_tile(programs, c.d)
        sync = dict(ticket, GRID_SYNC=True, RED_G=red_g, RED_N=red_n,
                    launch_cooperative_grid=True)
        if programs <= _device.sm_count(x.device) * _device.resident_programs(compile(**sync)):
            return sync
        return ticket

    launch_partials(_fused_kernel, c, groups, backward.params,
                    (dw, db if db is not None else dw, _counter(x.device)), meta)
    return c.outputs(dw, db)
