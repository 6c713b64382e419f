"""The Gluon kernel of disjoint_smem (strategies/disjoint_smem.py says what it does and why).

Imported only where it can run (compiled code on a CUDA GPU) and by bench/regs.py, which
compiles it for sm_90 on any machine.  Written for Triton 3.6 and 3.9, whose Gluon names two
things differently (the cp.async copy, the CTA barrier): both are looked up once, here.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy as cp

from .rowgrad import PREFETCH_BULK_ARGS, PREFETCH_BULK_PTX

_async_load = getattr(cp, "async_load", None) or cp.async_copy_global_to_shared
_barrier = getattr(gl, "thread_barrier", None) or gl.barrier


@gluon.jit
def _launch_dependents():
    """griddepcontrol.launch_dependents: the kernel launched after this one as a programmatic
    dependent (the reduce, with `pdl`) may be scheduled now; it waits for this grid to
    complete before it reads anything (Gluon has no helper for it: the PTX, as Triton's
    tl.extra.cuda.gdc_launch_dependents writes it)."""
    gl.inline_asm_elementwise("griddepcontrol.launch_dependents; // dummy $0", "=r", [],
                              dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _f32(v, PAIRS: gl.constexpr):
    """v in fp32.  With PAIRS (`bf16_pairs`) a bf16 tensor is widened two elements at a time
    from the 32-bit word that holds them: the low one shifted up, the high one masked — two
    instructions a pair, where the compiler's conversion takes three (it moves the high half
    down with a PRMT before shifting it back up); the same bits either way (a bf16 is the top
    half of its fp32)."""
    if PAIRS and v.dtype == gl.bfloat16:
        return gl.inline_asm_elementwise(
            "{ shl.b32 $0, $2, 16; and.b32 $1, $2, 0xffff0000; }", "=r,=r,r", [v],
            dtype=gl.float32, is_pure=True, pack=2)
    return v.to(gl.float32)


@gluon.jit
def _globaltimer():
    """The GPU's clock in ns (%globaltimer): CLOCKS' per-row timeline only."""
    return gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=gl.int64,
                                     is_pure=False, pack=1)


@gluon.jit
def _prefetch_row(P, row, ok, nbytes, stride):
    """Ask L2 for row `row` of P (its first `nbytes` bytes, widened to 16-byte bounds) where
    `ok`: one `cp.async.bulk.prefetch.L2`, issued by thread 0, which nothing waits for — the
    copy into shared memory that asks for the row later then finds it in L2 (`l2_ahead`;
    sm_90 on: disjoint_smem.staged passes 0 on older GPUs).  rowgrad's PTX."""
    gl.inline_asm_elementwise(PREFETCH_BULK_PTX, PREFETCH_BULK_ARGS,
                              [P + row.to(gl.int64) * stride, nbytes, ok.to(gl.int32)],
                              dtype=gl.int32, is_pure=False, pack=1)


@gluon.jit
def _prefetch_rows(X, DY, row, end, nbytes_x, nbytes_dy, stride_x, stride_dy):
    """_prefetch_row of row `row` of x and of dy, if it is one of the program's (< end)."""
    _prefetch_row(X, row, row < end, nbytes_x, stride_x)
    _prefetch_row(DY, row, row < end, nbytes_dy, stride_dy)


@gluon.jit
def _stats(Mean, Rstd, row, last, HAS_MEAN: gl.constexpr):
    """(mean, rstd) of row `row`, clamped to the last row (a row past the end is never used);
    RMSNorm has no mean: rstd stands in for it and is never used as one."""
    rstd = gl.load(Rstd + gl.minimum(row, last))
    mean = rstd
    if HAS_MEAN:
        mean = gl.load(Mean + gl.minimum(row, last))
    return mean, rstd


@gluon.jit
def _copy(smem, P, row, stride, cols, mask):
    """Copy row `row` of P (its columns `cols`, where `mask`) into the stage `smem`."""
    _async_load(smem, P + row.to(gl.int64) * stride + cols, mask=mask)


# a stage buffer seen as fp32 [S, 2, 128] (full_sectors 2): Triton 3.6's Gluon names the
# method `_reinterpret`, 3.9's `reinterpret`
_ROWS3: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [2, 1, 0])
if hasattr(gl.shared_memory_descriptor, "reinterpret"):
    @gluon.jit
    def _as_fp32(buf, S: gl.constexpr):
        return buf.reinterpret(gl.float32, [S, 2, 128], _ROWS3)
