"""strategies/_interpret.py: the interpreter's language patch once a launch, not once a
device-function call, with every result as Triton's own way gives it."""
import os
import runpy
import subprocess
import sys

import numpy as np
import pytest
import torch
from triton.runtime import interpreter

from normbench import strategies
from normbench.harness.inputs import make_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.skipif(not strategies.interpreted(), reason="CPU (interpreter) only")

# every strategy here that runs Triton kernels under the interpreter
NAMES = [n for n in strategies.names()
         if strategies.get(n).kind == "strategy" and strategies.get(n).available]


def _patches(monkeypatch, name, rows):
    """How many times the language modules' builtins are patched in one backward call."""
    calls = []
    real = interpreter._patch_builtin
    monkeypatch.setattr(interpreter, "_patch_builtin", lambda *a: (calls.append(1), real(*a)))
    x, dy, w, mean, rstd = make_inputs("layernorm", rows, 40, "fp32", "fp32", seed=rows, device="cpu")
    strategies.get(name).backward(x, dy, w, mean, rstd, groups=2)
    return len(calls)


@pytest.mark.parametrize("name", ["atomic", "grouped_atomic", "spin_lock"])
def test_a_launch_patches_the_language_once_however_many_rows(monkeypatch, name):
    """Triton's interpreter patched triton.language again at every call of a device function
    (the per-row helper, tl.sum, ...), so the patching grew with the rows; now each launch
    patches it once."""
    assert _patches(monkeypatch, name, 16) == _patches(monkeypatch, name, 2) > 0


_SCRIPT = r"""
import sys, torch
from normbench import strategies
from normbench.harness.inputs import make_inputs


def outputs(names):
    out = {}
    for name in names:
        for norm in ("layernorm", "rmsnorm"):
            x, dy, w, mean, rstd = make_inputs(norm, 7, 45, "bf16", "fp32", seed=3, device="cpu")
            res = strategies.get(name).backward(x, dy, w, mean, rstd, groups=3)
            out[name, norm] = [t.clone() if t is not None else None for t in res]
    return out


if __name__ == "__main__":
    torch.save(outputs(sys.argv[2].split(",")), sys.argv[1])
"""


def test_every_strategy_gives_the_bits_triton_s_own_way_gives(tmp_path):
    """The same results, bit for bit, with the skip and with Triton patching at every call
    (NORMBENCH_INTERPRET_REPATCH=1), for every strategy the interpreter runs.  Where this
    process runs with the skip (its NORMBENCH_INTERPRET_REPATCH unset), its results are this
    process's own; Triton's way is always a fresh process's."""
    got = {}
    if getattr(interpreter._patch_lang, "_normbench", False):    # the skip is on here: "0"
        ns = {"__name__": "bits"}
        exec(_SCRIPT, ns)
        got["0"] = ns["outputs"](NAMES)
    for mode in ("0", "1"):
        if mode in got:
            continue
        f = tmp_path / f"out{mode}.pt"
        env = {**os.environ, "NORMBENCH_INTERPRET_REPATCH": mode, "PYTHONPATH": ROOT,
               "NORMBENCH_PLUGINS": ""}
        r = subprocess.run([sys.executable, "-c", _SCRIPT, str(f), ",".join(NAMES)], env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-2000:]
        got[mode] = torch.load(f)
    assert got["0"].keys() == got["1"].keys() and len(got["0"]) == 2 * len(NAMES)
    for key, outs in got["0"].items():
        for a, b in zip(outs, got["1"][key]):
            assert (a is None) == (b is None), key
            if a is not None:
                assert torch.equal(a.view(torch.uint8), b.view(torch.uint8)), key


_NO_LANG = r"""
import sys, torch, triton
sys.path.insert(0, sys.argv[1])
from normbench import strategies             # installs the skip (or not) before the kernel
import triton.language as tl
from helper_without_tl import scaled         # a device function whose module has no tl


@triton.jit
def copy_scaled(X, Y, N, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < N
    tl.store(Y + offs, scaled(tl.load(X + offs, mask=m), 2.0), mask=m)


x = torch.arange(5, dtype=torch.float32)
y = torch.zeros(5)
try:
    copy_scaled[(1,)](x, y, 5, BLOCK=8)
    print("ran", y.tolist())
except Exception as e:
    print("error", type(e).__name__, "triton.language must be visible" in str(e))
"""


