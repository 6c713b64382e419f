"""The Gluon kernel of disjoint_cluster (strategies/disjoint_cluster.py says what it does and why).

Imported only where it can run (compiled code on a GPU with thread-block clusters, sm_90 on)
and by bench/regs.py.  Written for Triton 3.6, whose Gluon cannot reduce a tensor laid across
the CTAs of a cluster (bench/cluster_probe.py), and whose stores of a tensor that a layout
replicates across a cluster's CTAs are left to the first CTA alone (round 37's first try: the
second halves of dx and of the partial rows never written).  So the kernel is compiled as a
plain one-CTA kernel — every layout its own CTA's — and launched in clusters of two
(disjoint_cluster.launch_clusters); its CTAs find their cluster from their index and their
rank in it from %cluster_ctarank, and the two halves' row sums meet through global memory
across a cluster barrier, in PTX.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp

from ._smem_kernel import _async_load, _barrier, _dx_part, _launch_dependents, _row_sums, _stats


@gluon.jit
def _cta_rank(like):
    """This CTA's rank in its cluster (0 or 1); `like` is any int32 scalar (inline asm wants an
    operand)."""
    return gl.inline_asm_elementwise("mov.u32 $0, %cluster_ctarank; // $1", "=r,r", [like],
                                     dtype=gl.int32, is_pure=True, pack=1)


@gluon.jit
def _publish(mine, s1, s2):
    """The row sums' exchange, first half: store (s1, s2) at `mine` and arrive at the cluster
    barrier (release), in one asm block so that nothing moves the store after the arrive.
    Every thread of both CTAs runs it once per row: the barrier counts them all."""
    return gl.inline_asm_elementwise(
        """{
        st.global.v2.f32 [$1], {$2, $3};
        barrier.cluster.arrive.release.aligned;
        mov.u32 $0, 0;
        }""",
        "=r,l,f,f", [mine.to(gl.int64, bitcast=True), s1, s2],
        dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _collect(theirs):
    """The exchange's second half: wait at the cluster barrier (acquire), then read the
    partner's sums from `theirs` (.cg: from L2, never an earlier call's line left in L1), in
    one asm block so that nothing moves the load before the wait."""
    return gl.inline_asm_elementwise(
        """{
        barrier.cluster.wait.acquire.aligned;
        ld.global.cg.v2.f32 {$0, $1}, [$2];
        }""",
        "=f,=f,l", [theirs.to(gl.int64, bitcast=True)],
        dtype=(gl.float32, gl.float32), is_pure=False, pack=1)


@gluon.jit
def _copy_half(smem, P, row, stride, cols, mask):
    _async_load(smem, P + row.to(gl.int64) * stride + cols, mask=mask)


@gluon.jit
def cluster_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N_V,
                   stride_x_v, stride_dy_v, stride_dx_v, HAS_MEAN: gl.constexpr,
                   HALF: gl.constexpr, VEC: gl.constexpr, STAGES: gl.constexpr,
                   PDL: gl.constexpr, layout: gl.constexpr, flat: gl.constexpr):
    """Cluster c (of C: 2·C CTAs launched in clusters of two, CTAs 2c and 2c + 1): rows c,
    c + C, c + 2C, …; CTA k of the cluster owns columns [k·HALF, (k + 1)·HALF) of them
    (masked past N).  Each
    CTA stages its half rows in a ring of STAGES shared-memory slots (cp.async, as
    disjoint_smem's kernel), sums its half's x̂·g and g, swaps the two sums with its partner
    (`_publish`, `_collect`: XS holds two slots of both CTAs' sums per cluster, used alternately, so a
    partner one row ahead never overwrites what is still to be read), adds the two (IEEE
    addition commutes: the same bits in both CTAs) and writes dx for its half.  Its half of
    partial row c is stored at the end: C partial rows for the fixed-order reduce.  `layout` and `flat`
    are the register and shared layouts of a half row (`layouts`)."""
    if PDL:
        _launch_dependents()
    N = N_V * VEC
    stride_x = stride_x_v * VEC
    stride_dy = stride_dy_v * VEC
    stride_dx = stride_dx_v * VEC
    c = gl.program_id(0) // 2
    step = gl.num_programs(0) // 2
    rank = _cta_rank(c)
    cols = rank * HALF + gl.arange(0, HALF, layout=layout)
    col_mask = cols < N
    xs = gl.allocate_shared_memory(X.dtype.element_ty, [STAGES, HALF], flat)
    ds = gl.allocate_shared_memory(DY.dtype.element_ty, [STAGES, HALF], flat)
    ws = gl.allocate_shared_memory(W.dtype.element_ty, [HALF], flat)
    ws.store(gl.load(W + cols, mask=col_mask, other=0.0))
    acc_w = gl.zeros([HALF], gl.float32, layout)
    acc_b = gl.zeros([HALF], gl.float32, layout)
    for k in gl.static_range(STAGES - 1):
        r0 = c + k * step
        ok = r0 < ROWS
        _copy_half(xs.index(k), X, r0, stride_x, cols, col_mask & ok)
        _copy_half(ds.index(k), DY, r0, stride_dy, cols, col_mask & ok)
        cp.commit_group()
    inv_n = 1.0 / N.to(gl.float32)
    last = gl.maximum(ROWS - 1, 0)
    mean, rstd = _stats(Mean, Rstd, c, last, HAS_MEAN)
    # the exchange words: XS[c, slot, rank, 2] (fp32), two slots a cluster
    base = XS + c.to(gl.int64) * 8
    acc_w, acc_b = _rows(X, DY, DX, Mean, Rstd, xs, ds, ws, base, rank, c, step, ROWS, cols,
                         col_mask, acc_w, acc_b, inv_n, last, mean, rstd, stride_x, stride_dy,
                         stride_dx, HAS_MEAN, STAGES, layout)
    cp.wait_group(0)
    out = c.to(gl.int64) * N
    gl.store(PW + out + cols, acc_w, mask=col_mask)
    if HAS_MEAN:
        gl.store(PB + out + cols, acc_b, mask=col_mask)


@gluon.jit
def _rows(X, DY, DX, Mean, Rstd, xs, ds, ws, base, rank, c, step, ROWS, cols, col_mask, acc_w,
          acc_b, inv_n, last, mean, rstd, stride_x, stride_dy, stride_dx, HAS_MEAN: gl.constexpr,
          STAGES: gl.constexpr, layout: gl.constexpr):
    """The cluster's rows, each row's exchange between its sums and its dx (the prologue's
    STAGES − 1 rows already on their way); returns the accumulators."""
    j = 0
    for r in range(c, ROWS, step):
        ahead = (j + STAGES - 1) % STAGES
        ra = r + (STAGES - 1) * step
        ok = ra < ROWS
        _copy_half(xs.index(ahead), X, ra, stride_x, cols, col_mask & ok)
        _copy_half(ds.index(ahead), DY, ra, stride_dy, cols, col_mask & ok)
        cp.commit_group()
        nmean, nrstd = _stats(Mean, Rstd, r + step, last, HAS_MEAN)
        cp.wait_group(STAGES - 1)
        s = j % STAGES
        s1, s2 = _row_sums(xs.index(s), ds.index(s), ws, mean, rstd, layout, HAS_MEAN, False, False,
                           False)
        slot = base + (j % 2) * 4
        _publish(slot + rank * 2, s1, s2)
        o1, o2 = _collect(slot + (1 - rank) * 2)
        # both CTAs add the same two fp32 numbers (IEEE addition is commutative): the same
        # bits of the row sums in both halves of the row
        c1 = (s1 + o1) * inv_n
        c2 = 0.0
        if HAS_MEAN:
            c2 = (s2 + o2) * inv_n
        _barrier()
        dx_row = DX + r.to(gl.int64) * stride_dx
        acc_w, acc_b = _dx_part(xs.index(s), ds.index(s), ws, dx_row, cols, col_mask, mean, rstd,
                                c1, c2, acc_w, acc_b, layout, HAS_MEAN, False, False,
                                False)
        _barrier()
        mean = nmean
        rstd = nrstd
        j += 1
    return acc_w, acc_b


def layouts(vec: int, warps: int):
    """(register layout, shared layout) of a half row in one CTA: nothing in the kernel
    crosses CTAs but the row sums' exchange (`_publish`, `_collect`)."""
    return gl.BlockedLayout([vec], [32], [warps], [0]), gl.SwizzledSharedLayout(1, 1, 1, [0])
