"""GPU-only checks (run on the device machine): the issue's correctness shapes at full size."""
import pytest
import torch

from checks import exchange_words_empty, fused_launch_plans, same_bits
from normbench import strategies
from normbench.harness.inputs import errors, errors_within, make_inputs, reference
from normbench.strategies import _tuning

pytestmark = pytest.mark.gpu

SHAPES = [("bf16", 16384, 4096), ("bf16", 16384, 8192), ("bf16", 8192, 16384), ("fp32", 1024, 65536)]
NAMES = [n for n in ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "disjoint_fused",
                     "disjoint_strided",
                     "disjoint_smem", "disjoint_cluster", "torch", "liger", "quack")
         if n in strategies.names()]


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("dtype,rows,d", SHAPES)
@pytest.mark.parametrize("name", NAMES)
def test_full_size_against_fp64(name, norm, dtype, rows, d):
    x, dy, w, mean, rstd = make_inputs(norm, rows, d, dtype, dtype, seed=rows + d, device="cuda")
    try:
        out = strategies.get(name).backward(x, dy, w, mean, rstd)
    except NotImplementedError as e:
        pytest.skip(str(e))
    ref = reference(x, dy, w, mean, rstd)
    errs = dict(zip(("dx", "dw", "db"), errors(out, ref)))
    print(f"\n{name} {norm} {rows}x{d} {dtype}: " +
          " ".join(f"{k}={v:.2e}" for k, v in errs.items() if v is not None))
    assert errors_within(list(errs.values()), dtype, dtype), errs


@pytest.mark.parametrize("name", [n for n in NAMES if strategies.get(n).deterministic_by_design])
def test_deterministic_by_design_repeats_bits_on_gpu(name):
    x, dy, w, mean, rstd = make_inputs("layernorm", 16384, 4096, "bf16", "bf16", seed=5, device="cuda")
    first = strategies.get(name).backward(x, dy, w, mean, rstd)
    for _ in range(5):
        same_bits(first, strategies.get(name).backward(x, dy, w, mean, rstd))


@pytest.mark.parametrize("groups", [1, 7, 132, 133, 300])
@pytest.mark.parametrize("rows,d", [(2048, 768), (5000, 4096), (129, 16384), (33, 20000)])
def test_fused_grid_sync_and_ticket_paths(rows, d, groups):
    """GROUPS that fit at once: the cooperative, grid-synchronised reduce; more: the
    last-ticket reduce (test_fused_syncs_exactly_when_every_program_fits says which is which).
    Ten calls in a row: the counters must come back to zero after every call."""
    e = strategies.get("disjoint_fused")
    for norm in ("layernorm", "rmsnorm"):
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, "bf16", "bf16", seed=rows ^ groups, device="cuda")
        ref = reference(x, dy, w, mean, rstd)
        first = e.backward(x, dy, w, mean, rstd, groups=groups)
        errs = errors(first, ref)
        assert errors_within(errs, "bf16", "bf16"), errs
        for _ in range(10):
            same_bits(first, e.backward(x, dy, w, mean, rstd, groups=groups))
    assert int(strategies.disjoint_fused._counter(x.device).abs().sum()) == 0


@pytest.mark.parametrize("tail", [8, 64, 128])
@pytest.mark.parametrize("rows,d,groups", [(65536, 1024, None), (16384, 4096, None), (2048, 768, 7),
                                           (5000, 4096, 300), (129, 16384, None), (33, 20000, 5)])
def test_fused_tail_reduce_on_gpu(rows, d, groups, tail, monkeypatch):
    """`tail` (the last K programs to finish sum the partial rows by column slices): right
    against fp64 with the rows dealt round-robin, the same bits in ten calls, the counters
    back at zero; K waiters really run (K > 1 wherever the grid has more than one program),
    more than the grid holds (GROUPS 300 at one program an SM) too."""
    from normbench.strategies import disjoint_fused as f
    plans = fused_launch_plans(monkeypatch)
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_fused", {"interleave": True, "tail": tail})
    e = strategies.get("disjoint_fused")
    kw = {} if groups is None else {"groups": groups}
    for norm in ("layernorm", "rmsnorm"):
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, "bf16", "bf16", seed=rows ^ tail, device="cuda")
        ref = reference(x, dy, w, mean, rstd)
        first = e.backward(x, dy, w, mean, rstd, **kw)
        errs = errors(first, ref)
        assert errors_within(errs, "bf16", "bf16"), errs
        for _ in range(10):
            same_bits(first, e.backward(x, dy, w, mean, rstd, **kw))
    _, m, programs = plans[-1]
    k = m["TAIL"]
    assert k == min(tail, programs) and (k > 1 or programs == 1), plans
    assert int(f._counter(x.device).abs().sum()) == 0


@pytest.mark.parametrize("split", [{"col_split": 2, "num_stages": 2},
                                   {"col_split": 2, "num_stages": 2, "reload": True},
                                   {"col_split": 3, "block_r": 1, "num_warps": 16},
                                   {"col_split": 4}])
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_rows_shared_by_programs_on_gpu(name, split, monkeypatch):
    """col_split on the GPU, where the programs of a row run at once: right against fp64 at
    wide rows (one not a multiple of the parts' 64-column grain), both weight dtypes and fp32
    activations, and the same bits in 10 repeats."""
    monkeypatch.setitem(_tuning.OVERRIDE, name, split)
    e = strategies.get(name)
    for norm, rows, d, dt, wd in (("layernorm", 1024, 16384, "bf16", "fp32"),
                                  ("rmsnorm", 777, 12288, "bf16", "bf16"),
                                  ("layernorm", 300, 20000, "fp16", "fp16"),
                                  ("layernorm", 256, 16384, "fp32", "fp32")):
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, dt, wd, seed=7, device="cuda")
        ref = reference(x, dy, w, mean, rstd)
        first = e.backward(x, dy, w, mean, rstd)
        assert errors_within(errors(first, ref), dt, wd), (norm, d)
        for _ in range(10):
            same_bits(first, e.backward(x, dy, w, mean, rstd))


