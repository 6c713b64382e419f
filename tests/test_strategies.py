"""Every implementation × norm × dtype against the fp64 reference, on CPU under the interpreter."""
import math
import os
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from normbench import strategies
from checks import check, exchange_words_empty, fused_launch_plans, same_bits
from normbench.harness.inputs import make_inputs, reference, rel_error
from normbench.strategies import _tuning

IMPLS = strategies.names()
STRATEGIES = [n for n in IMPLS if strategies.get(n).kind == "strategy"]
DTYPES = ["fp32", "bf16", "fp16"]
NORMS = ["layernorm", "rmsnorm"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", IMPLS)
def test_awkward_shapes(poisoned, name, norm, dtype):
    check(name, norm, 1, 5, dtype)                          # one row, tiny d
    check(name, norm, 3, 100, dtype, groups=8)              # rows < groups, d not a power of 2
    check(name, norm, 13, 33, dtype, groups=4, row_stride=40)   # strided rows
    check(name, norm, 11, 77, dtype, groups=3)


@pytest.mark.parametrize("name", IMPLS)
def test_rows_of_one_to_three_elements(poisoned, name):
    """d = 1, 2, 3 in fp32, where dx is a small difference of its terms (d = 1 RMSNorm:
    rstd·g·ε/(x² + ε); d = 2 LayerNorm: 0): right to the fp32 tolerance of the terms' size
    (`inputs.Reference`) — against max|dx| alone every implementation failed at most seeds."""
    for d in (1, 2, 3):
        check(name, "rmsnorm", 3, d, "fp32", groups=2)
        check(name, "layernorm", 2, d, "fp32")


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", IMPLS)
def test_mixed_weight_dtype(poisoned, name, norm):
    check(name, norm, 9, 130, "bf16", weight_dtype="fp32", groups=2)
    check(name, norm, 6, 64, "fp16", weight_dtype="fp32")


@pytest.mark.parametrize("norm", NORMS)
def test_check_judges_an_fp32_dw_of_bf16_x_to_fp32s_tolerance(monkeypatch, norm):
    """check() judges each output by its own dtype, as the harness does: an fp32 dγ/dβ of bf16
    activations rounded through bf16 (a precision regression) fails it, as the harness's
    within_tolerances says — judged by the coarser bf16 tolerance it passed."""
    e = strategies.get("disjoint_block")
    real = e.fn

    def rounded(*args, groups):
        dx, dw, db = real(*args, groups=groups)
        through_bf16 = lambda t: None if t is None else t.bfloat16().to(t.dtype)   # noqa: E731
        return dx, through_bf16(dw), through_bf16(db)
    monkeypatch.setattr(e, "fn", rounded)
    with pytest.raises(AssertionError, match="'dw': '.* > 0.0001'"):
        check("disjoint_block", norm, 9, 130, "bf16", weight_dtype="fp32", groups=2)
    check("disjoint_block", norm, 9, 130, "bf16", weight_dtype="bf16", groups=2)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", STRATEGIES)
def test_row_wider_than_one_block(poisoned, monkeypatch, name, norm, dtype):
    monkeypatch.setattr(_tuning, "MAX_BLOCK_D", 64)
    monkeypatch.setattr(_tuning, "CHUNK_D", 64)
    check(name, norm, 7, 200, dtype, groups=3)   # 4 chunks, the last one partial
    check(name, norm, 2, 129, dtype, groups=5)


@pytest.mark.parametrize("name", STRATEGIES)
def test_widest_supported_row(poisoned, name):
    check(name, "layernorm", 2, 65536, "fp32", groups=2)
    check(name, "rmsnorm", 1, 65535, "bf16")


@pytest.mark.parametrize("name", IMPLS)
def test_registry_entry(name):
    e = strategies.get(name)
    assert e.kind in ("strategy", "baseline") and e.available and e.doc
    assert isinstance(e.deterministic_by_design, bool) and isinstance(e.uses_groups, bool)
    if e.uses_groups:
        g = e.effective_groups(1000, 512, None)
        assert 1 <= g <= 1000
        cap = e.max_groups(3, 512, e.params(512)) if e.max_groups else 3
        assert e.effective_groups(3, 512, 8) == min(3, cap)
        assert e.workspace_bytes(1000, 512, 64) >= 64 * 512 * 4


def test_the_four_strategies_and_torch_are_registered():
    for n in ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "torch"):
        assert n in strategies.names()
    assert strategies.get("disjoint_block").deterministic_by_design
    assert not strategies.get("atomic").deterministic_by_design
    assert not strategies.get("atomic").uses_groups


def test_missing_peers_are_listed_with_a_reason():
    for n in ("liger", "quack"):
        e = strategies.get(n)
        assert n in strategies.known()
        assert e.available == (n in strategies.names())
        if not e.available:
            assert "install" in e.reason
            with pytest.raises(RuntimeError, match="not available"):
                e.backward(None, None, None, None, None)


def _args(rows=4, d=8):
    x, dy, w, mean, rstd = make_inputs("layernorm", rows, d, "fp32", "fp32", seed=0, device="cpu")
    return dict(x=x, dy=dy, weight=w, mean=mean, rstd=rstd)


BAD = [
    ("x", lambda a: a.update(x=a["x"][0])),
    ("x", lambda a: a.update(x=a["x"].double(), dy=a["dy"].double())),
    ("x", lambda a: a.update(x=a["x"].t().contiguous().t())),
    ("dy", lambda a: a.update(dy=a["dy"][:, :4])),
    ("dy", lambda a: a.update(dy=a["dy"].half())),
    ("dy", lambda a: a.update(dy=torch.randn(8, 4).t())),
    ("weight", lambda a: a.update(weight=torch.randn(9))),
    ("weight", lambda a: a.update(weight=a["weight"].int())),
    ("mean", lambda a: a.update(mean=a["mean"][:2])),
    ("rstd", lambda a: a.update(rstd=a["rstd"].half())),
    ("rstd", lambda a: a.update(rstd=None)),
]


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("arg,mutate", BAD, ids=[f"{a}-{i}" for i, (a, _) in enumerate(BAD)])
def test_bad_arguments_raise_value_error_naming_the_argument(name, arg, mutate):
    a = _args()
    mutate(a)
    with pytest.raises(ValueError, match=f"^{arg}: "):
        strategies.get(name).backward(**a)


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_device_the_kernels_cannot_run_on_is_refused_by_name(name):
    """Meta tensors (shapes, no data) passed every check and failed inside Triton's
    interpreter with NotImplementedError — which the harness reads as "does not take this
    combination" (a skip): now a ValueError naming x, as for any other bad argument."""
    meta = {k: (v.to("meta") if isinstance(v, torch.Tensor) else v) for k, v in _args().items()}
    with pytest.raises(ValueError, match="^x: is on meta; the Triton kernels run on"):
        strategies.get(name).backward(**meta)


def test_a_call_on_another_gpu_than_the_current_one_runs_with_that_gpu_current(monkeypatch):
    """Triton launches on the current device, and the kept launch plans, scratch and streams
    are the current device's: a client's tensors on cuda:1 while cuda:0 is current were read
    by a kernel on cuda:0 (an illegal memory access).  Entry.backward makes x's GPU current
    for such a call, for every implementation (tests/test_gpu.py runs it on two GPUs); here
    the GPU side is stood in for: `elsewhere` says which GPU, torch.cuda.device is recorded."""
    from normbench.strategies import _registry

    class Gpu:                      # what elsewhere() reads of a tensor
        is_cuda = True

        def __init__(self, i):
            self.i = i

        def get_device(self):
            return self.i

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert _registry.elsewhere(Gpu(0)) is None and _registry.elsewhere(Gpu(1)) == 1
    assert _registry.elsewhere(torch.zeros(1)) is None              # CPU: the interpreter's
    entered = []

    class Device:                   # torch.cuda.device(i), recorded
        def __init__(self, i):
            self.i = i

        def __enter__(self):
            entered.append(self.i)

        def __exit__(self, *exc):
            entered.append(-1)

    monkeypatch.setattr(torch.cuda, "device", Device)
    a = _args()
    ref = reference(*a.values())
    for name in ("disjoint_block", "torch"):
        monkeypatch.setattr(_registry, "elsewhere", lambda x: 3)
        entered.clear()
        out = strategies.get(name).backward(**a)
        assert entered == [3, -1], name                             # the call ran inside it
        assert all(rel_error(o, r) < 1e-5 for o, r in zip(out, ref) if r is not None), name
        monkeypatch.setattr(_registry, "elsewhere", lambda x: None)
        entered.clear()
        strategies.get(name).backward(**a)
        assert entered == [], name                                  # the current GPU's: as it was