else:
    @gluon.jit
    def _as_fp32(buf, S: gl.constexpr):
        return buf._reinterpret(gl.float32, [S, 2, 128], _ROWS3)


@gluon.jit
def _store_partial(P, cols, acc, mask, N, BASE: gl.constexpr, BLOCK: gl.constexpr,
                   VEC: gl.constexpr, NUM_WARPS: gl.constexpr, SECTORS: gl.constexpr, buf=None):
    """Store a partial row's part `acc` (fp32, BLOCK columns from BASE, laid out as the rows:
    VEC contiguous a thread) at P (its columns `cols`, where `mask`).  With SECTORS
    (`full_sectors`) and VEC = 8 (16-bit rows) each warp first trades its elements among its
    own threads (a layout conversion within the warp) so that each 16-byte store of a warp
    writes 512 contiguous bytes — whole 32-byte sectors — where a thread's 32 contiguous bytes,
    stored as two 16-byte halves, leave each store writing half of every sector it touches
    (round 44: Nsight Compute counts the partial rows' L2 sector writes twice).  SECTORS = 2:
    the trade through shared memory instead — `buf`, the drained stage buffer, which holds
    BLOCK fp32 from two stages of 16-bit rows on (disjoint_smem.launch_meta sees to it)."""
    if SECTORS and VEC == 8 and BLOCK >= VEC * 32 * NUM_WARPS:
        SEG: gl.constexpr = VEC * 32
        S: gl.constexpr = BLOCK // SEG
        src: gl.constexpr = gl.BlockedLayout([1, 1, 8], [1, 2, 16], [NUM_WARPS, 1, 1], [2, 1, 0])
        dst: gl.constexpr = gl.BlockedLayout([1, 2, 4], [1, 1, 32], [NUM_WARPS, 1, 1], [2, 1, 0])
        v = gl.convert_layout(gl.reshape(acc, [S, 2, 128]), src)
        if SECTORS == 2:
            # through shared memory (the drained stage buffer `buf`), as Triton's own stores
            # convert, instead of shuffles within each warp
            sh = _as_fp32(buf, S)
            sh.store(v)
            _barrier()
            v = sh.load(dst)
            _barrier()
        else:
            v = gl.convert_layout(v, dst)
        s_ = gl.arange(0, S, layout=gl.SliceLayout(1, gl.SliceLayout(2, dst)))
        h_ = gl.arange(0, 2, layout=gl.SliceLayout(0, gl.SliceLayout(2, dst)))
        i_ = gl.arange(0, 128, layout=gl.SliceLayout(0, gl.SliceLayout(1, dst)))
        c3 = BASE + s_[:, None, None] * SEG + h_[None, :, None] * 128 + i_[None, None, :]
        gl.store(P + c3, v, mask=c3 < N)
    else:
        gl.store(P + cols, acc, mask=mask)


@gluon.jit
def _stage_row(X, DY, xs, ds, xs2, ds2, row, ok, cols, col_mask, cols2, col_mask2,
               stride_x, stride_dy, BLOCK_D2: gl.constexpr):
    """Copy row `row` of x and dy into the stage (xs, ds; and the second part's xs2, ds2) —
    nothing where not `ok` (past the program's rows), a copy of nothing still makes its group —
    and close the group (one per row, so that wait_group(STAGES − 1) means: this row is here)."""
    _copy(xs, X, row, stride_x, cols, col_mask & ok)
    _copy(ds, DY, row, stride_dy, cols, col_mask & ok)
    if BLOCK_D2 > 0:
        _copy(xs2, X, row, stride_x, cols2, col_mask2 & ok)
        _copy(ds2, DY, row, stride_dy, cols2, col_mask2 & ok)
    cp.commit_group()


@gluon.jit
def _stage_part(X, DY, xs, ds, row, ok, cols, col_mask, stride_x, stride_dy):
    """With HALVES: copy one half of row `row` (its columns `cols`) into the slots xs, ds of
    that half's ring — nothing where not `ok` — and close its group (one per half row, in
    the order first half, second half, …)."""
    _copy(xs, X, row, stride_x, cols, col_mask & ok)
    _copy(ds, DY, row, stride_dy, cols, col_mask & ok)
    cp.commit_group()


