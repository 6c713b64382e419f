"""Host-side preparation shared by the Triton strategies (outputs, strides, placeholders)."""
from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
from dataclasses import dataclass

import torch
import triton

from . import _device, _tuning


@dataclass(slots=True)
class Call:
    x: torch.Tensor
    dy: torch.Tensor
    dx: torch.Tensor
    weight: torch.Tensor
    mean: torch.Tensor          # rstd stands in when there is no mean (RMSNorm); never read then
    rstd: torch.Tensor
    has_mean: bool
    rows: int
    d: int
    # What Triton specialises on in the call's inputs: dtypes, sizes, strides, 16-byte
    # alignment.  With the launch's own sizes (GROUPS) it is the whole specialisation of a
    # strategy's main kernel: every other tensor is allocated here (the caching allocator's
    # blocks are 512-byte aligned) or a view at an offset fixed by those sizes.
    sig: tuple = ()

    @property
    def strides(self) -> tuple[int, int, int]:
        return self.x.stride(0), self.dy.stride(0), self.dx.stride(0)

    def outputs(self, dw: torch.Tensor, db: torch.Tensor | None):
        return self.dx, dw, (db if self.has_mean else None)


def prepare(x, dy, weight, mean, rstd) -> Call:
    """The call's tensors as the Triton kernels take them (check_args has passed: they share
    x's device).  A device they never run on — anything but a CUDA GPU or the CPU (the
    interpreter's; a CPU tensor where kernels are compiled is Triton's own ValueError, and
    bench/timeline_staged.py's test prepares CPU tensors to compile for sm_90), a meta tensor
    say — is refused here by name, as check_args refuses an argument, rather than failing
    inside Triton with a NotImplementedError (which the harness reads as a skip)."""
    if not x.is_cuda and x.device.type != "cpu":
        raise ValueError(f"x: is on {x.device}; the Triton kernels run on a CUDA GPU, or on "
                         "CPU tensors under the Triton interpreter")
    rows, d = x.shape
    # a null data pointer (a ZeroTensor, a storage freed by resize_(0)) is a tensor without its
    # values, which the kernels would read at address 0: on a GPU an illegal memory access that
    # breaks every later CUDA call of the process.  Read before .contiguous(), which fails on a
    # freed storage inside torch; the pointers are the signature's (a copy's read again)
    ptrs = (x.data_ptr(), dy.data_ptr(), weight.data_ptr(),
            mean.data_ptr() if mean is not None else 1, rstd.data_ptr())
    if not all(ptrs):
        name = ("x", "dy", "weight", "mean", "rstd")[ptrs.index(0)]
        raise ValueError(f"{name}: holds no data (a null data pointer: a ZeroTensor from "
                         "torch._efficientzerotensor, or a storage freed by resize_(0)); the "
                         "kernels read its memory: pass a tensor that holds its values")
    px, pdy, pw, pm, pr = ptrs
    if not rstd.is_contiguous():
        rstd = rstd.contiguous()
        pr = rstd.data_ptr()
    if not weight.is_contiguous():
        weight = weight.contiguous()
        pw = weight.data_ptr()
    if mean is not None and not mean.is_contiguous():
        mean = mean.contiguous()
        pm = mean.data_ptr()
    stride_x = x.stride(0)
    sig = (x.dtype, weight.dtype, rows, d, stride_x, dy.stride(0), mean is not None,
           px & 15, pdy & 15, pw & 15, pr & 15, pm & 15 if mean is not None else 0)
    # empty_like: a fresh (rows, d) tensor in x's dtype, row-major (x's last dimension is
    # contiguous; a row stride past d gives a dense result) — half the host time of torch.empty;
    # but rows that overlap with a row stride of 1 (x.unfold(0, d, 1)) make it column-major,
    # which the kernels (dx's last dimension contiguous) would write wrong
    dx = torch.empty_like(x)
    if stride_x < d and dx.stride(1) != 1:    # checked only where x's rows overlap
        dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    return Call(x=x, dy=dy, dx=dx,
                weight=weight, mean=mean if mean is not None else rstd, rstd=rstd,
                has_mean=mean is not None, rows=rows, d=d, sig=sig)


# --- scratch workspaces -----------------------------------------------------------------------
# The fp32 partial rows live only inside one call, yet allocating them is host time that a small
# shape pays in full (an allocation and a split: ~10 µs of the ~77 µs a call cost on the device's
# CPU).  So they are kept between calls, per device, stream and shape: kernels on one stream run
# in order, so a call's kernels never touch them before the previous call's last read; another
# stream gets its own.  Their contents are undefined: every strategy writes (or zeroes) before
# it reads.  The last SCRATCH_KEEP shapes stay allocated (workspace_bytes counts each).
SCRATCH_KEEP = 8
_SCRATCH: dict = {}


