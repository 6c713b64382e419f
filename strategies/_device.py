"""Where kernels run: a CUDA GPU, or the Triton interpreter on CPU tensors.

Imported first by `strategies/__init__.py`: TRITON_INTERPRET must be set before any
`@triton.jit` function is defined, so the decision is made here, once, at import.
"""
from __future__ import annotations

import functools
import importlib
import os
import sys

import torch

_AUTO = False
if not torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
    if "triton" in sys.modules:
        # triton.language's own @jit helpers (tl.sum, ...) were made compiled at its import:
        # every kernel would fail inside the interpreter with "Cannot call @triton.jit'd
        # outside of the scope of a kernel"
        raise ImportError("normbench: triton was imported before normbench on a machine "
                          "without a CUDA GPU, so its kernels cannot run under the Triton "
                          "interpreter; set TRITON_INTERPRET=1 before importing triton, or "
                          "import normbench.strategies first")
    os.environ["TRITON_INTERPRET"] = "1"
    _AUTO = True
    if os.environ.get("NORMBENCH_QUIET") != "1":
        print("normbench: no CUDA GPU found; Triton kernels run under the interpreter "
              "(TRITON_INTERPRET=1) on CPU tensors", file=sys.stderr)


# Read once: kernels are defined at import, so a later change of the variable changes nothing.
_INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
if _INTERPRETED and os.environ.get("NORMBENCH_INTERPRET_REPATCH") != "1":
    from . import _interpret        # the interpreter without its repeated set-up (CPU only)
    _interpret.install()


def interpreted() -> bool:
    """True when Triton kernels run under the interpreter (CPU tensors)."""
    return _INTERPRETED


def gluon_unavailable(capability: tuple[int, int], needs: str, kernel_module: str) -> str:
    """'' where a Gluon kernel can run here — compiled code (no interpreter), a CUDA GPU of at
    least `capability` (`needs` says for what), and `kernel_module` (a module of this package
    holding the kernel) importable with this Triton — else why not, in one line."""
    if interpreted():
        return "Gluon kernels do not run under the Triton interpreter (CPU); needs a CUDA GPU"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU"
    try:
        if torch.cuda.get_device_capability() < capability:
            return f"needs {needs}: compute capability {capability[0]}.{capability[1]} or newer"
    except (RuntimeError, AssertionError) as e:     # a CPU build of torch told a GPU exists
        return f"needs a CUDA GPU ({type(e).__name__})"
    try:
        importlib.import_module(f"{__package__}.{kernel_module}")
    except Exception as e:                  # a Triton without Gluon, or with another API
        return f"Gluon is not usable with this Triton: {type(e).__name__}: {e}"[:300]
    return ""


def default_device() -> torch.device:
    return torch.device("cpu") if interpreted() or not torch.cuda.is_available() else torch.device("cuda")


_SMS: dict = {}


def sm_count(device: torch.device | str | None = None) -> int:
    """Streaming multiprocessors of a CUDA device; 4 on CPU (the interpreter runs programs one by one)."""
    n = _SMS.get(device)                  # asked on every call: a dict hit, nothing more
    if n is None:
        n = _SMS[device] = _sm_count(device)    # a refusal (ValueError) is not kept
    return n


def _sm_count(device) -> int:
    """ValueError "device: …" for a device torch does not know ("xyz") or a CUDA device this
    machine lacks (torch said so in a bare AssertionError, or a RuntimeError)."""
    try:
        device = torch.device(device) if device is not None else default_device()
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"device: {device!r} is not a device torch knows") from None
    if device.type == "cuda":
        have = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not have or (device.index is not None and device.index >= have):
            raise ValueError(f"device: {device} is not available here " + (
                f"({have} CUDA device{'' if have == 1 else 's'})" if have else "(no CUDA GPU)"))
        return _cuda_sm_count(device.index if device.index is not None else torch.cuda.current_device())
    return 4


def _cuda_sm_count(index: int) -> int:
    # once per device key: sm_count caches the answer (the properties query is slow)
    return torch.cuda.get_device_properties(index).multi_processor_count


_PDL: dict = {}


def pdl_supported(device: torch.device) -> bool:
    """Whether kernels on `device` can be launched as programmatic dependents (PDL: a kernel
    that starts while the one before it on the stream finishes, and waits in
    `griddepcontrol.wait` for it to complete and its writes to be visible): compiled code on
    compute capability 9.0 or newer.  Never under the interpreter."""
    if interpreted() or device.type != "cuda":
        return False
    index = device.index if device.index is not None else torch.cuda.current_device()
    ok = _PDL.get(index)
    if ok is None:
        ok = _PDL[index] = torch.cuda.get_device_capability(index) >= (9, 0)
    return ok


def pdl_on(p, device: torch.device) -> bool:
    """Whether launch parameters `p` ask for the tuning option `pdl` where it can work."""
    return bool(p["pdl"]) and pdl_supported(device)


_SMEM: dict = {}


def smem_per_program(device: torch.device) -> int:
    """The most shared memory one program may use on `device` (the opt-in limit: 227 KB on an
    H200), for the pipelined row loop's stages; unbounded under the interpreter, which has none."""
    if device.type != "cuda":
        return 1 << 40
    index = device.index if device.index is not None else torch.cuda.current_device()
    n = _SMEM.get(index)
    if n is None:
        import triton     # the driver's query: torch reports only the default 48 KB per block
        n = _SMEM[index] = triton.runtime.driver.active.utils.get_device_properties(index)["max_shared_mem"]
    return n


def resident_programs(compiled) -> int:
    """Programs of a compiled Triton kernel that one SM holds at once, as the CUDA driver
    answers it for this kernel's registers, shared memory and warps
    (cuOccupancyMaxActiveBlocksPerMultiprocessor) — the limit a cooperative launch is checked
    against: a grid of more than SMs × this is refused."""
    import ctypes
    compiled.run                       # loads the binary: its function handle exists from here
    n = ctypes.c_int(0)
    rc = _libcuda().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        ctypes.byref(n), ctypes.c_void_p(compiled.function),
        ctypes.c_int(compiled.metadata.num_warps * 32), ctypes.c_size_t(compiled.metadata.shared))
    if rc != 0:
        raise RuntimeError(f"cuOccupancyMaxActiveBlocksPerMultiprocessor failed (CUresult {rc})")
    return n.value


@functools.lru_cache(maxsize=None)
def _libcuda():
    import ctypes
    return ctypes.CDLL("libcuda.so.1")
