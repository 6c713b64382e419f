"""Deliberately broken implementations, loaded with NORMBENCH_PLUGINS=tests.fake_impls.

Each one proves that the harness catches a failure rather than hides it."""
import torch
import triton
import triton.language as tl

from normbench import strategies
from normbench.strategies import register

_torch = strategies.get("torch")


_calls = [0]


@register("test_nondeterministic", kind="strategy", deterministic_by_design=False,
          uses_groups=False)
def nondeterministic(x, dy, weight, mean, rstd, *, groups=None):
    """Correct to rounding, but every other call dγ[0] differs in its last bit — what an
    atomic sum in another order does to a float."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    _calls[0] += 1
    dw = dw.clone()
    dw[0] = torch.nextafter(dw[0], torch.tensor(float("inf"), dtype=dw.dtype, device=dw.device)) \
        if _calls[0] % 2 else dw[0]
    return dx, dw, db


@triton.jit
def _spin_forever(Flag):
    # nothing ever sets the flag: a lock that is never released
    while tl.load(Flag, volatile=True) == 0:
        pass


@register("test_hang", kind="strategy", deterministic_by_design=True, uses_groups=False)
def hang(x, dy, weight, mean, rstd, *, groups=None):
    """A kernel that spins on a flag nobody sets: it never returns."""
    flag = torch.zeros(1, dtype=torch.int32, device=x.device)
    _spin_forever[(1,)](flag)
    if x.is_cuda:
        torch.cuda.synchronize()
    return _torch.fn(x, dy, weight, mean, rstd)


@register("test_raises", kind="strategy", deterministic_by_design=True, uses_groups=False)
def raises(x, dy, weight, mean, rstd, *, groups=None):
    """Raises on every call."""
    raise RuntimeError("deliberate failure\nwith a second line")


@register("test_nan", kind="strategy", deterministic_by_design=True, uses_groups=False)
def nan(x, dy, weight, mean, rstd, *, groups=None):
    """Returns a dx with a NaN in it."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    dx = dx.clone()
    dx.view(-1)[0] = float("nan")
    return dx, dw, db


@triton.jit
def _does_not_compile(X, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(X + offs, tl.load(X + offs) @ 3)   # matmul of a vector by a scalar: a type error


@register("test_compile_error", kind="strategy", deterministic_by_design=True, uses_groups=False)
def compile_error(x, dy, weight, mean, rstd, *, groups=None):
    """A Triton kernel that fails to compile."""
    _does_not_compile[(1,)](x, BLOCK=16)
    return _torch.fn(x, dy, weight, mean, rstd)
