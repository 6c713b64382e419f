"""The row sums of a shared row handed between its programs through L2 (`exchange`).

With `col_split` = S programs a row, each program holds one part of every row of its tiles
and needs the whole row's two sums (Σ x̂·g, Σ g).  Without the exchange each program reads
the other parts again to sum them itself (rowgrad_split), so every SM takes in S times its
share of the row.  With it, a program hands its own part's sums of each tile to the other
parts' programs and takes theirs — each pair of sums packed into one 64-bit word, so that
the word *is* the message: one atomic writes it, one reads it, no fence and no explicit
barrier (a barrier in the row loop would stop Triton pipelining its loads).

    XS  int64 [slots, S (from), S (to), BLOCK_R]: one word per row of a tile, sender and receiver

A word is EMPTY between launches.  For each tile the sender swaps its sums in.  The receiver
polls the word, SPIN times at most (`patience` of them), and if the sums are not there
swaps GAVE_UP in: either the swap finds EMPTY (the sums did not come in time: it reads that
part's data and sums it itself, as without the exchange) or the sums, which came meanwhile.
A receiver that has the sums puts EMPTY back; a sender whose swap found GAVE_UP puts EMPTY
back.  Each side's first swap is one atomic on one word, so one comes first: either way the
word ends EMPTY, so a launch leaves XS as it found it (no memset; a CUDA graph replaying the
launch finds it clean), and no word ever holds another launch's sums.  Nobody waits without
bound: a partner that is not resident (a grid wider than the GPU, other kernels on the SMs,
the Triton interpreter running one program after another) costs time, never a deadlock.  A
part's sums are the same bits whoever computes them (rowgrad_split), so neither does it
change a bit.  Only exchanges (and adds of 0 to poll) are used, the polls unrolled: Triton's
pipeliner cannot predicate a compare-and-swap, and a loop or a barrier in the row loop stops
it pipelining the row loop's loads.

EMPTY and GAVE_UP are words whose upper half is a NaN with a payload the GPU's arithmetic does
not produce (it returns the canonical NaN 0x7fffffff).  A word holding either is never taken
for sums, so were sums ever to pack to one, their receiver would read that part itself (and the
word might stay marked: time lost on later launches, not a bit).

Measured (tune-11, H200): every atomic whose answer is used crosses shared memory behind a
barrier to reach the program's threads, masked off or not — about 0.2 µs a poll, 2.5 µs of
exchange a tile at d = 16384 in two parts, where a tile carries 1.3 µs of data: twice as slow
as one program a row.  A tuning option, off in every rule.
"""
import triton
import triton.language as tl

EMPTY = tl.constexpr(-1)          # 0xffffffff_ffffffff
GAVE_UP = tl.constexpr(-2)        # 0xffffffff_fffffffe


@triton.jit
def _words(XS, slot, sender, receiver, BLOCK_R: tl.constexpr, COL_SPLIT: tl.constexpr):
    """The [BLOCK_R] words from part `sender` to part `receiver` for the rows of tile `slot`."""
    base = ((slot.to(tl.int64) * COL_SPLIT + sender) * COL_SPLIT + receiver) * BLOCK_R
    return XS + base + tl.arange(0, BLOCK_R)


@triton.jit
def _mark(v):
    """Where a word holds no sums: EMPTY or GAVE_UP."""
    return (v == EMPTY) | (v == GAVE_UP)


@triton.jit
def _bits(v):
    return v.to(tl.int32, bitcast=True).to(tl.int64) & 0xFFFFFFFF


@triton.jit
def pack(s1, s2):
    """(s1, s2) fp32 → one int64 (s1's bits above s2's)."""
    return (_bits(s1) << 32) | _bits(s2)


@triton.jit
def unpack(v):
    s1 = (v >> 32).to(tl.int32).to(tl.float32, bitcast=True)
    s2 = (v & 0xFFFFFFFF).to(tl.int32).to(tl.float32, bitcast=True)
    return s1, s2


@triton.jit
def send(XS, slot, part, word, BLOCK_R: tl.constexpr, COL_SPLIT: tl.constexpr):
    """Hand tile `slot`'s packed sums of part `part` ([BLOCK_R] words) to every other part.
    Returns, per row, a bit per receiver whose swap found GAVE_UP (for `sent`)."""
    gave_up = tl.zeros([BLOCK_R], tl.int32)
    for q in tl.static_range(COL_SPLIT):
        live = tl.zeros([BLOCK_R], tl.int32) + part != q
        old = tl.atomic_xchg(_words(XS, slot, part, q, BLOCK_R, COL_SPLIT), word, mask=live,
                             sem="relaxed")
        gave_up |= (live & (old == GAVE_UP)).to(tl.int32) << q
    return gave_up


@triton.jit
def sent(XS, slot, part, gave_up, BLOCK_R: tl.constexpr, COL_SPLIT: tl.constexpr):
    """After `send` (later in the tile, so that its swaps' answers are not waited for at
    once): put EMPTY back in the words whose receiver had given up."""
    for q in tl.static_range(COL_SPLIT):
        tl.atomic_xchg(_words(XS, slot, part, q, BLOCK_R, COL_SPLIT),
                       tl.full([BLOCK_R], EMPTY, tl.int64), mask=((gave_up >> q) & 1) != 0,
                       sem="relaxed")


@triton.jit
def receive(XS, slot, q, part, patience, BLOCK_R: tl.constexpr, COL_SPLIT: tl.constexpr,
            SPIN: tl.constexpr):
    """Part q's packed sums of tile `slot` for part `part` ([BLOCK_R] words): (word, got) —
    `got` false where they did not come within 1 + min(patience, SPIN) polls (the word then
    marked GAVE_UP), and everywhere when q is `part` itself (whose word is left alone).  A
    poll whose sums are there is masked off: it touches no memory (its answer still takes a
    barrier: see the module's note)."""
    live = tl.zeros([BLOCK_R], tl.int32) + part != q
    w = _words(XS, slot, q, part, BLOCK_R, COL_SPLIT)
    zero = tl.zeros([BLOCK_R], tl.int64)
    v = tl.atomic_add(w, zero, mask=live, sem="relaxed")
    for k in tl.static_range(SPIN):
        wait = live & _mark(v) & (tl.zeros([BLOCK_R], tl.int32) + patience > k)
        v = tl.where(wait, tl.atomic_add(w, zero, mask=wait, sem="relaxed"), v)
    missing = live & _mark(v)
    got = live & (missing == 0)
    late = tl.atomic_xchg(w, zero + GAVE_UP, mask=missing, sem="relaxed")
    came = missing & (_mark(late) == 0)
    v = tl.where(came, late, v)
    got = got | came
    tl.atomic_xchg(w, zero + EMPTY, mask=got, sem="relaxed")
    return v, got