@pytest.mark.parametrize("name", STRATEGIES)
def test_a_tensor_that_holds_no_data_is_refused_naming_it(name):
    """A tensor with a null data pointer — a ZeroTensor (torch._efficientzerotensor, as
    autograd's forward mode hands out zeros) or one whose storage was freed
    (untyped_storage().resize_(0), as FSDP frees a parameter) — passed every check, and the
    kernels read address 0: on an H100 a ZeroTensor dy was an illegal memory access that
    broke every later CUDA call of the process; under the interpreter a RuntimeError from
    inside Triton, or a freed dy's garbage read back as dγ of NaN.  Each of the five is now a
    ValueError naming it; materialised, the same values are accepted and right."""
    from normbench.harness.inputs import errors, reference
    made = dict(zip(("x", "dy", "weight", "mean", "rstd"),
                    make_inputs("layernorm", 4, 8, "fp32", "fp32", seed=0, device="cpu")))

    def freed(t):
        t = t.clone()
        t.untyped_storage().resize_(0)
        return t

    for arg in made:
        for empty in (lambda t: torch._efficientzerotensor(t.shape), freed):
            args = {**made, arg: empty(made[arg])}
            with pytest.raises(ValueError, match=f"^{arg}: holds no data"):
                strategies.get(name).backward(*args.values(), groups=2)
    args = {**made, "dy": torch.zeros_like(made["dy"])}
    got = strategies.get(name).backward(*args.values(), groups=2)
    assert max(e for e in errors(got, reference(*args.values())) if e is not None) < 1e-5


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", IMPLS)
def test_gradients_hold_no_graph_when_an_input_requires_grad(name, norm):
    """A weight that is an nn.Parameter (as a user's norm layer holds it): every
    implementation returns plain gradients, no autograd graph — the torch baseline's native
    LayerNorm op recorded a double-backward graph on every call, time and memory no other
    implementation paid."""
    x, dy, w, mean, rstd = make_inputs(norm, 4, 8, "fp32", "fp32", seed=0, device="cpu")
    out = strategies.get(name).backward(x.requires_grad_(), dy, torch.nn.Parameter(w), mean,
                                        rstd)
    assert all(o is None or (o.grad_fn is None and not o.requires_grad) for o in out), out


@pytest.mark.parametrize("groups", [0, -3, 2.5, True, "4"])
def test_bad_groups(groups):
    with pytest.raises(ValueError, match="^groups: "):
        strategies.get("disjoint_block").backward(**_args(), groups=groups)


@pytest.mark.parametrize("name", IMPLS)
def test_rows_past_what_the_kernels_index_are_refused(name):
    """More rows than strategies/_args.MAX_ROWS (2^30): refused, naming x's rows and the
    maximum — at 2^31 − 1 rows disjoint_block's last program's end wrapped negative and a
    grid of one program a row passed CUDA's limit.  (Expanded views: no 4 GB tensors.)"""
    from normbench.strategies._args import MAX_ROWS
    rows, d = MAX_ROWS + 1, 8
    x = torch.zeros(1, d).expand(rows, d)
    rstd = torch.ones(1).expand(rows)
    with pytest.raises(ValueError, match=f"^x: rows = {rows} is over the supported maximum "
                                         f"{MAX_ROWS}$"):
        strategies.get(name).backward(x, x, torch.ones(d), rstd, rstd, groups=2)


@pytest.mark.parametrize("name", [n for n in IMPLS if strategies.get(n).uses_groups])
@pytest.mark.parametrize("rows", [2**30, 2**30 - 1, 2**30 - 35, 1073741789])   # the last: prime
def test_row_numbers_stay_within_int32_at_the_most_rows(name, rows):
    """The kernels hold row numbers in int32: at rows ≤ MAX_ROWS neither the last program's
    end (GROUPS·⌈rows/GROUPS⌉, before it is capped at rows) nor the last row + GROUPS (a
    round-robin step) reaches 2^31, whatever GROUPS is asked; and the harness's config takes
    no more rows than the kernels can index."""
    from normbench.harness import config_fields
    from normbench.strategies import _args
    assert (config_fields.MAX_ROWS, config_fields.MAX_D) == (_args.MAX_ROWS, _args.MAX_D)
    assert rows <= _args.MAX_ROWS
    e = strategies.get(name)
    for groups in (None, 2, 3, 7, 264, 46341, 2**20, rows - 1, rows, 2**40):
        g = e.effective_groups(rows, 64, groups)
        per = -(-rows // g)
        assert g * per <= 2**31 - 1 and (rows - 1) + g <= 2**31 - 1, (groups, g, per)


@pytest.mark.parametrize("name", [n for n in STRATEGIES if strategies.get(n).deterministic_by_design])
def test_deterministic_strategies_repeat_their_bits(name):
    x, dy, w, mean, rstd = make_inputs("layernorm", 20, 96, "bf16", "bf16", seed=1, device="cpu")
    a = strategies.get(name).backward(x, dy, w, mean, rstd, groups=3)
    same_bits(a, strategies.get(name).backward(x, dy, w, mean, rstd, groups=3))


def test_poisoning_catches_an_unwritten_element(poisoned):
    """The poison is what makes the checks above able to fail on a forgotten store."""
    x, dy, w, mean, rstd = make_inputs("layernorm", 4, 16, "fp32", "fp32", seed=2, device="cpu")
    dx = torch.empty_like(x)
    dx[:, :15] = reference(x, dy, w, mean, rstd)[0][:, :15].float()   # one column never written
    assert rel_error(dx, reference(x, dy, w, mean, rstd)[0]) == float("inf")


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_prefetching_row_loop(poisoned, monkeypatch, name, norm):
    """The register double-buffered row loop: right answers, and the same bits as the plain
    loop (it changes when loads are issued, not the order of any sum)."""
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"prefetch": True, "block_r": 2})
    check(name, norm, 13, 40, "bf16", groups=3)     # 5 rows per program: a partial last tile
    check(name, norm, 1, 8, "fp32", groups=1)
    check(name, norm, 9, 33, "fp16", groups=9)      # one row per program
    x, dy, w, mean, rstd = make_inputs(norm, 11, 48, "bf16", "bf16", seed=4, device="cpu")
    fetched = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"prefetch": False, "block_r": 2})
    same_bits(fetched, strategies.get(name).backward(x, dy, w, mean, rstd, groups=2))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["disjoint_strided", "disjoint_block", "disjoint_fused"])
