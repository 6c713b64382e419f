"""The launch and GROUPS rules (declared with each strategy's registration; the shared ones in
strategies/_tuning.py, _groups.py; disjoint_fused.reduce_tile): the measured rules of
docs/PERF_NOTES.md, and the invariants the GPU-only code relies on."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import torch

from normbench import strategies
from normbench.strategies import _device, _tuning
from normbench.strategies.disjoint_fused import reduce_tile, tail_tile


def auto(name, rows, d, sms=132):
    """The GROUPS=auto rule `name` registered with, at `sms` SMs."""
    e = strategies.get(name)
    return e.auto_groups(rows, d, sms, e.params(d))


def fused_auto(rows, d, sms):
    return auto("disjoint_fused", rows, d, sms)


@pytest.mark.parametrize("d,block_r,warps,stages", [
    (768, 4, 4, 3), (1024, 4, 4, 3),        # tune-2: 65536x1024 best block_r 4, 4 warps
    (2048, 4, 8, 3),                        # (unmeasured: between the two)
    (4096, 2, 16, 3),                       # tune-7: 16384x4096 pipelined, 16 warps
    (8192, 1, 16, 3),                       # 16384x8192: block_r 1, 16 warps
    (16384, 1, 16, 1),                      # tune-3/7: reload; neither prefetch nor stages
    (20000, 1, 16, 1),                      # chunked rows
])
def test_row_loop_rule_is_the_measured_one(d, block_r, warps, stages):
    p = _tuning.params("disjoint_block", d)
    assert (p["block_r"], p["num_warps"], p["num_stages"]) == (block_r, warps, stages)
    assert not p["prefetch"]                # tune-7: the pipeliner beat the register prefetch


def test_stages_fit_the_shared_memory():
    """num_stages − 1 tiles of x and dy (+1 KB) must fit a program's shared memory."""
    p = _tuning.params("disjoint_block", 8192)          # [1, 8192] tiles, 3 stages
    assert _tuning.fit_stages(p, 2, 227 * 1024) == 3    # bf16: 2 × 32 KB
    assert _tuning.fit_stages(p, 4, 227 * 1024) == 3    # fp32: 2 × 64 KB
    assert _tuning.fit_stages(p, 4, 100 * 1024) == 2    # a smaller GPU: one tile ahead
    assert _tuning.fit_stages(p, 4, 48 * 1024) == 1     # no room: not pipelined
    assert _tuning.fit_stages(_tuning.params("disjoint_block", 16384), 4, 1024) == 1


@pytest.mark.parametrize("d,groups", [(1024, 264), (4096, 132), (8192, 132), (16384, 132)])
def test_auto_blocks_on_an_h200(d, groups):
    assert auto("disjoint_block", 65536, d) == groups


def test_params_are_cached_and_read_only_but_overrides_apply(monkeypatch):
    p = _tuning.params("disjoint_block", 4096)
    assert p is _tuning.params("disjoint_block", 4096)
    with pytest.raises(TypeError):
        p["block_r"] = 3
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"block_r": 1, "block_d": 2048})
    q = _tuning.params("disjoint_block", 4096)
    assert q["block_r"] == 1 and q["block_d"] == 2048 and q["one_chunk"] is False


def test_an_overrides_parameters_are_kept_while_it_holds_the_same_values(monkeypatch):
    """Worked out at every call, an override's checked parameters cost the host 10-20 µs a
    call (round 50: an A/B read `{"num_warps": 8}` slower by call time, faster by GPU time).
    They are kept for the same override object holding the same values, and follow a change
    of either; a refused override is refused at every call."""
    ov = {"num_warps": 8}
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", ov)
    p = _tuning.params("disjoint_strided", 4096)
    assert p["num_warps"] == 8 and p is _tuning.params("disjoint_strided", 4096)
    with pytest.raises(TypeError):
        p["num_warps"] = 4
    assert _tuning.params("disjoint_strided", 2048) is not p
    ov["num_warps"] = 4                                  # the same object, changed in place
    assert _tuning.params("disjoint_strided", 4096)["num_warps"] == 4
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", {"num_warps": 2})
    assert _tuning.params("disjoint_strided", 4096)["num_warps"] == 2
    ov = {"num_warps": 8}
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", ov)
    assert _tuning.params("disjoint_strided", 4096)["num_warps"] == 8
    ov["num_warps"] = 8.0                                # equal, but of another kind: refused
    with pytest.raises(ValueError, match="num_warps"):
        _tuning.params("disjoint_strided", 4096)
    ov["num_warps"] = 8
    p = _tuning.params("disjoint_strided", 4096)
    _tuning._frozen.cache_clear()                        # the rules reset (as tests do): so are
    assert _tuning.params("disjoint_strided", 4096) is not p       # the override's parameters
    bad = {"num_warp": 8}
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", bad)
    for _ in range(2):
        with pytest.raises(ValueError, match="num_warp"):
            _tuning.params("disjoint_strided", 4096)


