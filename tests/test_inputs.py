"""The fp64 reference and how an output's error is measured against it (harness/inputs.py)."""
import pickle

import pytest
import torch

from normbench.harness.inputs import (errors, make_inputs, output_tolerances, reference,
                                      rel_error, within_tolerances)


def fp32_backward(x, dy, w, mean, rstd, *, drop_c1=False):
    """The textbook backward in fp32 (what a correct kernel computes); drop_c1: a wrong one,
    without the x̂·mean(g·x̂) term."""
    x, dy, w, r = x.float(), dy.float(), w.float(), rstd.float()[:, None]
    xhat = (x - mean.float()[:, None]) * r if mean is not None else x * r
    g = w * dy
    c1 = 0.0 if drop_c1 else (xhat * g).mean(dim=1, keepdim=True)
    c2 = g.mean(dim=1, keepdim=True) if mean is not None else 0.0
    dx = ((g - xhat * c1 - c2) * r).to(x.dtype)
    return dx, (dy * xhat).sum(dim=0).to(w.dtype), dy.sum(dim=0).to(w.dtype) if mean is not None else None


@pytest.mark.parametrize("norm,rows,d,seed", [("rmsnorm", 1, 1, 0), ("rmsnorm", 3, 1, 1),
                                              ("rmsnorm", 1, 1, 6), ("layernorm", 5, 2, 3),
                                              ("rmsnorm", 4, 2, 5), ("layernorm", 2, 3, 8)])
def test_a_correct_fp32_backward_passes_where_dx_is_the_difference_of_its_terms(norm, rows, d, seed):
    """Rows of 1–3 elements: dx is a small difference of large terms (d = 1 RMSNorm:
    rstd·g·ε/(x² + ε)); the fp32 formula's rounding of the terms is within the fp32 tolerance
    of their size.  Against max|dx| alone the first three cases fail (a correct backward
    failed so at 10 of 12 seeds of RMS 1 × 1 fp32 and 9 of 12 of 3 × 1: torch's and every
    strategy's records said incorrect there)."""
    inputs = make_inputs(norm, rows, d, "fp32", "fp32", seed=seed, device="cpu")
    ref = reference(*inputs)
    out = fp32_backward(*inputs)
    assert within_tolerances(out, ref, "fp32", "fp32"), errors(out, ref)


@pytest.mark.parametrize("x", [1.3, 2.9, 5.0])
def test_against_max_dx_alone_a_correct_rms_1x1_would_fail(x):
    """RMS 1 × 1 at x = 1.3, 2.9, 5: the fp32 formula is 0.6–14 % off max|dx| (dx is
    rstd·g·ε/(x² + ε), its terms' rounding is of their own size), within the terms' floor."""
    from normbench.harness.inputs import EPS
    xs, dy, w = torch.tensor([[x]]), torch.tensor([[1.0]]), torch.tensor([1.0])
    rstd = torch.rsqrt(xs[:, 0] * xs[:, 0] + EPS)
    ref = reference(xs, dy, w, None, rstd)
    out = fp32_backward(xs, dy, w, None, rstd)
    assert within_tolerances(out, ref, "fp32", "fp32"), errors(out, ref)
    assert rel_error(out[0], ref[0]) > output_tolerances("fp32", "fp32")[0]


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("d", [1, 2, 3, 64, 1000, 4096, 8192])
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
def test_a_wrong_dx_still_fails(norm, d, dtype):
    """dx without its x̂·mean(g·x̂) term is judged wrong at every width, the shortest rows
    included: the terms' size does not hide an error of the size of a term.  At d ≥ 4096 in
    bf16 it passed until session 43: rows drawn alike made the term ~1/√d of dx, under the
    8 units of rounding bf16 was allowed then (`make_inputs`, `TOLERANCE`)."""
    inputs = make_inputs(norm, 8, d, dtype, dtype, seed=d, device="cpu")
    ref = reference(*inputs)
    out = fp32_backward(*inputs, drop_c1=True)
    if norm == "layernorm" and d == 1:           # x̂ = 0: the dropped term is 0 too
        assert within_tolerances(out, ref, dtype, dtype)
        return
    assert not within_tolerances(out, ref, dtype, dtype), errors(out, ref)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("rows,d", [(64, 64), (16, 1000), (1024, 1024), (8, 4096), (2, 16384)])