@pytest.mark.parametrize("split", [{"col_split": 2, "num_stages": 2},
                                   {"col_split": 3, "block_r": 1, "num_warps": 16},
                                   {"col_split": 2, "num_stages": 2, "spin": 0}])
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_row_sums_exchanged_on_gpu(name, split, monkeypatch):
    """exchange on the GPU, where the programs of a row run at once and a part's sums come
    from its owner or, when late, from the part read again — which one is timing: the bits
    must be those of the split row without the exchange in every one of 10 repeats, right
    against fp64, and every word of the exchange EMPTY (-1) after the calls."""
    e = strategies.get(name)
    for norm, rows, d, dt, wd in (("layernorm", 2048, 16384, "bf16", "fp32"),
                                  ("rmsnorm", 777, 12288, "bf16", "bf16"),
                                  ("layernorm", 300, 20000, "fp16", "fp16")):
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, dt, wd, seed=8, device="cuda")
        monkeypatch.setitem(_tuning.OVERRIDE, name, split)
        plain = e.backward(x, dy, w, mean, rstd)
        ref = reference(x, dy, w, mean, rstd)
        assert errors_within(errors(plain, ref), dt, wd), (norm, d)
        monkeypatch.setitem(_tuning.OVERRIDE, name, {**split, "exchange": True})
        for _ in range(10):
            same_bits(plain, e.backward(x, dy, w, mean, rstd), (norm, d))
        torch.cuda.synchronize()
        exchange_words_empty()


@pytest.mark.parametrize("ahead", [1, 2, 4])
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_l2_prefetch_leaves_the_bits_alone(name, ahead, monkeypatch):
    """l2_ahead only asks L2 for later tiles: on the GPU, at the rows read twice (16384,
    12288), the pipelined rows (4096, 3072), the chunks (20000) and fp32 activations, the bits
    are those of the rule without it in 10 repeats, right against fp64 (programs whose rows
    end before the prefetched tile are part of every case: 777 rows)."""
    e = strategies.get(name)
    for norm, rows, d, dt, wd in (("layernorm", 2048, 16384, "bf16", "fp32"),
                                  ("rmsnorm", 777, 12288, "bf16", "bf16"),
                                  ("layernorm", 777, 3072, "bf16", "bf16"),
                                  ("rmsnorm", 4096, 4096, "fp16", "fp32"),
                                  ("layernorm", 300, 20000, "fp16", "fp16"),
                                  ("layernorm", 256, 16384, "fp32", "fp32")):
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, dt, wd, seed=9, device="cuda")
        plain = e.backward(x, dy, w, mean, rstd)
        ref = reference(x, dy, w, mean, rstd)
        assert errors_within(errors(plain, ref), dt, wd), (norm, d)
        monkeypatch.setitem(_tuning.OVERRIDE, name, {"l2_ahead": ahead})
        for _ in range(10):
            same_bits(plain, e.backward(x, dy, w, mean, rstd), (norm, d))
        monkeypatch.delitem(_tuning.OVERRIDE, name)


@pytest.mark.parametrize("rows,d", [(65536, 1024), (2048, 768), (16384, 4096)])
def test_fused_syncs_exactly_when_every_program_fits(rows, d, monkeypatch):
    """The grid sync is taken where the grid fits at once: GROUPS ≤ SMs × the programs one SM
    holds, as the driver answers it for the kernel compiled for that GROUPS (its reduce tile
    depends on GROUPS, so its registers may too); otherwise the ticket path.  Both answer
    right, bit for bit again.  GROUPS=auto (2 programs per SM at d ≤ 1024) must sync: its
    speed depends on it.  (A GROUPS asked for becomes the effective GROUPS that gives every
    program a whole share of the rows: that is the grid launched.)"""
    from normbench.strategies import _device, _launch
    from normbench.strategies import disjoint_fused as f
    monkeypatch.setattr(_launch, "_FAST", False)          # the launch decision on every call
    caps, paths = [], []
    real_cap, real_launch = _device.resident_programs, f.launch_partials
    monkeypatch.setattr(_device, "resident_programs", lambda k: caps.append(real_cap(k)) or caps[-1])

    def spy(kernel, c, groups, params, extra=(), extra_meta=None):
        def meta(compile, programs):
            m = extra_meta(compile, programs)
            paths.append((groups, m["GRID_SYNC"], caps[-1], programs))
            return m
        return real_launch(kernel, c, groups, params, extra, meta)
    monkeypatch.setattr(f, "launch_partials", spy)
    e, sms = strategies.get("disjoint_fused"), strategies.sm_count("cuda")
    x, dy, w, mean, rstd = make_inputs("layernorm", rows, d, "bf16", "bf16", seed=3, device="cuda")
    ref = reference(x, dy, w, mean, rstd)
    e.backward(x, dy, w, mean, rstd)
    assert paths[-1][1], paths                              # auto: synchronised
    most = sms * paths[-1][2]
    over = most + 1
    while over <= rows and e.effective_groups(rows, d, over) <= most:
        over += 1
    for g in (most, over):
        if g > rows:
            continue
        out = e.backward(x, dy, w, mean, rstd, groups=g)
        geff, sync, cap, programs = paths[-1]
        print(f"\n{rows}x{d} G {geff}: {cap} programs per SM, {'sync' if sync else 'ticket'}")
        assert geff == e.effective_groups(rows, d, g) and sync == (programs <= sms * cap), paths
        assert errors_within(errors(out, ref), "bf16", "bf16")
        again = e.backward(x, dy, w, mean, rstd, groups=g)
        assert all(torch.equal(a, b) for a, b in zip(out, again) if a is not None)
    assert int(f._counter(x.device).abs().sum()) == 0


@pytest.mark.parametrize("name", [n for n in NAMES if n in ("atomic", "grouped_atomic", "spin_lock",
                                                            "disjoint_block", "disjoint_fused")])
def test_direct_launch_matches_plain_launch(name, monkeypatch):
    """strategies._launch's cached direct launch gives the plain kernel[grid](...) answer,
    also when a cached specialisation meets an unaligned view and odd sizes."""
    from normbench.strategies import _launch
    e = strategies.get(name)
    for rows, d, stride, shift in [(4096, 1024, None, 0), (1000, 1000, 1003, 0),
                                   (4096, 1024, None, 0), (4096, 1024, 1032, 1)]:
        x, dy, w, mean, rstd = make_inputs("layernorm", rows, d + shift, "bf16", "bf16", seed=d,
                                           device="cuda", row_stride=stride)
        if shift:    # views that start 2 bytes in: not 16-byte aligned, same sizes as before
            x, dy, w = x[:, shift:], dy[:, shift:], w[shift:]
        monkeypatch.setattr(_launch, "_FAST", False)
        plain = e.backward(x, dy, w, mean, rstd)
        monkeypatch.setattr(_launch, "_FAST", True)
        for _ in range(2):
            fast = e.backward(x, dy, w, mean, rstd)
        ref = reference(x, dy, w, mean, rstd)
        assert errors_within(errors(fast, ref), "bf16", "bf16")
        for a, b in zip(plain, fast):
            if e.deterministic_by_design:
                assert torch.equal(a.view(torch.int16), b.view(torch.int16))


