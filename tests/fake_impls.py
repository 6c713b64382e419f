"""Deliberately broken implementations, loaded with NORMBENCH_PLUGINS=tests.fake_impls.

Each one proves that the harness catches a failure rather than hides it."""
import os
import signal
import time

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


@register("test_mutates", kind="strategy", deterministic_by_design=True, uses_groups=False)
def mutates(x, dy, weight, mean, rstd, *, groups=None):
    """Correct outputs, but it scales x and zeroes the weight after computing them: every
    implementation after it would see poisoned inputs if they were shared."""
    out = _torch.fn(x, dy, weight, mean, rstd)
    x.mul_(3)
    weight.zero_()
    return out


_later = [0]


@register("test_inf_later", kind="strategy", deterministic_by_design=True, uses_groups=False)
def inf_later(x, dy, weight, mean, rstd, *, groups=None):
    """Correct on its first call; every later call returns dγ full of inf (the same bits each
    time, so the determinism check alone would not notice)."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    _later[0] += 1
    if _later[0] > 1:
        dw = torch.full_like(dw, float("inf"))
    return dx, dw, db


_crash_later = [0]


@register("test_crash_later", kind="strategy", deterministic_by_design=True, uses_groups=False)
def crash_later(x, dy, weight, mean, rstd, *, groups=None):
    """Right on its first call; its process dies in the second (a repeat), as a kernel's
    segfault would: what was measured before (its correctness) is kept under --isolate."""
    _crash_later[0] += 1
    if _crash_later[0] > 1:
        os._exit(7)
    return _torch.fn(x, dy, weight, mean, rstd)


_drift = [0]


@register("test_drifts", kind="strategy", deterministic_by_design=False, uses_groups=False)
def drifts(x, dy, weight, mean, rstd, *, groups=None):
    """Right on its first call; call k returns k·dγ — a workspace never cleared between calls
    (nondeterministic by design, so the repeats' distinct bits alone flag nothing)."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    _drift[0] += 1
    return dx, dw * _drift[0], db


@register("test_coarse_dw", kind="strategy", deterministic_by_design=True, uses_groups=False)
def coarse_dw(x, dy, weight, mean, rstd, *, groups=None):
    """dγ and dβ in the weight's dtype, but rounded through bf16 on the way: fine for a bf16
    weight, 300× the fp32 tolerance for an fp32 one."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    return dx, dw.to(torch.bfloat16).to(dw.dtype), (db.to(torch.bfloat16).to(db.dtype)
                                                    if db is not None else None)


@register("test_narrow_dw", kind="strategy", deterministic_by_design=True, uses_groups=False)
def narrow_dw(x, dy, weight, mean, rstd, *, groups=None):
    """dγ (and dβ) returned in bf16 whatever the weight's dtype: not the contract."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    return dx, dw.to(torch.bfloat16), db.to(torch.bfloat16) if db is not None else None


@register("test_other_device", kind="strategy", deterministic_by_design=True, uses_groups=False)
def other_device(x, dy, weight, mean, rstd, *, groups=None):
    """dγ and dβ on another device than x's: the CPU for CUDA inputs (a `.cpu()` left in),
    `meta` for CPU ones — right values (on the CPU), but not where the caller needs them."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    there = "meta" if x.device.type == "cpu" else "cpu"
    return dx, dw.to(there), db.to(there) if db is not None else None


_kept: dict = {}


@register("test_same_buffers", kind="strategy", deterministic_by_design=True, uses_groups=False)
def same_buffers(x, dy, weight, mean, rstd, *, groups=None):
    """Right values, copied into the same three buffers on every call (kept per shape): a
    caller keeping an earlier call's gradients finds them overwritten."""
    out = _torch.fn(x, dy, weight, mean, rstd)
    key = (x.shape, x.dtype, weight.dtype, x.device, mean is None)
    bufs = _kept.setdefault(key, [torch.empty_like(o) if o is not None else None for o in out])
    for b, o in zip(bufs, out):
        if o is not None:
            b.copy_(o)
    return tuple(bufs)


@register("test_fails_odd_d", kind="strategy", deterministic_by_design=True, uses_groups=False)
def fails_odd_d(x, dy, weight, mean, rstd, *, groups=None):
    """torch's answer where d is even; raises where it is odd (a shape no record passes)."""
    if x.shape[1] % 2:
        raise RuntimeError("odd d")
    return _torch.fn(x, dy, weight, mean, rstd)


class _Custom(BaseException):
    pass


class _BadStr(Exception):
    def __str__(self):
        raise ValueError("__str__ fails too")


@register("test_sys_exit", kind="strategy", deterministic_by_design=True, uses_groups=False)
def sys_exit(x, dy, weight, mean, rstd, *, groups=None):
    """Calls sys.exit(3) in-process."""
    import sys
    sys.exit(3)


@register("test_generator_exit", kind="strategy", deterministic_by_design=True, uses_groups=False)
def generator_exit(x, dy, weight, mean, rstd, *, groups=None):
    raise GeneratorExit("from a plugin")


@register("test_base_exception", kind="strategy", deterministic_by_design=True, uses_groups=False)
def base_exception(x, dy, weight, mean, rstd, *, groups=None):
    raise _Custom("a custom BaseException")


@register("test_bad_str", kind="strategy", deterministic_by_design=True, uses_groups=False)
def bad_str(x, dy, weight, mean, rstd, *, groups=None):
    raise _BadStr()


@register("test_float_writers", kind="strategy", deterministic_by_design=False, uses_groups=True,
          writers=lambda rows, groups: (rows + groups - 1) / groups)   # / for //: a float
def float_writers(x, dy, weight, mean, rstd, *, groups=None):
    """Right, but its writers model gives a float count, which the record cannot hold."""
    return _torch.fn(x, dy, weight, mean, rstd)


@register("test_list_notes", kind="strategy", deterministic_by_design=True, uses_groups=False)
def list_notes(x, dy, weight, mean, rstd, *, groups=None):
    """Right, but its notes() gives a list, not a text."""
    return _torch.fn(x, dy, weight, mean, rstd)


list_notes.notes = lambda *args: ["path A", "weight fp32"]


_flips = [0]


@register("test_det_flips", kind="strategy", deterministic_by_design=True,
          uses_groups=False)
def claims_determinism(x, dy, weight, mean, rstd, *, groups=None):
    """Deterministic by design, it says; every other call dγ[0] is one ulp off (right to
    rounding, not repeatable)."""
    dx, dw, db = _torch.fn(x, dy, weight, mean, rstd)
    _flips[0] += 1
    if _flips[0] % 2:
        dw = dw.clone()
        dw[0] = torch.nextafter(dw[0], torch.tensor(float("inf"), dtype=dw.dtype))
    return dx, dw, db


def _one_buffer(rows, d, groups, has_bias):        # groups: None where GROUPS is unused
    return (d if groups is None else groups * d) * 4 * (2 if has_bias else 1)


@register("test_one_buffer", kind="strategy", deterministic_by_design=True, uses_groups=False,
          workspace=_one_buffer, writers=lambda rows, g: rows if g is None else -(-rows // g))
def one_buffer(x, dy, weight, mean, rstd, *, groups=None):
    """Models of its own that read GROUPS as the API gives it: None, as it uses none."""
    return _torch.fn(x, dy, weight, mean, rstd)


@register("test_keyboard_interrupt", kind="strategy", deterministic_by_design=True,
          uses_groups=False)
def keyboard_interrupt(x, dy, weight, mean, rstd, *, groups=None):
    """Raises KeyboardInterrupt itself: no signal was sent, so it is its own failure."""
    raise KeyboardInterrupt("from a plugin")


_swallowed = [0]


@register("test_swallows_signal", kind="strategy", deterministic_by_design=True,
          uses_groups=False)
def swallows_signal(x, dy, weight, mean, rstd, *, groups=None):
    """torch's answer; its first call in a process sends that process NORMBENCH_TEST_SIGNAL
    (SIGINT when unset: Ctrl-C pressed while it runs) and swallows what the handler raises
    with a bare `except:`, as careless library code does."""
    if not _swallowed[0]:
        _swallowed[0] = 1
        try:
            os.kill(os.getpid(), signal.Signals[os.environ.get("NORMBENCH_TEST_SIGNAL", "SIGINT")])
            time.sleep(0.5)                 # the handler runs in here
        except:                             # noqa: E722 -- the point
            pass
    return _torch.fn(x, dy, weight, mean, rstd)
