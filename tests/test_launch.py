"""The direct launch path (strategies._launch.launch) with a stand-in kernel: CPU, no Triton.

On a GPU every strategy goes through it (tests/test_gpu.py checks the answers); here the
cache key and the arguments handed to the compiled kernel are checked on their own."""
import pytest
import torch

from strategies import _launch


class FakeCompiled:
    function, packed_metadata = "fn", "meta"

    def __init__(self, log):
        self.log = log

    def run(self, *a):
        self.log.append(("run", a))


class FakeKernel:
    """Looks like a JITFunction: arg_names, and kernel[grid](...) returns a compiled kernel."""
    arg_names = ["X", "N", "BLOCK", "FLAG"]

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
    monkeypatch.setattr(_launch, "_COMPILED", {})
    monkeypatch.setattr(_launch.torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(_launch, "_stream", lambda dev: 1234)


def test_second_call_goes_straight_to_the_compiled_kernel(fast):
    k = FakeKernel()
    x = torch.zeros(64)
    _launch.launch(k, (3,), x, 64, BLOCK=16, FLAG=True, num_warps=4)
    _launch.launch(k, (5,), x, 32, BLOCK=16, FLAG=True, num_warps=4)
    assert [e[0] for e in k.log] == ["compile+launch", "run"]
    # grid padded to 3-D, the stream, no hooks, run-time args then constexprs in order
    assert k.log[1][1] == (5, 1, 1, 1234, "fn", "meta", None, None, None, x, 32, 16, True)


@pytest.mark.parametrize("change", [
    lambda a, m: ((a[0].to(torch.float16), a[1]), m),          # dtype
    lambda a, m: ((torch.zeros(65)[1:], a[1]), m),             # alignment
    lambda a, m: ((a[0], 1), m),                               # an int equal to 1
    lambda a, m: ((a[0], 40), m),                              # not a multiple of 16
    lambda a, m: ((a[0], 2 ** 31), m),                         # past 32 bits
    lambda a, m: (a, {**m, "BLOCK": 32}),                      # a constexpr
    lambda a, m: (a, {**m, "num_warps": 8}),                   # a launch option
])
def test_any_change_triton_specialises_on_compiles_again(fast, change):
    k = FakeKernel()
    args, meta = (torch.zeros(64), 64), dict(BLOCK=16, FLAG=True, num_warps=4)
    _launch.launch(k, (1,), *args, **meta)
    args2, meta2 = change(args, meta)
    _launch.launch(k, (1,), *args2, **meta2)
    assert [e[0] for e in k.log] == ["compile+launch", "compile+launch"]


def test_switched_off_or_interpreted_uses_the_plain_launch(fast, monkeypatch):
    k = FakeKernel()
    monkeypatch.setattr(_launch, "_FAST", False)
    for _ in range(2):
        _launch.launch(k, (1,), torch.zeros(4), 4, BLOCK=4, FLAG=False, num_warps=1)
    assert [e[0] for e in k.log] == ["compile+launch"] * 2


def test_an_installed_launch_hook_uses_the_plain_launch(fast, monkeypatch):
    k = FakeKernel()
    monkeypatch.setattr(_launch, "_no_hooks", lambda: False)
    for _ in range(2):
        _launch.launch(k, (1,), torch.zeros(4), 4, BLOCK=4, FLAG=False, num_warps=1)
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


def test_a_given_key_stands_in_for_the_arguments(fast):
    """Strategies pass Call.sig (+ GROUPS): then the arguments themselves are not read."""
    k = FakeKernel()
    _launch.launch(k, (1,), torch.zeros(64), 64, BLOCK=16, FLAG=True, num_warps=4, key=("sig", 1))
    _launch.launch(k, (1,), torch.zeros(64, dtype=torch.float16), 1, BLOCK=16, FLAG=True,
                   num_warps=4, key=("sig", 1))
    _launch.launch(k, (1,), torch.zeros(64), 64, BLOCK=16, FLAG=True, num_warps=4, key=("sig", 2))
    assert [e[0] for e in k.log] == ["compile+launch", "run", "compile+launch"]


def test_call_sig_sees_what_triton_specialises_on():
    from harness.inputs import make_inputs
    x, dy, w, mean, rstd = make_inputs("layernorm", 8, 64, "bf16", "bf16", seed=0, device="cpu",
                                       row_stride=72)
    base = _launch.prepare(x, dy, w, mean, rstd).sig
    assert _launch.prepare(x[:, 1:], dy[:, 1:], w[1:], mean, rstd).sig != base       # alignment, d
    assert _launch.prepare(x[:, 8:], dy[:, 8:], w[8:], mean, rstd).sig != base       # d
    assert _launch.prepare(x, dy, w, None, rstd).sig != base                          # no mean
    assert _launch.prepare(x.float(), dy.float(), w, mean, rstd).sig != base          # dtype, stride
    assert _launch.prepare(x.clone(), dy.clone(), w.clone(), mean.clone(), rstd.clone()).sig != base  # stride 64