def _right_and_repeated(e, inputs, dt, wd, note, repeats=10):
    """Entry e's outputs at `inputs` each within its own dtype's tolerance of fp64, and the
    same bits `repeats` times more."""
    first = e.backward(*inputs)
    errs = errors(first, reference(*inputs))
    assert errors_within(errs, dt, wd), (note, errs)
    for _ in range(repeats):
        same_bits(first, e.backward(*inputs), note)


def _partials_hold_own_rows(e, inputs, case, groups=None, interleave=None):
    """After a call of strategy entry `e` on the staged kernel (one row a tile) at `groups`
    (None: auto): partial rows 0, 1 and G − 1 each hold dγ of that program's own rows (a
    contiguous block, or p, p + G, … dealt round-robin: `interleave`, by default what e's
    rule says) against fp64."""
    from normbench.strategies import _launch
    x, dy, w, mean, rstd = inputs
    rows, d = x.shape
    g = e.effective_groups(rows, d, groups, x.device)
    per = -(-rows // g)
    pw, _ = _launch.scratch(g, d, mean is not None, x.device)
    for p in sorted({0, 1, g - 1}):
        dealt = e.params(d)["interleave"] if interleave is None else interleave
        part = (list(range(p, rows, g)) if dealt
                else list(range(p * per, min(rows, (p + 1) * per))))
        if not part:
            continue
        want = reference(x[part], dy[part], w, None if mean is None else mean[part],
                         rstd[part])[1]
        got = pw[p].double()
        assert torch.allclose(got, want, rtol=1e-4, atol=1e-4 * want.abs().max().item()), (case, p)


def _strided(t, pad):
    """t as a view of rows `pad` elements longer than it (row stride d + pad)."""
    rows, d = t.shape
    return torch.zeros(rows, d + pad, dtype=t.dtype, device=t.device)[:, :d].copy_(t)


@pytest.mark.parametrize("case", [
    # (norm, rows, d, dtype, weight dtype, row padding, VEC expected: 0 = disjoint_block's kernel)
    ("layernorm", 2048, 16384, "bf16", "fp32", 0, 8),      # 2 stages, fp32 γ in shared memory
    ("rmsnorm", 777, 12288, "bf16", "bf16", 0, 8),          # masked columns, a short last program
    ("layernorm", 1000, 3072, "fp16", "fp16", 0, 8),
    ("layernorm", 5, 4096, "bf16", "bf16", 0, 8),           # fewer rows than programs
    ("rmsnorm", 4099, 1000, "bf16", "bf16", 0, 8),          # 1000 = 125 copies of 16 bytes
    ("layernorm", 512, 1002, "bf16", "bf16", 0, 2),         # 4-byte copies
    ("layernorm", 256, 8192, "fp32", "fp32", 0, 4),
    ("layernorm", 128, 16384, "fp32", "fp32", 0, 4),        # one stage
    ("layernorm", 300, 777, "fp32", "fp32", 0, 1),          # single fp32 elements
    ("layernorm", 600, 4096, "bf16", "bf16", 4, 4),         # row stride 4100: 8-byte copies
    ("rmsnorm", 100, 512, "fp16", "fp16", 0, 0),            # narrower than MIN_BLOCK_D
    ("layernorm", 50, 16, "bf16", "bf16", 0, 0),
    ("layernorm", 300, 1001, "bf16", "bf16", 0, 0),         # odd bf16 rows: not stageable
    ("layernorm", 300, 20000, "fp16", "fp16", 0, 0),        # wider than a stage
])
def test_smem_staged_and_fallback_paths(case):
    """disjoint_smem against fp64 and its bits over 10 repeats, staged (each VEC, one stage
    and several, masked columns, padded rows) and where it runs disjoint_block's kernel — and
    that `staged` picks the path the case says."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, pad, vec = case
    e = strategies.get("disjoint_smem")
    x, dy, w, mean, rstd = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    if pad:
        x, dy = _strided(x, pad), _strided(dy, pad)
    assert disjoint_smem.staged(x, dy, w)[0] == vec, case
    _right_and_repeated(e, (x, dy, w, mean, rstd), dt, wd, case)


@pytest.mark.parametrize("case", [("layernorm", 2048, 12288, "bf16", "bf16"),
                                  ("rmsnorm", 777, 12288, "bf16", "fp32"),
                                  ("layernorm", 300, 12288, "fp16", "fp32"),
                                  ("layernorm", 256, 12288, "fp32", "fp32")])
def test_smem_split_rows_on_gpu(case, monkeypatch):
    """`split` (a tuning option): 12288 staged as 8192 + 4096 — right against fp64, its bits
    over 10 repeats (the row sums add the parts' in a fixed order: not the unsplit kernel's
    bits, which sum the row in one tree)."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd = case
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_smem", {"split": True})
    e = strategies.get("disjoint_smem")
    x, dy, w, mean, rstd = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    assert disjoint_smem.staged(x, dy, w).block_d2 == 4096, case
    _right_and_repeated(e, (x, dy, w, mean, rstd), dt, wd, case)


@pytest.mark.parametrize("groups", [None, 7])
@pytest.mark.parametrize("case", [("rmsnorm", 4096, 16384, "bf16", "bf16"),
                                  ("layernorm", 4096, 16384, "bf16", "fp32"),
                                  ("layernorm", 1000, 12288, "fp16", "fp16"),
                                  ("rmsnorm", 777, 16384, "fp32", "fp32"),
                                  ("layernorm", 300, 4100, "bf16", "bf16"),
                                  ("rmsnorm", 5, 8192, "bf16", "fp32"),
                                  ("layernorm", 513, 6000, "fp32", "fp32")])
def test_cluster_rows_split_on_gpu(case, groups):
    """disjoint_cluster: each row split between the two CTAs of a cluster, their row sums
    swapped through L2 across a cluster barrier between a row's sums and its dx — right against fp64, its bits over 10 repeats, partial row c holding dγ
    of rows c, c + G, … (both halves), and the notes say so.  Among the cases: a second half
    with 4 real columns (4100), fewer rows than clusters, fp32 rows, rows that are not a
    power of two."""
    from normbench.strategies import disjoint_cluster
    norm, rows, d, dt, wd = case
    e = strategies.get("disjoint_cluster")
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    assert "2-CTA cluster" in disjoint_cluster._notes(*inputs), case
    first = e.backward(*inputs, groups=groups)
    errs = errors(first, reference(*inputs))
    assert errors_within(errs, dt, wd), (case, errs)
    for _ in range(10):
        same_bits(first, e.backward(*inputs, groups=groups), case)
    _partials_hold_own_rows(e, inputs, case, groups, interleave=True)


def test_cluster_falls_back_to_strided_where_it_does_not_split():
    """Rows of 1024 (narrower than 2049) run disjoint_strided: right, the same bits again,
    and the notes say which kernel ran."""
    from normbench.strategies import disjoint_cluster
    e = strategies.get("disjoint_cluster")
    inputs = make_inputs("layernorm", 2048, 1024, "bf16", "bf16", seed=3, device="cuda")
    assert "not split" in disjoint_cluster._notes(*inputs)
    _right_and_repeated(e, inputs, "bf16", "bf16", "fallback", repeats=3)


@pytest.mark.parametrize("case", [("layernorm", 4096, 16384, "bf16", "bf16"),
                                  ("rmsnorm", 8192, 12288, "bf16", "fp32"),
                                  ("layernorm", 777, 12288, "fp16", "fp32"),
                                  ("rmsnorm", 1000, 16384, "fp32", "fp32"),
                                  ("rmsnorm", 300, 10000, "bf16", "bf16")])
def test_strided_staged_on_gpu(case):
    """disjoint_strided at rows wider than 8192 runs disjoint_smem's staged kernel with its
    rows dealt round-robin (its rule): right against fp64, its bits over 10 repeats, partial
    row p holding rows p, p + G, … — and its record's notes say so."""
    from normbench.strategies import disjoint_strided
    norm, rows, d, dt, wd = case
    e = strategies.get("disjoint_strided")
    assert e.params(d)["staged"] and e.params(d)["interleave"], case
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    assert "round-robin" in disjoint_strided._notes(*inputs) and "staged" in disjoint_strided._notes(*inputs)
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)


