"""The direct launch path (strategies._launch.launch): with a stand-in kernel, and (the last
tests) with every strategy's real kernels under the interpreter.

On a GPU every strategy goes through it (tests/test_gpu.py checks the answers); here the
plan cache and the arguments handed to the compiled kernel are checked on their own.  What
Triton specialises on reaches the key through Call.sig (the last stand-in test)."""
import pytest
import torch

from normbench import strategies
from normbench.strategies import _launch


class FakeCompiled:
    function, packed_metadata = "fn", "meta"

    def __init__(self, log):
        self.log = log

    def run(self, *a):
        self.log.append(("run", a))


def _signature(X, N, BLOCK, FLAG=False):
    """FakeKernel's parameters: FLAG has a default, as `WIDE` has in the reduce kernels."""


class FakeKernel:
    """Looks like a JITFunction: arg_names, fn (the Python function), and kernel[grid](...)
    returns a compiled kernel."""
    arg_names = ["X", "N", "BLOCK", "FLAG"]
    fn = staticmethod(_signature)

    def __init__(self):
        self.log = []

    def __getitem__(self, grid):
        def go(*args, **meta):
            self.log.append(("compile+launch", grid, args, meta))
            return FakeCompiled(self.log)
        return go


@pytest.fixture
def fast(monkeypatch):
    monkeypatch.setattr(_launch, "_FAST", True)
    monkeypatch.setattr(_launch._device, "interpreted", lambda: False)
    monkeypatch.setattr(_launch, "_PLANS", {})
    monkeypatch.setattr(_launch.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(_launch, "_stream", lambda dev: 1234)


def setup_of(grid, n, calls=None, **meta):
    """A setup() for FakeKernel: grid, the scalar N, constexprs; counts its calls."""
    def setup():
        if calls is not None:
            calls.append(1)
        return grid, (n,), dict(meta)
    return setup


def test_second_call_goes_straight_to_the_compiled_kernel(fast):
    k, calls = FakeKernel(), []
    x, y = torch.zeros(64), torch.ones(64)
    _launch.launch(k, ("sig", 3), (x,), setup_of((3,), 64, calls, BLOCK=16, FLAG=True, num_warps=4))
    _launch.launch(k, ("sig", 3), (y,), setup_of((3,), 64, calls, BLOCK=16, FLAG=True, num_warps=4))
    assert [e[0] for e in k.log] == ["compile+launch", "run"]
    assert len(calls) == 1                      # setup ran for the first call only
    # grid padded to 3-D, the stream, no hooks, this call's tensors, then the kept scalars
    # and constexprs in order
    assert k.log[1][1] == (3, 1, 1, 1234, "fn", "meta", None, None, None, y, 64, 16, True)


def test_a_constexpr_left_to_its_default_is_kept_at_the_default(fast):
    """A caller that names a constexpr only when it differs from its default (the reduce's
    WIDE) still gets the default handed to the kept kernel from the second call on (at
    2792e69 it raised KeyError: 'WIDE' there, in every strategy with a reduce, on a GPU)."""
    k = FakeKernel()
    x = torch.zeros(64)
    s = setup_of((2,), 64, BLOCK=16, num_warps=4)
    _launch.launch(k, ("sig", 2), (x,), s)
    _launch.launch(k, ("sig", 2), (x,), s)
    assert [e[0] for e in k.log] == ["compile+launch", "run"]
    assert k.log[1][1][-3:] == (64, 16, False)


def test_the_real_kernels_defaults_are_read():
    """Every kernel launched through `launch` that leaves a constexpr out has a default for
    it: the reduce's WIDE, read from the JITFunction's own signature."""
    from normbench.strategies import reduce
    k = reduce._reduce_kernel
    first = k.arg_names.index("WIDE")
    assert _launch._consts(k, {}, first) == (False,)
    assert _launch._consts(k, {"WIDE": True}, first) == (True,)


def test_a_constexpr_with_no_value_is_refused_not_kept():
    """A parameter neither given nor defaulted is an error naming it, never the `empty`
    marker handed to the compiled kernel as an argument."""
    from normbench.strategies import reduce
    k = reduce._reduce_kernel
    first = k.arg_names.index("BLOCK_N")
    with pytest.raises(TypeError, match="no value for"):
        _launch._consts(k, {}, first)


def test_a_new_key_or_kernel_or_device_compiles_again(fast, monkeypatch):
    k, k2 = FakeKernel(), FakeKernel()
    x = torch.zeros(64)
    s = setup_of((1,), 64, BLOCK=16, FLAG=True, num_warps=4)
    _launch.launch(k, ("sig", 1), (x,), s)
    _launch.launch(k, ("sig", 2), (x,), s)          # another key
    _launch.launch(k2, ("sig", 1), (x,), s)         # another kernel
    monkeypatch.setattr(_launch.torch.cuda, "current_device", lambda: 1)
    _launch.launch(k, ("sig", 1), (x,), s)          # another device
    assert [e[0] for e in k.log] == ["compile+launch"] * 3
    assert [e[0] for e in k2.log] == ["compile+launch"]


@pytest.mark.parametrize("switch", ["off", "hook", "override"])
def test_plain_launch_when_off_hooked_or_tuning(fast, monkeypatch, switch):
    """NORMBENCH_FAST_LAUNCH=0, an installed launch hook and a tuning override (whose launch
    parameters are not in the key) each take kernel[grid](...) on every call."""
    if switch == "off":
        monkeypatch.setattr(_launch, "_FAST", False)
    elif switch == "hook":
        monkeypatch.setattr(_launch, "_no_hooks", lambda: False)
    else:
        monkeypatch.setitem(_launch._tuning.OVERRIDE, "x", {"num_warps": 8})
    k, calls = FakeKernel(), []
    for _ in range(2):
        _launch.launch(k, ("sig",), (torch.zeros(4),), setup_of((1,), 4, calls, BLOCK=4,
                                                                  FLAG=False, num_warps=1))
    assert [e[0] for e in k.log] == ["compile+launch"] * 2 and len(calls) == 2


def test_interpreted_uses_the_plain_launch(fast, monkeypatch):
    monkeypatch.setattr(_launch._device, "interpreted", lambda: True)
    k = FakeKernel()
    for _ in range(2):
        _launch.launch(k, ("sig",), (torch.zeros(4),), setup_of((1,), 4, BLOCK=4, FLAG=False,
                                                                  num_warps=1))
    assert [e[0] for e in k.log] == ["compile+launch"] * 2


def test_hook_detection_reads_tritons_hook_chains(monkeypatch):
    import triton
    assert _launch._no_hooks()            # nothing installed by default
    hook = lambda *a: None                # noqa: E731
    triton.knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert not _launch._no_hooks()
    finally:
        triton.knobs.runtime.launch_enter_hook.remove(hook)


def test_call_sig_sees_what_triton_specialises_on():
    from normbench.harness.inputs import make_inputs
    x, dy, w, mean, rstd = make_inputs("layernorm", 8, 64, "bf16", "bf16", seed=0, device="cpu",
                                       row_stride=72)
    base = _launch.prepare(x, dy, w, mean, rstd).sig
    assert _launch.prepare(x[:, 1:], dy[:, 1:], w[1:], mean, rstd).sig != base       # alignment, d
    assert _launch.prepare(x[:, 8:], dy[:, 8:], w[8:], mean, rstd).sig != base       # d
    assert _launch.prepare(x, dy, w, None, rstd).sig != base                          # no mean
    assert _launch.prepare(x.float(), dy.float(), w, mean, rstd).sig != base          # dtype, stride
    assert _launch.prepare(x.clone(), dy.clone(), w.clone(), mean.clone(), rstd.clone()).sig != base  # stride 64


# --- the direct path with the real kernels, under the interpreter -------------------------
# On a GPU every launch from the second of a key on hands the compiled kernel the arguments
# `launch` kept; the interpreter takes the plain launch, so the CPU tests above never ran
# the real kernels that way (2792e69: every strategy with a reduce raised KeyError: 'WIDE'
# there, on the GPU only).  Here `launch` takes its direct path and the "compiled kernel" is
# the interpreted one, called with exactly the arguments the direct path hands over.

class _Interpreted:
    """What `kernel[grid](...)` returns in the direct path: run() calls the interpreted
    kernel with the launcher's arguments (the tensors, then the kept scalars and constexprs,
    all by position)."""
    function, packed_metadata = "fn", "meta"

    def __init__(self, kernel):
        self.kernel = kernel

    def run(self, g0, g1, g2, stream, function, metadata, *rest):
        hooks, args = rest[:3], rest[3:]
        assert hooks == (None, None, None) and stream == 0
        assert len(args) == len(self.kernel.arg_names), (
            f"{len(args)} arguments for {self.kernel.arg_names}")
        self.kernel[(g0, g1, g2)](*args)


@pytest.fixture
def direct_path(monkeypatch):
    """`launch` on its direct path for real kernels under the interpreter: the first call of a
    key runs the kernel as Triton would and keeps the plan; later ones run `_Interpreted`."""
    import types
    from triton.runtime.interpreter import InterpretedFunction
    get = InterpretedFunction.__getitem__

    def getitem(kernel, grid):
        go = get(kernel, grid)

        def call(*args, **meta):
            go(*args, **meta)
            return _Interpreted(kernel)
        return call
    monkeypatch.setattr(InterpretedFunction, "__getitem__", getitem)
    # the direct path for launch() only: the strategies still see the interpreter
    monkeypatch.setattr(_launch, "_device", types.SimpleNamespace(interpreted=lambda: False))
    monkeypatch.setattr(_launch, "_FAST", True)
    monkeypatch.setattr(_launch, "_PLANS", {})
    monkeypatch.setattr(_launch, "_no_hooks", lambda: True)
    monkeypatch.setattr(_launch.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(_launch, "_stream", lambda dev: 0)


_DIRECT = [n for n in strategies.names() if strategies.get(n).kind == "strategy"]


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("name", _DIRECT)
def test_every_strategy_is_right_through_the_direct_launch(direct_path, name, norm):
    """Each strategy's first call (the plan kept) and its second (the kept plan run) are
    right against fp64 and, deterministic by design, the same bits."""
    from checks import same_bits
    from normbench.harness.inputs import errors, errors_within, make_inputs, reference
    x, dy, w, mean, rstd = make_inputs(norm, 9, 40, "bf16", "fp32", seed=7, device="cpu")
    e = strategies.get(name)
    first = e.backward(x, dy, w, mean, rstd, groups=4)
    assert _launch._PLANS, "the direct path was not taken"
    again = e.backward(x, dy, w, mean, rstd, groups=4)
    ref = reference(x, dy, w, mean, rstd)
    for out in (first, again):       # dx to bf16's tolerance, the fp32 dγ/dβ to fp32's
        errs = errors(out, ref)
        assert errors_within(errs, "bf16", "fp32"), (name, errs)
    if e.deterministic_by_design:
        same_bits(first, again)