@gluon.jit
def _part_values(xs, ds, ws, mean, rstd, layout: gl.constexpr, HAS_MEAN: gl.constexpr,
                 W_REGS: gl.constexpr, PAIRS: gl.constexpr, FMA: gl.constexpr):
    """(dy, g = γ·dy, x̂) of one part of a staged row in fp32, read from shared memory — what
    both passes over a row start from."""
    x = _f32(xs.load(layout), PAIRS)
    dy = _f32(ds.load(layout), PAIRS)
    if W_REGS:
        g = ws * dy             # γ in fp32 registers, laid out as the row
    else:
        g = _f32(ws.load(layout), PAIRS) * dy
    return dy, g, _xhat(x, mean, rstd, HAS_MEAN, FMA)


@gluon.jit
def _row_terms(xs, ds, ws, mean, rstd, layout: gl.constexpr, HAS_MEAN: gl.constexpr,
               W_REGS: gl.constexpr, PAIRS: gl.constexpr, FMA: gl.constexpr):
    """x̂·g and g of one part of a staged row, element by element (HALVES adds both halves'
    before one reduction across the program, not two)."""
    _, g, xhat = _part_values(xs, ds, ws, mean, rstd, layout, HAS_MEAN, W_REGS, PAIRS, FMA)
    return xhat * g, g


@gluon.jit
def _add2(a, b, c, d):
    return a + c, b + d


@gluon.jit
def _xhat(x, mean, rstd, HAS_MEAN: gl.constexpr, FMA: gl.constexpr):
    """x̂ of a part; its masked columns (zero-filled copies: dy = 0 there) add nothing to the
    sums or the contributions whatever their x̂, so nothing selects them (round 19).  With
    FMA (`xhat_fma`) LayerNorm's x̂ is one fused multiply-add, x·rstd + (−mean·rstd), instead
    of a subtraction and a product: its error grows with |mean|·rstd (the rounding of
    −mean·rstd), where (x − mean)·rstd's does not."""
    if HAS_MEAN:
        if FMA:
            return gl.fma(x, rstd, -mean * rstd)
        return (x - mean) * rstd
    return x * rstd


@gluon.jit
def _reduce_terms(xg, g, HAS_MEAN: gl.constexpr):
    """(Σ x̂·g, Σ g) over the program of terms laid out by _row_terms (Σ g is 0 without a
    mean: RMSNorm)."""
    if HAS_MEAN:
        s1, s2 = gl.reduce((xg, g), 0, _add2)
    else:
        s1 = gl.sum(xg, axis=0)
        s2 = 0.0
    return s1, s2


@gluon.jit
def _row_sums(xs, ds, ws, mean, rstd, layout: gl.constexpr, HAS_MEAN: gl.constexpr,
              W_REGS: gl.constexpr, PAIRS: gl.constexpr, FMA: gl.constexpr):
    """(Σ x̂·g, Σ g) of one part of a staged row, read from shared memory."""
    xg, g = _row_terms(xs, ds, ws, mean, rstd, layout, HAS_MEAN, W_REGS, PAIRS, FMA)
    return _reduce_terms(xg, g, HAS_MEAN)


@gluon.jit
def _dx_part(xs, ds, ws, DX_ROW, cols, col_mask, mean, rstd, c1, c2, acc_w, acc_b,
             layout: gl.constexpr, HAS_MEAN: gl.constexpr, W_REGS: gl.constexpr,
             PAIRS: gl.constexpr, FMA: gl.constexpr):
    """dx of one part of a staged row, read from shared memory again, stored; the part's
    contributions added to its accumulators, which are returned."""
    dy, g, xhat = _part_values(xs, ds, ws, mean, rstd, layout, HAS_MEAN, W_REGS, PAIRS, FMA)
    dx = (g - (xhat * c1 + c2)) * rstd
    gl.store(DX_ROW + cols, dx.to(DX_ROW.dtype.element_ty), mask=col_mask)
    acc_w += dy * xhat
    if HAS_MEAN:
        acc_b += dy
    return acc_w, acc_b


