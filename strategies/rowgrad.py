"""The per-row gradient, shared by every strategy.

For a row with saved statistics (mean, rstd) — RMSNorm has no mean — and x̂ = (x − mean)·rstd:

    g   = γ · dy                       (the gradient reaching x̂)
    c1  = Σ_j x̂_j g_j / d              (projection on x̂: the rstd term)
    c2  = Σ_j g_j / d                  (the mean term; LayerNorm only)
    dx  = (g − (x̂·c1 + c2)) · rstd

and the row's contributions to the parameter gradients are dy·x̂ (to dγ) and dy (to dβ).
Every strategy calls these helpers on a tile of BLOCK_R rows and differs only in how it
combines those contributions across rows.  All arithmetic is fp32, whatever the storage dtype:
the in-row sums run over up to 65536 elements, where bf16 accumulation would lose the answer.

Two shapes of the same math:
  * `rowgrad_tile`  — the whole row fits one block (BLOCK_D ≥ d): load once, compute, store.
    `rowgrad_reload` is the same for rows so wide (16384) that x̂ and g cannot stay in
    registers across the row sums: it reads the tile a second time, from L1.
  * `rowgrad_split` — a row shared by several programs (a part each, `col_split`): each
    reads the other parts for the row sums alone.
  * `row_coeffs` + `rowgrad_chunk` — a row wider than one block: a first pass over the chunks
    accumulates c1 and c2, a second pass writes dx chunk by chunk and returns each chunk's
    contributions.  It reads x and dy twice, which is the price of d > BLOCK_D.
"""
import triton
import triton.language as tl

from . import _device
from ._exchange import pack, receive, send, sent, unpack

# Under the interpreter a reduction with a combine function (tl.reduce) is a Python loop over
# every element — LayerNorm's tests ran 10-20x slower than RMSNorm's for it — so there the
# two row sums are two tl.sum (numpy's); compiled code keeps the one paired reduction.  The
# interpreter's order of summation is not the GPU's either way.
_INTERPRETED: tl.constexpr = tl.constexpr(_device.interpreted())


@triton.jit
def load_xdy(X, DY, rows, cols, mask, stride_x, stride_dy, EVICT: tl.constexpr,
             CACHE: tl.constexpr):
    """A tile's x and dy in storage dtype, masked elements exact zeros; EVICT the L2 policy and
    CACHE the cache modifier of both loads ("" for the defaults)."""
    x = tl.load(X + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0,
                eviction_policy=EVICT, cache_modifier=CACHE)
    dy = tl.load(DY + rows[:, None] * stride_dy + cols[None, :], mask=mask, other=0.0,
                 eviction_policy=EVICT, cache_modifier=CACHE)
    return x, dy


@triton.jit
def load_weight_tile(W, rows, cols, mask, EVICT: tl.constexpr, CACHE: tl.constexpr):
    """γ in fp32 as a [BLOCK_R, BLOCK_D] tile of row stride 0: x's shape, so x's layout (why
    that matters: rowgrad_reload)."""
    return tl.load(W + (rows * 0)[:, None] + cols[None, :], mask=mask, other=0.0,
                   eviction_policy=EVICT, cache_modifier=CACHE).to(tl.float32)


@triton.jit
def load_rows(X, DY, Mean, Rstd, rows, row_mask, cols, mask, stride_x, stride_dy,
              HAS_MEAN: tl.constexpr, EVICT: tl.constexpr):
    """Issue the loads of a [BLOCK_R, BLOCK_D] tile: (x, dy) in storage dtype, (mean, rstd).

    Masked elements come back as exact zeros.  Nothing here waits for the data: a caller that
    wants the next tile in flight while it works on this one calls this first (a prefetch).
    EVICT is the L2 policy: "evict_first" where x and dy are read once (they would only push
    the partial rows out of L2), "evict_last" where a second pass over a wide row reads them
    again.  RMSNorm has no mean: rstd stands in for it and is never used as one."""
    x, dy = load_xdy(X, DY, rows, cols, mask, stride_x, stride_dy, EVICT, "")
    rstd = tl.load(Rstd + rows, mask=row_mask, other=0.0)
    if HAS_MEAN:
        mean = tl.load(Mean + rows, mask=row_mask, other=0.0)
    else:
        mean = rstd
    return x, dy, mean, rstd