def test_interleaved_row_loop(poisoned, monkeypatch, name, norm):
    """`interleave` (disjoint_strided's rule, a tuning option of the other two) deals the
    tiles out round-robin: right answers, the same bits again, and partial row p holds the
    tiles p, p + G, … (not program p's block of rows)."""
    from normbench.strategies import _launch
    assert strategies.get("disjoint_strided").params(40)["interleave"]
    over = {"block_r": 2} if name == "disjoint_strided" else {"interleave": True, "block_r": 2}
    monkeypatch.setitem(_tuning.OVERRIDE, name, over)
    check(name, norm, 13, 40, "bf16", groups=3)     # 7 tiles over 3 programs, a partial last
    check(name, norm, 9, 33, "fp16", groups=9)      # more programs than tiles
    x, dy, w, mean, rstd = make_inputs(norm, 11, 48, "fp32", "fp32", seed=4, device="cpu")
    e = strategies.get(name)
    first = e.backward(x, dy, w, mean, rstd, groups=2)
    same_bits(first, e.backward(x, dy, w, mean, rstd, groups=2))
    pw, _ = _launch.scratch(2, 48, norm == "layernorm", x.device)
    for p in range(2):
        rows = [r for r in range(11) if (r // 2) % 2 == p]
        # the fp64 dγ of those rows alone: Σ dy·x̂ over them
        want = reference(x[rows], dy[rows], w, None if mean is None else mean[rows], rstd[rows])[1]
        assert torch.allclose(pw[p].double(), want, rtol=1e-5, atol=1e-5), p


def balanced_rows(rows: int, groups: int, block_r: int, p: int) -> list[int]:
    """The rows partial row p holds with `balance`: tiles p, p + G, … of the whole rounds,
    then its ⌈R/G⌉ rows of the R left over."""
    step = groups * block_r
    full = rows // step * step
    last = max(-(-(rows - full) // groups), 1)
    return ([r for r in range(full) if (r // block_r) % groups == p]
            + list(range(full + p * last, min(full + (p + 1) * last, rows))))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["disjoint_strided", "disjoint_block"])
@pytest.mark.parametrize("rows,groups,block_r", [(16, 3, 4), (30, 2, 4), (17, 4, 4), (24, 3, 4),
                                                 (13, 3, 2), (13, 4, 2), (5, 4, 2)])
def test_balanced_last_round(poisoned, monkeypatch, name, norm, rows, groups, block_r):
    """`balance`: the last, partial round of tiles dealt round-robin is spread over the
    programs by rows (16 rows, 3 programs of 4-row tiles: programs 0 and 1 take rows 12-13 and
    14-15, not program 0 all four; 13 rows, 4 programs of 2: 0-2 take 8-9, 10-11, 12 and 3
    none) — right answers, the same bits again, and each partial row
    holds exactly the rows the schedule gives it."""
    from normbench.strategies import _launch
    over = {"interleave": True, "balance": True, "block_r": block_r}
    monkeypatch.setitem(_tuning.OVERRIDE, name, over)
    check(name, norm, rows, 40, "bf16", groups=groups)
    x, dy, w, mean, rstd = make_inputs(norm, rows, 48, "fp32", "fp32", seed=rows, device="cpu")
    e = strategies.get(name)
    first = e.backward(x, dy, w, mean, rstd, groups=groups)
    same_bits(first, e.backward(x, dy, w, mean, rstd, groups=groups))
    groups = e.effective_groups(rows, 48, groups)
    pw, _ = _launch.scratch(groups, 48, norm == "layernorm", x.device)
    held = []
    for p in range(groups):
        mine = balanced_rows(rows, groups, block_r, p)
        held += mine
        want = reference(x[mine], dy[mine], w, None if mean is None else mean[mine],
                         rstd[mine])[1]
        assert torch.allclose(pw[p].double(), want, rtol=1e-5, atol=1e-5), (p, mine)
    assert sorted(held) == list(range(rows))


def test_balance_needs_interleave(monkeypatch):
    """balance reshapes the round-robin schedule's last round: without interleave it is an
    error, not silently ignored."""
    inputs = make_inputs("rmsnorm", 8, 64, "fp32", "fp32", seed=1, device="cpu")
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"balance": True})
    with pytest.raises(ValueError, match="interleave"):
        strategies.get("disjoint_block").backward(*inputs, groups=2)


@pytest.mark.parametrize("norm", NORMS)
def test_strided_rows_wider_than_one_block(poisoned, monkeypatch, norm):
    """disjoint_strided's tiles dealt round-robin in the loop over column chunks too (a row
    wider than the block: each program's own partial row read and written back per chunk)."""
    monkeypatch.setattr(_tuning, "MAX_BLOCK_D", 32)
    monkeypatch.setattr(_tuning, "CHUNK_D", 16)
    check("disjoint_strided", norm, 11, 40, "bf16", groups=3)
    check("disjoint_strided", norm, 5, 33, "fp32", groups=8)


def test_strided_rule_stages_rows_wider_than_8192_where_disjoint_smem_can(monkeypatch):
    """disjoint_strided's rule by width: the row loop (interleaved) up to 8192; above, where
    disjoint_smem's staged kernel can run here, that strategy's rule with interleave; the row
    loop again where it cannot (here on CPU) and for rows wider than one stage (d > 16384)."""
    from normbench.strategies import disjoint_smem, disjoint_strided
    assert not disjoint_strided._rule(16384)["staged"] or not disjoint_smem._WHY
    monkeypatch.setattr(disjoint_smem, "_WHY", "")
    for d in (12288, 10000, 16384):
        p = disjoint_strided._rule(d)
        assert p["staged"] and p["interleave"], d
        own = ("interleave", "split_inflight", "ln_inflight", "rms_split_w_regs",
               "one_stage_halves", "full_sectors", "sectors_off", "pairs_off", "ln_l2_ahead",
               "l2_off")
        assert {k: p[k] for k in disjoint_smem._rule(d) if k not in own} == \
            {k: v for k, v in disjoint_smem._rule(d).items() if k not in own}
        assert p["split_inflight"] == disjoint_strided.SPLIT_INFLIGHT, d
        assert p["rms_split_w_regs"] == disjoint_strided.RMS_SPLIT_W_REGS, d
        assert p["one_stage_halves"] is disjoint_strided.ONE_STAGE_HALVES, d
        assert p["full_sectors"] is disjoint_strided.FULL_SECTORS, d     # round 44
        assert not disjoint_smem._rule(d)["full_sectors"], d
        assert p["sectors_off"] == disjoint_strided.SECTORS_OFF, d      # round 45
        assert set(p["sectors_off"]) <= set(disjoint_smem.ROW_CLASSES), d
        assert disjoint_smem._rule(d)["sectors_off"] == (), d
        assert p["pairs_off"] == disjoint_strided.PAIRS_OFF == ("rms_wide_weight",), d  # 46
        assert p["bf16_pairs"] and disjoint_smem._rule(d)["pairs_off"] == (), d
        assert p["ln_l2_ahead"] == disjoint_strided.LN_L2_AHEAD == 1, d        # round 47
        assert p["l2_ahead"] == 0 and disjoint_smem._rule(d)["ln_l2_ahead"] == 0, d
        assert p["l2_off"] == disjoint_strided.L2_OFF == ("ln_fp16",), d
        assert disjoint_smem._rule(d)["l2_off"] == (), d
    for d in (1024, 8192, 20000):
        p = disjoint_strided._rule(d)
        assert not p["staged"] and p["interleave"], d
        assert {k: v for k, v in p.items() if k != "stage_from"} == disjoint_strided._loop_rule(d)
        # round 30: rows of d ≤ 8192 with 32 KB of x (fp32 at 8192) are staged at the launch
        assert p.get("stage_from", 0) == (disjoint_strided.STAGE_FROM if d <= 8192 else 0), d
    # the fallback of the staged path (rows it cannot stage) is the interleaved row loop
    assert disjoint_strided._loop_rule(16384)["reload"]


def test_strided_stages_rows_of_28_kb_at_d_up_to_8192(monkeypatch):
    """Round 30's rule: at d ≤ 8192 a call whose row of x holds STAGE_FROM bytes (fp32 at 7168
    to 8192) takes the staged kernel, at disjoint_smem's rule with rows dealt round-robin and
    pdl; 16-bit rows of 8192 and fp32 rows of 6144 keep the row loop."""
    from normbench.strategies import disjoint_smem, disjoint_strided
    monkeypatch.setattr(disjoint_smem, "_WHY", "")
    p = disjoint_strided._rule(8192)
    assert disjoint_strided.STAGE_FROM == 28 * 1024
    assert disjoint_strided.path(8192, 4, p) == "row_staged"
    assert disjoint_strided.path(7168, 4, disjoint_strided._rule(7168)) == "row_staged"
    assert disjoint_strided.path(8192, 2, p) == "loop"
    assert disjoint_strided.path(6144, 4, disjoint_strided._rule(6144)) == "loop"
    assert disjoint_strided.path(8192, 4, {**p, "stage_from": 0}) == "loop"
    assert disjoint_strided.path(16384, 2, disjoint_strided._rule(16384)) == "staged"
    s = disjoint_strided._row_staged(8192)
    assert s["staged"] and s["interleave"] and s["pdl"] and s["inflight"] == disjoint_smem.INFLIGHT
    m = disjoint_smem.launch_meta(s, 8192, 4, 4, 227 * 1024, (8192, 8192, 8192, 0, 0, 0))
    assert (m.vec, m.stages, m.warps, m.block_d, m.block_d2) == (4, 2, 16, 8192, 0), m


def test_interleave_refuses_rows_shared_by_programs(monkeypatch):
    """col_split's programs share blocks of rows (a loop of its own): interleave with it is
    an error, not a silent contiguous schedule."""
    inputs = make_inputs("rmsnorm", 8, 64, "fp32", "fp32", seed=1, device="cpu")
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"interleave": True, "col_split": 2})
    with pytest.raises(ValueError, match="interleave"):
        strategies.get("disjoint_block").backward(*inputs, groups=2)


@pytest.mark.parametrize("name", ["atomic", "grouped_atomic", "spin_lock"])
def test_one_row_strategies_refuse_col_split_saying_why(monkeypatch, name):
    """col_split shares the row loop's rows between programs; a one-row strategy took the
    override's parameters (the row loop's, at the part's width) as its own and wrote garbage
    (atomic at d = 130: dx up to 1e36, different each call).  It is refused in one line."""
    inputs = make_inputs("layernorm", 5, 130, "fp32", "fp32", seed=1, device="cpu")
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"col_split": 2})
    with pytest.raises(ValueError, match=f"{name} runs one row a program.*col_split"):
        strategies.get(name).backward(*inputs, groups=2)
    monkeypatch.setitem(_tuning.OVERRIDE, name, {"num_warps": 4})    # another override runs
    check_out = strategies.get(name).backward(*inputs, groups=2)
    assert all(torch.isfinite(t).all() for t in check_out if t is not None)


