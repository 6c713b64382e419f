"""The Gluon kernel of disjoint_smem (strategies/disjoint_smem.py says what it does and why).

Imported only where it can run (compiled code on a CUDA GPU) and by bench/regs.py, which
compiles it for sm_90 on any machine.  Written for Triton 3.6 and 3.9, whose Gluon names two
things differently (the cp.async copy, the CTA barrier): both are looked up once, here.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp

_async_load = getattr(cp, "async_load", None) or cp.async_copy_global_to_shared
_barrier = getattr(gl, "thread_barrier", None) or gl.barrier


@gluon.jit
def _stage_row(X, DY, xs, ds, row, r_end, cols, col_mask, stride_x, stride_dy):
    """Copy row `row` of x and dy into the stage (xs, ds) — nothing where row ≥ r_end, a copy
    of nothing still makes its group — and close the group (one per row, so that
    wait_group(STAGES − 1) means: this row is here)."""
    ok = col_mask & (row < r_end)
    row = row.to(gl.int64)
    _async_load(xs, X + row * stride_x + cols, mask=ok)
    _async_load(ds, DY + row * stride_dy + cols, mask=ok)
    cp.commit_group()


@gluon.jit
def _add2(a, b, c, d):
    return a + c, b + d


@gluon.jit
def _xhat(x, mean, rstd, col_mask, HAS_MEAN: gl.constexpr):
    if HAS_MEAN:
        return gl.where(col_mask, (x - mean) * rstd, 0.0)
    return x * rstd


@gluon.jit
def smem_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N_V, ROWS_PER_PROG,
                stride_x_v, stride_dy_v, stride_dx_v, HAS_MEAN: gl.constexpr,
                BLOCK_D: gl.constexpr, VEC: gl.constexpr, STAGES: gl.constexpr,
                NUM_WARPS: gl.constexpr):
    """Program p: dx for rows [p·R, (p+1)·R) and its partial rows PW[p], PB[p].  N_V and the
    strides count VEC elements (so the compiler knows each row start VEC-aligned)."""
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [NUM_WARPS], [0])
    flat: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    N = N_V * VEC
    stride_x = stride_x_v * VEC
    stride_dy = stride_dy_v * VEC
    stride_dx = stride_dx_v * VEC
    pid = gl.program_id(0)
    r0 = pid * ROWS_PER_PROG
    r_end = gl.minimum(r0 + ROWS_PER_PROG, ROWS)
    cols = gl.arange(0, BLOCK_D, layout=layout)
    col_mask = cols < N
    xs = gl.allocate_shared_memory(X.dtype.element_ty, [STAGES, BLOCK_D], flat)
    ds = gl.allocate_shared_memory(DY.dtype.element_ty, [STAGES, BLOCK_D], flat)
    ws = gl.allocate_shared_memory(W.dtype.element_ty, [BLOCK_D], flat)
    ws.store(gl.load(W + cols, mask=col_mask, other=0.0))
    for k in gl.static_range(STAGES - 1):
        _stage_row(X, DY, xs.index(k), ds.index(k), r0 + k, r_end, cols, col_mask,
                   stride_x, stride_dy)
    acc_w = gl.zeros([BLOCK_D], gl.float32, layout)
    acc_b = gl.zeros([BLOCK_D], gl.float32, layout)
    inv_n = 1.0 / N.to(gl.float32)
    # the row statistics one row ahead, in registers: their load is not waited for until the
    # next row (clamped to the program's last row, so never out of bounds)
    last = gl.maximum(r_end - 1, 0)
    rstd = gl.load(Rstd + gl.minimum(r0, last))
    mean = rstd
    if HAS_MEAN:
        mean = gl.load(Mean + gl.minimum(r0, last))
    for r in range(r0, r_end):
        i = r - r0
        ahead = i + STAGES - 1
        _stage_row(X, DY, xs.index(ahead % STAGES), ds.index(ahead % STAGES), r0 + ahead, r_end,
                   cols, col_mask, stride_x, stride_dy)
        nrstd = gl.load(Rstd + gl.minimum(r + 1, last))
        nmean = nrstd
        if HAS_MEAN:
            nmean = gl.load(Mean + gl.minimum(r + 1, last))
        cp.wait_group(STAGES - 1)
        s = i % STAGES
        # the row sums, from shared memory
        x = xs.index(s).load(layout).to(gl.float32)
        dy = ds.index(s).load(layout).to(gl.float32)
        g = ws.load(layout).to(gl.float32) * dy
        xhat = _xhat(x, mean, rstd, col_mask, HAS_MEAN)
        if HAS_MEAN:
            s1, s2 = gl.reduce((xhat * g, g), 0, _add2)
            c2 = s2 * inv_n
        else:
            s1 = gl.sum(xhat * g, axis=0)
            c2 = 0.0
        c1 = s1 * inv_n
        # a barrier has a memory effect: without it the compiler merges the second read of
        # shared memory into the first and holds x, dy and γ in registers across the sums
        # (at d = 16384: 360 bytes of spills instead of none)
        _barrier()
        x = xs.index(s).load(layout).to(gl.float32)
        dy = ds.index(s).load(layout).to(gl.float32)
        g = ws.load(layout).to(gl.float32) * dy
        xhat = _xhat(x, mean, rstd, col_mask, HAS_MEAN)
        dx = (g - (xhat * c1 + c2)) * rstd
        gl.store(DX + r.to(gl.int64) * stride_dx + cols, dx.to(DX.dtype.element_ty),
                 mask=col_mask)
        acc_w += dy * xhat
        if HAS_MEAN:
            acc_b += dy
        # every thread is past its reads of stage s before any refills it (next iteration)
        _barrier()
        mean = nmean
        rstd = nrstd
    cp.wait_group(0)
    out = pid.to(gl.int64) * N
    gl.store(PW + out + cols, acc_w, mask=col_mask)
    if HAS_MEAN:
        gl.store(PB + out + cols, acc_b, mask=col_mask)