@settings(max_examples=300, deadline=None)
@given(d=st.integers(1, 65536), groups=st.integers(1, 132))
def test_grid_sync_slices_cover_every_column_once(d, groups):
    """Program p reduces columns [p·RED_N, (p+1)·RED_N): together they must cover [0, d), and
    a step reads at most 4096 elements (never fewer than one partial row)."""
    red_g, red_n = reduce_tile(groups, d)
    assert red_n & (red_n - 1) == 0 and red_g & (red_g - 1) == 0
    assert groups * red_n >= d
    assert red_g >= 1 and (red_g * red_n <= 4096 or red_g == 1)
    assert red_g <= _tuning.pow2(groups)


@given(a=st.integers(0, 10 ** 12), b=st.integers(1, 10 ** 6))
def test_host_integer_helpers(a, b):
    assert _tuning.cdiv(a, b) == -(-a // b) == (a + b - 1) // b
    if a:
        p = _tuning.pow2(a)
        assert p >= a and p & (p - 1) == 0 and (p == 1 or p // 2 < a)


def test_fused_auto_follows_the_row_loop_rule():
    """tune-8: two programs of 4 warps per SM at d ≤ 1024, one of 8–16 warps wider; never
    more than rows."""
    assert fused_auto(65536, 1024, 132) == 264 and fused_auto(2048, 768, 132) == 264
    assert fused_auto(16384, 4096, 132) == 132 and fused_auto(8192, 16384, 132) == 132
    assert fused_auto(50, 768, 132) == 50


def test_nondeterministic_rules_from_tune_4():
    """grouped_atomic: SMs/2 partial rows, 2·SMs at d ≤ 1024; spin_lock: 8 warps at d ≤ 1024."""
    assert auto("grouped_atomic", 65536, 4096) == 66
    assert auto("grouped_atomic", 65536, 1024) == 264
    assert auto("grouped_atomic", 100, 1024) == 100       # never more than rows
    assert auto("spin_lock", 65536, 4096) == 528 and auto("spin_lock", 65536, 8192) == 132
    assert _tuning.params("spin_lock", 1024)["num_warps"] == 8
    assert _tuning.params("spin_lock", 4096)["num_warps"] == 8
    assert _tuning.params("grouped_atomic", 1024)["num_warps"] == 4
    assert _tuning.params("spin_lock", 16384)["num_warps"] == 16


def test_cached_auto_groups_follow_overrides(monkeypatch):
    """backward() caches groups=auto per shape, but not while a tuning override is set: the
    auto GROUPS of disjoint_block depends on its warps."""
    from normbench import strategies
    e = strategies.get("disjoint_block")
    seen = []
    monkeypatch.setattr(e, "fn", lambda *a, groups: seen.append(groups))
    x = torch.zeros(4096, 1024)
    args = (x, x, torch.ones(1024), torch.zeros(4096), torch.ones(4096))
    monkeypatch.setattr(_device, "sm_count", lambda device=None: 132)
    e._groups.clear()
    e.backward(*args)
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"num_warps": 8})
    e.backward(*args)
    monkeypatch.delitem(_tuning.OVERRIDE, "disjoint_block")
    e.backward(*args)
    e._groups.clear()
    assert seen == [256, 128, 256], seen     # 4 warps: 2·SMs (capped: 16 rows each); 8: SMs


# ---------------------------------------------------------------- rules declared with the entry
SHIPPED = ("atomic", "grouped_atomic", "spin_lock", "disjoint_block", "disjoint_fused")


@pytest.mark.parametrize("name", SHIPPED)
def test_a_strategy_name_is_written_once(name):
    """The registration is the only place a strategy's own name appears in the package: its
    launch rule, GROUPS=auto rule and contention model are declared there."""
    import pathlib
    import re
    pkg = pathlib.Path(strategies.__file__).parent
    hits = {p.name: len(re.findall(rf"""["']{name}["']""", p.read_text()))
            for p in pkg.glob("*.py")}
    assert {k: v for k, v in hits.items() if v} == {f"{name}.py": 1}, hits
    e = strategies.get(name)
    assert e.launch is _tuning.rule(name) and e.contention is not None