def test_strided_refuses_col_split_saying_why(monkeypatch):
    """disjoint_strided deals whole rows round-robin on every path: a col_split override is
    refused in one line saying so — it raised KeyError: 'staged' (the override's parameters,
    disjoint_block's rule at the part's width, lacked this rule's keys), and would otherwise
    run contiguous blocks or the staged kernel unsplit under this name."""
    from normbench.strategies import disjoint_smem, disjoint_strided
    inputs = make_inputs("rmsnorm", 8, 64, "fp32", "fp32", seed=1, device="cpu")
    why = "disjoint_strided deals its rows round-robin .*does not combine with col_split"
    for ov in ({"col_split": 2}, {"col_split": 2, "interleave": False}):
        monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", ov)
        with pytest.raises(ValueError, match=why):
            strategies.get("disjoint_strided").backward(*inputs, groups=2)
    monkeypatch.setattr(disjoint_smem, "_WHY", "")      # a GPU's rule: rows of 16384 staged
    assert disjoint_strided.path(16384, 2, disjoint_strided._rule(16384)) == "staged"
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", {"col_split": 2, "num_stages": 2})
    with pytest.raises(ValueError, match=why):
        disjoint_strided.staged_params(16384, 2)


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", STRATEGIES)
def test_reloading_rows(poisoned, monkeypatch, name, norm):
    """Reading a tile a second time after the row sums (the rule at d = 16384, forced here at
    small d): right answers, and the same bits as keeping x̂ and g in registers — the same
    arithmetic in the same order.  With prefetch and two rows a tile too (the row-loop kernels'
    options; a one-row kernel reads neither, and an override of them is refused)."""
    row_loop = _tuning.RULES[name].row_loop
    for prefetch in ((False, True) if row_loop else (False,)):
        ov = {"reload": True, **({"block_r": 2, "prefetch": prefetch} if row_loop else {})}
        monkeypatch.setitem(_tuning.OVERRIDE, name, ov)
        check(name, norm, 13, 40, "bf16", groups=3)
        check(name, norm, 5, 33, "fp32", groups=5)
        x, dy, w, mean, rstd = make_inputs(norm, 11, 48, "bf16", "bf16", seed=4, device="cpu")
        got = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
        monkeypatch.setitem(_tuning.OVERRIDE, name, {**ov, "reload": False})
        plain = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
        if strategies.get(name).deterministic_by_design:
            same_bits(got, plain)
        else:   # the interpreter runs programs in order, so here the atomics repeat too
            assert torch.equal(got[0].view(torch.int16), plain[0].view(torch.int16))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_weight_loaded_as_a_tile(poisoned, monkeypatch, name, norm):
    """rowgrad_reload's W_TILE (the weight loaded in x's shape): right answers with bf16 and
    fp32 weights, and the same bits as the weight vector — the same values, the same
    arithmetic."""
    ov = {"reload": True, "block_r": 2}
    monkeypatch.setitem(_tuning.OVERRIDE, name, {**ov, "w_tile": True})
    check(name, norm, 13, 40, "bf16", weight_dtype="fp32", groups=3)
    check(name, norm, 5, 33, "fp16", groups=5)
    for wdt in ("fp32", "bf16"):
        x, dy, w, mean, rstd = make_inputs(norm, 11, 48, "bf16", wdt, seed=5, device="cpu")
        monkeypatch.setitem(_tuning.OVERRIDE, name, {**ov, "w_tile": True})
        tiled = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
        monkeypatch.setitem(_tuning.OVERRIDE, name, {**ov, "w_tile": False})
        plain = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
        for u, v in zip(tiled, plain):
            if u is not None:
                assert torch.equal(u, v) and torch.equal(u.view(torch.uint8), v.view(torch.uint8))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_rows_shared_by_programs(poisoned, monkeypatch, name, norm):
    """col_split: S programs share each block of rows, a part of the columns each, and read
    the other parts for the row sums alone.  Right answers at widths that leave the last part
    short (200 = 128 + 72) or a part empty of the row's end, with bf16 and fp32 weights, held
    or read twice; the same bits on a second call; and every program of a row agrees on the
    row sums: the same bits of dx as one program holding the whole row would give needs the
    same sums, so here dx must match the unsplit kernel's to rounding, and dγ too."""
    for ov in ({"col_split": 2}, {"col_split": 3, "reload": True}, {"col_split": 4}):
        monkeypatch.setitem(_tuning.OVERRIDE, name, ov)
        check(name, norm, 13, 200, "bf16", groups=3)
        check(name, norm, 7, 130, "bf16", weight_dtype="fp32", groups=2)
        check(name, norm, 5, 64, "fp32", groups=5)       # 64 columns in parts of 64: one empty
        check(name, norm, 9, 333, "fp16")                # groups=auto
        x, dy, w, mean, rstd = make_inputs(norm, 11, 300, "bf16", "fp32", seed=6, device="cpu")
        first = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
        same_bits(first, strategies.get(name).backward(x, dy, w, mean, rstd, groups=2))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name", ["disjoint_block", "disjoint_fused"])
def test_row_sums_exchanged(poisoned, monkeypatch, name, norm):
    """exchange: the programs of a shared row hand each other their parts' row sums.  Under
    the interpreter programs run one after another, so a program always finds the sums of the
    parts before it and never those of the parts after it: both ways of getting a part's sums
    run in every call.  They must give the bits of the split row without the exchange (the
    same sums, however they came), right answers, and leave every word of the exchange EMPTY
    (-1) for the next call.  Tiles of 1 and of 2 rows, 2 and 3 parts, the last part short."""
    cases = [({"col_split": 2}, 13, 200, "bf16", "bf16", 3),
             ({"col_split": 3, "block_r": 2}, 9, 333, "fp16", "fp32", 2),
             ({"col_split": 2, "spin": 0}, 7, 130, "fp32", "fp32", 2)]
    for ov, rows, d, dt, wd, groups in cases:
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, dt, wd, seed=5, device="cpu")
        monkeypatch.setitem(_tuning.OVERRIDE, name, ov)
        plain = strategies.get(name).backward(x, dy, w, mean, rstd, groups=groups)
        monkeypatch.setitem(_tuning.OVERRIDE, name, {**ov, "exchange": True})
        for _ in range(2):
            same_bits(strategies.get(name).backward(x, dy, w, mean, rstd, groups=groups), plain,
                      (ov, d))
            exchange_words_empty()
        check(name, norm, rows, d, dt, weight_dtype=wd, groups=groups)


def test_split_rule_shares():
    """The parts of a shared row: multiples of 64 columns (aligned), covering the row, each no
    wider than the block it runs in; GROUPS=auto counts partial rows, so S programs a block
    of rows make S times fewer of them from the same programs; the shared-memory bound lowers
    the stages where the parts' tiles would not fit."""
    for d in (130, 12288, 16384, 20000, 32768, 65536):
        for parts in (2, 3, 4, 8):
            w = _tuning.split_width(d, parts)
            assert w % 64 == 0 and w * parts >= d and w - 64 < -(-d // parts)
            if w > _tuning.MAX_BLOCK_D:
                with pytest.raises(ValueError, match="wider than one block"):
                    _tuning.split_params(d, parts)
                continue
            p = _tuning.split_params(d, parts)
            assert p["col_split"] == parts and p["block_d"] >= w and p["one_chunk"]
    launch = dict(_tuning.split_params(16384, 2))
    from normbench.strategies import _groups
    assert _groups.row_loop_programs(8192, 16384, 132, launch) == 66
    assert _groups.row_loop_programs(8192, 16384, 132, {**launch, "col_split": 1}) == 132
    h200 = 232448
    assert _tuning.fit_stages({**launch, "num_stages": 3}, 2, h200) == 2
    assert _tuning.fit_stages({**launch, "num_stages": 3}, 4, h200) == 1
    assert _tuning.fit_stages({**_tuning.split_params(12288, 3), "block_r": 1}, 2, h200) == 3


def test_reload_rule():
    """Row-loop programs at d = 16384 read their tile twice (no spills); one-row programs and
    narrower rows keep it in registers (tune-4)."""
    assert _tuning.params("disjoint_block", 16384)["reload"]
    assert not _tuning.params("grouped_atomic", 16384)["reload"]
    for d in (768, 4096, 8192, 20000):
        assert not _tuning.params("disjoint_block", d)["reload"]
        assert not _tuning.params("atomic", d)["reload"]


_DT = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32]