@triton.jit
def xhat_g(x, dy, mean, rstd, w, HAS_MEAN: tl.constexpr):
    """(x̂, g = γ·dy, dy) in fp32 from a loaded tile.  Masked elements (loaded as zeros) give
    dy = g = 0, so they add nothing to the row sums (x̂·g) or the contributions (dy·x̂) whatever
    their x̂ — LayerNorm's is −mean·rstd there, left so: no select an element (round 19)."""
    return xhat_g_tile(x, dy, mean, rstd, w[None, :], HAS_MEAN)


@triton.jit
def xhat_g_tile(x, dy, mean, rstd, w, HAS_MEAN: tl.constexpr):
    """xhat_g for a weight given as a tile: [BLOCK_R, BLOCK_D], or [1, BLOCK_D] broadcast."""
    x = x.to(tl.float32)
    dy = dy.to(tl.float32)
    if HAS_MEAN:
        xhat = (x - mean[:, None]) * rstd[:, None]
    else:
        xhat = x * rstd[:, None]
    return xhat, w * dy, dy


# Thread 0 hands the copy engine (TMA) one `cp.async.bulk.prefetch.L2` of the bytes [$1, $1 +
# $2) widened to 16-byte bounds, where $3 (int32) is not 0: nothing waits for it ($0, a dummy
# result; constraints PREFETCH_BULK_ARGS).  Not pure where it is used (so it is kept although
# nothing reads its result); compiled code only — the interpreter has no inline PTX.  Used here
# (the row loop's `l2_ahead`) and by the staged kernel's (_smem_kernel._prefetch_row).
PREFETCH_BULK_PTX = tl.constexpr("""{
        .reg .pred p, q; .reg .u32 t, n; .reg .b64 a, e;
        mov.u32 t, %tid.x;
        setp.eq.u32 p, t, 0;
        setp.ne.and.s32 q, $3, 0, p;
        and.b64 a, $1, -16;
        add.s64 e, $1, $2;
        add.s64 e, e, 15;
        and.b64 e, e, -16;
        sub.s64 e, e, a;
        cvt.u32.u64 n, e;
        @q cp.async.bulk.prefetch.L2.global [a], n;
        mov.u32 $0, 0;
        }""")
PREFETCH_BULK_ARGS = tl.constexpr("=r,l,l,r")


@triton.jit
def _prefetch_bulk(ptr, nbytes, ok):
    # PREFETCH_BULK_PTX of [ptr, ptr + nbytes) where `ok` (all [1] tensors)
    return tl.inline_asm_elementwise(PREFETCH_BULK_PTX, PREFETCH_BULK_ARGS,
                                     [ptr, nbytes, ok.to(tl.int32)], dtype=tl.int32,
                                     is_pure=False, pack=1)


