"""disjoint_fused — disjoint_block in one launch: the last program to finish does the reduce.

Each program computes its partial rows exactly as disjoint_block does, then takes a ticket
from a grid-wide arrival counter (an acq_rel atomic_add).  The program that draws the last
ticket has seen every other program's release, so it reads all partial rows and sums them in
fixed row order (the same reduce_rows code as the two-pass schemes).  Which program that is
depends on timing, but the order of the sum does not: bitwise deterministic.  No program ever
waits for another, so it cannot deadlock whatever the grid size (and runs under the
interpreter).  It saves the second launch, which dominates at small shapes; at large d the
single reducing program becomes the bottleneck, so the rule in docs/PERF_NOTES.md keeps it to
small shapes.  The counter is a cached int32 per device that the last program resets to 0, so
a call needs no memset launch; concurrent calls on two streams of one device are therefore
not supported.
"""
import torch
import triton
import triton.language as tl

from . import _tuning
from ._launch import partial_workspace, prepare
from ._registry import register
from .disjoint_block import disjoint_partials, launch_partials
from .reduce import reduce_rows

_COUNTERS: dict[torch.device, torch.Tensor] = {}


@triton.jit
def _fused_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, DW, DB, Counter, ROWS, N, ROWS_PER_PROG,
                  stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                  BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr,
                  NUM_STAGES: tl.constexpr, PREFETCH: tl.constexpr):
    disjoint_partials(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N, ROWS_PER_PROG,
                      stride_x, stride_dy, stride_dx, HAS_MEAN, BLOCK_R, BLOCK_D, ONE_CHUNK,
                      NUM_STAGES, PREFETCH)
    # all of this program's partial stores precede its ticket (barrier, then release)
    tl.debug_barrier()
    ticket = tl.atomic_add(Counter, 1, sem="acq_rel")
    G = tl.num_programs(0)
    if ticket == G - 1:
        # one program reads all GROUPS·d partials: whole-width tiles of about 8192 elements
        RG: tl.constexpr = 1 if BLOCK_D >= 8192 else 8192 // BLOCK_D
        for c0 in range(0, N, BLOCK_D):
            reduce_rows(PW, DW, G, N, c0, RG, BLOCK_D)
            if HAS_MEAN:
                reduce_rows(PB, DB, G, N, c0, RG, BLOCK_D)
        tl.atomic_xchg(Counter, 0)


def _counter(device: torch.device) -> torch.Tensor:
    if device not in _COUNTERS:
        _COUNTERS[device] = torch.zeros(1, dtype=torch.int32, device=device)
    return _COUNTERS[device]


def auto_groups(rows: int, d: int, sms: int) -> int:
    """Few partial rows: the one reducing program reads GROUPS·d·4 bytes alone."""
    return max(1, min(rows, sms // 2 if d <= 2048 else sms // 4))


@register("disjoint_fused", kind="strategy", deterministic_by_design=True, uses_groups=True,
          auto_groups=auto_groups, writers=lambda rows, g: 1,
          workspace=lambda rows, d, g, has_bias: partial_workspace(g, d, has_bias) + 4)
def backward(x, dy, weight, mean, rstd, *, groups):
    """disjoint_block in a single launch: the last program to arrive reduces in fixed order."""
    c = prepare(x, dy, weight, mean, rstd)
    p = _tuning.params("disjoint_fused", c.d)
    dw = torch.empty(c.d, dtype=weight.dtype, device=x.device)
    db = torch.empty(c.d, dtype=weight.dtype, device=x.device) if c.has_mean else dw
    launch_partials(_fused_kernel, c, groups, p, dw, db, _counter(x.device))
    return c.outputs(dw, db)
