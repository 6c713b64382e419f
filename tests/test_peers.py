"""The optional peers (liger, quack): listed with a reason when they can't run, right when they can.

liger runs on CPU under the Triton interpreter (when liger-kernel is installed) and on a GPU;
quack only on a CUDA GPU (tests marked gpu)."""
import os
import subprocess
import sys

import pytest
import torch

from normbench import strategies
from checks import check, same_bits
from normbench.harness.inputs import make_inputs
from normbench.strategies import peers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = ("liger", "quack")


def gpu_check(name, norm, rows, d, dtype, **kw):
    """check() on CUDA; quack refuses fp16/bf16 with an odd d (its compiler can't build that)."""
    if name == "quack" and dtype in ("bf16", "fp16") and d % 2:
        x, dy, w, mean, rstd = make_inputs(norm, rows, d, dtype, dtype, seed=0, device="cuda")
        with pytest.raises(NotImplementedError, match="even d"):
            strategies.get(name).backward(x, dy, w, mean, rstd)
        return
    check(name, norm, rows, d, dtype, device=torch.device("cuda"), **kw)


def _skip_unless_available(name):
    e = strategies.get(name)
    if not e.available:
        pytest.skip(f"{name}: {e.reason}")


def _interp_bf16_rms(norm, dtype):
    """liger's bf16 RMSNorm can't run under the interpreter (it refuses, see strategies/peers.py)."""
    return norm == "rmsnorm" and dtype == "bf16" and strategies.interpreted()


# ------------------------------------------------------------------------- listing and reasons
def test_peers_are_listed_as_baselines():
    for n in PEERS:
        e = strategies.get(n)
        assert n in strategies.known()
        assert e.kind == "baseline" and not e.uses_groups and e.deterministic_by_design
        assert e.doc
        assert e.available == (n in strategies.names())
        if e.available:
            assert e.reason == ""
        else:
            assert e.reason and "\n" not in e.reason
            with pytest.raises(RuntimeError, match="not available"):
                e.backward(None, None, None, None, None)


def test_quack_without_a_gpu_says_so():
    if torch.cuda.is_available() and not strategies.interpreted():
        pytest.skip("a CUDA GPU is here")
    e = strategies.get("quack")
    assert not e.available and "needs a CUDA GPU" in e.reason


def _fresh_import(prelude: str, body: str) -> str:
    env = dict(os.environ, NORMBENCH_QUIET="1", PYTHONPATH=ROOT)
    code = f"import sys\n{prelude}\nimport strategies\n{body}"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_import_strategies_imports_no_peer():
    out = _fresh_import("", "print('liger_kernel' in sys.modules, 'quack' in sys.modules, "
                            "'cutlass' in sys.modules)")
    assert out == "False False False"


def test_a_failed_import_is_a_reason_not_a_crash():
    out = _fresh_import(
        "sys.modules['liger_kernel'] = None  # any import of it now raises ImportError",
        "e = strategies.get('liger')\n"
        "print(e.available, e.reason)\n"
        "print('liger' in strategies.known(), 'liger' in strategies.names())")
    avail, listed = out.splitlines()
    assert avail.startswith("False liger-kernel ") and "liger_kernel" in avail
    assert listed == "True False"


@pytest.mark.parametrize("exc", ["OSError('libcuda.so.1: cannot open shared object file')",
                                 "RuntimeError('CUDA driver too old')",
                                 "ImportError('cannot import name x')"])
def test_any_import_error_becomes_a_one_line_reason(tmp_path, monkeypatch, exc):
    (tmp_path / "normbench_broken_peer.py").write_text(f"raise {exc}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reason, mods = peers._import_reason("broken-peer", "normbench_broken_peer",
                                        ["normbench_broken_peer"])
    assert mods == {} and reason.startswith("broken-peer failed to import: ")
    assert exc.split("(")[0] in reason and "\n" not in reason
    sys.modules.pop("normbench_broken_peer", None)


