"""harness/plan.py: product sizes, groups only for group users, batch/seq, order, keys."""
from __future__ import annotations

from pathlib import Path

import pytest

from normbench.harness.config import load_config, parse_config
from normbench.harness.plan import Case, estimate_seconds, expand
from normbench.harness.schema import KEY, case_id

AVAILABLE = ["atomic", "grouped_atomic", "spin_lock", "torch"]
GROUP_USERS = {"grouped_atomic", "spin_lock"}


def uses_groups(name: str) -> bool:
    return name in GROUP_USERS


def plan(text: str, available=AVAILABLE):
    return expand(parse_config(text), uses_groups, available)


def test_product_size_and_groups_only_for_group_users():
    cases = plan("norm: [layernorm, rmsnorm]\nrows: [7, 64, 4096]\nd: [33, 256]\n"
                 "dtype: [fp32, bf16]\ngroups: [4, 64, auto]\n")
    shapes = 2 * 3 * 2 * 2                                # norm x rows x d x dtype
    per_shape = 2 * 1 + 2 * 3                             # 2 without groups, 2 with 3 each
    assert len(cases) == shapes * per_shape
    for c in cases:
        if c.implementation in GROUP_USERS:
            assert c.groups in ("4", "64", "auto")
        else:
            assert c.groups == "-" and c.groups_arg is None
    assert {c.groups_arg for c in cases if c.implementation == "spin_lock"} == {4, 64, "auto"}


def test_named_implementations_keep_their_order_and_ignore_available():
    cases = plan("rows: 1\nd: 1\nnorm: rmsnorm\nimplementations: [torch, liger, atomic]\n")
    assert [c.implementation for c in cases] == ["torch", "liger", "atomic"]
    assert plan("rows: 1\nd: 1\n", available=[]) == []


def test_weight_dtype_resolved_and_deduplicated():
    cases = plan("rows: 1\nd: 1\nnorm: layernorm\ndtype: [fp32, bf16]\n"
                 "weight_dtype: [same, fp32]\nimplementations: [torch]\n")
    pairs = [(c.dtype, c.weight_dtype) for c in cases]
    assert pairs == [("fp32", "fp32"), ("bf16", "bf16"), ("bf16", "fp32")]
    assert all(c.weight_dtype != "same" for c in cases)


def test_batch_seq_expansion_and_dedupe_keeps_first():
    cases = plan("batch: [2, 4]\nseq: [8, 4]\nd: 16\nnorm: layernorm\n"
                 "implementations: [torch]\n")
    # (2,8)=16, (2,4)=8, (4,8)=32, (4,4)=16 -> dropped: same key as (2,8)
    assert [(c.batch, c.seq, c.rows) for c in cases] == [(2, 8, 16), (2, 4, 8), (4, 8, 32)]


def test_shapes_in_given_order():
    cases = plan("shapes: [[16384, 4096], [2048, 768], {rows: 7, d: 33}]\nnorm: rmsnorm\n"
                 "implementations: [atomic]\n")
    assert [(c.rows, c.d) for c in cases] == [(16384, 4096), (2048, 768), (7, 33)]
    assert all(c.batch is None and c.seq is None for c in cases)


def test_order_is_norm_dtype_weight_dtype_d_rows_impl_groups():
    text = ("norm: [rmsnorm, layernorm]\nrows: [64, 7]\nd: [256, 33]\ndtype: [bf16, fp32]\n"
            "weight_dtype: [same, fp16]\ngroups: [auto, 4]\n")
    cases = plan(text)
    assert cases == plan(text)                            # same config, same plan
    axes = {"norm": ["rmsnorm", "layernorm"], "dtype": ["bf16", "fp32"],
            "weight_dtype": None, "d": [256, 33], "rows": [64, 7],
            "implementation": AVAILABLE, "groups": ["-", "auto", "4"]}

    def rank(c: Case):
        wd = ["bf16" if c.dtype == "bf16" else "fp32", "fp16"].index(c.weight_dtype)
        return (axes["norm"].index(c.norm), axes["dtype"].index(c.dtype), wd,
                axes["d"].index(c.d), axes["rows"].index(c.rows),
                axes["implementation"].index(c.implementation), axes["groups"].index(c.groups))

    assert [rank(c) for c in cases] == sorted(rank(c) for c in cases)


def test_keys_unique_and_match_schema():
    cases = plan("rows: [7, 64]\nd: [33, 256]\ndtype: [fp32, bf16, fp16]\n"
                 "weight_dtype: [same, fp32, bf16]\ngroups: [1, 4, auto]\n")
    keys = [c.key for c in cases]
    assert len(keys) == len(set(keys))
    c = cases[0]
    assert c.key == case_id({k: getattr(c, k) for k in KEY})
    assert c.key.count("|") == len(KEY) - 1


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parent.parent / "configs")
                                        .glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_configs_expand(path):
    sweep = load_config(path)
    cases = expand(sweep, uses_groups, AVAILABLE)
    assert cases and len({c.key for c in cases}) == len(cases)
    assert estimate_seconds(cases, sweep, interpreted=path.stem == "cpu") > 0


def test_estimate_grows_with_work():
    small = parse_config("rows: 64\nd: 256\ntiming: {warmup_ms: 1, rep_ms: 5}\n")
    big = parse_config("rows: 64\nd: 256\ntiming: {warmup_ms: 25, rep_ms: 100}\n")
    cs = expand(small, uses_groups, AVAILABLE)
    assert estimate_seconds([], small, False) == 0.0
    assert estimate_seconds(cs, big, False) > estimate_seconds(cs, small, False)
    wide = expand(parse_config("rows: 4096\nd: 4096\n"), uses_groups, AVAILABLE)
    assert estimate_seconds(wide, small, True) > estimate_seconds(cs, small, True)
    assert estimate_seconds(cs + cs, small, True) > estimate_seconds(cs, small, True)


def test_a_case_key_is_the_schema_s_key_of_its_fields():
    """Case.key is read from the fields as they are (vars), not through dataclasses.asdict's
    deep copy (about 50 µs a key, three keys a case: a plan of 131072 cases took 13 s to
    expand, now 1.8 s — measured once on this machine, not timed here: speed is for the
    benchmarks).  The key is the same string either way, for every implementation's case."""
    from dataclasses import asdict
    for impl, groups in (("grouped_atomic", "64"), ("torch", None), ("disjoint_block", "auto")):
        c = Case(norm="layernorm", implementation=impl, rows=4096, d=8192, dtype="bf16",
                 weight_dtype="fp32", groups=groups, batch=2, seq=2048)
        assert c.key == case_id(asdict(c))