@settings(max_examples=300, deadline=None)
@given(rows=st.integers(1, 5), d=st.integers(1, 6), xdt=st.sampled_from(_DT),
       dydt=st.sampled_from(_DT), wdt=st.sampled_from(_DT), sdt=st.sampled_from(_DT),
       dy_rows=st.integers(1, 5), w_len=st.integers(1, 6), s_len=st.integers(1, 5),
       with_mean=st.booleans(), x_t=st.booleans(), dy_t=st.booleans(), x_1d=st.booleans(),
       groups=st.sampled_from([None, 1, 3, 0, -1, True, 2.0, "2"]))
def test_the_fast_argument_check_is_never_looser_than_the_itemised_one(
        rows, d, xdt, dydt, wdt, sdt, dy_rows, w_len, s_len, with_mean, x_t, dy_t, x_1d, groups):
    """strategies._args: the one-pass check must accept only what the itemised checks accept,
    and whatever it refuses gets the itemised message (a ValueError naming the argument)."""
    from normbench.strategies._args import _explain, check_args
    x = torch.zeros(d, rows, dtype=xdt).t() if x_t else torch.zeros(rows, d, dtype=xdt)
    x = x[0] if x_1d else x
    dy = torch.zeros(d, dy_rows, dtype=dydt).t() if dy_t else torch.zeros(dy_rows, d, dtype=dydt)
    w = torch.zeros(w_len, dtype=wdt)
    rstd = torch.zeros(s_len, dtype=sdt)
    mean = torch.zeros(s_len, dtype=sdt) if with_mean else None
    try:
        _explain(x, dy, w, mean, rstd, groups)
        itemised = None
    except ValueError as e:
        itemised = str(e)
    try:
        check_args(x, dy, w, mean, rstd, groups)
        fast = None
    except ValueError as e:
        fast = str(e)
    assert fast == itemised


def _refused_alike(args: dict, want: str):
    """The five arguments `args` are refused with exactly `want` by the fast check and the
    itemised one alike, and by a strategy's call."""
    from normbench.strategies._args import _explain, check_args
    for check_fn in (check_args, _explain):
        with pytest.raises(ValueError) as e:
            check_fn(*args.values(), 2)
        assert str(e.value) == want
    with pytest.raises(ValueError, match=re.escape(want)):
        strategies.get("disjoint_block").backward(*args.values(), groups=2)


@pytest.mark.parametrize("arg", ["x", "dy", "weight", "mean", "rstd"])
@pytest.mark.parametrize("layout", ["to_sparse", "to_sparse_csr"])
def test_a_sparse_argument_is_refused_naming_it(arg, layout):
    """A sparse weight or rstd passed the checks and failed inside the implementation
    ('RuntimeError: unsupported memory format option Contiguous'), a sparse x was refused as
    'last dimension must be contiguous (stride 1), got strides (0, 0)', a CSR one as
    'RuntimeError: Sparse CSR tensors do not have strides': each is now a ValueError naming
    the argument and its layout, from the fast check and the itemised one alike."""
    from normbench.strategies._args import check_args
    args = dict(zip(("x", "dy", "weight", "mean", "rstd"),
                    make_inputs("layernorm", 4, 8, "fp32", "fp32", seed=0, device="cpu")))
    if layout == "to_sparse_csr" and args[arg].dim() != 2:
        pytest.skip("CSR takes 2-D tensors only")
    args[arg] = getattr(args[arg], layout)()
    want = f"{arg}: must be a dense (strided) tensor, got layout {args[arg].layout}"
    _refused_alike(args, want)
    one = dict(zip(args, make_inputs("rmsnorm", 3, 1, "fp32", "fp32", seed=0, device="cpu")))
    if arg in ("x", "dy"):          # d = 1: a column has any stride, not any layout
        one[arg] = one[arg].to_sparse()
        with pytest.raises(ValueError, match=f"{arg}: must be a dense"):
            check_args(*one.values(), None)


@pytest.mark.parametrize("arg", ["x", "dy", "weight", "mean", "rstd"])
def test_an_argument_with_the_negative_bit_is_refused_naming_it(arg):
    """torch._neg_view(dy) (a lazy negation: the storage holds dy, the bit says negate) was
    accepted and the kernels read the storage: dx and dγ came back sign-flipped, silently
    (errors of 2.0).  Each of the five is now a ValueError naming it, from the fast check and
    the itemised one alike; resolved, the same values are accepted and right."""
    from normbench.harness.inputs import errors, reference
    args = dict(zip(("x", "dy", "weight", "mean", "rstd"),
                    make_inputs("layernorm", 4, 8, "fp32", "fp32", seed=0, device="cpu")))
    args[arg] = torch._neg_view(args[arg])
    want = f"{arg}: has the negative bit set (a lazy negation view); call .resolve_neg() first"
    _refused_alike(args, want)
    args[arg] = args[arg].resolve_neg()
    got = strategies.get("disjoint_block").backward(*args.values(), groups=2)
    assert max(e for e in errors(got, reference(*args.values())) if e is not None) < 1e-5


def test_statistics_as_pytorch_saves_them_are_refused_saying_how_to_pass_them():
    """torch.native_layer_norm saves mean and rstd shaped (rows, 1) (torch._fused_rms_norm its
    rstd too), and on CPU in x's dtype for 16-bit x and weight; backward refused them as
    'mean: shape (7, 1) must be (7,)' though the README called them 'as a forward pass saves
    them'.  They are still refused (the kernels take (rows,) fp32), and the message says how
    to pass them; so passed, they are accepted."""
    x = torch.randn(7, 24)
    dy, w = torch.randn_like(x), torch.randn(24)
    _, mean, rstd = torch.native_layer_norm(x, (24,), w, None, 1e-5)
    args = dict(x=x, dy=dy, weight=w, mean=mean, rstd=rstd)
    _refused_alike(args, "mean: shape (7, 1) must be (7,); PyTorch's native_layer_norm saves "
                         "(rows, 1): pass mean.view(-1)")
    _refused_alike({**args, "mean": mean.view(-1)},
                   "rstd: shape (7, 1) must be (7,); PyTorch's native_layer_norm and "
                   "_fused_rms_norm save (rows, 1): pass rstd.view(-1)")
    _, rms_rstd = torch._fused_rms_norm(x, [24], w, 1e-5)
    _refused_alike({**args, "mean": None, "rstd": rms_rstd},
                   "rstd: shape (7, 1) must be (7,); PyTorch's native_layer_norm and "
                   "_fused_rms_norm save (rows, 1): pass rstd.view(-1)")
    _, m3, _ = torch.native_layer_norm(x.view(7, 1, 24), (24,), w, None, 1e-5)
    _refused_alike({**args, "mean": m3},
                   "mean: shape (7, 1, 1) must be (7,); PyTorch's native_layer_norm saves x's "
                   "leading shape and a trailing 1: pass mean.view(-1)")
    _refused_alike({**args, "mean": torch.zeros(1, 7)}, "mean: shape (1, 7) must be (7,)")
    xh, dyh, wh = x.bfloat16(), dy.bfloat16(), w.bfloat16()
    _, mh, rh = torch.native_layer_norm(xh, (24,), wh, None, 1e-5)
    assert mh.dtype == rh.dtype == torch.bfloat16       # PyTorch's CPU kernel, as the README says
    _refused_alike(dict(x=xh, dy=dyh, weight=wh, mean=mh.view(-1), rstd=rh.view(-1)),
                   "mean: dtype must be torch.float32, got torch.bfloat16; PyTorch's "
                   "native_layer_norm on CPU saves x's dtype for 16-bit x and weight: pass "
                   "mean.float()")
    _refused_alike({**args, "mean": None, "rstd": torch.zeros(7, dtype=torch.float64)},
                   "rstd: dtype must be torch.float32, got torch.float64")
    from normbench.harness.inputs import errors, reference
    for a in ((x, dy, w, mean.view(-1).float(), rstd.view(-1).float()),
              (x, dy, w, None, rms_rstd.view(-1).float()),
              (xh, dyh, wh, mh.view(-1).float(), rh.view(-1).float())):
        got = strategies.get("disjoint_block").backward(*a, groups=2)
        assert max(e for e in errors(got, reference(*a)) if e is not None) < 1e-2


