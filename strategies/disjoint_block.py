"""disjoint_block — each program owns a contiguous block of rows and writes one partial row.

Program p sums dy·x̂ and dy over its rows in registers (fp32), in row order, and stores them
as partial row p of a fp32 [GROUPS, d] workspace (×2 with dβ); a fixed-order reduce sums the
partial rows.  One writer per slot, no atomics, no locks: the same inputs always give the same
bits.  GROUPS is the number of programs; the workspace is written once, so needs no zeroing.
A row wider than one block makes each program read-modify-write its own partial row per chunk
(still one writer, still deterministic).  With `col_split` = S > 1, S programs share each
block of rows, a part of the row each (split_partials): GROUPS is still the number of partial
rows, and the grid has S·GROUPS programs.
"""
import triton
import triton.language as tl
from triton.language.extra.cuda import gdc_launch_dependents

from . import _device, _groups, _tuning
from ._contention import Contention
from ._launch import exchange_scratch, launch, prepare, scratch
from ._registry import register
from .reduce import reduce_partials
from .rowgrad import (load_rows, prefetch_l2, row_coeffs, rowgrad_chunk, rowgrad_loaded,
                      rowgrad_reload, rowgrad_split, rowgrad_tile)


@triton.jit
def _tile_rows(r, stop, full, last, ROWS, BLOCK_R: tl.constexpr, INTERLEAVE: tl.constexpr):
    """(rows, row_mask) of the tile at row r of a program's loop (rows before `stop`); with
    INTERLEAVE = 2 a tile of the last round (r ≥ full) holds `last` rows at full + p·last
    instead (p = (r − full) / BLOCK_R), those before ROWS."""
    off = tl.arange(0, BLOCK_R)
    if INTERLEAVE == 2:
        tail = r >= full
        base = tl.where(tail, full + (r - full) // BLOCK_R * last, r)
        rows = base + off
        row_mask = (off < tl.where(tail, last, BLOCK_R)) & (rows < ROWS)
    else:
        rows = r + off
        row_mask = rows < stop
    return rows, row_mask


@triton.jit
def disjoint_partials(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N, ROWS_PER_PROG,
                      stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                      BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr,
                      NUM_STAGES: tl.constexpr, PREFETCH: tl.constexpr, RELOAD: tl.constexpr,
                      W_TILE: tl.constexpr, L2_AHEAD: tl.constexpr, INTERLEAVE: tl.constexpr):
    """Program p: dx for rows [p·R, (p+1)·R) and its partial rows PW[p], PB[p].

    Keeping bytes in flight is the whole game (the kernel is bandwidth-bound).  NUM_STAGES > 1
    (the rule: 3) asks Triton's pipeliner to load the next NUM_STAGES − 1 tiles into shared
    memory (cp.async) while this one is computed, which costs no registers; PREFETCH instead
    holds the next tile in registers (tune-2's rule, slower than 3 stages everywhere in
    tune-7; kept as a tuning option).  RELOAD (rows of 16384) reads each tile twice rather
    than spill registers (rowgrad_reload; W_TILE: its weight loaded as a tile, see there).
    L2_AHEAD > 0 asks L2 for the tile that many iterations ahead (prefetch_l2: no registers,
    no shared memory), so the loads of a loop that is not pipelined find their tile there.
    INTERLEAVE (disjoint_strided's rule; every loop here) deals the tiles out
    round-robin instead: program p takes tiles p, p + P, p + 2P, … of all the rows (P
    programs), so the programs sweep the inputs side by side rather than each through its own
    block; still a fixed set of rows in a fixed order a program (deterministic), other sums
    than the blocks'.  INTERLEAVE = 2 (`balance` on) spreads the last, partial round of tiles
    over the programs by rows: where ROWS leaves R rows after the last whole round of P tiles,
    programs 0, 1, … take ⌈R/P⌉ rows each of them (a tile with its other rows masked off)
    instead of BLOCK_R each — at RMS 16384 × 4096 (2 rows a tile, 132 programs) 16 programs
    with one row instead of 8 with two, so the call waits for half a tile less.  Still a
    fixed set of rows a program, in a fixed order: deterministic (its own bits)."""
    pid = tl.program_id(0)
    r0 = pid * ROWS_PER_PROG
    r_end = tl.minimum(r0 + ROWS_PER_PROG, ROWS)
    out = pid.to(tl.int64) * N
    # the rows of the loops below that take INTERLEAVE: from start to stop, a tile every step
    start = r0
    stop = r_end
    step = BLOCK_R
    full = stop         # rows before the balanced last round (INTERLEAVE = 2); all others
    last = 1            # that round's rows a program
    if INTERLEAVE:
        start = pid * BLOCK_R
        stop = ROWS
        step = tl.num_programs(0) * BLOCK_R
        if INTERLEAVE == 2:
            full = ROWS // step * step
            last = tl.maximum(tl.cdiv(ROWS - full, tl.num_programs(0)), 1)
            # the loop runs over tiles as before; a tile of the last round at full + p·BLOCK_R
            # stands for rows full + p·last … (_tile_rows), and only programs that have some
            stop = full + tl.cdiv(ROWS - full, last) * BLOCK_R
    if ONE_CHUNK:
        cols = tl.arange(0, BLOCK_D)
        col_mask = cols < N
        w = tl.load(W + cols, mask=col_mask, other=0.0).to(tl.float32)
        acc_w = tl.zeros([BLOCK_D], dtype=tl.float32)
        acc_b = tl.zeros([BLOCK_D], dtype=tl.float32)
        if PREFETCH:
            # register double buffering: the next tile's loads are issued before this tile's
            # reductions and stores, so the loads of one program never stop while it computes
            rows, row_mask = _tile_rows(start, stop, full, last, ROWS, BLOCK_R, INTERLEAVE)
            mask = row_mask[:, None] & col_mask[None, :]
            rows = rows.to(tl.int64)
            x, dy, mean, rstd = load_rows(X, DY, Mean, Rstd, rows, row_mask, cols, mask,
                                          stride_x, stride_dy, HAS_MEAN, "evict_first")
            for r in range(start, stop, step):
                nrows, nrow_mask = _tile_rows(r + step, stop, full, last, ROWS, BLOCK_R,
                                              INTERLEAVE)
                nmask = nrow_mask[:, None] & col_mask[None, :]
                nrows = nrows.to(tl.int64)
                nx, ndy, nmean, nrstd = load_rows(X, DY, Mean, Rstd, nrows, nrow_mask, cols,
                                                  nmask, stride_x, stride_dy, HAS_MEAN,
                                                  "evict_first")
                gw, gb = rowgrad_loaded(x, dy, mean, rstd, w, rows, mask, cols, DX, stride_dx,
                                        N, HAS_MEAN, X, DY, stride_x, stride_dy, RELOAD)
                acc_w += tl.sum(gw, axis=0)
                if HAS_MEAN:
                    acc_b += tl.sum(gb, axis=0)
                x, dy, mean, rstd, rows, mask = nx, ndy, nmean, nrstd, nrows, nmask
        else:
            # (the L2 hint asks for the tiles' first rows as if whole: in the balanced last
            # round other rows than the tile's — a hint, bounded by the rows that exist)
            for k in tl.static_range(1, L2_AHEAD):
                prefetch_l2(X, DY, start + k * step, tl.minimum(stop, ROWS), N, stride_x,
                            stride_dy, BLOCK_R)
            for r in tl.range(start, stop, step, num_stages=NUM_STAGES):
                rows, row_mask = _tile_rows(r, stop, full, last, ROWS, BLOCK_R, INTERLEAVE)
                if L2_AHEAD > 0:
                    prefetch_l2(X, DY, r + L2_AHEAD * step, tl.minimum(stop, ROWS), N, stride_x,
                                stride_dy, BLOCK_R)
                if RELOAD:
                    gw, gb = rowgrad_reload(X, DY, DX, W, Mean, Rstd, rows.to(tl.int64),
                                            row_mask, cols, col_mask, stride_x, stride_dy,
                                            stride_dx, N, HAS_MEAN, W_TILE)
                else:
                    gw, gb = rowgrad_tile(X, DY, DX, w, Mean, Rstd, rows.to(tl.int64), row_mask,
                                          cols, col_mask, stride_x, stride_dy, stride_dx, N,
                                          HAS_MEAN)
                acc_w += tl.sum(gw, axis=0)
                if HAS_MEAN:
                    acc_b += tl.sum(gb, axis=0)
        tl.store(PW + out + cols, acc_w, mask=col_mask)
        if HAS_MEAN:
            tl.store(PB + out + cols, acc_b, mask=col_mask)
    else:
        # too wide for registers: the program's own partial row lives in the workspace
        for c0 in range(0, N, BLOCK_D):
            cols = c0 + tl.arange(0, BLOCK_D)
            tl.store(PW + out + cols, tl.zeros([BLOCK_D], dtype=tl.float32), mask=cols < N)
            if HAS_MEAN:
                tl.store(PB + out + cols, tl.zeros([BLOCK_D], dtype=tl.float32), mask=cols < N)
        for r in range(start, stop, step):
            rows, row_mask = _tile_rows(r, stop, full, last, ROWS, BLOCK_R, INTERLEAVE)
            rows = rows.to(tl.int64)
            if L2_AHEAD > 0:
                prefetch_l2(X, DY, r + L2_AHEAD * step, tl.minimum(stop, ROWS), N, stride_x,
                            stride_dy, BLOCK_R)
            c1, c2 = row_coeffs(X, DY, W, Mean, Rstd, rows, row_mask, stride_x, stride_dy, N,
                                HAS_MEAN, BLOCK_R, BLOCK_D)
            for c0 in range(0, N, BLOCK_D):
                gw, gb, cols, col_mask = rowgrad_chunk(X, DY, DX, W, Mean, Rstd, rows, row_mask,
                                                       c0, c1, c2, stride_x, stride_dy,
                                                       stride_dx, N, HAS_MEAN, BLOCK_D)
                # the same thread stored these addresses: program order makes this safe
                pw = tl.load(PW + out + cols, mask=col_mask, other=0.0)
                tl.store(PW + out + cols, pw + tl.sum(gw, axis=0), mask=col_mask)
                if HAS_MEAN:
                    pb = tl.load(PB + out + cols, mask=col_mask, other=0.0)
                    tl.store(PB + out + cols, pb + tl.sum(gb, axis=0), mask=col_mask)


@triton.jit
def split_partials(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                   stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                   BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, NUM_STAGES: tl.constexpr,
                   RELOAD: tl.constexpr, COL_SPLIT: tl.constexpr, EXCHANGE: tl.constexpr,
                   SPIN: tl.constexpr):
    """Programs S·b … S·b + S − 1 share the rows [b·R, (b+1)·R): program S·b + k writes dx
    and partial row b for part k of the columns (`_tuning.split_width`, a multiple of 64 so
    every part is aligned) — the width of a part is what registers must hold, so a row of
    16384 runs as two programs of the d = 8192 path.  The row sums come from the other parts'
    data read again, or with EXCHANGE from their owners (rowgrad_split; XS: the exchange's
    words, a slot per tile: block b's tiles are slots b·⌈R/BLOCK_R⌉ onwards).
    One writer per slot, a fixed order: deterministic."""
    pid = tl.program_id(0)
    blk = pid // COL_SPLIT
    part = pid % COL_SPLIT
    part_w = tl.cdiv(N, 64 * COL_SPLIT) * 64
    r0 = blk * ROWS_PER_PROG
    r_end = tl.minimum(r0 + ROWS_PER_PROG, ROWS)
    slot0 = blk * tl.cdiv(ROWS_PER_PROG, BLOCK_R)
    out = blk.to(tl.int64) * N
    cols = part * part_w + tl.arange(0, BLOCK_D)
    col_mask = cols < tl.minimum(part * part_w + part_w, N)
    w = tl.load(W + cols, mask=col_mask, other=0.0).to(tl.float32)
    acc_w = tl.zeros([BLOCK_D], dtype=tl.float32)
    acc_b = tl.zeros([BLOCK_D], dtype=tl.float32)
    patience = pid * 0 + SPIN
    for r in tl.range(r0, r_end, BLOCK_R, num_stages=NUM_STAGES):
        rows = r + tl.arange(0, BLOCK_R)
        row_mask = rows < r_end
        slot = slot0 + (r - r0) // BLOCK_R
        gw, gb, patience = rowgrad_split(X, DY, DX, w, W, Mean, Rstd, XS, slot, patience,
                                         rows.to(tl.int64), row_mask, cols, col_mask, part,
                                         part_w, stride_x, stride_dy, stride_dx, N, HAS_MEAN,
                                         BLOCK_R, BLOCK_D, RELOAD, COL_SPLIT, EXCHANGE, SPIN)
        acc_w += tl.sum(gw, axis=0)
        if HAS_MEAN:
            acc_b += tl.sum(gb, axis=0)
    tl.store(PW + out + cols, acc_w, mask=col_mask)
    if HAS_MEAN:
        tl.store(PB + out + cols, acc_b, mask=col_mask)


@triton.jit
def row_partials(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                 stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                 BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr,
                 NUM_STAGES: tl.constexpr, PREFETCH: tl.constexpr, RELOAD: tl.constexpr,
                 W_TILE: tl.constexpr, COL_SPLIT: tl.constexpr, EXCHANGE: tl.constexpr,
                 SPIN: tl.constexpr, L2_AHEAD: tl.constexpr, INTERLEAVE: tl.constexpr):
    """The partial rows, by whole rows a program (disjoint_partials) or by parts of rows
    (split_partials, COL_SPLIT > 1)."""
    if COL_SPLIT > 1:
        split_partials(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                       stride_x, stride_dy, stride_dx, HAS_MEAN, BLOCK_R, BLOCK_D, NUM_STAGES,
                       RELOAD, COL_SPLIT, EXCHANGE, SPIN)
    else:
        disjoint_partials(X, DY, DX, W, Mean, Rstd, PW, PB, ROWS, N, ROWS_PER_PROG,
                          stride_x, stride_dy, stride_dx, HAS_MEAN, BLOCK_R, BLOCK_D, ONE_CHUNK,
                          NUM_STAGES, PREFETCH, RELOAD, W_TILE, L2_AHEAD, INTERLEAVE)


@triton.jit
def _disjoint_kernel(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                     stride_x, stride_dy, stride_dx, HAS_MEAN: tl.constexpr,
                     BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr, ONE_CHUNK: tl.constexpr,
                     NUM_STAGES: tl.constexpr, PREFETCH: tl.constexpr, RELOAD: tl.constexpr,
                     W_TILE: tl.constexpr, COL_SPLIT: tl.constexpr, EXCHANGE: tl.constexpr,
                     SPIN: tl.constexpr, L2_AHEAD: tl.constexpr, INTERLEAVE: tl.constexpr,
                     PDL: tl.constexpr):
    if PDL:
        # the reduce, launched as a programmatic dependent (`pdl`), may be scheduled from
        # here on: it waits for this grid to complete before it reads a partial row
        gdc_launch_dependents()
    row_partials(X, DY, DX, W, Mean, Rstd, PW, PB, XS, ROWS, N, ROWS_PER_PROG,
                 stride_x, stride_dy, stride_dx, HAS_MEAN, BLOCK_R, BLOCK_D, ONE_CHUNK,
                 NUM_STAGES, PREFETCH, RELOAD, W_TILE, COL_SPLIT, EXCHANGE, SPIN, L2_AHEAD,
                 INTERLEAVE)


# Why interleave and col_split are refused together (here, and by disjoint_strided, whose rows
# are always dealt round-robin).
SPLIT_INTERLEAVED = ("interleave deals out tiles of whole rows: it does not combine with "
                     "col_split (programs sharing rows)")


def launch_partials(kernel, c, groups: int, params, extra: tuple = (), extra_meta=None):
    """Take the [GROUPS, d] partials (`_launch.scratch`: kept between calls) and launch
    `kernel` with GROUPS programs — col_split · GROUPS where programs share rows — at the
    launch parameters `params(d)` (the calling strategy's `backward.params`); `extra`
    tensors follow the partials and the exchange's words (`_launch.exchange_scratch`,
    allocated where the parameters ask for the exchange; the partials stand in otherwise).
    `extra_meta(compile, programs)` adds constexprs and launch options (they must depend on
    what the launch key fixes: GROUPS, the call's signature, the device); `compile(**meta)`
    compiles the kernel with those added, without launching it, for a caller that must look
    at the compiled kernel (its occupancy) before it decides.  Returns (pw, pb, pdl): pdl
    where the parameters ask for `pdl` (on in disjoint_strided's rule, a tuning option in
    the others) and it can work
    (a kernel with a PDL parameter, compiled code on sm_90+) — the kernel then lets the
    reduce that follows start early, and the caller launches that reduce with pdl."""
    pw, pb = scratch(groups, c.d, c.has_mean, c.x.device)
    p = params(c.d)
    if p["interleave"] and p["col_split"] > 1:
        raise ValueError(SPLIT_INTERLEAVED)
    if p.get("balance") and not p["interleave"]:
        raise ValueError("balance spreads the last round of tiles dealt round-robin: it needs "
                         "interleave")
    pdl = _device.pdl_on(p, c.x.device) and "PDL" in kernel.arg_names
    rows_per_prog = _tuning.cdiv(c.rows, groups)
    xs = pw
    if p["exchange"] and p["col_split"] > 1:
        xs = exchange_scratch(groups * _tuning.cdiv(rows_per_prog, p["block_r"]),
                              p["col_split"], p["block_r"], c.x.device)
    tensors = (c.x, c.dy, c.dx, c.weight, c.mean, c.rstd, pw, pb if pb is not None else pw,
               xs, *extra)

    def setup():
        stages = _tuning.fit_stages(p, c.x.element_size(), _device.smem_per_program(c.x.device))
        meta = dict(HAS_MEAN=c.has_mean, BLOCK_R=p["block_r"], BLOCK_D=p["block_d"],
                    ONE_CHUNK=p["one_chunk"], NUM_STAGES=stages,
                    PREFETCH=p["prefetch"], RELOAD=p["reload"], W_TILE=p["w_tile"],
                    COL_SPLIT=p["col_split"], EXCHANGE=p["exchange"], SPIN=p["spin"],
                    L2_AHEAD=0 if _device.interpreted() else p["l2_ahead"],
                    INTERLEAVE=2 if p["interleave"] and p.get("balance") else p["interleave"],
                    num_warps=_tuning.row_loop_warps(p, c.has_mean, c.x.element_size()))
        if "PDL" in kernel.arg_names:       # the kernels a reduce follows (not the fused one)
            meta["PDL"] = pdl
        grid = (groups * p["col_split"],)
        scalars = (c.rows, c.d, rows_per_prog, *c.strides)
        if extra_meta is not None:
            meta.update(extra_meta(
                lambda **m: kernel.warmup(*tensors, *scalars, grid=grid, **{**meta, **m}),
                grid[0]))
        return grid, scalars, meta

    # params in the key: strategies that share a kernel (disjoint_strided's is this one) keep
    # their own plans
    launch(kernel, (c.sig, groups, pdl, params), tensors, setup)
    return pw, pb, pdl


@register("disjoint_block", kind="strategy", deterministic_by_design=True, uses_groups=True,
          launch=_tuning.ROW_LOOP, auto_groups=_groups.row_loop_programs,
          max_groups=_groups.row_loop_units,
          contention=Contention(writers=1, partial_rows="groups"), reduce_kernel=True)
def backward(x, dy, weight, mean, rstd, *, groups):
    """Each program owns a contiguous block of rows, stores one partial row; fixed-order reduce."""
    c = prepare(x, dy, weight, mean, rstd)
    pw, pb, pdl = launch_partials(_disjoint_kernel, c, groups, backward.params)
    return c.outputs(*reduce_partials(pw, pb, c.weight, pdl))