def _key(device: torch.device, *what) -> tuple:
    """A kept workspace's key: what it is, its device and (on a GPU) the current stream."""
    return (*what, device, _stream(device.index) if device.type == "cuda" else None)


def remember(cache: dict, key, value, keep: int):
    """cache[key] = value, dropping the oldest entry past `keep` first: each per-shape cache
    of the hot path (workspaces, launch plans, GROUPS) stays bounded where a client's shapes
    vary from call to call (a training run's token counts), at the cost of a recomputed entry."""
    if len(cache) >= keep:
        del cache[next(iter(cache))]
    cache[key] = value
    return value


def _keep(key: tuple, hit):
    """Keep a new workspace under `key`, dropping the oldest past SCRATCH_KEEP."""
    return remember(_SCRATCH, key, hit, SCRATCH_KEEP)


def kept(device: torch.device, make, *what):
    """The workspace kept under `what` on `device` (and its current stream), made by `make()`
    the first time — the pattern of every workspace here — outside inference mode whatever
    the caller's (it outlives the call; strategies of every mode share it)."""
    key = _key(device, *what)
    hit = _SCRATCH.get(key)
    if hit is None:
        with torch.inference_mode(False):   # a call in inference mode must not make it an
            hit = _keep(key, make())        # inference tensor: later calls zero it in place
    return hit


def scratch(groups: int, d: int, has_bias: bool, device: torch.device, zero: bool = False):
    """(pw, pb): fp32 [GROUPS, d] partial rows for dγ and, with a bias, dβ (else pb is None);
    one allocation, reused by later calls of the same shape on the same device and stream.
    zero: clear both (one memset) for the strategies that accumulate into them."""
    def make():
        base = torch.empty((2 if has_bias else 1, groups, d), dtype=torch.float32, device=device)
        return base[0], base[1] if has_bias else None, base

    hit = kept(device, make, groups, d, has_bias)
    if zero:
        hit[2].zero_()
    return hit[0], hit[1]


def exchange_scratch(slots: int, parts: int, block_r: int, device: torch.device):
    """The row-sum exchange's words (strategies/_exchange.py): int64 [slots, parts, parts,
    block_r], kept between calls like `scratch`.  Filled with EMPTY once, when allocated:
    every launch leaves them so."""
    return kept(device, lambda: torch.full((slots * parts * parts * block_r,), -1,
                                           dtype=torch.int64, device=device),
                "exchange", slots, parts, block_r)


# --- launching ------------------------------------------------------------------------------
# `kernel[grid](*args, **meta)` binds and specialises every argument, builds a cache key and
# reads several Triton settings on every call: host time that a small shape pays in full (the
# GPU finishes first and waits).  `launch` does that once per key and afterwards hands the
# call's tensors straight to the compiled kernel's launcher, with the rest of the arguments
# (sizes, strides, constexprs) kept from the first call.  The caller's key must determine
# them all and, through `Call.sig`, what Triton specialises on (tensor dtypes and 16-byte
# alignment; an int's ==1, %16 and 32-bit range), so a kept kernel is only reused where
# Triton would have chosen the same one.  NORMBENCH_FAST_LAUNCH=0 turns it off; so do a
# launch hook (a profiler, say) and a tuning override (bench/tune.py).
_FAST = os.environ.get("NORMBENCH_FAST_LAUNCH", "1") != "0"
_PLANS: dict = {}
PLANS_KEEP = 1024       # (kernel, device, key) plans kept: the oldest goes past this many


def _no_hooks() -> bool:
    """True when no launch hook (a profiler, say) is installed: the direct launch skips them."""
    r = triton.knobs.runtime
    e, x = r.launch_enter_hook, r.launch_exit_hook
    return (e is None or not getattr(e, "calls", True)) and (x is None or not getattr(x, "calls", True))


# `capture()`'s list while one is open (launch records what it would launch there instead),
# and whether it records the compiled code too
_CAPTURED: list | None = None
_CAPTURE_CODE = False