# ------------------------------------------------------- the torch baseline follows PyTorch's path
def test_torch_takes_autocasts_fp32_path_where_the_native_kernel_refuses(poisoned, monkeypatch):
    """As the CUDA kernel does, a stand-in native op refuses bf16 x with an fp32 weight: the
    baseline then upcasts x, dy to fp32 through the native fp32 kernel (autocast's path), says
    so in its notes, and is still right against the fp64 reference."""
    from normbench.strategies import torch_native as tn
    real = tn._native
    seen = []

    def refusing(dy, x, weight, mean, rstd):
        seen.append((x.dtype, weight.dtype))
        if x.dtype != weight.dtype:
            raise RuntimeError("expected scalar type BFloat16 but found Float")
        return real(dy, x, weight, mean, rstd)
    monkeypatch.setattr(tn, "_native", refusing)
    monkeypatch.setattr(tn, "_paths", {})
    import checks       # the fp32 path owes fp32 dγ/dβ: not the CPU native kernel's ✗
    monkeypatch.delitem(checks.FP32_DW_OF_16BIT_X_OFF, ("torch", "layernorm", "cpu"))
    check("torch", "layernorm", 9, 130, "bf16", weight_dtype="fp32")
    x, dy, w, mean, rstd = make_inputs("layernorm", 3, 8, "bf16", "fp32", seed=0, device="cpu")
    note = tn.notes(x, dy, w, mean, rstd)
    assert note.startswith("aten.native_layer_norm_backward refuses bf16 x with fp32 weight")
    assert "expected scalar type BFloat16 but found Float" in note and "autocast's path" in note
    assert (torch.float32, torch.float32) in seen          # the fp32 kernel did the work
    assert strategies.get("torch").fn(x, dy, w, mean, rstd)[0].dtype == torch.bfloat16


def test_torch_uses_the_native_kernel_where_it_takes_the_inputs(monkeypatch):
    from normbench.strategies import torch_native as tn
    monkeypatch.setattr(tn, "_paths", {})
    x, dy, w, mean, rstd = make_inputs("layernorm", 3, 8, "fp32", "fp32", seed=0, device="cpu")
    assert tn._path(x, w, mean) == ("native", "aten.native_layer_norm_backward (native kernel)")
    for norm in NORMS:
        for dt in DTYPES:
            x, dy, w, mean, rstd = make_inputs(norm, 3, 8, dt, "fp32", seed=0, device="cpu")
            path, why = tn._path(x, w, mean)
            # never a hand-written path for LayerNorm; RMSNorm's composite only where no kernel is
            assert path in (("native", "upcast") if norm == "layernorm" else ("native", "upcast", "composite"))
            assert (path == "composite") == ("no " in why and "kernel" in why)


@pytest.mark.parametrize("name", ["disjoint_smem", "disjoint_cluster"])
def test_gluon_strategies_registered_unavailable_where_they_cannot_run(name):
    """The Gluon strategies on CPU (the interpreter): known, unavailable, deterministic by
    design, and saying why (`_device.gluon_unavailable`) — a config that names one records it
    as skipped."""
    e = strategies.get(name)
    assert name in strategies.known()
    if strategies.interpreted():
        assert not e.available and "interpreter" in e.reason
        assert name not in strategies.names()
        with pytest.raises(RuntimeError, match="not available"):
            x = torch.zeros(2, 64)
            e.backward(x, x, torch.ones(64), None, torch.ones(2))
    assert e.deterministic_by_design and e.uses_groups


@pytest.mark.parametrize("norm", NORMS)
def test_fused_tail_reduce(poisoned, monkeypatch, norm):
    """disjoint_fused's `tail` (the last K programs to finish sum the partial rows by column
    slices, the others leave at once): under the interpreter K is 1 — the last ticket sums
    every slice — right answers, the same bits again, with the rows dealt round-robin and in
    blocks, and the counters back at zero after every call (or the next call would be wrong)."""
    from normbench.strategies import disjoint_fused as f
    plans = fused_launch_plans(monkeypatch)
    for over in ({"tail": 4, "interleave": True, "block_r": 2}, {"tail": 2, "block_r": 1}):
        monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_fused", over)
        check("disjoint_fused", norm, 13, 40, "bf16", groups=3)
        check("disjoint_fused", norm, 9, 33, "fp16", groups=9)
        x, dy, w, mean, rstd = make_inputs(norm, 11, 48, "fp32", "fp32", seed=4, device="cpu")
        e = strategies.get("disjoint_fused")
        first = e.backward(x, dy, w, mean, rstd, groups=2)
        same_bits(first, e.backward(x, dy, w, mean, rstd, groups=2))
        assert int(f._counter(x.device).abs().sum()) == 0
    tails = [m["TAIL"] for _, m, _ in plans]
    assert tails and set(tails) == {1}, tails


def _ln_inputs(rows, d, seed=1):
    return make_inputs("layernorm", rows, d, "fp32", "fp32", seed=seed, device="cpu")


@pytest.mark.parametrize("name", IMPLS)
def test_rows_that_overlap_with_a_row_stride_of_one(poisoned, name):
    """x.unfold(0, d, 1): rows overlapping, strides (1, 1).  empty_like(x) would be
    column-major there; dx must come back row-major and right."""
    _x, dy, w, _m, _r = _ln_inputs(6, 8)
    x = torch.randn(13, generator=torch.Generator().manual_seed(3)).unfold(0, 8, 1)
    xd = x.double()
    mean = xd.mean(1).float()
    rstd = torch.rsqrt(xd.var(1, unbiased=False) + 1e-5).float()
    try:
        dx, dw, db = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
    except NotImplementedError as e:
        pytest.skip(f"{name}: {e}")
    assert dx.stride(1) == 1
    ref = reference(x, dy, w, mean, rstd)
    for got, want in zip((dx, dw, db), ref):
        assert rel_error(got, want) < 1e-4, name


@pytest.mark.parametrize("name", IMPLS)
def test_statistics_in_one_strided_buffer(poisoned, name):
    """mean and rstd as columns of one (rows, 2) buffer, the weight a strided view: every
    implementation reads them by their strides or makes them dense first."""
    x, dy, w, mean, rstd = _ln_inputs(6, 37)
    stats_buf = torch.stack([mean, rstd], 1)
    w2 = torch.stack([w, w], 1)[:, 0]
    assert not w2.is_contiguous() and not stats_buf[:, 1].is_contiguous()
    try:
        got = strategies.get(name).backward(x, dy, w2, stats_buf[:, 0], stats_buf[:, 1])
    except NotImplementedError as e:
        pytest.skip(f"{name}: {e}")
    for g, want in zip(got, reference(x, dy, w, mean, rstd)):
        assert rel_error(g, want) < 1e-4, name


@pytest.mark.parametrize("name", IMPLS)
def test_a_column_of_one_element_takes_any_stride(poisoned, name):
    """d = 1 as a transposed row: strides (1, rows), which torch calls contiguous and
    .contiguous() leaves as it is — accepted, and right."""
    g = torch.Generator().manual_seed(5)
    x, dy = torch.randn(1, 7, generator=g).t(), torch.randn(1, 7, generator=g).t()
    w = torch.randn(1, generator=g)
    assert x.is_contiguous() and x.stride() == (1, 7)
    mean = x.double().mean(1).float()
    rstd = torch.rsqrt(x.double().var(1, unbiased=False) + 1e-5).float()
    try:
        got = strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
    except NotImplementedError as e:
        pytest.skip(f"{name}: {e}")
    for g_, want in zip(got, reference(x, dy, w, mean, rstd)):
        assert rel_error(g_, want) < 1e-4, name


def test_the_reduce_takes_64_bit_offsets_where_groups_times_d_reach_2_31(monkeypatch):
    """An explicit GROUPS of 32768 at d = 65536 holds 2^31 partial elements: the reduce's
    offsets go 64-bit there (`reduce.wide`).  Too big to run here, so the 64-bit kernels are
    forced at a small shape: the same bits as the 32-bit ones."""
    from normbench.strategies import reduce as red
    assert red.wide(32768, 65536) and not red.wide(32767, 65536) and not red.wide(528, 16384)
    x, dy, w, mean, rstd = _ln_inputs(9, 40)
    for name in ("disjoint_block", "disjoint_fused", "grouped_atomic"):
        narrow = strategies.get(name).backward(x, dy, w, mean, rstd, groups=3)
        with monkeypatch.context() as m:
            m.setattr(red, "wide", lambda g, n: True)
            if name == "disjoint_fused":
                import normbench.strategies.disjoint_fused as f
                m.setattr(f, "wide", lambda g, n: True)
            wide = strategies.get(name).backward(x, dy, w, mean, rstd, groups=3)
        same_bits(narrow, wide, name)