def test_a_registration_carries_its_rules(monkeypatch):
    """A strategy declared in one place: its launch rule is what _tuning.params and
    `fn.params` answer (overrides applied), its auto rule sees those parameters, and its
    contention model is what workspace_bytes / writers_per_slot evaluate."""
    from normbench.strategies import _registry
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    monkeypatch.setattr(_tuning, "RULES", dict(_tuning.RULES))
    rule = _tuning.Rule(lambda d: {**_tuning.ONE_ROW.params(d), "num_warps": 2}, row_loop=True)

    @strategies.register("test_declared", kind="strategy", deterministic_by_design=True,
                         uses_groups=True, launch=rule,
                         auto_groups=lambda rows, d, sms, launch: sms * launch["num_warps"],
                         contention=strategies.Contention(writers="rows/groups",
                                                          partial_rows="groups",
                                                          counters_per_chunk=2, fixed_bytes=8))
    def fn(x, dy, weight, mean, rstd, *, groups):
        return groups

    e = strategies.get("test_declared")
    assert fn.params(512)["num_warps"] == 2 == _tuning.params("test_declared", 512)["num_warps"]
    assert e.effective_groups(10_000, 512, None, "cpu") == 8           # 4 SMs × 2 warps
    monkeypatch.setitem(_tuning.OVERRIDE, "test_declared", {"num_warps": 3})
    assert fn.params(512)["num_warps"] == 3 and e.effective_groups(10_000, 512, None, "cpu") == 12
    monkeypatch.delitem(_tuning.OVERRIDE, "test_declared")
    assert e.writers_per_slot(1000, 512, 64) == 16                     # ⌈1000 / 63⌉ → G 63
    g = e.effective_groups(1000, 512, 64)
    assert e.workspace_bytes(1000, 512, 64, has_bias=True) == g * 512 * 4 * 2 + 2 * g * 4 + 8
    assert e.workspace_bytes(1000, 20000, 64, has_bias=False) == g * 20000 * 4 + 2 * g * 3 * 4 + 8
    assert e.contention.describe()["workspace_formula"] == (
        "GROUPS·d·4 B (×2 with dβ) + 2·GROUPS·chunks·4 B + 8 B")


def test_bytes_a_partial_row_count_once_per_group():
    """disjoint_cluster's exchange words, 32 B a cluster (a partial row), are in its model."""
    c = strategies.Contention(writers=1, partial_rows="groups", bytes_per_group=32)
    assert c.workspace(100, 64, 10, has_bias=False) == 10 * 64 * 4 + 10 * 32
    assert c.describe()["workspace_formula"] == "GROUPS·d·4 B (×2 with dβ) + 32·GROUPS B"
    import importlib.util
    src = importlib.util.find_spec("normbench.strategies.disjoint_cluster").origin
    assert "bytes_per_group=32" in open(src).read()


def test_an_older_three_argument_auto_rule_still_works(monkeypatch):
    from normbench.strategies import _registry
    monkeypatch.setattr(_registry, "_REGISTRY", dict(_registry._REGISTRY))
    strategies.register("test_old_auto", kind="strategy", deterministic_by_design=True,
                        uses_groups=True, auto_groups=lambda rows, d, sms: 5)(
        lambda x, dy, weight, mean, rstd, *, groups: None)
    e = strategies.get("test_old_auto")
    assert e.effective_groups(100, 64, None, "cpu") == 5 and dict(e.params(64)) == {}


@pytest.mark.parametrize("bad", [dict(writers="all"), dict(writers=0), dict(writers=True),
                                 dict(writers=1, partial_rows="rows"),
                                 dict(writers=1, partial_rows=-1),
                                 dict(writers=1, fixed_bytes="8"), dict(writers=1, fixed_bytes=-8),
                                 dict(writers=1, fixed_bytes=2.5),
                                 dict(writers=1, counters_per_chunk=-1),
                                 dict(writers=1, counters_per_chunk=True),
                                 dict(writers=1, bytes_per_group=None),
                                 dict(writers=1, bytes_per_group=32.0)])
