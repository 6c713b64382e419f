"""The fixed-order reduce of fp32 partial rows: [G, d] -> [d], cast to the weight's dtype.

Each program owns BLOCK_N columns and walks the partial rows in increasing order, BLOCK_G at a
time, then sums its [BLOCK_G, BLOCK_N] accumulator along the rows with Triton's fixed reduction
tree.  The order never depends on timing, so the same partials always give the same bits.
"""
import torch
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_wait

from . import _tuning
from ._launch import launch

BLOCK_G = 64

# The keys `_tuning.OVERRIDE["reduce"]` may set: reduce_params' own.  The launch reads those
# four by name, so any other key was dropped there and the shipped reduce timed under the
# override's name (`{"BLOCK_n": 64}`); `check_override` refuses it.
REDUCE_KEYS = ("BLOCK_G", "BLOCK_N", "num_warps", "PAIRED")


def check_override(ov) -> None:
    """ValueError, in one line, unless `ov` (an `OVERRIDE["reduce"]`) is a mapping of
    REDUCE_KEYS whose BLOCK_G, BLOCK_N and num_warps are powers of two (a tile's sides and a
    program's warps must be; num_warps at most 32) and whose PAIRED is a bool."""
    if not isinstance(ov, dict):
        raise ValueError(f"the reduce's override must be a mapping of {', '.join(REDUCE_KEYS)}, "
                         f"got {type(ov).__name__} {ov!r}")
    unknown = sorted(set(ov) - set(REDUCE_KEYS), key=str)
    if unknown:
        raise ValueError(f"unknown reduce option {unknown[0]!r} (known: {', '.join(REDUCE_KEYS)})")
    for k in ("BLOCK_G", "BLOCK_N", "num_warps"):
        v = ov.get(k, 1)
        if type(v) is not int or v < 1 or v & (v - 1) or (k == "num_warps" and v > 32):
            what = "a power of two from 1 to 32" if k == "num_warps" else "a power of two"
            raise ValueError(f"reduce option {k}: {v!r} is not {what}")
    if type(ov.get("PAIRED", False)) is not bool:
        raise ValueError(f"reduce option PAIRED: {ov['PAIRED']!r} is not true or false")