def test_names_the_command_line_cannot_select_are_refused():
    from normbench.strategies import _registry
    for bad in ("", "a,b", "a/b", "kind:x", " x", ".x"):
        with pytest.raises(ValueError, match="implementation name"):
            _registry.register(bad, kind="strategy", deterministic_by_design=True,
                               uses_groups=False)(lambda *a, **k: None)
    with pytest.raises(ValueError, match="kind must be one of"):
        _registry.register_unavailable("x_weird", kind="weird", reason="r")
    with pytest.raises(ValueError, match="registered twice"):
        _registry.register_unavailable("atomic", kind="strategy", reason="r")


def test_a_plugin_that_exits_while_loading_is_never_silently_missing(monkeypatch):
    from normbench.strategies import _registry

    def exits():
        raise SystemExit(3)
    monkeypatch.setattr(_registry, "_plugins_loaded", False)
    monkeypatch.setattr(_registry, "_plugin_error", None)
    monkeypatch.setattr(_registry, "_plugin_sources", lambda: [("p_exit", "test", exits, {})])
    # one line (PluginError, exit 2) now and on every later call; a bare SystemExit let
    # `report` and `merge` exit silently with the plugin's code
    with pytest.raises(_registry.PluginError, match="p_exit .* cannot be loaded: SystemExit: 3"):
        _registry.names()
    with pytest.raises(_registry.PluginError, match="p_exit .* did not finish loading"):
        _registry.names()


def test_a_contention_model_of_groups_needs_groups():
    """A model counting GROUPS for an implementation that never gets one is refused at
    registration (its every record was a TypeError)."""
    from normbench.strategies import _registry
    for model in (strategies.Contention(writers="rows/groups"),
                  strategies.Contention(writers=1, partial_rows="groups")):
        with pytest.raises(ValueError, match="uses_groups is False"):
            _registry.register("x_nogroups", kind="strategy", deterministic_by_design=True,
                               uses_groups=False, contention=model)(lambda *a, **k: None)
    assert "x_nogroups" not in _registry.known()


@pytest.mark.parametrize("ctx", [torch.no_grad, torch.inference_mode])
def test_torch_rmsnorm_under_no_grad_and_inference_mode(ctx):
    """torch's CPU RMSNorm path differentiates F.rms_norm's composite ops: it must do so
    whatever grad mode the caller is in."""
    x, dy, w, _m, rstd = make_inputs("rmsnorm", 6, 16, "fp32", "fp32", seed=2, device="cpu")
    ref = reference(x, dy, w, None, rstd)
    with ctx():
        xi, dyi, wi, ri = (t.clone() for t in (x, dy, w, rstd))
        dx, dw, db = strategies.get("torch").backward(xi, dyi, wi, None, ri)
    assert db is None and rel_error(dx, ref[0]) < 1e-5 and rel_error(dw, ref[1]) < 1e-5


def test_groups_from_records_and_bad_groups_in_the_models():
    """A GROUPS read back from records is a numpy integer: taken; the model functions refuse
    what backward refuses, naming the argument."""
    import numpy as np
    e = strategies.get("disjoint_block")
    x, dy, w, mean, rstd = _ln_inputs(8, 32)
    same_bits(e.backward(x, dy, w, mean, rstd, groups=np.int64(2)),
              e.backward(x, dy, w, mean, rstd, groups=2))
    assert e.effective_groups(np.int64(8), np.int64(32), np.int64(3)) == 3
    for rows, g, text in ((8, 0, "groups: must be >= 1"), (8, -2, "groups: must be >= 1"),
                          (0, 2, "rows: must be in 1..1073741824, got 0"),
                          (8, 2.5, "positive int")):
        with pytest.raises(ValueError, match=text):
            e.workspace_bytes(rows, 32, g)


BAD_SIZES = [((4, 131072), "^d: must be in 1..65536, got 131072$"),       # backward refuses it
             ((4, 0), "^d: must be in 1..65536, got 0$"),
             ((4, 100.0), "^d: must be an int, got 100.0$"),
             ((4, 8.0), "^d: must be an int, got 8.0$"),
             ((4.5, 8), "^rows: must be an int, got 4.5$"),
             ((True, 8), "^rows: must be an int, got True$"),
             ((2**30 + 1, 8), "^rows: must be in 1..1073741824, got 1073741825$"),
             ((0, 8), "^rows: must be in 1..1073741824, got 0$")]


@pytest.mark.parametrize("name", IMPLS)
@pytest.mark.parametrize("size,text", BAD_SIZES, ids=[str(s) for s, _ in BAD_SIZES])
def test_the_model_functions_refuse_the_shapes_backward_refuses(name, size, text):
    """effective_groups and the model functions on it (workspace_bytes, writers_per_slot,
    default_groups) answer only for a shape backward would run, for every entry, and name the
    argument: d = 131072 gave 4 GROUPS, d = 100.0 an AttributeError, d = 8.0 float bytes after
    a cache hit, rows = 4.5 blamed the implementation's rule and rows = True was taken."""
    e = strategies.get(name)
    for model in (lambda: e.effective_groups(*size, None), lambda: e.workspace_bytes(*size, 2),
                  lambda: e.writers_per_slot(*size, None),
                  lambda: strategies.default_groups(name, *size)):
        with pytest.raises(ValueError, match=text):
            model()


@pytest.mark.parametrize("name", [n for n in IMPLS if not strategies.get(n).uses_groups])
@pytest.mark.parametrize("groups,text", [
    (0, "^groups: must be >= 1, got 0$"), (-5, "^groups: must be >= 1, got -5$"),
    (2.5, "^groups: must be a positive int or None, got 2.5$")])
def test_an_entry_that_uses_no_groups_refuses_in_its_models_the_groups_backward_refuses(
        name, groups, text):
    """atomic's workspace_bytes and writers_per_slot took groups = 0 or -5, which its
    backward refuses: refused alike, naming the argument."""
    e = strategies.get(name)
    x, dy, w, mean, rstd = _ln_inputs(8, 32)
    for model in (lambda: e.backward(x, dy, w, mean, rstd, groups=groups),
                  lambda: e.effective_groups(8, 32, groups),
                  lambda: e.workspace_bytes(8, 32, groups),
                  lambda: e.writers_per_slot(8, 32, groups)):
        with pytest.raises(ValueError, match=text):
            model()
    assert e.effective_groups(8, 32, 3) is None and e.workspace_bytes(8, 32, 3) >= 0


@pytest.mark.parametrize("name", ["atomic", "disjoint_block"])
def test_workspace_bytes_refuses_a_weight_dtype_it_cannot_price(name):
    """atomic priced weight_dtype "float32" at 512 B where "fp32" is 0, and took "bogus" or
    torch.float64: workspace_bytes (the checked entry point) refuses what no record names."""
    e = strategies.get(name)
    for wd in ("float32", "bogus", torch.float64, 32, ["fp32"]):
        with pytest.raises(ValueError, match=r"^weight_dtype: must be None, 'fp32', 'bf16', "
                                             rf"'fp16', .* got {re.escape(repr(wd))}$"):
            e.workspace_bytes(64, 32, 4, True, wd)
    sizes = {wd: e.workspace_bytes(64, 32, 4, True, wd)
             for wd in (None, "fp32", "bf16", "fp16", torch.float32, torch.bfloat16, torch.float16)}
    assert sizes["fp32"] == sizes[torch.float32] and sizes["bf16"] == sizes[torch.bfloat16] == \
        sizes[None] == sizes["fp16"] == sizes[torch.float16]
    assert (sizes["fp32"] == 0) == (name == "atomic")


