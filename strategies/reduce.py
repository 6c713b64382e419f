"""The fixed-order reduce of fp32 partial rows: [G, d] -> [d], cast to the weight's dtype.

Each program owns BLOCK_N columns and walks the partial rows in increasing order, BLOCK_G at a
time, then sums its [BLOCK_G, BLOCK_N] accumulator along the rows with Triton's fixed reduction
tree.  The order never depends on timing, so the same partials always give the same bits.
"""
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_wait

from . import _device, _tuning
from ._launch import launch

BLOCK_G = 64

# `land` (a tuning option of the kernels a programmatic-dependent reduce follows): the reduce
# does not wait for the kernel that writes the partial rows to complete; it sums each element
# of its columns once it has landed (reduce_landing).  The partial rows are kept holding
# SENTINEL wherever a call has not written them yet: every reduce program overwrites its own
# columns of every partial row with it once it has read them.  Its bits are those of a
# negative signalling NaN, which no arithmetic result is (a partial element is always a sum):
# no partial value can be taken for it.  LAND is the `pdl` value of a call that lands.
SENTINEL = -8388607         # 0xFF800001 as an int32
_SENTINEL = tl.constexpr(SENTINEL)
LAND = 2


def block_n(d: int) -> int:
    """Columns per program: about 128 programs at d ≥ 4096 so that many SMs share the read."""
    return max(16, min(128, _tuning.pow2(d) // 128))


def reduce_params(g: int, n: int, has_b: bool) -> dict:
    """The reduce kernel's launch parameters for G partial rows of n columns (and dβ's too,
    has_b): BLOCK_G rows a step, BLOCK_N columns a program, num_warps, and PAIRED (dγ's and
    dβ's partials summed in one loop, so both are in flight at once, instead of one after the
    other).  `_tuning.OVERRIDE["reduce"]` replaces any of them (bench/reduce_tune.py).

    Reduce-13 (H200, bf16, disjoint_block's whole call, docs/perf/reduce-13/): with dβ and
    n ≥ 2048, both partials in one loop over every partial row at once (BLOCK_G 256 ≥ G, 32
    columns a program) made the call 1.7-3.7 % faster (LN 8192 × 16384 318.1 -> 306.4 µs,
    8192 × 12288 272.3 -> 262.2, 16384 × 8192 216.3 -> 212.6, 32768 × 3072 182.0 -> 178.8;
    16384 × 4096 119.1 -> 119.4); at n = 1024 (G = 264: 32 programs) the shipped rule stays.

    Round 23 (H200, disjoint_strided's whole call timed in turn with the rule's 64 rows a step,
    six rounds on fresh inputs, bench/ab_repeat.py; docs/perf/tune-23/): without dβ (RMSNorm)
    at n ≥ 2048 every partial row in one step too, 32 columns a program — RMS 16384 × 4096
    108.5 -> 107.4 µs bf16, 108.6 -> 106.7 with an fp32 γ; fp32 32768 × 3072 303.0 -> 301.4,
    16384 × 8192 398.0 -> 393.9 (medians; three or four rounds there, the step's time limit
    cut the rest; reduce-13's RMSNorm timings of it were within that call's noise); with every
    peer (results/h200-targets-narrow-rms-a61b342, -narrow-rms-8192) 0.6-1.9 % faster at all
    15 lines of RMS 16384 × 4096, 32768 × 3072 and 16384 × 8192.  At n = 1024 (G = 264) one
    step was 0.6 % slower (BLOCK_G 512, 8 columns; 256 with 16): the rule there is unchanged."""
    if n >= 2048:
        p = dict(BLOCK_G=min(256, max(16, _tuning.pow2(g))), BLOCK_N=32, num_warps=4,
                 PAIRED=has_b)
    else:
        p = dict(BLOCK_G=BLOCK_G, BLOCK_N=block_n(n), num_warps=4, PAIRED=False)
    return {**p, **_tuning.OVERRIDE.get("reduce", {})}


@triton.jit
def reduce_rows(P, OUT, G, N, c0, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    """Sum rows [0, G) of P[:, c0:c0+BLOCK_N] in fixed order; store into OUT (fp32 result cast)."""
    cols = c0 + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for g0 in range(0, G, BLOCK_G):
        g = g0 + tl.arange(0, BLOCK_G)
        m = (g < G)[:, None] & col_mask[None, :]
        # .cg: partials were written by other programs; read them from L2, never a stale L1 line.
        acc += tl.load(P + g[:, None] * N + cols[None, :], mask=m, other=0.0, cache_modifier=".cg")
    tl.store(OUT + cols, tl.sum(acc, axis=0).to(OUT.dtype.element_ty), mask=col_mask)


@triton.jit
def reduce_pair(PW, PB, DW, DB, G, N, c0, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr):
    """reduce_rows of PW into DW and of PB into DB in one loop: the same sums in the same
    order (so the same bits), with both partials' loads in flight at once."""
    cols = c0 + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc_w = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    acc_b = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for g0 in range(0, G, BLOCK_G):
        g = g0 + tl.arange(0, BLOCK_G)
        m = (g < G)[:, None] & col_mask[None, :]
        at = g[:, None] * N + cols[None, :]
        acc_w += tl.load(PW + at, mask=m, other=0.0, cache_modifier=".cg")
        acc_b += tl.load(PB + at, mask=m, other=0.0, cache_modifier=".cg")
    tl.store(DW + cols, tl.sum(acc_w, axis=0).to(DW.dtype.element_ty), mask=col_mask)
    tl.store(DB + cols, tl.sum(acc_b, axis=0).to(DB.dtype.element_ty), mask=col_mask)


@triton.jit
def _nap(n):
    """About a microsecond's sleep (a waiting program's polls leave the memory system alone)."""
    return tl.inline_asm_elementwise("nanosleep.u32 1000;\n mov.u32 $0, $1;", "=r,r", [n],
                                     dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def reduce_landing(P, OUT, G, N, c0, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr,
                   NAP: tl.constexpr):
    """reduce_rows in one step (BLOCK_G ≥ G: every partial row in its own lane, the same
    additions in the same order, so the same bits) taken while the partial rows land: each
    round reads (volatile: from L2, never a stale L1 line) the elements not yet summed of the
    rows whose first column has landed (and that first column of the others), sums those no
    longer SENTINEL, and naps; then stores the sum and writes SENTINEL over its columns of
    every partial row."""
    g = tl.arange(0, BLOCK_G)
    cols = c0 + tl.arange(0, BLOCK_N)
    m = (g < G)[:, None] & (cols < N)[None, :]
    at = P + g[:, None] * N + cols[None, :]
    acc = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    waiting = g < G                 # rows whose first column of these has not landed
    left = m                        # elements not yet summed
    n_left = tl.sum(left.to(tl.int32))
    while n_left > 0:
        first = tl.load(P + g * N + c0, mask=waiting, other=0.0, volatile=True)
        waiting = waiting & (first.to(tl.int32, bitcast=True) == _SENTINEL)
        want = left & ~waiting[:, None]
        v = tl.load(at, mask=want, other=0.0, volatile=True)
        got = want & (v.to(tl.int32, bitcast=True) != _SENTINEL)
        acc = tl.where(got, acc + v, acc)
        left = left & ~got
        n_left = tl.sum(left.to(tl.int32))
        if NAP:
            if n_left > 0:
                n_left = _nap(n_left)
    tl.store(OUT + cols, tl.sum(acc, axis=0).to(OUT.dtype.element_ty), mask=(cols < N))
    tl.store(at, tl.full([BLOCK_G, BLOCK_N], _SENTINEL, tl.int32).to(tl.float32, bitcast=True),
             mask=m)


@triton.jit
def _reduce_kernel(PW, PB, DW, DB, G, N, HAS_B: tl.constexpr,
                   BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, PAIRED: tl.constexpr,
                   PDL: tl.constexpr, NAP: tl.constexpr):
    c0 = tl.program_id(0) * BLOCK_N
    if PDL == 2:
        # `land`: resident early as a programmatic dependent, and no wait for the grid before
        reduce_landing(PW, DW, G, N, c0, BLOCK_G, BLOCK_N, NAP)
        if HAS_B:
            reduce_landing(PB, DB, G, N, c0, BLOCK_G, BLOCK_N, NAP)
        return
    if PDL:
        # launched as a programmatic dependent of the kernel that wrote the partials: it may
        # be resident before that kernel ends, and waits here until it has completed and its
        # writes are visible (griddepcontrol.wait) — nothing is read before
        gdc_wait()
    if HAS_B and PAIRED:
        reduce_pair(PW, PB, DW, DB, G, N, c0, BLOCK_G, BLOCK_N)
    else:
        reduce_rows(PW, DW, G, N, c0, BLOCK_G, BLOCK_N)
        if HAS_B:
            reduce_rows(PB, DB, G, N, c0, BLOCK_G, BLOCK_N)


def outputs(weight: torch.Tensor, has_bias: bool):
    """dγ and (with a bias) dβ: fresh tensors like the (contiguous) weight.  Two
    `torch.empty_like` cost less host time than one allocation split in two."""
    return torch.empty_like(weight), (torch.empty_like(weight) if has_bias else None)


def lands(p, pdl: bool, g: int, n: int, has_b: bool) -> int:
    """The `pdl` value of a call whose launch parameters `p` ask for `land`, its reduce a
    programmatic dependent (pdl) of a kernel that writes each of its g partial rows of n once
    (a whole row in one block, not programs sharing rows): LAND where the reduce's step holds
    every partial row (reduce_params' BLOCK_G ≥ g), else pdl as it was."""
    if (pdl and p.get("land") and p["one_chunk"] and p.get("col_split", 1) == 1
            and reduce_params(g, n, has_b)["BLOCK_G"] >= g):
        return LAND
    return pdl


def reduce_partials(pw: torch.Tensor, pb: torch.Tensor | None, weight: torch.Tensor,
                    pdl: bool = False):
    """(dw, db) in the weight's dtype from fp32 partials [G, d]; db is None when pb is None.
    pdl: launched as a programmatic dependent of the kernel before it on the stream (the one
    that wrote the partials; `_device.pdl_supported` must hold): its programs may start while
    that one's last programs run, and wait for it to complete before they read (a tuning
    option, `pdl`: the launch gap between the two kernels, not yet measured).  pdl = LAND
    (`lands`): it does not wait, it sums the partial rows as they land (reduce_landing) — the
    partials must then come from `_launch.scratch(..., land=True)`."""
    g, n = pw.shape
    dw, db = outputs(weight, pb is not None)

    def setup():
        p = reduce_params(g, n, pb is not None)
        meta = dict(HAS_B=pb is not None, PDL=int(pdl), NAP=not _device.interpreted(), **p)
        if pdl and not _device.interpreted():
            meta["launch_pdl"] = True
        return ((_tuning.cdiv(n, p["BLOCK_N"]),), (g, n), meta)

    # the key: the partials come from _launch.scratch (aligned; dβ's g·n·4 bytes in) and
    # the outputs fresh allocations, so sizes and dtype fix every specialisation
    launch(_reduce_kernel, (g, n, pb is not None, weight.dtype, pdl),
           (pw, pb if pb is not None else pw, dw, db if db is not None else dw), setup)
    return dw, db