@pytest.mark.parametrize("case", [("rmsnorm", 1000, 8192, "fp32", "fp32"),
                                  ("layernorm", 777, 8192, "fp32", "fp32"),
                                  ("layernorm", 300, 8192, "fp32", "bf16"),
                                  ("rmsnorm", 5, 8192, "fp32", "fp32"),
                                  ("layernorm", 1000, 7168, "fp32", "fp32"),
                                  ("rmsnorm", 333, 7500, "fp32", "fp32")])
def test_strided_stages_wide_fp32_rows_on_gpu(case):
    """Round 30's rule: disjoint_strided's fp32 rows of 7168 to 8192 (28-32 KB of x) run the
    staged kernel with their rows dealt round-robin — right against fp64, its bits over 10
    repeats, partial rows holding their own rows, the notes saying so — while bf16 rows there
    keep the row loop."""
    from normbench.strategies import disjoint_strided
    norm, rows, d, dt, wd = case
    e = strategies.get("disjoint_strided")
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    notes = disjoint_strided._notes(*inputs)
    assert "staged" in notes and "round-robin" in notes, (case, notes)
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)
    bf = make_inputs(norm, 64, d, "bf16", "bf16", seed=1, device="cuda")
    assert disjoint_strided._notes(*bf).startswith("the row loop"), case


@pytest.mark.parametrize("case", [("rmsnorm", 1000, 16384, "fp32", "fp32"),
                                  ("layernorm", 777, 16384, "fp32", "fp32"),
                                  ("layernorm", 300, 15000, "fp32", "fp32"),   # masked columns
                                  ("rmsnorm", 5, 16384, "fp32", "fp32")])      # fewer rows than programs
def test_strided_fp32_rows_of_16384_by_halves_on_gpu(case):
    """Round 31's rule (`one_stage_halves`): disjoint_strided's fp32 rows of one 16384 block,
    one whole-row stage beside γ, go by halves (2 + 1 slots) with γ in registers — right
    against fp64, its bits over 10 repeats, partial rows holding their own rows, the notes
    saying so."""
    from normbench.strategies import disjoint_smem, disjoint_strided
    norm, rows, d, dt, wd = case
    e = strategies.get("disjoint_strided")
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    m = disjoint_smem.staged(*inputs[:3], e.params(d), ln=norm == "layernorm")
    assert m.halves and m.w_regs and m.stages == 2, (case, m)
    notes = disjoint_strided._notes(*inputs)
    assert "by halves" in notes and "γ in registers" in notes, (case, notes)
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", [("layernorm", 1000, 10240, "fp16", "fp16", 2048),
                                  ("layernorm", 777, 11264, "bf16", "bf16", 4096)])