def test_at_benchmarked_widths_the_scale_is_max_dx(norm, rows, d):
    """d ≥ 64: the terms within 2.5× of max|dx| (what the docs say), far from the floor's
    10×: dx's scale is max|dx| itself, as before the floor."""
    for seed in range(4):
        ref = reference(*make_inputs(norm, rows, d, "bf16", "bf16", seed=seed, device="cpu"))
        top = ref[0].abs().max().item()
        assert ref.scales[0] == top, (seed, top, ref.scales[0])
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, "bf16", "bf16", seed=seed, device="cpu")
        g = w.double() * dy.double()
        r = rstd.double()[:, None]
        xhat = (x.double() - (mean.double()[:, None] if mean is not None else 0)) * r
        terms = g.abs() + (xhat * (xhat * g).mean(dim=1, keepdim=True)).abs()
        if mean is not None:
            terms += g.mean(dim=1, keepdim=True).abs()
        assert (terms * r).max().item() <= 2.5 * top


def test_reference_is_the_three_outputs_and_pickles_with_its_scales():
    inputs = make_inputs("layernorm", 3, 5, "fp32", "fp32", seed=2, device="cpu")
    ref = reference(*inputs)
    dx, dw, db = ref
    assert len(ref) == 3 and ref.scales[2] is None and ref.scales[0] > 0 < ref.scales[1]
    again = pickle.loads(pickle.dumps(ref))
    assert again.scales == ref.scales and all(torch.equal(a, b) for a, b in zip(again, ref))
    rms = reference(*make_inputs("rmsnorm", 3, 5, "fp32", "fp32", seed=2, device="cpu"))
    assert rms[2] is None and errors((rms[0], rms[1], None), rms)[2] is None


def test_a_plain_tuple_is_measured_against_max_ref():
    ref = (torch.tensor([[2.0, -4.0]], dtype=torch.float64),)
    assert errors((torch.tensor([[2.0, -3.0]]),), ref) == [0.25]
    assert rel_error(torch.tensor([[float("nan"), 0.0]]), ref[0]) == float("inf")
    assert rel_error(None, ref[0]) == float("inf")


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("k", [1e-6, 3e-7])
def test_the_exact_answer_rounded_once_to_fp16_passes_in_the_subnormal_range(norm, k):
    """dy scaled by 1e-6: max|dx| ~ 8e-6, below fp16's smallest normal (6.1e-5), where one
    rounding is up to 2^-25 absolute, not 2^-11 relative: the fp64 answer rounded once to fp16
    was judged incorrect (0.0038 against 0.00195).  A 16-bit output's scale is never below its
    dtype's smallest normal now: one rounding is within one unit there too."""
    x, dy, w, mean, rstd = make_inputs(norm, 64, 64, "fp16", "same", seed=0, device="cpu")
    dy = (dy.float() * k).half()
    ref = reference(x, dy, w, mean, rstd)
    assert ref.scales[0] < torch.finfo(torch.float16).tiny
    best = tuple(None if t is None else t.half() for t in ref)
    assert within_tolerances(best, ref, "fp16", "fp16"), errors(best, ref)
    assert max(e for e in errors(best, ref) if e is not None) <= 2.0 ** -11     # one unit


@pytest.mark.parametrize("dt, tiny, unit", [(torch.float16, 2.0 ** -14, 2.0 ** -25),
                                            (torch.bfloat16, 2.0 ** -126, 2.0 ** -134)])