@contextlib.contextmanager
def capture(code: bool = False):
    """Within it, `launch` (and disjoint_cluster's cluster launch) run nothing: each records
    what it would launch (`described`) in the list it yields — what a call launches under a
    tuning override, on this machine, without running a kernel (bench/ab_repeat.py's check
    that each key of an override changes something that runs).  code: compile each kernel
    (`warmup`, which fills Triton's cache as a first launch would) and record its code in
    place of its constexpr values — on a GPU, so that a value no path of the kernel reads,
    compiled to the same PTX, counts as no change.  Not for timed calls, nor for threads."""
    global _CAPTURED, _CAPTURE_CODE
    saved, _CAPTURED, _CAPTURE_CODE = (_CAPTURED, _CAPTURE_CODE), [], bool(code)
    try:
        yield _CAPTURED
    finally:
        _CAPTURED, _CAPTURE_CODE = saved


def described(kernel, grid, scalars, meta, tensors=None) -> tuple:
    """One launch as `capture` records it, hashable: the kernel's name, grid and run-time
    scalars, then its constexpr parameters and launch options by name — or, given its
    `tensors` (capture(code=True)), the compiled kernel's PTX (a hash), shared memory, warps
    and CTAs, and the launch options that are no code (`launch_*`: PDL, a cooperative grid)."""
    name = getattr(kernel, "__name__", None) or getattr(getattr(kernel, "fn", None),
                                                         "__name__", repr(kernel))
    head = (name, tuple(grid), tuple(repr(v) for v in scalars))
    if tensors is None:
        return (*head, tuple(sorted((k, repr(v)) for k, v in meta.items())))
    compiled = kernel.warmup(*tensors, *scalars, grid=grid, **meta)
    md = compiled.metadata
    code = (hashlib.sha256(compiled.asm["ptx"].encode()).hexdigest(),
            getattr(md, "shared", None), getattr(md, "num_warps", None),
            getattr(md, "num_ctas", None))
    return (*head, code, tuple(sorted((k, repr(v)) for k, v in meta.items()
                                      if k.startswith("launch_"))))


def captured(kernel, tensors: tuple, setup, *extra) -> bool:
    """Inside `capture()`: record what this launch would be (`described`, then `extra`) and
    return True — the caller launches nothing; False otherwise.  `launch` and
    disjoint_cluster's cluster launch both record through here."""
    if _CAPTURED is None:
        return False
    _CAPTURED.append((*described(kernel, *setup(), tensors if _CAPTURE_CODE else None),
                      *extra))
    return True


def launch(kernel, key, tensors: tuple, setup) -> None:
    """Launch `kernel`, with little host time from the second call of a key on.

    `tensors` are the kernel's leading (tensor) arguments in order.  `setup()` returns
    (grid, scalars, meta): the grid, the run-time arguments after the tensors, and the
    constexpr parameters and launch options by name.  It runs only when `key` (with the
    kernel and the current device) is new, so the key must determine its answer.  Inside
    `capture()` nothing is launched: setup() runs and what it gives is recorded."""
    if _CAPTURED is not None and captured(kernel, tensors, setup):
        return
    if not _FAST or _device.interpreted() or _tuning.OVERRIDE or not _no_hooks():
        grid, scalars, meta = setup()
        kernel[grid](*tensors, *scalars, **meta)
        return
    dev = torch.cuda.current_device()
    plan = _PLANS.get((kernel, dev, key))
    if plan is None:
        grid, scalars, meta = setup()
        compiled = kernel[grid](*tensors, *scalars, **meta)     # compiles if needed, launches
        consts = _consts(kernel, meta, len(tensors) + len(scalars))
        g = (*grid, 1, 1)
        remember(_PLANS, (kernel, dev, key), (compiled.run, g[0], g[1], g[2], compiled.function,
                                              compiled.packed_metadata, (*scalars, *consts)),
                 PLANS_KEEP)
        return
    run, g0, g1, g2, function, metadata, tail = plan
    run(g0, g1, g2, _stream(dev), function, metadata, None, None, None, *tensors, *tail)


def _consts(kernel, meta: dict, first: int) -> tuple:
    """The kernel's arguments from position `first` on, by name: from `meta`, or the
    parameter's default where the caller left it out (`WIDE` in the reduce: given only when
    true) — the value Triton compiled the kept kernel with."""
    params = inspect.signature(kernel.fn).parameters     # the Python function's own
    out = []
    for n in kernel.arg_names[first:]:
        v = meta[n] if n in meta else params[n].default
        if v is inspect.Parameter.empty:    # Triton's own launch above would have refused it
            raise TypeError(f"{kernel.fn.__name__}: no value for {n!r} to keep in the plan")
        out.append(v)
    return tuple(out)


def _stream(dev: int):
    return triton.runtime.driver.active.get_current_stream(dev)