def test_smem_layernorm_two_parts_at_8_warps(name, case):
    """Round 21's rule: a LayerNorm row with 16-bit activations and a weight of their width,
    staged in two parts (10240 = 8192 + 2048, which only 8 warps split off; 11264 = 8192 +
    4096 with 1024 masked), runs 8 warps — right against fp64, its bits over 10 repeats."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, rest = case
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    x, dy, w = inputs[:3]
    m = disjoint_smem.staged(x, dy, w, e.params(d), ln=True)
    assert (m.warps, m.block_d, m.block_d2) == (8, 8192, rest), case
    assert f"8192 + {rest}, 8 warps" in e.fn.notes(*inputs), case
    _right_and_repeated(e, inputs, dt, wd, case)


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", [("layernorm", 2048, 16384, "bf16", "fp32"),
                                  ("layernorm", 777, 16384, "fp16", "fp32"),   # a short last program
                                  ("layernorm", 5, 16384, "bf16", "fp32"),     # fewer rows than programs
                                  ("layernorm", 300, 15000, "bf16", "fp32"),   # masked second half
                                  ("layernorm", 1000, 9000, "fp16", "fp32")])  # 808 of 8192 there
def test_half_rows_on_gpu(name, case, monkeypatch):
    """`half_rows` (a tuning option; round 28: 7 % slower, off in the rules): LayerNorm rows of
    one 16384 block with 16-bit activations and an fp32 γ staged by halves in rings of 3 and
    2 half-row slots — right against fp64, its bits over 10 repeats, and partial row p holding
    its own rows (contiguous blocks, or p, p + G, … dealt round-robin) — and its record's
    notes say so."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd = case
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"half_rows": True})
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    x, dy, w = inputs[:3]
    m = disjoint_smem.staged(x, dy, w, e.params(d), ln=True)
    assert m.halves and (m.block_d, m.block_d2) == (8192, 8192), (case, m)
    assert "by halves of a row" in e.fn.notes(*inputs), case
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", [("rmsnorm", 2048, 12288, "fp16", "fp32"),
                                  ("layernorm", 777, 12288, "bf16", "fp32"),   # a short last program
                                  ("layernorm", 1000, 16384, "bf16", "fp32"),
                                  ("rmsnorm", 5, 16384, "fp16", "fp32"),       # fewer rows than programs
                                  ("layernorm", 300, 15000, "bf16", "bf16"),   # masked, a 16-bit γ
                                  ("rmsnorm", 600, 12288, "fp32", "fp32"),     # two stages, not one
                                  ("layernorm", 1000, 10000, "fp16", "fp32")])  # 8192 + 2048, 208 masked
def test_w_regs_on_gpu(name, case, monkeypatch):
    """`w_regs` (a tuning option, round 29): γ held in fp32 registers laid out as the rows,
    not in shared memory, which is left to the rows' stages — right against fp64, its bits
    over 10 repeats, partial row p holding its own rows, and its record's notes say so."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd = case
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"w_regs": True})
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    x, dy, w = inputs[:3]
    m = disjoint_smem.staged(x, dy, w, e.params(d), ln=norm == "layernorm")
    assert m.w_regs and m.vec, (case, m)
    assert "γ in registers" in e.fn.notes(*inputs), case
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)


PAIRS_CASES = [("layernorm", 777, 16384, "bf16", "bf16", {}),
               ("rmsnorm", 2048, 16384, "bf16", "bf16", {}),
               ("layernorm", 1000, 16384, "bf16", "fp32", {}),              # 8 warps, fp32 γ
               ("rmsnorm", 300, 12288, "bf16", "fp32", {}),                 # two parts
               ("layernorm", 300, 15000, "bf16", "bf16", {}),               # masked columns
               ("layernorm", 500, 10000, "bf16", "bf16", {}),               # 8192 + 2048
               ("rmsnorm", 5, 16384, "bf16", "bf16", {}),                   # fewer rows than programs
               ("layernorm", 600, 16384, "bf16", "fp32", {"half_rows": True}),
               ("layernorm", 600, 12288, "bf16", "bf16", {"w_regs": True}),
               ("layernorm", 300, 16384, "fp16", "bf16", {})]               # a bf16 γ alone


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", PAIRS_CASES)
def test_bf16_pairs_gives_the_same_bits_on_gpu(name, case, monkeypatch):
    """`bf16_pairs` (round 43, on in the rules): the staged kernel widens bf16 two elements a
    32-bit word (a shift and a mask) instead of through the compiler's conversion — the same
    values, so the same bits as without it, bit for bit, in every output; its bits over 10
    repeats too."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, extra = case
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**extra, "bf16_pairs": False})
    m0 = disjoint_smem.staged(*inputs[:3], e.params(d), ln=norm == "layernorm")
    before = e.backward(*inputs)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**extra, "bf16_pairs": True})
    m = disjoint_smem.staged(*inputs[:3], e.params(d), ln=norm == "layernorm")
    assert m.vec and m.pairs and m._replace(pairs=False) == m0, (case, m0, m)
    same_bits(before, e.backward(*inputs), case)
    _right_and_repeated(e, inputs, dt, wd, case)


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", PAIRS_CASES + [("layernorm", 500, 16384, "fp32", "fp32", {}),
                                                ("rmsnorm", 300, 7000, "bf16", "bf16", {}),
                                                ("rmsnorm", 700, 16384, "fp16", "fp32", {}),
                                                ("layernorm", 700, 16384, "fp16", "fp16", {})])