def test_a_missing_package_says_how_to_install_it():
    reason = peers._not_installed("no-such-peer", "normbench_no_such_peer")
    assert reason == ("no-such-peer is not installed (pip install no-such-peer): "
                      "No module named 'normbench_no_such_peer'")
    assert peers._not_installed("torch", "torch") == ""


def test_a_lazy_peer_settles_once(monkeypatch):
    calls = []

    def probe():
        calls.append(1)
        return "nope: ImportError: x", {}

    e = peers._Peer(probe, name="p", kind="baseline", deterministic_by_design=True,
                    uses_groups=False, fn=lambda *a, **k: None, doc="d")
    assert not calls                     # nothing imported when registered
    assert not e.available and e.reason == "nope: ImportError: x"
    assert e.available is False and len(calls) == 1
    with pytest.raises(RuntimeError, match="not available: nope"):
        e.backward(None, None, None, None, None)


# ------------------------------------------------------------------------------- liger numerics
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_liger_matches_the_reference(poisoned, norm, dtype):
    pytest.importorskip("liger_kernel")
    _skip_unless_available("liger")
    if _interp_bf16_rms(norm, dtype):
        x, dy, w, mean, rstd = make_inputs(norm, 3, 8, dtype, dtype, seed=0, device="cpu")
        with pytest.raises(NotImplementedError, match="interpreter"):
            strategies.get("liger").backward(x, dy, w, mean, rstd)
        return
    check("liger", norm, 1, 5, dtype)
    check("liger", norm, 11, 77, dtype)
    check("liger", norm, 13, 33, dtype, row_stride=40)            # strided rows
    check("liger", norm, 6, 64, dtype, row_stride=68)


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_liger_mixed_weight_dtype(poisoned, norm):
    pytest.importorskip("liger_kernel")
    _skip_unless_available("liger")
    if not _interp_bf16_rms(norm, "bf16"):
        check("liger", norm, 9, 130, "bf16", weight_dtype="fp32")
    check("liger", norm, 6, 64, "fp16", weight_dtype="fp32")


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_liger_takes_rows_that_overlap(poisoned, norm):
    """dy with a row stride of 1 (its rows overlap; `check_args` accepts it): liger's RMSNorm
    allocated dx like dy, column-major, and wrote its rows over each other (dx off by 4.2)."""
    pytest.importorskip("liger_kernel")
    _skip_unless_available("liger")
    x, _, w, mean, rstd = make_inputs(norm, 6, 8, "fp32", "fp32", seed=0, device="cpu")
    dy = torch.randn(6 + 8).unfold(0, 8, 1)[:6]
    got = strategies.get("liger").backward(x, dy, w, mean, rstd)
    want = strategies.get("torch").backward(x, dy.contiguous(), w, mean, rstd)
    assert got[0].stride(1) == 1
    for a, b in zip(got, want):
        if b is not None:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-4)


def test_dense_rows_copies_only_rows_that_overlap():
    t = torch.randn(20)
    assert peers._dense_rows(t.unfold(0, 8, 1)[:6]).stride() == (8, 1)
    wide = torch.randn(6, 12)[:, :8]
    assert peers._dense_rows(wide) is wide
    col = torch.randn(6, 1)
    assert peers._dense_rows(col) is col
    assert peers._quack_rows(t.unfold(0, 5, 1)[:6]).stride() == (5, 1)   # fp32, d = 5: div 1


def test_liger_workspace_is_its_partial_rows():
    _skip_unless_available("liger")
    e = strategies.get("liger")
    p = e.workspace_bytes(1000, 512, None, has_bias=False) // (512 * 4)
    assert p >= 1 and e.workspace_bytes(1000, 512, None, has_bias=True) == 2 * p * 512 * 4
    assert e.writers_per_slot(1000, 512, None) == 1