def test_the_16_bit_floor_is_four_units_of_rounding_and_only_below_the_normal_range(dt, tiny,
                                                                                     unit):
    """Below the smallest normal: four units of rounding (half the smallest subnormal each)
    pass, six (the next representable error) do not; at the smallest normal and above the error is the same as without the
    floor; fp32 has none."""
    tol = output_tolerances({torch.float16: "fp16", torch.bfloat16: "bf16"}[dt], "fp32")[0]
    ref = torch.tensor([[40 * unit, -8 * unit]], dtype=torch.float64)       # subnormal
    for n, ok in ((4, True), (6, False)):
        out = (ref + torch.tensor([[n * unit, 0.0]], dtype=torch.float64)).to(dt)
        assert out.double()[0, 0].item() == (40 + n) * unit       # exactly representable
        assert (rel_error(out, ref) <= tol) is ok, (n, rel_error(out, ref))
    normal = torch.tensor([[tiny, 0.0]], dtype=torch.float64)
    off = (normal * (1 + 2 * 2.0 ** -(10 if dt is torch.float16 else 7))).to(dt)
    assert rel_error(off, normal) == abs(off.double()[0, 0].item() - tiny) / tiny
    small = torch.tensor([[2.0 ** -140, 0.0]], dtype=torch.float64)
    assert rel_error(torch.tensor([[2.0 ** -139, 0.0]]), small) == 1.0     # fp32: no floor
    zero = torch.zeros(1, 2, dtype=torch.float64)
    assert rel_error(torch.tensor([[1e-3, 0.0]], dtype=dt), zero) == pytest.approx(1e-3, rel=1e-3)


def torch_style_backward(x, dy, w, mean, rstd):
    """fp32 LayerNorm backward with x̂ = x·rstd − mean·rstd, as PyTorch forms it: at d = 1 x̂ is
    not exactly 0, its rounding of the size of x·rstd."""
    x, dy, w, r = x.float(), dy.float(), w.float(), rstd.float()[:, None]
    xhat = x * r - mean.float()[:, None] * r
    g = w * dy
    dx = (g - xhat * (xhat * g).mean(dim=1, keepdim=True) - g.mean(dim=1, keepdim=True)) * r
    return dx, (dy * xhat).sum(dim=0), dy.sum(dim=0)


@pytest.mark.parametrize("rows", [64, 1000])
@pytest.mark.parametrize("unit", [0.01, 1.0, 100.0])
def test_layernorm_d1_dgamma_is_judged_by_its_terms_not_by_the_units_of_dy(rows, unit):
    """LN rows × 1: dγ is exactly 0, and a backward forming x̂ as x·rstd − mean·rstd (PyTorch)
    leaves that difference's fp32 rounding. Against max|dγ| = 0 the error was absolute: right
    with dy in one unit, wrong in another (torch judged incorrect at 7-8 of 10 seeds). Judged
    against a tenth of the two sums dγ is the difference of, it passes in every unit — and a
    dγ of x·rstd alone (x̂ without its mean) still fails."""
    for seed in range(4):
        x, dy, w, mean, rstd = make_inputs("layernorm", rows, 1, "fp32", "fp32", seed=seed,
                                           device="cpu")
        dy = dy * unit
        ref = reference(x, dy, w, mean, rstd)
        assert not ref[1].any() and ref.scales[1] > 0
        out = torch_style_backward(x, dy, w, mean, rstd)
        assert within_tolerances(out, ref, "fp32", "fp32"), (seed, errors(out, ref))
        wrong = (out[0], (dy * x * rstd[:, None]).sum(dim=0), out[2])
        assert not within_tolerances(wrong, ref, "fp32", "fp32"), (seed, errors(wrong, ref))


@pytest.mark.parametrize("rows,d", [(64, 64), (16, 1000), (1024, 1024), (8, 4096), (2, 16384),
                                    (4096, 256), (1, 64)])