def test_a_contention_model_is_checked_when_declared(bad):
    """Every field, the byte and counter counts too: a fixed_bytes of "8" (or -8, or 2.5) was
    taken, the plugin loaded, and every record of its strategy was an error ("its workspace
    rule raised TypeError: unsupported operand type(s) for +: 'int' and 'str"), or
    workspace_bytes() answered -8 bytes — where a partial_rows of -1 was one line at load."""
    field = list(bad)[-1]           # the one refused: writers, or the field after it
    with pytest.raises(ValueError, match=f"^{field} must be"):
        strategies.Contention(**bad)


def test_the_shipped_contention_models():
    """Writers per slot and workspace of each strategy, as README's table states them."""
    rows, d, g = 8192, 4096, 64
    ws = g * d * 4 * 2
    assert strategies.get("atomic").writers_per_slot(rows, d, g) == rows
    assert strategies.get("atomic").workspace_bytes(rows, d, g) == d * 4 * 2
    for wd in ("bf16", "fp16", torch.bfloat16):
        assert strategies.get("atomic").workspace_bytes(rows, d, g, True, wd) == d * 4 * 2
    for name in ("grouped_atomic", "spin_lock"):
        assert strategies.get(name).writers_per_slot(rows, d, g) == 128
    assert strategies.get("grouped_atomic").workspace_bytes(rows, d, g) == ws
    assert strategies.get("spin_lock").workspace_bytes(rows, d, g) == ws + 2 * g * 4
    assert strategies.get("disjoint_block").workspace_bytes(rows, d, g) == ws
    assert strategies.get("disjoint_fused").workspace_bytes(rows, d, g, has_bias=False) == ws // 2 + 8
    for name in ("disjoint_block", "disjoint_fused"):
        assert strategies.get(name).writers_per_slot(rows, d, g) == 1


def test_reduce_rule_is_the_measured_one(monkeypatch):
    """reduce-13: with dβ and n ≥ 2048 both partials in one loop over all G rows at once, 32
    columns a program; round 23: without dβ there too (one loop, all G rows a step); at
    n < 2048 the earlier rule; an override wins."""
    from normbench.strategies import reduce
    assert reduce.reduce_params(131, 16384, True) == dict(BLOCK_G=256, BLOCK_N=32, num_warps=4,
                                                          PAIRED=True)
    assert reduce.reduce_params(40, 3072, True)["BLOCK_G"] == 64
    assert reduce.reduce_params(264, 1024, True) == dict(BLOCK_G=64, BLOCK_N=16, num_warps=4,
                                                         PAIRED=False)
    assert reduce.reduce_params(131, 16384, False) == dict(BLOCK_G=256, BLOCK_N=32, num_warps=4,
                                                           PAIRED=False)
    assert reduce.reduce_params(132, 2048, False)["BLOCK_G"] == 256
    assert reduce.reduce_params(264, 1024, False) == dict(BLOCK_G=64, BLOCK_N=16, num_warps=4,
                                                          PAIRED=False)
    monkeypatch.setitem(_tuning.OVERRIDE, "reduce", {"BLOCK_N": 64})
    assert reduce.reduce_params(131, 16384, True)["BLOCK_N"] == 64


@pytest.mark.parametrize("g,n", [(5, 2100), (300, 40), (131, 2048)])
def test_the_paired_reduce_sums_like_two_reduces(g, n, monkeypatch):
    """reduce_pair is reduce_rows of dγ's and dβ's partials in one loop: the same bits as the
    two loops at the same tile (so PAIRED changes speed alone), right against fp64, for G and
    n that are no multiple of the tile."""
    from normbench.strategies import reduce
    torch.manual_seed(g + n)
    pw, pb = torch.randn(g, n), torch.randn(g, n)
    w = torch.empty(n, dtype=torch.bfloat16)
    tile = dict(BLOCK_G=64, BLOCK_N=32, num_warps=4)
    monkeypatch.setitem(_tuning.OVERRIDE, "reduce", {**tile, "PAIRED": True})
    paired = reduce.reduce_partials(pw, pb, w)
    monkeypatch.setitem(_tuning.OVERRIDE, "reduce", {**tile, "PAIRED": False})
    apart = reduce.reduce_partials(pw, pb, w)
    for a, b, p in zip(paired, apart, (pw, pb)):
        assert torch.equal(a.view(torch.int16), b.view(torch.int16))
        want = p.double().sum(0)
        assert ((a.double() - want).abs() <= 1e-2 * want.abs() + 1e-3 * p.abs().sum(0).double()).all()