# ----------------------------------------------------------------------------------- on a GPU
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("name", PEERS)
def test_gpu_peers_match_the_reference(poisoned, name, norm, dtype):
    pytest.importorskip({"liger": "liger_kernel", "quack": "quack"}[name])
    _skip_unless_available(name)
    gpu_check(name, norm, 1, 5, dtype)
    gpu_check(name, norm, 1, 6, dtype)
    gpu_check(name, norm, 11, 77, dtype)
    gpu_check(name, norm, 13, 33, dtype, row_stride=40)
    gpu_check(name, norm, 13, 34, dtype, row_stride=40)
    gpu_check(name, norm, 40, 64, dtype, row_stride=68)    # stride off quack's 16 B grain
    gpu_check(name, norm, 300, 4096, dtype, row_stride=4160)
    gpu_check(name, norm, 2000, 1000, dtype)
    gpu_check(name, norm, 40000, 128, dtype)                # liger's block kernel (RMSNorm)
    gpu_check(name, norm, 3, 65536, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("name", PEERS)
def test_gpu_peers_mixed_weight_dtype_and_bits(poisoned, name, norm):
    pytest.importorskip({"liger": "liger_kernel", "quack": "quack"}[name])
    _skip_unless_available(name)
    dev = torch.device("cuda")
    gpu_check(name, norm, 9, 130, "bf16", weight_dtype="fp32")
    gpu_check(name, norm, 4096, 2048, "bf16", weight_dtype="fp32")
    gpu_check(name, norm, 600, 512, "fp16", weight_dtype="fp32")
    # deterministic by design: the same bits, call after call
    x, dy, w, mean, rstd = make_inputs(norm, 8192, 1024, "bf16", "fp32", seed=1, device=dev)
    e = strategies.get(name)
    first = e.backward(x, dy, w, mean, rstd)
    for _ in range(5):
        same_bits(first, e.backward(x, dy, w, mean, rstd))


# ---------------------------------------------------------------------------------- notes
def test_peers_name_their_path_and_the_weight_dtype_in_notes():
    x, dy, w, mean, rstd = make_inputs("rmsnorm", 4, 64, "bf16", "fp32", seed=0, device="cpu")
    assert peers._liger_notes(x, dy, w, None, rstd) == (
        "liger_kernel.ops.rms_norm.rms_norm_backward, casting mode llama, in_place=False; "
        "fp32 weight loaded and upcast in-kernel, dγ cast to it")
    assert peers._liger_notes(x, dy, w.bfloat16(), rstd, rstd) == \
        "liger_kernel.ops.layer_norm.layer_norm_backward"
    assert peers._quack_notes(x, dy, w, None, rstd) == "quack.rmsnorm.rmsnorm_bwd; fp32 weight with bf16 x"
    xs, dys, ws, _, rs = make_inputs("layernorm", 4, 64, "bf16", "bf16", seed=0, device="cpu", row_stride=68)
    assert peers._quack_notes(xs, dys, ws, rs, rs) == (
        "quack.rmsnorm.layernorm_bwd (has_bias=True); x, dy copied contiguous first "
        "(row stride off quack's alignment)")


@pytest.mark.gpu
@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
def test_gpu_torch_baseline_takes_pytorchs_path_for_a_dtype_mix(poisoned, norm):
    """bf16 x with an fp32 weight: the native CUDA kernel refuses it (PyTorch 2.x), and the
    baseline takes autocast's fp32 path; same dtypes take the native kernel.  Either way the
    notes name the path and the answer matches the fp64 reference."""
    from normbench.strategies import torch_native as tn
    dev = torch.device("cuda")
    for wdt in ("bf16", "fp32"):
        check("torch", norm, 4096, 2048, "bf16", weight_dtype=wdt, device=dev)
        x, dy, w, mean, rstd = make_inputs(norm, 8, 64, "bf16", wdt, seed=0, device=dev)
        path, why = tn._path(x, w, mean)
        print(f"\ntorch {norm} bf16/{wdt}: {path}: {why}")
        assert path in ("native", "upcast") and why
        if path == "upcast":
            assert "autocast's path" in why