def block_n(d: int) -> int:
    """Columns per program: about 128 programs at d ≥ 4096 so that many SMs share the read."""
    return max(16, min(128, _tuning.pow2(d) // 128))


def reduce_params(g: int, n: int, has_b: bool) -> dict:
    """The reduce kernel's launch parameters for G partial rows of n columns (and dβ's too,
    has_b): BLOCK_G rows a step, BLOCK_N columns a program, num_warps, and PAIRED (dγ's and
    dβ's partials summed in one loop, so both are in flight at once, instead of one after the
    other).  `_tuning.OVERRIDE["reduce"]` replaces any of them (bench/reduce_tune.py); one
    that `check_override` refuses raises ValueError.  Only the strategies registered with
    `reduce_kernel=True` call this (reduce_partials): atomic has no partial rows and
    disjoint_fused sums its own in-kernel, so the override does not reach them.

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
    ov = _tuning.OVERRIDE.get("reduce")
    if ov is None:
        return p
    text = repr(ov)             # checked once while it holds the same values: at every call
    if _CHECKED[0] is not ov or _CHECKED[1] != text:  # it cost the host a few µs that the
        check_override(ov)                            # rule's path does not pay (an A/B's
        _CHECKED[:] = [ov, text]                      # call time)
    return {**p, **ov}


_CHECKED: list = [None, ""]     # the reduce override last checked, and its repr then


@triton.jit
def reduce_rows(P, OUT, G, N, c0, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr,
                WIDE: tl.constexpr = False):
    """Sum rows [0, G) of P[:, c0:c0+BLOCK_N] in fixed order; store into OUT (fp32 result cast).
    WIDE: G·N reaches 2^31, so the row offsets are 64-bit (`wide`); otherwise 32-bit, as
    every measured configuration compiled."""
    cols = c0 + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for g0 in range(0, G, BLOCK_G):
        g = g0 + tl.arange(0, BLOCK_G)
        m = (g < G)[:, None] & col_mask[None, :]
        # .cg: partials were written by other programs; read them from L2, never a stale L1 line.
        row = g.to(tl.int64) if WIDE else g
        acc += tl.load(P + row[:, None] * N + cols[None, :], mask=m, other=0.0,
                       cache_modifier=".cg")
    tl.store(OUT + cols, tl.sum(acc, axis=0).to(OUT.dtype.element_ty), mask=col_mask)


@triton.jit
def reduce_pair(PW, PB, DW, DB, G, N, c0, BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr,
                WIDE: tl.constexpr = False):
    """reduce_rows of PW into DW and of PB into DB in one loop: the same sums in the same
    order (so the same bits), with both partials' loads in flight at once."""
    cols = c0 + tl.arange(0, BLOCK_N)
    col_mask = cols < N
    acc_w = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    acc_b = tl.zeros([BLOCK_G, BLOCK_N], dtype=tl.float32)
    for g0 in range(0, G, BLOCK_G):
        g = g0 + tl.arange(0, BLOCK_G)
        m = (g < G)[:, None] & col_mask[None, :]
        at = (g.to(tl.int64) if WIDE else g)[:, None] * N + cols[None, :]
        acc_w += tl.load(PW + at, mask=m, other=0.0, cache_modifier=".cg")
        acc_b += tl.load(PB + at, mask=m, other=0.0, cache_modifier=".cg")
    tl.store(DW + cols, tl.sum(acc_w, axis=0).to(DW.dtype.element_ty), mask=col_mask)
    tl.store(DB + cols, tl.sum(acc_b, axis=0).to(DB.dtype.element_ty), mask=col_mask)


@triton.jit
def _reduce_kernel(PW, PB, DW, DB, G, N, HAS_B: tl.constexpr,
                   BLOCK_G: tl.constexpr, BLOCK_N: tl.constexpr, PAIRED: tl.constexpr,
                   PDL: tl.constexpr, WIDE: tl.constexpr = False):
    if PDL:
        # launched as a programmatic dependent of the kernel that wrote the partials: it may
        # be resident before that kernel ends, and waits here until it has completed and its
        # writes are visible (griddepcontrol.wait) — nothing is read before
        gdc_wait()
    c0 = tl.program_id(0) * BLOCK_N
    if HAS_B and PAIRED:
        reduce_pair(PW, PB, DW, DB, G, N, c0, BLOCK_G, BLOCK_N, WIDE)
    else:
        reduce_rows(PW, DW, G, N, c0, BLOCK_G, BLOCK_N, WIDE)
        if HAS_B:
            reduce_rows(PB, DB, G, N, c0, BLOCK_G, BLOCK_N, WIDE)


def wide(g: int, n: int) -> bool:
    """G partial rows of n reach 2^31 elements: the reduce's offsets must be 64-bit (an explicit
    GROUPS of 32768 at d = 65536; no rule's GROUPS comes near)."""
    return g * n >= 2 ** 31


def outputs(weight: torch.Tensor, has_bias: bool):
    """dγ and (with a bias) dβ: fresh tensors like the (contiguous) weight.  Two
    `torch.empty_like` cost less host time than one allocation split in two."""
    return torch.empty_like(weight), (torch.empty_like(weight) if has_bias else None)


def reduce_partials(pw: torch.Tensor, pb: torch.Tensor | None, weight: torch.Tensor,
                    pdl: bool = False):
    """(dw, db) in the weight's dtype from fp32 partials [G, d]; db is None when pb is None.
    pdl: launched as a programmatic dependent of the kernel before it on the stream (the one
    that wrote the partials; `_device.pdl_supported` must hold): its programs may start while
    that one's last programs run, and wait for it to complete before they read (a tuning
    option, `pdl`: the launch gap between the two kernels, not yet measured)."""
    g, n = pw.shape
    dw, db = outputs(weight, pb is not None)

    def setup():
        p = reduce_params(g, n, pb is not None)
        meta = dict(HAS_B=pb is not None, PDL=pdl, **p)
        if wide(g, n):
            meta["WIDE"] = True
        if pdl:
            meta["launch_pdl"] = True
        return ((_tuning.cdiv(n, p["BLOCK_N"]),), (g, n), meta)

    # the key: the partials come from _launch.scratch (aligned; dβ's g·n·4 bytes in) and
    # the outputs fresh allocations, so sizes and dtype fix every specialisation
    launch(_reduce_kernel, (g, n, pb is not None, weight.dtype, pdl),
           (pw, pb if pb is not None else pw, dw, db if db is not None else dw), setup)
    return dw, db