def test_pdl_is_a_no_op_under_the_interpreter(monkeypatch):
    """`pdl` needs compiled code on sm_90+ (_device.pdl_supported); elsewhere asking for it
    changes nothing: the same kernels, the same bits."""
    from normbench.harness.inputs import make_inputs
    assert not _device.pdl_supported(torch.device("cpu"))
    inputs = make_inputs("layernorm", 9, 40, "bf16", "fp32", seed=3, device="cpu")
    e = strategies.get("disjoint_block")
    plain = e.backward(*inputs, groups=2)
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"pdl": True})
    for a, b in zip(plain, e.backward(*inputs, groups=2)):
        assert torch.equal(a.view(torch.uint8), b.view(torch.uint8))


def _skip_reduce(monkeypatch):
    """For a test that reads the row kernel's launch and does not launch it: the reduce of its
    (unwritten) partial rows is not run either — under the interpreter it is most of such a
    test's time (256 programs at d = 8191)."""
    from normbench.strategies import disjoint_block, disjoint_strided
    for mod in (disjoint_block, disjoint_strided):
        monkeypatch.setattr(mod, "reduce_partials",
                            lambda pw, pb, w, pdl: (pw[0], None if pb is None else pb[0]))


def test_strided_layernorm_takes_8_warps_at_partly_masked_tiles_of_4096(monkeypatch):
    """Round 22: disjoint_strided launches its row loop at 8 warps for LayerNorm with 16-bit
    activations (any weight) where the tile of 4096 is partly masked (2048 < d < 4096); RMSNorm,
    fp32 activations, d = 4096 and other widths keep the rule's warps, and a num_warps override
    holds in both norms."""
    from normbench.harness.inputs import make_inputs
    from normbench.strategies import disjoint_block, disjoint_strided
    seen = []
    monkeypatch.setattr(disjoint_block, "launch",
                        lambda kernel, key, tensors, setup: seen.append(setup()[2]["num_warps"]))
    _skip_reduce(monkeypatch)

    def warps(norm, d, dt="bf16", wd=None):
        seen.clear()
        disjoint_strided.backward(*make_inputs(norm, 3, d, dt, wd or dt, seed=0, device="cpu"),
                                  groups=2)
        return seen[0]
    for d in (3072, 2560, 2049, 4095):
        assert warps("layernorm", d) == 8, d
        assert warps("rmsnorm", d) == 16, d
    assert warps("layernorm", 3072, "fp16") == warps("layernorm", 3072, "bf16", "fp32") == 8
    assert warps("layernorm", 3072, "fp32") == 16
    assert warps("layernorm", 4096) == 16 and warps("layernorm", 7168) == 16
    assert warps("layernorm", 1536) == 8 == _tuning.params("disjoint_strided", 1536)["num_warps"]
    x, dy, w, mean, rstd = make_inputs("layernorm", 3, 3072, "bf16", "bf16", seed=0, device="cpu")
    assert disjoint_strided.backward.notes(x, dy, w, mean, rstd).endswith("LayerNorm's 8 warps")
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", {"num_warps": 16})
    assert warps("layernorm", 3072) == 16
    assert "8 warps" not in disjoint_strided.backward.notes(x, dy, w, mean, rstd)
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_strided", {"num_warps": 4})
    assert warps("layernorm", 3072) == warps("rmsnorm", 3072) == 4