@pytest.mark.parametrize("how", [True, 2])
def test_full_sectors_gives_the_same_bits_on_gpu(name, case, how, monkeypatch):
    """`full_sectors` (round 44; on in disjoint_strided's rule but at its `sectors_off`,
    round 45 — [] here takes it everywhere, fp16 and an fp32 γ among the cases; `how` 2 the
    trade through shared memory): the partial rows traded among each warp's threads before
    they are stored, so that each store writes whole sectors — the same values at the same
    places, so the same bits as without it in every output (the partial rows each holding its
    own rows); the option reaches the Launch and nothing else of it moves."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, extra = case
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**extra, "full_sectors": False})
    # disjoint_strided's rows of d ≤ 8192 take its row loop (no staged Launch to look at)
    staged = e.params(d).get("staged", True)
    m0 = staged and disjoint_smem.staged(*inputs[:3], e.params(d), ln=norm == "layernorm")
    before = e.backward(*inputs)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**extra, "full_sectors": how, "sectors_off": []})
    if staged:
        m = disjoint_smem.staged(*inputs[:3], e.params(d), ln=norm == "layernorm")
        want = (int(how) if m0.stages >= 2 else 1) if m0.vec == 8 else 0
        assert m == m0._replace(sectors=want) if m0.vec else not m.vec, (case, m0, m)
    same_bits(before, e.backward(*inputs), case)
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)


L2_AHEAD_CASES = [("layernorm", 777, 16384, "bf16", "fp32", {}),             # two stages, 8 warps
                  ("rmsnorm", 2048, 16384, "bf16", "bf16", {}),
                  ("layernorm", 600, 16384, "fp16", "fp16", {}),             # three stages
                  ("rmsnorm", 300, 12288, "bf16", "fp32", {}),               # two parts
                  ("layernorm", 300, 15000, "bf16", "bf16", {}),             # masked columns
                  ("rmsnorm", 5, 16384, "bf16", "bf16", {}),                 # fewer rows than programs
                  ("layernorm", 500, 16384, "fp32", "fp32", {}),             # by halves: none
                  ("rmsnorm", 700, 8192, "fp32", "fp32", {})]                # fp32 rows of 8192


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", L2_AHEAD_CASES)
@pytest.mark.parametrize("k", [1, 2])
def test_l2_ahead_gives_the_same_bits_on_gpu(name, case, k, monkeypatch):
    """`l2_ahead` (round 47; disjoint_strided's rule asks 1 at LayerNorm's rows of one block):
    the staged kernel asks L2 for the row k rows past its stages' — a prefetch changes no value,
    so the same bits as without it (`l2_ahead` and `ln_l2_ahead` 0) in every output
    (the partial rows each holding their own rows); the option reaches the Launch (not where
    rows go by halves) and the record's notes, and nothing else of the Launch moves."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, extra = case
    if d <= 8192 and name == "disjoint_strided":
        pytest.skip("disjoint_strided stages rows of d ≤ 8192 at parameters no override reaches")
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    ln = norm == "layernorm"
    # without it (disjoint_strided's rule asks L2 a row ahead at LayerNorm's rows of one block)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**extra, "l2_ahead": 0, "ln_l2_ahead": 0})
    before = e.backward(*inputs)
    p0 = e.params(d)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**extra, "l2_ahead": k})
    if e.params(d).get("staged", True):
        m0 = disjoint_smem.staged(*inputs[:3], p0, ln=ln)
        assert m0.l2_ahead == 0, (case, m0)
        m = disjoint_smem.staged(*inputs[:3], e.params(d), ln=ln)
        assert m.vec and m == m0._replace(l2_ahead=0 if m0.halves else k), (case, m0, m)
        said = f"each row asked of L2 {k} row" in e.fn.notes(*inputs)
        assert said == (not m.halves), (case, e.fn.notes(*inputs))
    same_bits(before, e.backward(*inputs), case)
    _right_and_repeated(e, inputs, dt, wd, case)
    _partials_hold_own_rows(e, inputs, case)


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", [("layernorm", 777, 16384, "bf16", "bf16", 0.0),
                                  ("layernorm", 1000, 16384, "fp16", "fp32", 0.0),
                                  ("layernorm", 300, 12288, "bf16", "fp32", 0.0),  # two parts
                                  ("layernorm", 300, 15000, "bf16", "bf16", 0.0),  # masked
                                  ("layernorm", 500, 16384, "fp32", "fp32", 0.0),
                                  ("layernorm", 500, 16384, "fp32", "fp32", 100.0),
                                  ("layernorm", 500, 12288, "bf16", "fp32", 30.0)])
def test_xhat_fma_on_gpu(name, case, monkeypatch):
    """`xhat_fma` (a tuning option, round 43): LayerNorm's x̂ as one fused multiply-add,
    x·rstd + (−mean·rstd) — right against fp64 (each output within its own dtype's
    tolerance), also with x shifted by 100 and 30 standard deviations (its error grows with
    |mean|·rstd), its bits over 10 repeats, partial rows holding their own rows; without
    the option, none of it (RMSNorm has no mean: never)."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, shift = case
    e = strategies.get(name)
    x, dy, w, _, _ = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    if shift:       # x shifted by `shift` of its standard deviations (2), its mean and rstd anew
        x = (x.double() + 2.0 * shift).to(x.dtype)
    xf = x.float()
    mean, rstd = xf.mean(dim=1), torch.rsqrt(xf.var(dim=1, unbiased=False) + 1e-5)
    inputs = (x, dy, w, mean, rstd)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"xhat_fma": True})
    assert disjoint_smem.staged(x, dy, w, e.params(d), ln=True).fma, case
    assert not disjoint_smem.staged(x, dy, w, e.params(d), ln=False).fma, case
    out = e.backward(*inputs)
    errs = errors(out, reference(*inputs))
    assert errors_within(errs, dt, wd), (case, errs)
    for _ in range(10):
        same_bits(out, e.backward(*inputs), case)
    _partials_hold_own_rows(e, inputs, case)


@pytest.mark.parametrize("case", [("layernorm", 4096, 16384, "bf16", "bf16", None),
                                  ("rmsnorm", 8192, 12288, "bf16", "fp32", None),
                                  ("layernorm", 777, 12288, "fp16", "fp32", None),
                                  ("rmsnorm", 1000, 16384, "fp32", "fp32", None),
                                  ("layernorm", 301, 2048, "bf16", "bf16", 7),
                                  ("layernorm", 5, 4096, "bf16", "bf16", 9)])
def test_smem_interleave_on_gpu(case, monkeypatch):
    """The staged kernel with its rows dealt round-robin (`interleave`): right against fp64,
    its bits over 10 repeats, and partial row p holds rows p, p + G, … (their fp64 dγ) — the
    rows a program stages are not its contiguous block.  Every case is staged."""
    from normbench.strategies import disjoint_smem
    norm, rows, d, dt, wd, groups = case
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_smem", {"interleave": True})
    e = strategies.get("disjoint_smem")
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")
    x, dy, w = inputs[:3]
    assert disjoint_smem.staged(x, dy, w).vec, case
    _right_and_repeated(e, inputs, dt, wd, case)
    e.backward(*inputs, groups=groups)
    _partials_hold_own_rows(e, inputs, case, groups)


@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_smem", "disjoint_strided"])
@pytest.mark.parametrize("case", [("layernorm", 16384, 4096, "bf16", "bf16"),
                                  ("rmsnorm", 65536, 1024, "bf16", "fp32"),
                                  ("layernorm", 2048, 16384, "bf16", "fp32"),
                                  ("layernorm", 77, 333, "fp16", "fp16")])
def test_pdl_gives_the_same_bits(name, case, monkeypatch):
    """`pdl` (a tuning option; in disjoint_strided's rule and disjoint_smem's above 8192): the
    reduce launched as a programmatic dependent, let in early by the main kernel, waits for it
    before it reads — so it sums the same partials in the same order: the bits of the call
    with pdl off, every time (10 repeats, the reduce racing the main kernel's tail each time),
    and right against fp64.  Also from a CUDA graph (the harness's GPU time replays one)."""
    from normbench.strategies import _device
    assert _device.pdl_supported(torch.device("cuda")) == (torch.cuda.get_device_capability() >= (9, 0))
    norm, rows, d, dt, wd = case
    e = strategies.get(name)
    inputs = make_inputs(norm, rows, d, dt, wd, seed=rows ^ d, device="cuda")

    def pdl(on):
        monkeypatch.setitem(_tuning.OVERRIDE, name, {"pdl": on})
        if name == "disjoint_smem":      # its fallback path runs disjoint_block's kernel
            monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"pdl": on})
    pdl(False)
    plain = e.backward(*inputs)
    pdl(True)
    _right_and_repeated(e, inputs, dt, wd, (name, case))
    same_bits(plain, e.backward(*inputs), (name, case))
    g = torch.cuda.CUDAGraph()
    e.backward(*inputs)
    torch.cuda.synchronize()
    with torch.cuda.graph(g):
        out = e.backward(*inputs)
    for _ in range(3):
        g.replay()
        torch.cuda.synchronize()
        same_bits(plain, out, (name, case, "graph"))