def test_at_benchmarked_widths_the_dgamma_scale_is_max_dgamma(rows, d):
    """d ≥ 64: LayerNorm dγ's two sums within 3.5× of max|dγ| (what the docs say), far from the
    floor's 10×: its scale is max|dγ| itself. RMSNorm's dγ and every dβ: max|ref| (None)."""
    for seed in range(4):
        inputs = make_inputs("layernorm", rows, d, "bf16", "bf16", seed=seed, device="cpu")
        ref = reference(*inputs)
        assert ref.scales[1] == ref[1].abs().max().item() and ref.scales[2] is None
        x, dy, w, mean, rstd = inputs
        b = dy.double().t() @ (mean.double() * rstd.double())
        assert ((ref[1] + b).abs() + b.abs()).max().item() <= 3.5 * ref.scales[1]
        rms = reference(*make_inputs("rmsnorm", rows, d, "bf16", "bf16", seed=seed,
                                     device="cpu"))
        assert rms.scales[1:] == (None, None)


@pytest.mark.parametrize("stride", [8, 0, -3])
def test_a_row_stride_below_d_is_refused(stride):
    """x and dy are slices of rows `row_stride` wide: one narrower than d would give inputs of
    the wrong width (4 × 8 for d = 16) — refused, naming the argument."""
    with pytest.raises(ValueError, match="row_stride: must be >= d"):
        make_inputs("layernorm", 4, 16, "fp32", "fp32", seed=0, device="cpu", row_stride=stride)
    x, dy, *_ = make_inputs("layernorm", 4, 16, "fp32", "fp32", seed=0, device="cpu",
                            row_stride=24)
    assert x.shape == dy.shape == (4, 16) and x.stride(0) == 24


@pytest.mark.parametrize("dtype,weight_dtype,problem", [
    ("float32", "fp32", "^dtype: unknown 'float32'; use fp32, fp16, bf16$"),
    ("same", "fp32", "^dtype: unknown 'same'"),
    (None, "fp32", "^dtype: unknown None"),
    ("bf16", "float32", "^weight_dtype: unknown 'float32'; use same, fp32, fp16, bf16$"),
    ("bf16", "int8", "^weight_dtype: unknown 'int8'"),
])
def test_a_dtype_name_is_checked_naming_the_field(dtype, weight_dtype, problem):
    """make_inputs, tolerance and output_tolerances name the field and the names they take
    (a bare KeyError: 'float32' before); weight_dtype "same" is the activations' dtype, as in
    the config."""
    from normbench.harness.inputs import tolerance
    for call in (lambda: output_tolerances(dtype, weight_dtype),
                 lambda: tolerance(dtype, weight_dtype),
                 lambda: make_inputs("rmsnorm", 2, 3, dtype, weight_dtype, seed=0, device="cpu")):
        with pytest.raises(ValueError, match=problem):
            call()


def test_weight_dtype_same_is_the_activations_dtype():
    assert output_tolerances("bf16", "same") == output_tolerances("bf16", "bf16")
    x, dy, w, mean, rstd = make_inputs("layernorm", 2, 3, "fp16", "same", seed=0, device="cpu")
    assert x.dtype == dy.dtype == w.dtype == torch.float16
    again = make_inputs("layernorm", 2, 3, "fp16", "fp16", seed=0, device="cpu")
    assert all(torch.equal(a, b) for a, b in zip((x, dy, w, mean, rstd), again))


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_the_inputs_of_a_case_are_the_same_whatever_torch_s_default_dtype(norm):
    """A plugin measured earlier that called torch.set_default_dtype(torch.float64) drew other
    inputs for every later case of the sweep, built-ins included (the draws took the default
    dtype): the inputs are drawn in fp32 named, whatever the default is."""
    want = make_inputs(norm, 5, 80, "bf16", "fp32", seed=7, device="cpu")
    before = torch.get_default_dtype()
    try:
        torch.set_default_dtype(torch.float64)
        got = make_inputs(norm, 5, 80, "bf16", "fp32", seed=7, device="cpu")
    finally:
        torch.set_default_dtype(before)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if a is None or b is None:
            assert a is None and b is None
        else:
            assert a.dtype == b.dtype and torch.equal(a, b)
