"""Launch parameters: block sizes, warps and the row loop, chosen from d.

A strategy declares its launch rule with its registration (`@register(..., launch=RULE)`);
the two shared rules live here — `ROW_LOOP` (programs that loop over a block of rows:
disjoint_block, disjoint_fused) and `ONE_ROW` (one tile of rows per program: atomic,
grouped_atomic; spin_lock adjusts it in its own file).  Every choice is a measured rule
(docs/PERF_NOTES.md, docs/perf/tune-*.log); `OVERRIDE` lets the tuning script
(bench/tune.py) try other values by strategy name without editing a kernel.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Callable

# Widest row processed in one block; wider rows are processed in chunks of CHUNK_D.
MAX_BLOCK_D = 16384
CHUNK_D = 8192

# A shared row's exchange (`exchange`, strategies/_exchange.py; off in every rule — tune-11:
# twice as slow as the rule at 12288–32768): how many times a program polls for another part's
# row sums before it reads that part itself (`spin`, unrolled in the kernel: each poll costs a
# round trip even when masked off).
EXCHANGE_SPIN = 4

# strategy name -> dict of forced parameters (block_r, num_warps, block_d, prefetch, reload,
# num_stages, w_tile, col_split, exchange, spin, l2_ahead, pdl, interleave, balance; and
# disjoint_fused's tail), for tuning.  `params` refuses a key that is neither its rule's nor
# in KERNEL_OPTIONS, and the values that would run nothing or the wrong thing (its docstring).
OVERRIDE: dict[str, dict] = {}

# The option keys the kernels read beyond a rule's own parameters (p["..."] / p.get("...") in
# strategies/): disjoint_fused's tail, disjoint_strided's staged, stage_from and ln_warps, and
# disjoint_smem's keys, which disjoint_strided's staged path takes from its override.
KERNEL_OPTIONS = frozenset({
    "block_d", "one_chunk", "block_r", "num_warps", "num_stages", "prefetch", "reload",
    "w_tile", "col_split", "exchange", "spin", "l2_ahead", "pdl", "interleave", "balance",
    "fp32_stages", "tail", "staged", "stage_from", "ln_warps", "wide_weight_warps",
    "ln_split_warps", "inflight", "split_inflight", "ln_inflight", "split", "half_rows",
    "w_regs", "rms_split_w_regs", "one_stage_halves", "bf16_pairs", "xhat_fma", "full_sectors",
    "sectors_off", "pairs_off", "ln_l2_ahead", "l2_off"})

# What a one-row program (ONE_ROW: atomic, grouped_atomic, spin_lock) never reads: an override
# of one of these to a value other than the rule's would time the rule under another name
# (a rule declares them: `Rule.ignores`; ONE_TILE_ROW adds block_r, for the kernels that do
# one row whatever they are given).
ONE_ROW_IGNORES = ("num_stages", "prefetch", "w_tile", "exchange", "spin", "l2_ahead", "pdl",
                   "interleave", "balance", "fp32_stages", "tail")


# The kinds of value an override may give where its rule's value is of a type: a number for
# a number or a flag (full_sectors' False takes the mode 2; a flag's True is 1), a sequence
# for a sequence (JSON gives sectors_off's () as a list); checked by `params`.
_KINDS = {bool: ((bool, int), "an int or a bool"), int: ((bool, int), "an int or a bool"),
          tuple: ((tuple, list), "a list"), list: ((tuple, list), "a list")}


def cdiv(a: int, b: int) -> int:
    """⌈a/b⌉ for the host path (triton.cdiv is a constexpr function: slow to call from Python)."""
    return -(-a // b)


def pow2(n: int) -> int:
    """The smallest power of two ≥ n."""
    return 1 << (n - 1).bit_length()


def split_width(d: int, parts: int) -> int:
    """The columns of each of `parts` programs sharing a row (`col_split`): a multiple of 64,
    so that every part starts 128-byte aligned (the compiler then vectorises its loads)."""
    return 64 * cdiv(d, 64 * parts)


def block_d(d: int) -> tuple[int, bool]:
    """(BLOCK_D, ONE_CHUNK): the column block and whether a whole row fits in it."""
    if d <= MAX_BLOCK_D:
        return pow2(d), True
    return CHUNK_D, False


@dataclass(frozen=True)
class Rule:
    """A strategy's launch rule: `params(d)` -> dict(block_d, one_chunk, block_r, num_warps,
    num_stages, prefetch, reload, w_tile, col_split, exchange, spin, l2_ahead, pdl, interleave,
    balance).
    `row_loop`: its programs loop over a block of rows each (GROUPS programs), so the row-loop
    tuning candidates of bench/tune.py apply to it.
    `ignores`: launch options its kernel never reads; `params` refuses an override of one to
    a value other than the rule's own (it would time the rule under another name)."""
    params: Callable[[int], dict]
    row_loop: bool = False
    ignores: tuple[str, ...] = ()