@pytest.mark.parametrize("interleave", [True, False, "balance"])
@pytest.mark.parametrize("name", ["disjoint_strided", "disjoint_block", "disjoint_fused"])
@pytest.mark.parametrize("case", [("layernorm", 16384, 4096, "bf16", "bf16"),
                                  ("rmsnorm", 65536, 1024, "bf16", "fp32"),
                                  ("layernorm", 32768, 3072, "fp16", "fp32"),
                                  ("rmsnorm", 16384, 8192, "fp32", "fp32"),
                                  ("layernorm", 5001, 2048, "bf16", "bf16"),
                                  ("layernorm", 77, 333, "fp16", "fp16"),
                                  # tiles of 8192 partly masked, 4 stages (rounds 35, 36)
                                  ("rmsnorm", 8192, 5120, "bf16", "fp32"),
                                  ("layernorm", 4099, 6144, "fp32", "fp32"),
                                  ("layernorm", 3001, 7168, "fp16", "fp16")])
def test_interleave_right_and_repeated(name, case, interleave, monkeypatch):
    """The row loop with its tiles dealt round-robin (`interleave`, disjoint_strided's rule)
    and in blocks, whichever the rule picks, and round-robin with the last round spread by rows
    (`balance`): right against fp64 and the same bits 10 times more, compiled and pipelined
    (the CPU tests check which rows each partial row holds).  `stage_from` 0: the row loop
    even where disjoint_strided's rule stages the row (fp32 rows of 7168-8192, round 30)."""
    norm, rows, d, dt, wd = case
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"interleave": bool(interleave),
                                                 "balance": interleave == "balance",
                                                 "stage_from": 0})
    _right_and_repeated(strategies.get(name), make_inputs(norm, rows, d, dt, wd, seed=rows ^ d,
                                                          device="cuda"), dt, wd, (name, case))


def _awkward_cases(n_random=8, seed=2026):
    """Shapes, dtypes and layouts no issue lists: every width band the rules split on (row
    loop, two-part rows, the staged kernel, fp32 rows staged or by halves, the widest), rows
    fewer than the SMs and a prime count past them, strided rows whose starts are not 16-byte
    aligned and views that start 2 or 4 bytes in; then `n_random` drawn from a fixed seed
    (rows and d log-uniform, any dtype mix, any layout).  Each: (norm, rows, d, activation
    dtype, weight dtype, row padding, shift)."""
    import random
    cases = [("layernorm", 1, 5, "bf16", "bf16", 0, 0),
             ("rmsnorm", 3, 100, "fp16", "fp32", 3, 0),
             ("layernorm", 131, 1000, "fp32", "fp32", 0, 1),
             ("rmsnorm", 2049, 1025, "bf16", "fp32", 0, 0),
             ("layernorm", 1000, 2047, "fp16", "fp16", 5, 0),
             ("rmsnorm", 997, 4097, "bf16", "bf16", 0, 1),
             ("layernorm", 1001, 6999, "bf16", "bf16", 0, 0),
             ("layernorm", 700, 7168, "fp32", "fp32", 0, 0),
             ("rmsnorm", 513, 8191, "fp32", "fp32", 1, 0),
             ("layernorm", 263, 8193, "bf16", "fp32", 0, 0),
             ("rmsnorm", 129, 10240, "fp16", "fp32", 0, 1),
             ("layernorm", 300, 12289, "bf16", "bf16", 7, 0),
             ("rmsnorm", 133, 16383, "bf16", "fp32", 0, 0),
             ("layernorm", 140, 16384, "fp32", "fp32", 0, 1),
             ("rmsnorm", 67, 16385, "fp16", "fp16", 0, 0),
             ("layernorm", 29, 40000, "bf16", "fp32", 1, 0),
             ("rmsnorm", 11, 65536, "fp32", "fp32", 0, 0)]
    rng = random.Random(seed)
    for _ in range(n_random):
        dt = rng.choice(["bf16", "fp16", "fp32"])
        wd = dt if dt == "fp32" else rng.choice([dt, "fp32"])
        d = max(1, round(2 ** rng.uniform(0, 16)))
        cases.append((rng.choice(["layernorm", "rmsnorm"]), max(1, round(2 ** rng.uniform(0, 12))),
                      d, dt, wd, rng.choice([0, 0, 1, 8]), rng.choice([0, 0, 1])))
    return cases


@pytest.mark.parametrize("case", _awkward_cases(), ids=lambda c: "-".join(map(str, c)))
@pytest.mark.parametrize("name", [n for n in NAMES if strategies.get(n).kind == "strategy"])
def test_awkward_shapes_on_gpu(name, case):
    """Every strategy, compiled, at shapes and layouts no tuning round chose (the interpreter
    cannot show what the compiled kernels assume of alignment and specialisation): right
    against fp64, and the deterministic ones the same bits 3 times more."""
    norm, rows, d, dt, wd, pad, shift = case
    x, dy, w, mean, rstd = make_inputs(norm, rows, d + shift, dt, wd, seed=rows * 7 + d,
                                       device="cuda", row_stride=d + shift + pad if pad else None)
    if shift:    # views that start 1 element in (2 or 4 bytes): not 16-byte aligned
        x, dy, w = x[:, shift:], dy[:, shift:], w[shift:]
    e = strategies.get(name)
    try:
        first = e.backward(x, dy, w, mean, rstd)
    except NotImplementedError as err:
        pytest.skip(str(err))
    errs = errors(first, reference(x, dy, w, mean, rstd))
    assert errors_within(errs, dt, wd), (name, case, errs)
    if e.deterministic_by_design:
        for _ in range(3):
            same_bits(first, e.backward(x, dy, w, mean, rstd), (name, case))