@gluon.jit
def smem_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N_V, ROWS_PER_PROG,
                stride_x_v, stride_dy_v, stride_dx_v, HAS_MEAN: gl.constexpr,
                BLOCK_D: gl.constexpr, BLOCK_D2: gl.constexpr, VEC: gl.constexpr,
                STAGES: gl.constexpr, NUM_WARPS: gl.constexpr, PDL: gl.constexpr,
                INTERLEAVE: gl.constexpr, HALVES: gl.constexpr = False,
                W_REGS: gl.constexpr = False, PAIRS: gl.constexpr = False,
                FMA: gl.constexpr = False, SECTORS: gl.constexpr = False, Clk=None,
                CLOCKS: gl.constexpr = False, L2_AHEAD: gl.constexpr = 0):
    """Program p: dx for rows [p·R, (p+1)·R) — with INTERLEAVE the rows p, p + P, p + 2P, …
    (P programs) instead — and its partial rows PW[p], PB[p].  N_V and the
    strides count VEC elements (so the compiler knows each row start VEC-aligned).  A row is
    one block of BLOCK_D columns, or with BLOCK_D2 > 0 two parts — columns [0, BLOCK_D) and
    [BLOCK_D, BLOCK_D + BLOCK_D2), each a power of two — so that a row like 12288 (8192 +
    4096) is staged at its width instead of in a block of 16384 (`split`: the rule's above 8192).
    HALVES (BLOCK_D2 = BLOCK_D): the row of one block staged by halves, its first halves in
    a ring of STAGES slots and its second halves in one of STAGES − 1 — STAGES − 1 first
    halves and STAGES − 2 second halves on their way while one row is worked on — where
    whole rows would keep less ahead (`half_rows`: an fp32 γ beside rows of 16384,
    disjoint_smem.launch_meta).  Two rings, not one of 2·STAGES − 1 half-row slots: two
    copies into one buffer at slots known only at run time cost a CTA barrier between them
    (round 28, where one ring was 7 % slower than whole rows); and the two halves' row sums
    are added element by element before one reduction across the program.

    L2_AHEAD = K > 0 (`l2_ahead`; whole-row stages only): L2 is asked for the row K rows past
    the ring's last (one bulk prefetch of its x and one of its dy, _prefetch_row) when the
    ring's copy of a row is asked for — so K more rows of DRAM reads on their way than the
    stages hold, without shared memory for them.

    CLOCKS (bench/timeline_staged.py --rows only): the GPU's clock (`%globaltimer`) after
    each row r, stored at Clk[r] (indexed by the row, which the loop holds anyway: a
    program's own index would cost the 16-warp kernels a register they do not have); with
    CLOCKS = 2 (--phases) also where row r's work passes three points on its way, at
    Clk[k·ROWS + r]: k = 1 once the copies ahead are asked for, 2 once row r is in shared
    memory, 3 once its sums are done."""
    if PDL:
        _launch_dependents()
    layout: gl.constexpr = gl.BlockedLayout([VEC], [32], [NUM_WARPS], [0])
    flat: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, [0])
    N = N_V * VEC
    stride_x = stride_x_v * VEC
    stride_dy = stride_dy_v * VEC
    stride_dx = stride_dx_v * VEC
    pid = gl.program_id(0)
    # the program's rows: first, first + step, … below end.  The loop below runs over the rows
    # themselves (as before round 18's interleave): counting iterations from 0 instead cost
    # 8 % at RMSNorm 8192 × 12288 with an fp32 γ (round 19, docs/PERF_NOTES.md), the code
    # the same but for the loop's indexing.  Its stage index, with the rows dealt round-robin:
    # a counter carried through the loop where a row is staged in two parts, (r − first) //
    # step where in one — round 20, H200: at two parts (10240, 12288, 14336; bf16, an fp32 γ,
    # fp32) the counter nowhere slower beyond 0.2 % and up to 19 % faster (LayerNorm 8192 ×
    # 12288 bf16: 170.0 against 209.6 µs); at one part (16384) the division 2.5 % faster in
    # LayerNorm and level in RMSNorm.  Why the two forms are this differently fast (their sm_90
    # SASS differs in integer and uniform-register instructions alone) was not read
    first = pid * ROWS_PER_PROG
    step = 1
    end = gl.minimum(first + ROWS_PER_PROG, ROWS)
    if INTERLEAVE:
        first = pid
        step = gl.num_programs(0)
        end = ROWS
    cols = gl.arange(0, BLOCK_D, layout=layout)
    col_mask = cols < N
    xs = gl.allocate_shared_memory(X.dtype.element_ty, [STAGES, BLOCK_D], flat)
    ds = gl.allocate_shared_memory(DY.dtype.element_ty, [STAGES, BLOCK_D], flat)
    # γ waits for the rows in shared memory in its own dtype, or with W_REGS in fp32 registers
    # laid out as the rows are read
    if W_REGS:
        ws = gl.load(W + cols, mask=col_mask, other=0.0).to(gl.float32)
    else:
        ws = gl.allocate_shared_memory(W.dtype.element_ty, [BLOCK_D], flat)
        ws.store(gl.load(W + cols, mask=col_mask, other=0.0))
    acc_w = gl.zeros([BLOCK_D], gl.float32, layout)
    acc_b = gl.zeros([BLOCK_D], gl.float32, layout)
    # the second part: the same names stand in where there is none (never read then)
    cols2 = cols
    col_mask2 = col_mask
    xs2 = xs
    ds2 = ds
    ws2 = ws
    acc_w2 = acc_w
    acc_b2 = acc_b
    if BLOCK_D2 > 0:
        cols2 = BLOCK_D + gl.arange(0, BLOCK_D2, layout=layout)
        col_mask2 = cols2 < N
        STAGES2: gl.constexpr = STAGES - 1 if HALVES else STAGES
        xs2 = gl.allocate_shared_memory(X.dtype.element_ty, [STAGES2, BLOCK_D2], flat)
        ds2 = gl.allocate_shared_memory(DY.dtype.element_ty, [STAGES2, BLOCK_D2], flat)
        if W_REGS:
            ws2 = gl.load(W + cols2, mask=col_mask2, other=0.0).to(gl.float32)
        else:
            ws2 = gl.allocate_shared_memory(W.dtype.element_ty, [BLOCK_D2], flat)
            ws2.store(gl.load(W + cols2, mask=col_mask2, other=0.0))
        acc_w2 = gl.zeros([BLOCK_D2], gl.float32, layout)
        acc_b2 = gl.zeros([BLOCK_D2], gl.float32, layout)
    if HALVES:
        # half rows 0 … 2·STAGES − 4 in order: first halves of rows 0 … STAGES − 2, second
        # halves of rows 0 … STAGES − 3
        for k in gl.static_range(2 * STAGES - 3):
            if k % 2 == 0:
                _stage_part(X, DY, xs.index(k // 2), ds.index(k // 2), first + (k // 2) * step,
                            first + (k // 2) * step < end, cols, col_mask, stride_x, stride_dy)
            else:
                _stage_part(X, DY, xs2.index(k // 2), ds2.index(k // 2),
                            first + (k // 2) * step, first + (k // 2) * step < end, cols2,
                            col_mask2, stride_x, stride_dy)
    else:
        for k in gl.static_range(STAGES - 1):
            _stage_row(X, DY, xs.index(k), ds.index(k), xs2.index(k), ds2.index(k),
                       first + k * step, first + k * step < end, cols, col_mask, cols2,
                       col_mask2, stride_x, stride_dy, BLOCK_D2)
    # `l2_ahead`: the rows the loop's first iteration does not ask L2 for itself
    nbytes_x = N.to(gl.int64) * X.dtype.element_ty.primitive_bitwidth // 8
    nbytes_dy = N.to(gl.int64) * DY.dtype.element_ty.primitive_bitwidth // 8
    for k in gl.static_range(STAGES, STAGES - 1 + L2_AHEAD):
        _prefetch_rows(X, DY, first + k * step, end, nbytes_x, nbytes_dy, stride_x, stride_dy)
    inv_n = 1.0 / N.to(gl.float32)
    # the row statistics one row ahead, in registers: their load is not waited for until the
    # next row (clamped to the rows, so never out of bounds: past the program's last row it is
    # never used)
    last = gl.maximum(end - 1, 0)
    mean, rstd = _stats(Mean, Rstd, first, last, HAS_MEAN)
    WAIT: gl.constexpr = 2 * STAGES - 3 if HALVES else STAGES - 1
    j = 0
    for r in range(first, end, step):
        if INTERLEAVE:
            if BLOCK_D2 > 0:
                i = j
            else:
                i = (r - first) // step
        else:
            i = r - first
        if HALVES:
            # the next two half rows in order — row i + STAGES − 2's second half, row i +
            # STAGES − 1's first — into the slots row i − 1 left (its last barrier passed)
            rb = r + (STAGES - 2) * step
            _stage_part(X, DY, xs2.index((i + STAGES - 2) % (STAGES - 1)),
                        ds2.index((i + STAGES - 2) % (STAGES - 1)), rb, rb < end, cols2,
                        col_mask2, stride_x, stride_dy)
            ra = r + (STAGES - 1) * step
            _stage_part(X, DY, xs.index((i + STAGES - 1) % STAGES),
                        ds.index((i + STAGES - 1) % STAGES), ra, ra < end, cols, col_mask,
                        stride_x, stride_dy)
        else:
            ahead = (i + STAGES - 1) % STAGES
            _stage_row(X, DY, xs.index(ahead), ds.index(ahead), xs2.index(ahead),
                       ds2.index(ahead), r + (STAGES - 1) * step, r + (STAGES - 1) * step < end,
                       cols, col_mask, cols2, col_mask2, stride_x, stride_dy, BLOCK_D2)
            if L2_AHEAD > 0:
                _prefetch_rows(X, DY, r + (STAGES - 1 + L2_AHEAD) * step, end, nbytes_x,
                               nbytes_dy, stride_x, stride_dy)
        if CLOCKS > 1:
            gl.store(Clk + ROWS + r, _globaltimer())          # the copies ahead asked for
        nmean, nrstd = _stats(Mean, Rstd, r + step, last, HAS_MEAN)
        # row i is here (with HALVES its second half, and so all before it: 2·STAGES − 3 half
        # rows after it; else STAGES − 1 rows)
        cp.wait_group(WAIT)
        if CLOCKS > 1:
            gl.store(Clk + 2 * ROWS + r, _globaltimer())      # row i here
        s = i % STAGES
        if HALVES:
            t = i % (STAGES - 1)
            a1, b1 = _row_terms(xs.index(s), ds.index(s), ws, mean, rstd, layout, HAS_MEAN,
                                W_REGS, PAIRS, FMA)
            a2, b2 = _row_terms(xs2.index(t), ds2.index(t), ws2, mean, rstd, layout, HAS_MEAN,
                                W_REGS, PAIRS, FMA)
            s1, s2 = _reduce_terms(a1 + a2, b1 + b2, HAS_MEAN)
        else:
            t = s
            # the row sums, from shared memory (the first part's, then the second's added)
            s1, s2 = _row_sums(xs.index(s), ds.index(s), ws, mean, rstd, layout, HAS_MEAN,
                               W_REGS, PAIRS, FMA)
            if BLOCK_D2 > 0:
                t1, t2 = _row_sums(xs2.index(t), ds2.index(t), ws2, mean, rstd, layout,
                                   HAS_MEAN, W_REGS, PAIRS, FMA)
                s1 = s1 + t1
                s2 = s2 + t2
        c1 = s1 * inv_n
        c2 = 0.0
        if HAS_MEAN:
            c2 = s2 * inv_n
        # a barrier has a memory effect: without it the compiler merges the second read of
        # shared memory into the first and holds x, dy and γ in registers across the sums
        # (at d = 16384: 360 bytes of spills instead of none)
        _barrier()
        if CLOCKS > 1:
            gl.store(Clk + 3 * ROWS + r, _globaltimer())      # row i's sums done
        dx_row = DX + r.to(gl.int64) * stride_dx
        acc_w, acc_b = _dx_part(xs.index(s), ds.index(s), ws, dx_row, cols, col_mask, mean, rstd,
                                c1, c2, acc_w, acc_b, layout, HAS_MEAN, W_REGS, PAIRS, FMA)
        if BLOCK_D2 > 0:
            acc_w2, acc_b2 = _dx_part(xs2.index(t), ds2.index(t), ws2, dx_row, cols2, col_mask2,
                                      mean, rstd, c1, c2, acc_w2, acc_b2, layout, HAS_MEAN,
                                      W_REGS, PAIRS, FMA)
        # every thread is past its reads of stage s before any refills it (next iteration)
        _barrier()
        if CLOCKS:
            gl.store(Clk + r, _globaltimer())
        mean = nmean
        rstd = nrstd
        j += 1
    cp.wait_group(0)
    out = pid.to(gl.int64) * N
    _store_partial(PW + out, cols, acc_w, col_mask, N, 0, BLOCK_D, VEC, NUM_WARPS, SECTORS, xs)
    if HAS_MEAN:
        _store_partial(PB + out, cols, acc_b, col_mask, N, 0, BLOCK_D, VEC, NUM_WARPS, SECTORS,
                       xs)
    if BLOCK_D2 > 0:
        _store_partial(PW + out, cols2, acc_w2, col_mask2, N, BLOCK_D, BLOCK_D2, VEC, NUM_WARPS,
                       SECTORS, xs)
        if HAS_MEAN:
            _store_partial(PB + out, cols2, acc_b2, col_mask2, N, BLOCK_D, BLOCK_D2, VEC,
                           NUM_WARPS, SECTORS, xs)