def test_row_loop_takes_a_fourth_stage_at_partly_masked_tiles_of_8192(monkeypatch):
    """Rounds 35 and 36: the row loop launches 4 stages where a tile of 8192 is partly masked
    (4096 < d < 8192) with 16-bit activations, 3 with fp32 ones (`fp32_stages`), and 3 at
    d = 8192 and at tiles of 4096 that are whole; disjoint_block and disjoint_strided alike,
    and a num_stages override holds at every activation width."""
    from normbench.harness.inputs import make_inputs
    from normbench.strategies import disjoint_block
    seen = []
    monkeypatch.setattr(disjoint_block, "launch",
                        lambda kernel, key, tensors, setup: seen.append(setup()[2]["NUM_STAGES"]))
    _skip_reduce(monkeypatch)

    def stages(name, d, dt="bf16", wd=None):
        seen.clear()
        strategies.get(name).backward(*make_inputs("rmsnorm", 3, d, dt, wd or dt, seed=0,
                                                   device="cpu"), groups=2)
        return seen[0]
    for name in ("disjoint_block", "disjoint_strided"):
        for d in (4097, 5120, 6144, 6145, 7168, 8191):
            assert stages(name, d) == stages(name, d, "fp16") == stages(name, d, "bf16", "fp32") == 4
            # fp32: 3 (on a GPU disjoint_strided stages fp32 rows from 7168 instead, round 30)
            assert stages(name, d, "fp32") == 3, (name, d)
        assert stages(name, 8192) == stages(name, 4096) == 3
        assert stages(name, 3072) == stages(name, 3072, "fp32") == 4     # tune-10's, unchanged
    monkeypatch.setitem(_tuning.OVERRIDE, "disjoint_block", {"num_stages": 2})
    assert stages("disjoint_block", 5120) == stages("disjoint_block", 5120, "fp32") == 2


@pytest.mark.parametrize("tail,groups,d,warps", [(16, 264, 1024, 4), (32, 132, 4096, 16),
                                                 (1, 3, 40, 4), (64, 132, 16384, 16),
                                                 (8, 5, 100, 8), (4, 132, 65536, 16)])
def test_tail_tile_covers_every_column_in_slices(tail, groups, d, warps):
    """disjoint_fused's `tail`: K waiters' slices of RED_N columns (a power of two) cover d,
    each program's tile is at most 32 elements a thread and at least one row, and no step
    reads more partial rows than a power of two past GROUPS."""
    red_g, red_n = tail_tile(tail, groups, d, warps)
    assert red_n & (red_n - 1) == 0 and red_n * tail >= d
    assert 1 <= red_g <= _tuning.pow2(groups)
    assert red_g == 1 or red_g * red_n <= 32 * 32 * warps


@pytest.mark.parametrize("has_bias", [True, False])
def test_atomic_with_an_fp32_weight_has_no_workspace(has_bias):
    """atomic's fp32 [d] buffer (×2 with dβ) is returned as dγ (dβ) when the weight is fp32: it
    is the output, whose write bytes_moved counts, and no workspace — recorded as d·4 B (×2)
    all the same (64 B for LayerNorm at d = 8).  Every other strategy's partial rows stay
    workspace with an fp32 weight."""
    rows, d, g = 8192, 4096, 64
    for wd in ("fp32", torch.float32):
        assert strategies.get("atomic").workspace_bytes(rows, d, g, has_bias, wd) == 0
    assert strategies.get("atomic").workspace_bytes(8, 8, None, True, "fp32") == 0
    assert "none with an fp32 weight" in strategies.get("atomic").contention.describe()[
        "workspace_formula"]
    for name in ("grouped_atomic", "spin_lock", "disjoint_block", "disjoint_fused",
                 "disjoint_strided"):
        e = strategies.get(name)
        assert (e.workspace_bytes(rows, d, g, has_bias, "fp32")
                == e.workspace_bytes(rows, d, g, has_bias, "bf16") > 0)


def test_the_reduces_override_is_checked_once_while_it_holds_the_same_values(monkeypatch):
    """reduce_params checks OVERRIDE["reduce"] once while it is the same object holding the
    same values (checked at every call, it cost the host what the rule's path does not pay),
    and again once it changes: a value made wrong in place is refused, at every call."""
    from normbench.strategies import reduce
    ov = {"BLOCK_N": 64}
    monkeypatch.setitem(_tuning.OVERRIDE, "reduce", ov)
    calls = []
    real = reduce.check_override
    monkeypatch.setattr(reduce, "check_override", lambda o: (calls.append(1), real(o)))
    for _ in range(3):
        assert reduce.reduce_params(132, 4096, False)["BLOCK_N"] == 64
    assert len(calls) == 1
    ov["BLOCK_N"] = 48
    for _ in range(2):
        with pytest.raises(ValueError, match="BLOCK_N: 48 is not a power of two"):
            reduce.reduce_params(132, 4096, False)
    ov["BLOCK_N"] = 64.0                                 # equal to 64, and not an int
    with pytest.raises(ValueError, match="BLOCK_N"):
        reduce.reduce_params(132, 4096, False)
    monkeypatch.setitem(_tuning.OVERRIDE, "reduce", {"BLOCK_N": 16})
    assert reduce.reduce_params(132, 4096, False)["BLOCK_N"] == 16