def test_a_device_function_whose_module_has_no_triton_language_fails_as_in_triton(
        tmp_path, monkeypatch, capsys):
    """Triton's interpreter refuses a device function whose module does not see
    triton.language ("must be visible"); the skip ran it instead, so a plugin's record was ok
    one way and an error the other.  Both ways now give Triton's error.  Where this process
    runs with the skip, the script runs here for it (its own module, sys.path and argv, put
    back after); Triton's way is always a fresh process's."""
    (tmp_path / "helper_without_tl.py").write_text(
        "import triton\n\n\n@triton.jit\ndef scaled(x, s):\n    return x * s\n")
    out = {}
    if getattr(interpreter._patch_lang, "_normbench", False):    # the skip is on here: "0"
        script = tmp_path / "no_lang.py"
        script.write_text(_NO_LANG)
        monkeypatch.setattr(sys, "argv", [str(script), str(tmp_path)])
        monkeypatch.setattr(sys, "path", list(sys.path))
        try:
            runpy.run_path(str(script), run_name="__main__")
        finally:
            sys.modules.pop("helper_without_tl", None)
        out["0"] = capsys.readouterr().out.strip()
    for mode in ("0", "1"):
        if mode in out:
            continue
        env = {**os.environ, "NORMBENCH_INTERPRET_REPATCH": mode, "PYTHONPATH": ROOT,
               "NORMBENCH_PLUGINS": ""}
        r = subprocess.run([sys.executable, "-c", _NO_LANG, str(tmp_path)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-2000:]
        out[mode] = r.stdout.strip()
    assert out["0"] == out["1"] == "error InterpreterError True", out


def test_the_overflow_check_is_skipped_only_where_its_result_is_dropped(monkeypatch):
    """_interpret.py skips the interpreter's int32 overflow check while the builder's debug is
    off, where device_assert drops its result: a kernel whose int32 product overflows runs
    (wrapping, as Triton's own way gives it); with debug on, Triton's check runs and stops it."""
    import dataclasses

    import triton
    import triton.language as tl
    from triton.language.semantic import TritonSemantic

    assert getattr(TritonSemantic.binary_op_sanitize_overflow_impl, "_normbench", False)

    @triton.jit
    def times(X, Y, s):
        tl.store(Y, tl.load(X) * s)

    x, y = torch.tensor([2**20], dtype=torch.int32), torch.zeros(1, dtype=torch.int32)
    times[(1,)](x, y, 2**12)
    assert y.item() == (2**32) - 2**32 == 0          # 2^32 wrapped to int32: no check ran
    b = interpreter.interpreter_builder
    monkeypatch.setattr(b, "options", dataclasses.replace(b.options, debug=True))
    with pytest.raises(Exception, match="int32 overflow detected for operation mul"):
        times[(1,)](x, y, 2**12)
    times[(1,)](x, torch.zeros(1, dtype=torch.int32), 2**10)      # in range: no error


def test_block_types_and_tensors_are_built_as_triton_builds_them():
    """_interpret's fast paths are in place, and a block type or tensor built through them
    (a shape's first time, then again from what that one kept) has the attributes Triton's own
    __init__ gives it, its shape a tuple of its own; a shape Triton refuses is refused alike."""
    import triton.language as tl
    from triton.language.semantic import TritonSemantic
    for f in (tl.block_type.__init__, tl.tensor.__init__, TritonSemantic.broadcast_impl_value,
              interpreter._get_np_dtype):
        assert getattr(f, "_normbench", False), f

    def own(cls, *args):
        obj = object.__new__(cls)
        cls.__init__._real(obj, *args)
        return obj

    def attrs(obj):
        return {k: (v.values, v.type) if isinstance(v, tl.tuple) else v
                for k, v in vars(obj).items()}

    for elem in (tl.float32, tl.int1, tl.pointer_type(tl.bfloat16)):
        for shape in ([4, 8], [tl.constexpr(4), 8], tl.tuple([2, 1, 16]), [64]):
            for _ in range(2):
                got, want = tl.block_type(elem, shape), own(tl.block_type, elem, shape)
                assert attrs(got) == attrs(want) and got.element_ty is elem
                assert list(vars(got)) == list(vars(want))
                t, u = tl.tensor("h", got), own(tl.tensor, "h", want)
                assert attrs(t) == attrs(u) and list(vars(t)) == list(vars(u))
                assert t.shape is not tl.tensor("h", got).shape and got.shape is not \
                    tl.block_type(elem, shape).shape
        assert attrs(tl.tensor("s", elem)) == attrs(own(tl.tensor, "s", elem))
    for bad in ([3], [0], (4, 8), [2.0]):
        for _ in range(2):
            with pytest.raises(Exception) as got:
                tl.block_type(tl.float32, bad)
            with pytest.raises(Exception) as want:
                own(tl.block_type, tl.float32, bad)
            assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))
    assert interpreter._get_np_dtype(tl.block_type(tl.bfloat16, [4])) == np.uint16
    assert interpreter._get_np_dtype(tl.pointer_type(tl.float32)) == np.uint64


def test_bf16_casts_give_the_bits_triton_s_conversion_gives():
    """_interpret's bf16 <-> fp32 cast (a shift where Triton's _convert_float gives the same
    bits) against Triton's own conversion: every bf16, every fp32 upper half with 32 lower
    halves, in one array with no subnormal (the shift) and in one with one (Triton's own)."""
    import triton.language as tl
    b = interpreter.interpreter_builder
    assert getattr(type(b).cast_impl, "_normbench", False)
    rng = np.random.default_rng(0)
    lows = np.concatenate([[0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF],
                           rng.integers(0, 1 << 16, 26)]).astype(np.uint32)
    f32 = ((np.arange(1 << 16, dtype=np.uint32) << 16)[:, None] | lows).ravel()
    bf16 = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    for bits, src, dst, mant in ((bf16, tl.bfloat16, tl.float32, 0x7F),
                                 (f32.view(np.float32), tl.float32, tl.bfloat16, 0x7FFFFF)):
        raw = bits.view(np.uint16 if src is tl.bfloat16 else np.uint32)
        sub = ((raw & (mant + 1) * 0xFF) == 0) & ((raw & mant) != 0)
        for part in (bits[~sub].reshape(2, -1), bits):        # without a subnormal; with
            got = b.cast_impl(interpreter.TensorHandle(part, src), dst)
            want = interpreter._convert_float(part, src, dst, None)
            assert got.dtype == dst and got.data.shape == part.shape
            assert got.data.dtype == interpreter._get_np_dtype(dst)
            assert np.array_equal(got.data.view(want.dtype), want)