@triton.jit
def prefetch_l2(X, DY, r, r_end, N, stride_x, stride_dy, BLOCK_R: tl.constexpr):
    """Ask L2 for rows r … r + BLOCK_R − 1 (those before r_end) of x and dy, whole: one bulk
    prefetch per row and tensor, issued by one thread, which nothing waits for — the tile a
    later iteration will load then comes from L2 instead of DRAM, while this one is computed
    (`l2_ahead`; the bulk prefetch needs sm_90 or newer).  Round 12 (docs/PERF_NOTES.md): one
    tile ahead 3.5-8.5 % faster at three bf16-weight rows read twice, slower elsewhere (23 %
    with an fp32 weight); a prefetch per 128-byte line instead was 10-40 % slower everywhere."""
    one = tl.zeros([1], dtype=tl.int64)
    nbytes = one + N * (X.dtype.element_ty.primitive_bitwidth // 8)
    for i in tl.static_range(BLOCK_R):
        row = (r + i).to(tl.int64)
        ok = one + (row < r_end).to(tl.int64)
        _prefetch_bulk(X + row * stride_x + one, nbytes, ok)
        _prefetch_bulk(DY + row * stride_dy + one, nbytes, ok)


@triton.jit
def _load_xhat_g(X, DY, w, rows, cols, mask, row_mask, Mean, Rstd, stride_x, stride_dy,
                 HAS_MEAN: tl.constexpr, EVICT: tl.constexpr):
    """load_rows then xhat_g: (x̂, g, dy, rstd) in fp32."""
    x, dy, mean, rstd = load_rows(X, DY, Mean, Rstd, rows, row_mask, cols, mask, stride_x,
                                  stride_dy, HAS_MEAN, EVICT)
    xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    return xhat, g, dy, rstd


@triton.jit
def reread_rows(X, DY, rows, cols, mask, stride_x, stride_dy):
    """Read a tile's x and dy a second time (rowgrad_reload), expected from L1.  The cache
    modifier differs from load_rows' loads so the compiler cannot merge the two reads."""
    return load_xdy(X, DY, rows, cols, mask, stride_x, stride_dy, "", ".ca")


@triton.jit
def _dx(xhat, g, c1, c2, rstd, HAS_MEAN: tl.constexpr):
    # The mean term exists only for LayerNorm; RMSNorm's x̂ has no centring to undo.
    if HAS_MEAN:
        return (g - (xhat * c1[:, None] + c2[:, None])) * rstd[:, None]
    else:
        return (g - xhat * c1[:, None]) * rstd[:, None]


@triton.jit
def _add_pair(a1, a2, b1, b2):
    return a1 + b1, a2 + b2


@triton.jit
def pair_sums(xhat, g, HAS_MEAN: tl.constexpr):
    """(Σ x̂·g, Σ g) per row of a [BLOCK_R, BLOCK_D] tile (the second = the first for RMSNorm,
    which never reads it).  LayerNorm's two sums go through one reduction: a row spread over
    several warps is summed through shared memory, and one exchange of both values needs half
    the barriers of two (the sm_90 SASS of d = 4096: 3 barriers a tile instead of 6).  The
    summation tree is the same fixed one either way."""
    if HAS_MEAN:
        if _INTERPRETED:
            return tl.sum(xhat * g, axis=1), tl.sum(g, axis=1)
        return tl.reduce((xhat * g, g), 1, _add_pair)
    else:
        s1 = tl.sum(xhat * g, axis=1)
        return s1, s1


@triton.jit
def row_sums(xhat, g, N, HAS_MEAN: tl.constexpr):
    """(c1, c2) = (Σ x̂·g / d, Σ g / d) per row of a [BLOCK_R, BLOCK_D] tile (pair_sums / d)."""
    s1, s2 = pair_sums(xhat, g, HAS_MEAN)
    return s1 / N, s2 / N


@triton.jit
def rowgrad_loaded(x, dy, mean, rstd, w, rows, mask, cols, DX, stride_dx, N,
                   HAS_MEAN: tl.constexpr, X, DY, stride_x, stride_dy, RELOAD: tl.constexpr):
    """Whole rows from a loaded tile (load_rows): store dx; return (dy·x̂, dy) as fp32 tiles.

    RELOAD: after the row sums, read x and dy again (from L1) instead of keeping x̂ and g in
    registers across them (see rowgrad_reload); the same arithmetic, the same bits."""
    xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    c1, c2 = row_sums(xhat, g, N, HAS_MEAN)
    if RELOAD:
        x, dy = reread_rows(X, DY, rows, cols, mask, stride_x, stride_dy)
        xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    dx = _dx(xhat, g, c1, c2, rstd, HAS_MEAN)
    tl.store(DX + rows[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=mask)
    return dy * xhat, dy


@triton.jit
def rowgrad_reload(X, DY, DX, W, Mean, Rstd, rows, row_mask, cols, col_mask,
                   stride_x, stride_dy, stride_dx, N, HAS_MEAN: tl.constexpr,
                   W_TILE: tl.constexpr):
    """rowgrad_tile for rows too wide to keep x̂ and g in registers across the row sums.

    At d = 16384 one row is 32 fp32 values of each of x̂, g, dγ's and dβ's accumulators per
    thread of 16 warps: 128 registers, the most a thread of 16 warps may have, so ptxas
    spilled (measured: 256 bytes of stack).  Here the row sums are taken first; then the same
    tile (x, dy and γ) is read again — from L1, which still holds it — and x̂ and g are
    recomputed for dx and the contributions.  Same arithmetic in the same order as
    rowgrad_tile: the same bits.  The second read carries a different cache modifier so that
    the compiler cannot merge it with the first (which would put the registers back).

    dx is stored here, before the caller adds the contributions to its accumulators.  The
    other order needs fewer registers (ptxas: 24 bytes of stack for LayerNorm instead of 80)
    but measured slower on the H200 (tune-4, 8192 × 16384: LayerNorm 350 against 337 µs,
    RMSNorm 330 against 233), so it is not used.

    W_TILE loads the weight as a [BLOCK_R, BLOCK_D] tile of row stride 0 instead of a [BLOCK_D]
    vector.  Triton lays a load out by its own shape and element size: an fp32 vector gets 4
    elements a thread, x's bf16 tile 8, and the vector then crosses shared memory (a
    convert_layout with barriers) twice a row to meet x̂ — 64 KB a row at d = 16384, where a
    bf16 weight needs none (sm_90 compile: 35 barriers a row against 19).  As a tile of x's
    shape it takes x's layout.  The same values in the same arithmetic: the same bits."""
    mask = row_mask[:, None] & col_mask[None, :]
    x, dy, mean, rstd = load_rows(X, DY, Mean, Rstd, rows, row_mask, cols, mask, stride_x,
                                  stride_dy, HAS_MEAN, "evict_last")
    if W_TILE:
        w = load_weight_tile(W, rows, cols, mask, "evict_last", "")
        xhat, g, dy = xhat_g_tile(x, dy, mean, rstd, w, HAS_MEAN)
    else:
        w = tl.load(W + cols, mask=col_mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    c1, c2 = row_sums(xhat, g, N, HAS_MEAN)
    x, dy = reread_rows(X, DY, rows, cols, mask, stride_x, stride_dy)
    if W_TILE:
        w = load_weight_tile(W, rows, cols, mask, "", ".ca")
        xhat, g, dy = xhat_g_tile(x, dy, mean, rstd, w, HAS_MEAN)
    else:
        w = tl.load(W + cols, mask=col_mask, other=0.0, cache_modifier=".ca").to(tl.float32)
        xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    dx = _dx(xhat, g, c1, c2, rstd, HAS_MEAN)
    tl.store(DX + rows[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=mask)
    return dy * xhat, dy


@triton.jit
def other_sums(X, DY, W, mean, rstd, rows, need, q, part_w, N, stride_x, stride_dy,
               HAS_MEAN: tl.constexpr, BLOCK_D: tl.constexpr):
    """(Σ x̂·g, Σ g) of part q (columns q·part_w … the part's end) of the tile's rows where
    `need` (a row mask; the other rows load nothing — a masked-off load fetches no bytes —
    and sum to zero), read here for the sums alone: x, dy and γ (γ as a tile in x's layout,
    as in rowgrad_reload)."""
    qcols = q * part_w + tl.arange(0, BLOCK_D)
    qm = need[:, None] & (qcols < tl.minimum(q * part_w + part_w, N))[None, :]
    xq, dyq = load_xdy(X, DY, rows, qcols, qm, stride_x, stride_dy, "", "")
    wq = load_weight_tile(W, rows, qcols, qm, "", "")
    xhq, gq, _ = xhat_g_tile(xq, dyq, mean, rstd, wq, HAS_MEAN)
    return pair_sums(xhq, gq, HAS_MEAN)


@triton.jit
def rowgrad_split(X, DY, DX, w, W, Mean, Rstd, XS, slot, patience, rows, row_mask, cols,
                  col_mask, part, part_w, stride_x, stride_dy, stride_dx, N,
                  HAS_MEAN: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
                  RELOAD: tl.constexpr, COL_SPLIT: tl.constexpr, EXCHANGE: tl.constexpr,
                  SPIN: tl.constexpr):
    """rowgrad_tile for a program that owns one part of its rows: columns `cols` (part `part`
    of COL_SPLIT, `part_w` columns each) of every row of the tile; `w` is its part's weight.

    The row sums need the whole row.  Every program adds the per-part sums in part order,
    its own part's from its own tile; the other parts' it reads and sums itself (other_sums:
    the parts' x, dy and γ, from L2 — the programs next door's own tiles, read at about the
    same time) or, with EXCHANGE, takes from the parts' owners (`_exchange`: tile `slot`'s
    words in XS, `patience` polls at most — SPIN again once every part's sums came in time,
    0 after one did not — and what did not come it reads as without EXCHANGE).  A part's
    sums are the same bits whoever computes them (the same loads, arithmetic and reduction
    tree), so all programs of a row get the same bits of c1 and c2, and so does a second
    run, however each part's sums came.  dx and the contributions are the own part's only
    (RELOAD: its x and dy read again, from L1, instead of held across the other parts'
    loads).  Returns (dy·x̂, dy, patience)."""
    mask = row_mask[:, None] & col_mask[None, :]
    x, dy, mean, rstd = load_rows(X, DY, Mean, Rstd, rows, row_mask, cols, mask, stride_x,
                                  stride_dy, HAS_MEAN, "")
    xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    own1, own2 = pair_sums(xhat, g, HAS_MEAN)
    if EXCHANGE:
        found = send(XS, slot, part, pack(own1, own2), BLOCK_R, COL_SPLIT)
    s1 = tl.zeros_like(own1)
    s2 = tl.zeros_like(own2)
    missed = tl.zeros_like(patience)
    for q in tl.static_range(COL_SPLIT):
        need = row_mask & (tl.zeros_like(rows) + part != q)
        if EXCHANGE:
            v, got = receive(XS, slot, q, part, patience, BLOCK_R, COL_SPLIT, SPIN)
            need = need & (got == 0)
            missed += tl.sum(need.to(tl.int32), 0)
        q1, q2 = other_sums(X, DY, W, mean, rstd, rows, need, q, part_w, N, stride_x,
                            stride_dy, HAS_MEAN, BLOCK_D)
        if EXCHANGE:
            t1, t2 = unpack(v)
            q1 = tl.where(got, t1, q1)
            q2 = tl.where(got, t2, q2)
        s1 += tl.where(part == q, own1, q1)
        s2 += tl.where(part == q, own2, q2)
    c1 = s1 / N
    c2 = s2 / N
    if RELOAD:
        x, dy = reread_rows(X, DY, rows, cols, mask, stride_x, stride_dy)
        xhat, g, dy = xhat_g(x, dy, mean, rstd, w, HAS_MEAN)
    dx = _dx(xhat, g, c1, c2, rstd, HAS_MEAN)
    tl.store(DX + rows[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=mask)
    if EXCHANGE:
        sent(XS, slot, part, found, BLOCK_R, COL_SPLIT)
    return dy * xhat, dy, tl.where(missed > 0, 0, SPIN)


@triton.jit
def rowgrad_tile(X, DY, DX, w, Mean, Rstd, rows, row_mask, cols, col_mask,
                 stride_x, stride_dy, stride_dx, N, HAS_MEAN: tl.constexpr):
    """Whole rows in one block: store dx for BLOCK_R rows; return (dy·x̂, dy) as fp32 tiles.

    `w` is the fp32 weight for `cols`, loaded once by the caller and reused across rows."""
    mask = row_mask[:, None] & col_mask[None, :]
    x, dy, mean, rstd = load_rows(X, DY, Mean, Rstd, rows, row_mask, cols, mask, stride_x,
                                  stride_dy, HAS_MEAN, "evict_first")
    return rowgrad_loaded(x, dy, mean, rstd, w, rows, mask, cols, DX, stride_dx, N, HAS_MEAN,
                          X, DY, stride_x, stride_dy, False)


@triton.jit
def rowgrad_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, stride_dx, N,
                 HAS_MEAN: tl.constexpr, BLOCK_D: tl.constexpr, RELOAD: tl.constexpr):
    """rowgrad_tile (or rowgrad_reload) for a program that handles one tile of whole rows:
    loads the weight too.  Returns (dy·x̂, dy, cols, col_mask)."""
    cols = tl.arange(0, BLOCK_D)
    col_mask = cols < N
    if RELOAD:
        gw, gb = rowgrad_reload(X, DY, DX, W, Mean, Rstd, rows, row_mask, cols, col_mask,
                                stride_x, stride_dy, stride_dx, N, HAS_MEAN, False)
    else:
        w = tl.load(W + cols, mask=col_mask, other=0.0).to(tl.float32)
        gw, gb = rowgrad_tile(X, DY, DX, w, Mean, Rstd, rows, row_mask, cols, col_mask,
                              stride_x, stride_dy, stride_dx, N, HAS_MEAN)
    return gw, gb, cols, col_mask


@triton.jit
def row_coeffs(X, DY, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, N,
               HAS_MEAN: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr):
    """First pass for rows wider than one block: (c1, c2) per row, fp32."""
    acc1 = tl.zeros([BLOCK_R, BLOCK_D], dtype=tl.float32)
    acc2 = tl.zeros([BLOCK_R, BLOCK_D], dtype=tl.float32)
    for c0 in range(0, N, BLOCK_D):
        cols = c0 + tl.arange(0, BLOCK_D)
        col_mask = cols < N
        mask = row_mask[:, None] & col_mask[None, :]
        w = tl.load(W + cols, mask=col_mask, other=0.0).to(tl.float32)
        xhat, g, dy, rstd = _load_xhat_g(X, DY, w, rows, cols, mask, row_mask, Mean, Rstd,
                                         stride_x, stride_dy, HAS_MEAN, "evict_last")
        acc1 += xhat * g
        acc2 += g
    return tl.sum(acc1, axis=1) / N, tl.sum(acc2, axis=1) / N


@triton.jit
def rowgrad_chunk(X, DY, DX, W, Mean, Rstd, rows, row_mask, c0, c1, c2,
                  stride_x, stride_dy, stride_dx, N,
                  HAS_MEAN: tl.constexpr, BLOCK_D: tl.constexpr):
    """Second pass: store dx for columns [c0, c0+BLOCK_D) and return (dy·x̂, dy, cols, col_mask)."""
    cols = c0 + tl.arange(0, BLOCK_D)
    col_mask = cols < N
    mask = row_mask[:, None] & col_mask[None, :]
    w = tl.load(W + cols, mask=col_mask, other=0.0).to(tl.float32)
    xhat, g, dy, rstd = _load_xhat_g(X, DY, w, rows, cols, mask, row_mask, Mean, Rstd,
                                     stride_x, stride_dy, HAS_MEAN, "evict_first")
    dx = _dx(xhat, g, c1, c2, rstd, HAS_MEAN)
    tl.store(DX + rows[:, None] * stride_dx + cols[None, :], dx.to(DX.dtype.element_ty), mask=mask)
    return dy * xhat, dy, cols, col_mask


@triton.jit
def accumulate_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, stride_dx, N,
                    PW, PB, Lock, Count, base, HAS_MEAN: tl.constexpr, BLOCK_R: tl.constexpr,
                    BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr, RELOAD: tl.constexpr,
                    COMBINE: tl.constexpr):
    """A program's tile of BLOCK_R whole rows: store dx and hand the rows' contributions to
    `COMBINE` — the one thing the one-row strategies (atomic, grouped_atomic, spin_lock) do
    differently — one column chunk at a time.

    A row that fits one block (ONE_CHUNK) is one call of rowgrad_rows; a wider one takes the
    two passes (row_coeffs, then rowgrad_chunk per chunk).  COMBINE(PW, PB, Lock, Count,
    base, cols, col_mask, gw, gb, HAS_MEAN) gets the chunk's slots — `base + cols` of the
    partial rows PW / PB, left for it to add (the address arithmetic is the strategy's) — and
    the chunk's lock and count (`Lock + k`, `Count + k` for chunk k; unused by the lock-free
    strategies)."""
    if ONE_CHUNK:
        gw, gb, cols, col_mask = rowgrad_rows(X, DY, DX, W, Mean, Rstd, rows, row_mask,
                                              stride_x, stride_dy, stride_dx, N, HAS_MEAN,
                                              BLOCK_D, RELOAD)
        COMBINE(PW, PB, Lock, Count, base, cols, col_mask, gw, gb, HAS_MEAN)
    else:
        c1, c2 = row_coeffs(X, DY, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, N,
                            HAS_MEAN, BLOCK_R, BLOCK_D)
        for c0 in range(0, N, BLOCK_D):
            gw, gb, cols, col_mask = rowgrad_chunk(X, DY, DX, W, Mean, Rstd, rows, row_mask, c0,
                                                   c1, c2, stride_x, stride_dy, stride_dx, N,
                                                   HAS_MEAN, BLOCK_D)
            k = c0 // BLOCK_D
            COMBINE(PW, PB, Lock + k, Count + k, base, cols, col_mask, gw, gb, HAS_MEAN)


@triton.jit
def atomic_combine(PW, PB, Lock, Count, base, cols, col_mask, gw, gb, HAS_MEAN: tl.constexpr):
    """COMBINE of accumulate_rows for the atomic strategies: add the tile's column sums into
    the fp32 slots.  Relaxed: the adds only need atomicity, not ordering with other memory
    operations."""
    tl.atomic_add(PW + base + cols, tl.sum(gw, axis=0), mask=col_mask, sem="relaxed")
    if HAS_MEAN:
        tl.atomic_add(PB + base + cols, tl.sum(gb, axis=0), mask=col_mask, sem="relaxed")