def test_a_device_the_groups_rule_cannot_ask_is_a_value_error_naming_it():
    """default_groups(..., "cuda") without a CUDA GPU was a bare AssertionError from torch,
    "xyz" a long RuntimeError: a ValueError naming the device, not kept in sm_count's cache
    (asked again, it is refused again; a good device is still cached)."""
    from normbench.strategies import _device
    bad = [("xyz", r"^device: 'xyz' is not a device torch knows$"),
           ("cuda:99", r"^device: cuda:99 is not available here \(")]
    if not torch.cuda.is_available():
        bad.append(("cuda", r"^device: cuda is not available here \(no CUDA GPU\)$"))
    for device, text in bad:
        for ask in (lambda: strategies.default_groups("disjoint_block", 1000, 512, device),
                    lambda: strategies.sm_count(device), lambda: strategies.sm_count(device)):
            with pytest.raises(ValueError, match=text):
                ask()
        assert device not in _device._SMS
    assert strategies.sm_count("cpu") == 4 and _device._SMS["cpu"] == 4


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter's case: no CUDA GPU")
def test_triton_imported_first_without_a_gpu_is_one_clear_error():
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    r = subprocess.run([sys.executable, "-c", "import triton; import normbench.strategies"],
                       env=env, capture_output=True, text=True, timeout=120,
                       cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert r.returncode != 0 and "triton was imported before normbench" in r.stderr


@pytest.mark.parametrize("rows, d, groups", [(10, 33, None), (64, 256, None), (64, 256, 16),
                                             (40, 100, 7), (5, 3000, None), (300, 64, 30)])
@pytest.mark.parametrize("name", [n for n in IMPLS if strategies.get(n).uses_groups
                                  and strategies.get(n).max_groups is not None])
def test_every_partial_row_counted_receives_rows(name, rows, d, groups):
    """groups_effective (and the workspace it prices) counts only partial rows that receive a
    row: disjoint_strided deals tiles of BLOCK_R rows round-robin, so at 10 rows and 5
    partial rows four of them were zeros the reduce read for nothing, yet recorded."""
    from normbench.strategies import _launch
    e = strategies.get(name)
    x, dy, w, mean, rstd = make_inputs("rmsnorm", rows, d, "fp32", "fp32", seed=3, device="cpu")
    e.backward(x, dy, w, mean, rstd, groups=groups)
    g = e.effective_groups(rows, d, groups)
    pw, _ = _launch.scratch(g, d, False, x.device)
    empty = [p for p in range(g) if not pw[p].abs().sum() > 0]
    assert not empty, f"{name}: partial rows {empty} of {g} received no row"
    if groups is not None and name != "disjoint_strided":
        assert g == math.ceil(rows / math.ceil(rows / groups))       # contiguous blocks


MODULO = ("grouped_atomic", "spin_lock")


@pytest.mark.parametrize("name", MODULO)
def test_modulo_strategies_run_the_groups_asked_up_to_rows(monkeypatch, name):
    """Row r goes to partial row r mod GROUPS, so any GROUPS ≤ rows gives every partial row a
    row: it runs as asked (not ⌈rows/⌈rows/GROUPS⌉⌉: 60 and 99 at 100 rows ran 50), and the
    auto rule's answer runs where rows allow (spin_lock's 528 at 16384 rows ran 512,
    grouped_atomic's 264 ran 261).  The model follows: writers and workspace at that GROUPS."""
    from normbench.strategies import _device
    e = strategies.get(name)
    assert e.partition == "modulo"
    assert [e.effective_groups(100, 4, g) for g in (50, 60, 99, 100, 101, 4096)] == \
        [50, 60, 99, 100, 100, 100]
    assert e.effective_groups(5, 4, 4) == 4                     # configs/cpu.yaml's groups: [4]
    assert e.writers_per_slot(100, 4, 99) == 2
    assert e.workspace_bytes(100, 4, 99, False) >= 99 * 4 * 4
    monkeypatch.setattr(_device, "sm_count", lambda device=None: 132)
    for rows, d in ((16384, 1024), (16384, 4096), (16384, 8192), (300, 1024), (7, 4096)):
        rule = e.auto_groups(rows, d, 132, e.params(d))
        assert e.effective_groups(rows, d, None) == min(rule, rows), (rows, d, rule)
    want = {"spin_lock": 528, "grouped_atomic": 66}[name]
    assert e.effective_groups(16384, 4096, None) == want
    if name == "grouped_atomic":
        assert e.effective_groups(16384, 1024, None) == 264


@pytest.mark.parametrize("name", [n for n in strategies.known()
                                  if strategies.get(n).uses_groups and n not in MODULO])
def test_block_strategies_keep_the_contiguous_block_cap(name):
    """Every other strategy's GROUPS is what contiguous blocks of ⌈rows/GROUPS⌉ rows allow,
    after its max_groups (disjoint_strided's measured cap included, unchanged)."""
    e = strategies.get(name)
    assert e.partition == "block"
    for rows, d, g in ((100, 4, 50), (100, 4, 60), (100, 4, 99), (5, 64, 4), (16384, 4096, 528),
                       (16384, 1024, 264), (1000, 512, 7)):
        cap = e.max_groups(rows, d, e.params(d)) if e.max_groups else rows
        asked = max(1, min(g, cap))
        assert e.effective_groups(rows, d, g) == math.ceil(rows / math.ceil(rows / asked))


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("rows, groups", [(10, 9), (100, 99), (100, 60), (7, 6), (37, 36)])
@pytest.mark.parametrize("name", MODULO)
def test_modulo_strategies_right_at_groups_near_rows(poisoned, name, norm, rows, groups):
    """At GROUPS just under rows (most partial rows get one row, a few two; GROUPS not
    dividing rows) the answers are right, every partial row written (the workspace is poisoned:
    spin_lock's is never zeroed, so an empty one would read NaN into dγ)."""
    assert strategies.get(name).effective_groups(rows, 40, groups) == groups
    check(name, norm, rows, 40, "fp32", groups=groups)


@pytest.mark.parametrize("name,ov,d,why", [
    # a typo: the A/B timed the rule twice
    ("atomic", {"num_warp": 16}, 256, r"unknown tuning option 'num_warp' for atomic \(known: "),
    ("disjoint_block", {"num_warp": 16}, 256, r"unknown tuning option 'num_warp' for disjoint_bl"),
    # one_chunk alone at d > 16384: the first 8192 columns of each row computed, the rest not
    ("atomic", {"one_chunk": True}, 16400, r"atomic: one_chunk true with block_d 8192 at d = 16400"),
    ("disjoint_block", {"one_chunk": True}, 16400, r"disjoint_block: one_chunk true with block_d"),
    # a part (128 columns at d = 130 in two) wider than the block: its last columns uncomputed
    ("disjoint_block", {"col_split": 2, "block_d": 64}, 130,
     r"disjoint_block: block_d 64 with col_split 2 at d = 130: each part is 128 columns"),
    ("disjoint_fused", {"col_split": 2, "block_d": 64}, 130, r"disjoint_fused: block_d 64 with"),
    # what a one-row kernel never reads, set other than its rule: the rule timed under a new name
    ("atomic", {"num_stages": 3}, 256, r"atomic runs one row a program, whose kernel never reads "
                                       r"'num_stages'"),
    ("spin_lock", {"pdl": True}, 256, r"spin_lock runs one row .*'pdl'"),
    ("grouped_atomic", {"block_r": 4}, 256, r"grouped_atomic runs one row .*'block_r'"),
])
def test_tuning_overrides_that_change_nothing_or_run_wrong_columns_are_refused(
        monkeypatch, name, ov, d, why):
    """A tuning override (bench/ab_repeat.py, bench/tune.py) that would time nothing new or
    compute the wrong columns was accepted silently; `_tuning.params` refuses it in one line
    naming the strategy, the key and why."""
    monkeypatch.setitem(_tuning.OVERRIDE, name, ov)
    with pytest.raises(ValueError, match=why) as e:
        _tuning.params(name, d)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name,ov,d", [
    ("atomic", {"num_stages": 1}, 256),          # the rule's own value: harmless, allowed
    ("atomic", {"block_r": 1}, 256),
    ("disjoint_block", {"col_split": 2, "block_d": 128}, 130),
    ("disjoint_block", {"block_d": 1024}, 4096),
    ("disjoint_fused", {"tail": 2}, 4096),
    ("disjoint_strided", {"stage_from": 0, "inflight": 4}, 4096),
])
def test_tuning_overrides_that_apply_still_run(monkeypatch, name, ov, d):
    monkeypatch.setitem(_tuning.OVERRIDE, name, ov)
    assert _tuning.params(name, d)["block_d"] >= 1


@pytest.mark.parametrize("ov", [{"staged": True}, {"stage_from": 1}])
def test_strided_refuses_staged_where_disjoint_smem_is_unavailable(monkeypatch, ov):
    """`staged` or `stage_from` sends disjoint_strided to disjoint_smem's staged kernel; where
    that is unavailable the call failed with AttributeError 'run_staged'.  It is refused in
    one line with disjoint_smem's reason."""
    from normbench.strategies import disjoint_smem
    monkeypatch.setattr(disjoint_smem, "_WHY", "no Gluon here")
    inputs = make_inputs("rmsnorm", 8, 64, "fp32", "fp32", seed=1, device="cpu")
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", ov)
    key = next(iter(ov))
    with pytest.raises(ValueError, match=f"disjoint_strided: {key} runs disjoint_smem's staged "
                                         "kernel, unavailable here: no Gluon here"):
        strategies.get("disjoint_strided").backward(*inputs, groups=2)