# The launch options every rule starts from, off: a rule turns on what it measured (the row
# loop's reload and w_tile at 16384), tuning the rest (OVERRIDE).
_OPTIONS = MappingProxyType(dict(prefetch=False, reload=False, w_tile=False, col_split=1,
                                 exchange=False, spin=EXCHANGE_SPIN, l2_ahead=0, pdl=False,
                                 interleave=False, balance=False, fp32_stages=0))


def _one_row(d: int) -> dict:
    # One tile of one row per program (atomic, grouped_atomic, spin_lock), or rows wider than
    # a block: tune-1's rule (tune-2 found these within 5 % of their best).  A one-row program
    # holds no accumulators, spills less at d = 16384 and was faster without the second read
    # of rowgrad_reload (tune-4: grouped_atomic 525 against 562 µs).
    bd, one = block_d(d)
    warps = 16 if bd >= 16384 else max(4, min(16, bd // 512))
    return dict(block_d=bd, one_chunk=one, block_r=1, num_warps=warps, num_stages=1, **_OPTIONS)


def _row_loop(d: int) -> dict:
    bd, one = block_d(d)
    if one and bd <= 8192:
        # Tune-2: a tile of 4096 elements (d ≤ 1024) or 8192 (wider).  Tune-7: Triton's
        # pipeliner, 3 stages (the next two tiles' x and dy on their way into shared memory by
        # cp.async while this one is computed), beat tune-2's register prefetch at every shape,
        # by 5–16 % (RMS 65536 × 1024 118.1 -> 111.9 µs; LN 16384 × 4096 122.9 -> 114.3); 4
        # stages and 2 were slower.  With it, 32 elements of each input per thread up to
        # d = 2048 and 16 from d = 4096 (tune-7: 16 warps at 4096 within 2 % of 8 everywhere,
        # and never the one slow outlier of 8).
        # Tune-10: a partly masked tile at 1024 < d < 4096 carries fewer bytes in flight; a
        # fourth stage makes up for it (H200, bf16, disjoint_block: RMS 65536 × 1536, 32768 ×
        # 2560 8–14 % faster, 32768 × 3072 7 % in tune-9; LN 4–7 % at all three).
        # Round 35: so does a tile of 8192 at most three quarters real (4096 < d ≤ 6144) with
        # 16-bit activations (H200, GPU time, six rounds in turn: disjoint_strided LN 8192 ×
        # 5120 bf16 88.5 -> 83.9 µs, RMS 8192 × 5120 bf16/fp32 85.2 -> 74.3, RMS 8192 × 6144
        # bf16 91.4 -> 83.6, LN 8192 × 6144 bf16/fp32 95.8 -> 85.1; disjoint_block RMS 8192 ×
        # 5120 bf16 86.7 -> 77.3; a fifth stage no faster, nor at LN 16384 × 2560), but not
        # with fp32 ones, whose three stages hold as many bytes (`fp32_stages`: RMS 8192 × 5120
        # fp32 129.8 at 3 against 132.6 at 4).  Round 36: and at fuller tiles (7168, 87.5 %
        # real; GPU time, six rounds in turn: LN 16384 × 7168 bf16 190.6 -> 182.6 µs, faster in
        # all six; RMS bf16/fp32 183.7 -> 182.8, in five of six), and with fp16 as with bf16
        # (LN 8192 × 5120 fp16 88.3 -> 82.9, RMS 8192 × 6144 fp16/fp32 92.5 -> 85.0): every
        # partly masked tile of 8192 (4096 < d < 8192) with 16-bit activations.
        tile = 4096 if bd <= 1024 else max(8192, bd)
        br = max(1, min(16, tile // bd))
        warps = max(4, min(16, br * bd // (32 if bd <= 2048 else 16) // 32))
        wide = bd == 8192 and d != bd                   # 4096 < d < 8192
        stages = 4 if bd != d and (2048 <= bd <= 4096 or wide) else 3
        return dict(block_d=bd, one_chunk=True, block_r=br, num_warps=warps, num_stages=stages,
                    **{**_OPTIONS, "fp32_stages": 3 if wide else 0})
    # Rows of 16384 read each tile twice rather than spill (rowgrad_reload; tune-4: LN
    # 8192 × 16384 458 -> 342 µs, RMS 320 -> 233); wider rows go in chunks, one row a tile.
    # Read twice, the weight is loaded as a tile in x's layout (W_TILE; tune-9, H200, bf16 x
    # with an fp32 weight: disjoint_block 7.5-9 % faster at 8192 × 16384, 4096 × 16384 and
    # 8192 × 12288, LN and RMS; disjoint_fused 7-8 % at four of them and 6 % slower at RMS
    # 4096 × 16384; with a bf16 weight within 0.2 % either way).
    reload = one and bd >= 16384
    return {**_one_row(d), "reload": reload, "w_tile": reload}


def split_params(d: int, parts: int) -> dict:
    """A row shared by `parts` programs of the row loop (`col_split`): each holds its part,
    split_width(d, parts) columns, with the launch parameters of a row that wide — and reads
    the other parts for the row sums alone.  A part must fit one block (MAX_BLOCK_D)."""
    width = split_width(d, parts)
    if width > MAX_BLOCK_D:
        raise ValueError(f"col_split {parts} at d = {d} leaves parts of {width} columns, "
                         f"wider than one block ({MAX_BLOCK_D}): use {cdiv(d, MAX_BLOCK_D)} or more")
    return {**_row_loop(pow2(width)), "col_split": parts}


ONE_ROW = Rule(_one_row, ignores=ONE_ROW_IGNORES)
ONE_TILE_ROW = Rule(_one_row, ignores=ONE_ROW_IGNORES + ("block_r",))   # one row, any block_r
ROW_LOOP = Rule(_row_loop, row_loop=True)

# strategy name -> its declared Rule (filled by the registry from each registration)
RULES: dict[str, Rule] = {}


def declare(name: str, rule: Rule) -> None:
    """Record `name`'s launch rule (the registry calls this for `register(..., launch=rule)`)."""
    RULES[name] = rule
    _frozen.cache_clear()
    _OVERRIDDEN.clear()


def forget(name: str) -> None:
    """Drop `name`'s launch rule (its module reloaded: the new declaration may have none)."""
    if RULES.pop(name, None) is not None:
        _frozen.cache_clear()
        _OVERRIDDEN.clear()


def rule(name: str) -> Rule:
    """The launch rule `name` registered with (KeyError if it declared none)."""
    return RULES[name]


def params(name: str, d: int):
    """block_d, one_chunk, block_r, num_warps, num_stages, prefetch, reload for `name` at d,
    under `OVERRIDE[name]` where it is set (`overridden`).

    Returns a read-only mapping (cached: this runs on every call).  Refuses in one line
    (ValueError, naming the strategy, the key and why) an override that would time nothing or
    the wrong kernel: a key neither in the rule's parameters at d nor one the kernels read
    (KERNEL_OPTIONS: a typo would time the rule twice); a value of another kind than the
    rule's own for that key (`_KINDS`: a string for a number); a col_split on a one-row rule; on a
    one-row rule a key it declares it ignores (`Rule.ignores`: ONE_ROW_IGNORES, and block_r
    where the kernel does one row whatever it is given) set to a value other than the rule's own (equal to it, it is harmless and
    allowed); and what `overridden` refuses.

    An override's checked parameters are kept too, for as long as `OVERRIDE[name]` is the same
    object holding the same values: worked out at every call, they cost the host 10-20 µs a
    call, several times a call — a tuning A/B (bench/ab_repeat.py) read an override's call time
    slower than the rule's, which takes the cached path (round 50, RMS 16384 × 4096:
    `{"num_warps": 8}` 2-7 µs slower by call time and 1 µs faster by GPU time)."""
    ov = OVERRIDE.get(name)
    if not ov:
        return _frozen(name, d, MAX_BLOCK_D, CHUNK_D)
    rule_p = _frozen(name, d, MAX_BLOCK_D, CHUNK_D)
    key, text = (name, d, MAX_BLOCK_D, CHUNK_D), repr(ov)    # repr: 8 and 8.0 differ
    kept = _OVERRIDDEN.get(key)
    if kept is not None and kept[0] is ov and kept[1] == text and kept[2] is rule_p:
        return kept[3]
    p = MappingProxyType(_checked(name, d, ov, rule_p))
    _OVERRIDDEN[key] = (ov, text, rule_p, p)
    return p


# (name, d, MAX_BLOCK_D, CHUNK_D) -> (the OVERRIDE entry, the repr of its values, the rule's
# parameters it was checked against — `_frozen`'s, so that clearing that cache clears these
# too —, its parameters)
_OVERRIDDEN: dict = {}


def _checked(name: str, d: int, ov: dict, rule_p=None) -> dict:
    """`params` under a non-empty override `ov`, with the rule's parameters at d `rule_p`
    (None: the rule's, `_frozen`): the checks its docstring lists, then `overridden`."""
    if rule_p is None:
        rule_p = _frozen(name, d, MAX_BLOCK_D, CHUNK_D)
    unknown = sorted(set(ov) - set(rule_p) - KERNEL_OPTIONS)
    if unknown:
        known = ", ".join(sorted(set(rule_p) | KERNEL_OPTIONS))
        raise ValueError(f"unknown tuning option {unknown[0]!r} for {name} (known: {known})")
    for k, v in ov.items():     # the rule's own kind of value: "16" failed deep in the
        want = _KINDS.get(type(rule_p.get(k)))                      # launch, a traceback
        if want is not None and not isinstance(v, want[0]):
            raise ValueError(f"{name}: tuning option {k} = {v!r}: expected {want[1]}, got "
                             f"{type(v).__name__}")
    if ov.get("col_split", 1) > 1 and not RULES[name].row_loop:
        # split_params' parameters are the row loop's: a one-row kernel read them as its own
        # and wrote garbage (atomic at d = 130: dx up to 1e36, another each call)
        raise ValueError(f"{name} runs one row a program, not the row loop: col_split "
                         f"(programs sharing the row loop's rows) does not apply to it")
    for k in RULES[name].ignores:
        if k in ov and ov[k] != rule_p.get(k):
            raise ValueError(f"{name} runs one row a program, whose kernel never reads "
                             f"{k!r}: an override {k} = {ov[k]!r} would time its rule "
                             f"({rule_p.get(k)!r}) under another name")
    try:
        return overridden(rule_p, ov, d)
    except ValueError as e:     # the same one line, naming the strategy
        raise ValueError(f"{name}: {e}") from None


def overridden(p, ov: dict, d: int) -> dict:
    """Launch parameters `p` (a rule's, at d) under the tuning override `ov`, with what the
    override implies: a col_split > 1 starts from split_params' parameters, a block_d decides
    one_chunk, a num_warps holds for LayerNorm too, an inflight for rows staged in two parts
    too (tuning through OVERRIDE and
    bench/regs.py's --override both come here).  Refuses in one line (ValueError) what would
    compute the wrong columns: an explicit one_chunk true where the block (block_d) is
    narrower than the row, and a col_split > 1 with a block_d narrower than a part
    (split_width)."""
    if ov.get("col_split", 1) > 1:
        parts = ov["col_split"]
        if "block_d" in ov and ov["block_d"] < split_width(d, parts):
            raise ValueError(f"block_d {ov['block_d']} with col_split {parts} at d = {d}: each "
                             f"part is {split_width(d, parts)} columns, one block, and the "
                             f"columns past block_d would go uncomputed")
        p = {**split_params(d, parts), **ov}
    else:
        p = {**p, **ov}
        if "num_warps" in ov and "ln_warps" not in ov and p.get("ln_warps"):
            p["ln_warps"] = 0           # the warps asked for, in either norm
        if "num_stages" in ov and "fp32_stages" not in ov and p.get("fp32_stages"):
            p["fp32_stages"] = 0        # the stages asked for, at every activation width
        for k in ("split_inflight", "ln_inflight"):
            if "inflight" in ov and k not in ov and p.get(k):
                p[k] = 0                # the bytes asked for, at every row and in either norm
        if "block_d" in ov and "one_chunk" not in ov:
            p["one_chunk"] = p["block_d"] >= d
    if ov.get("one_chunk") and p["block_d"] < d and p.get("col_split", 1) == 1:
        raise ValueError(f"one_chunk true with block_d {p['block_d']} at d = {d}: the kernel "
                         f"would compute the first {p['block_d']} columns of each row alone")
    return p


def row_loop_warps(p, has_mean: bool, elem: int) -> int:
    """The warps of a row-loop launch at parameters p: `num_warps`, or `ln_warps` where a rule
    sets it (disjoint_strided's) for a LayerNorm call (`has_mean`) with 16-bit activations
    (`elem` bytes)."""
    lw = p.get("ln_warps", 0)
    return lw if lw and has_mean and elem == 2 else p["num_warps"]


def row_loop_stages(p, elem: int) -> int:
    """The stages of a row-loop launch at parameters p: `num_stages`, or `fp32_stages` where
    the rule sets it (tiles of 8192 partly masked, rounds 35 and 36) for fp32 activations (`elem`
    bytes).  fit_stages starts from them and lowers them to what fits."""
    fs = p.get("fp32_stages", 0)
    return fs if fs and elem == 4 else p["num_stages"]


def fit_stages(p, elem_bytes: int, smem_bytes: int) -> int:
    """The stages a row-loop launch at `p` (params) takes with activations of `elem_bytes`
    (row_loop_stages: `num_stages`, or `fp32_stages`), lowered until the pipelined tiles fit a
    program's shared memory.  A program of whole rows: Triton keeps num_stages − 1 tiles of x and dy in
    flight, [block_r, block_d] each (plus a few hundred bytes of row statistics).  A program
    sharing its rows (col_split parts): every part's x and dy, each with num_stages buffers,
    and num_stages − 1 of the other parts' weight tiles, counted as fp32 whatever the weight's
    dtype (and of the own part read twice, with reload) — bench/regs.py's compile, Triton 3.6 and 3.9, sm_90, d = 16384 in two parts:
    131 KB at 2 stages with a bf16 weight, 164 KB with an fp32 one, 197 KB with an fp32 one
    read twice, 262–328 KB at 3 stages; d = 12288 in three parts, 3 stages: 180 and 229 KB;
    this bound is at or above each.  An H200 has 227 KB
    a program, where every shipped rule fits in fp32 too; a GPU with less would otherwise
    fail to launch."""
    st = row_loop_stages(p, elem_bytes)
    parts = p.get("col_split", 1)
    tile = p["block_r"] * p["block_d"]
    if parts == 1:
        def need(st):
            return (st - 1) * tile * elem_bytes * 2
    else:
        again = 2 * elem_bytes if p.get("reload") else 0

        def need(st):   # and 16 KB of the row sums' scratch (d = 12288 in three parts)
            return (st * tile * elem_bytes * 2 * parts + 16384
                    + (st - 1) * tile * (4 * (parts - 1) + again))
    while st > 1 and need(st) + 1024 > smem_bytes:
        st -= 1
    return st


@functools.lru_cache(maxsize=None)
def _frozen(name: str, d: int, max_block_d: int, chunk_d: int):
    # keyed on the block limits too: a test that narrows them must not get a wider rule back
    return MappingProxyType(RULES[name].params(d))