def test_ab_repeat_compares_the_compiled_code(capsys):
    """On a GPU bench/ab_repeat.py's check compares the compiled kernels (`_launch.capture`
    with code): disjoint_strided's `spin` (the exchange's polls; its rule has no exchange, so
    no path reads it) compiles to the rule's PTX and is refused as the rule timed twice —
    on a CPU only its constexpr differs and it passes — while 8 warps compile otherwise."""
    import json
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench"))
    import ab_repeat
    saved = dict(_tuning.OVERRIDE)
    args = ("disjoint_strided", [(4096, 4096)], "rmsnorm", "bf16", "bf16", "cuda")
    configs = [{}, {"spin": 8}]
    with pytest.raises(SystemExit):
        ab_repeat.check_launches(configs, [json.dumps(c) for c in configs], *args)
    err = capsys.readouterr().err
    assert "what config 1 does (the same compiled code)" in err, err
    configs = [{}, {"num_warps": 8}]
    ab_repeat.check_launches(configs, [json.dumps(c) for c in configs], *args)
    assert _tuning.OVERRIDE == saved


def test_ab_repeat_records_each_configurations_host_time(tmp_path, capsys):
    """On a GPU every ab.csv row carries the host's time of one call (`host_us`), and an
    override's is not the rule's plus the 10-20 µs a call of its parameters worked out again
    (round 50 on an H200, session 54: fixed in 8023a5b) — the least of seven samples each."""
    import csv
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "bench"))
    import ab_repeat
    saved = dict(_tuning.OVERRIDE)
    assert ab_repeat.main(["--norm", "rmsnorm", "--shapes", "2048x4096", "--rounds", "2",
                           "--rep", "5", "--out", str(tmp_path), "--configs", "{}",
                           '{"num_warps": 8}']) == 0
    rows = list(csv.DictReader(open(tmp_path / "ab.csv")))
    assert len(rows) == 4 and all(r["status"] == "ok" and float(r["host_us"]) > 0 for r in rows)
    assert " host " in capsys.readouterr().out
    # the comparison from seven samples of each, not ab.csv's two: on an H100's host (session
    # 55) two samples read 99.7 against 139.8 µs where seven read 83-86 against 87-90
    import host
    x, dy, w, _, rstd = make_inputs("rmsnorm", 2048, 4096, "bf16", "bf16", seed=0,
                                    device="cuda")
    e = strategies.get("disjoint_strided")
    least = {}
    for ov in ({}, {"num_warps": 8}):
        _tuning.OVERRIDE.clear()
        _tuning.OVERRIDE["disjoint_strided"] = ov
        least[repr(ov)] = min(host.host_us(lambda: e.backward(x, dy, w, None, rstd), 20)
                              for _ in range(7))
    _tuning.OVERRIDE.clear()
    _tuning.OVERRIDE.update(saved)
    assert least["{'num_warps': 8}"] < least["{}"] + 8, least


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
@pytest.mark.parametrize("name", NAMES)
def test_tensors_on_another_gpu_than_the_current_one(name):
    """A client's tensors on cuda:1 while cuda:0 is current: computed on cuda:1, right against
    fp64, the current device left as it was (Entry.backward makes x's GPU current)."""
    torch.cuda.set_device(0)
    x, dy, w, mean, rstd = make_inputs("layernorm", 2048, 4096, "bf16", "bf16", seed=11,
                                       device="cuda:1")
    try:
        out = strategies.get(name).backward(x, dy, w, mean, rstd)
    except NotImplementedError as e:
        pytest.skip(str(e))
    torch.cuda.synchronize(1)
    assert torch.cuda.current_device() == 0
    assert all(o.device == x.device for o in out if o is not None)
    assert errors_within(errors(out, reference(x, dy, w, mean, rstd)), "bf16", "bf16")


_BAD_ACCESS = '''
import triton
import triton.language as tl
from normbench.strategies import register


@triton.jit
def _far(P):
    tl.store(P + (1 << 40), 1.0)


@register("nb_bad_access", kind="strategy", deterministic_by_design=True, uses_groups=False)
def backward(x, dy, weight, mean, rstd, *, groups=None):
    """An illegal memory access: the process's CUDA context is lost."""
    _far[(1,)](x)
    x.sum().item()
'''


@pytest.mark.parametrize("isolate", [True, False])
def test_a_case_that_loses_the_cuda_context(tmp_path, isolate):
    """A strategy under development makes an illegal memory access.  With --isolate its record
    says the context was lost and the cases after it run in a fresh worker, right; without, the
    run keeps its record and stops (exit 1) with the --isolate command that finishes it."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path
    from normbench.harness.store import load_records
    root = Path(__file__).resolve().parent.parent
    (tmp_path / "nb_bad_access.py").write_text(_BAD_ACCESS)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(json.dumps({"name": "lost", "norm": ["layernorm"], "rows": [64, 128],
                               "d": [256], "dtype": ["bf16"],
                               "implementations": ["nb_bad_access", "torch"],
                               "timing": {"warmup_ms": 1, "rep_ms": 2},
                               "determinism": {"repeats": 2}}))
    env = {**os.environ, "NORMBENCH_PLUGINS": "nb_bad_access",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(root),
                                          os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "r"
    r = subprocess.run([sys.executable, str(root / "run_bench.py"), "run", str(cfg), "--out",
                        str(out), "--no-report", *(["--isolate"] if isolate else [])],
                       env=env, capture_output=True, text=True, timeout=600)
    df = load_records(out)
    bad = df[df["implementation"] == "nb_bad_access"]
    assert (bad["status"] == "error").all() and \
        bad["notes"].str.contains("the CUDA context was lost").all(), bad[["error", "notes"]]
    if isolate:
        assert r.returncode == 0, r.stderr
        assert len(df) == 4 and (df[df["implementation"] == "torch"]["status"] == "ok").all()
    else:
        assert r.returncode == 1 and len(bad) == 1 and len(df) < 4, (r.returncode, r.stderr)
        assert "finish with --isolate" in r.stderr and "--resume" in r.stderr, r.stderr
