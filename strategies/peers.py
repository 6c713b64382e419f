"""Optional peers, as baselines: liger (liger-kernel, Triton) and quack (quack-kernels, CUTLASS DSL).

Each is listed under its name whether or not it can run here.  Whether it can is settled by a
real import, on the first look at `available` / `reason` (`strategies.names()`, `get(...)
.backward`, the harness), not at `import strategies`: importing liger-kernel costs about 4 s
(it imports all of its ops; 9-12 s where transformers is installed, which its NPU check
imports), quack-kernels about 3 s (the CUTLASS DSL).  Any failure to
import (ImportError, OSError from a missing CUDA library, RuntimeError, ...) makes the peer
unavailable with a one-line reason that carries the error text; it never breaks `import
strategies`.

liger (liger-kernel 0.8.5) — its own backward host functions, with the saved statistics:
    LayerNorm: liger_kernel.ops.layer_norm.layer_norm_backward(dy, x, w, B, mean, rstd)
    RMSNorm:   liger_kernel.ops.rms_norm.rms_norm_backward(dy, x, w, rstd, offset=0.0,
                   casting_mode=llama, *calculate_settings(d), in_place=False, row_mode=None)
  * Statistics: liger's forwards save Mean and RSTD exactly as ours, fp32 (rows,), RSTD =
    1/sqrt(var + eps) (LayerNorm) and 1/sqrt(mean(x²) + eps) (RMSNorm, "llama" and "gemma"
    casting modes): passed as they are (its kernels take their row strides).  A strided
    weight is made dense first (its kernels read it as dense columns).
  * Strided rows: the kernels take each row stride (x, dy, mean, rstd), so no copy is made
    here.  (liger's autograd Functions wrap forward and backward in `ensure_contiguous`, so in
    a training step a strided dy would be copied first; the host functions called here don't.)
    dx comes back contiguous.
  * Mixed dtypes: weight is loaded and upcast in-kernel, dγ/dβ are cast to the weight's dtype
    at the end (LayerNorm casts dβ to B.dtype: B is used for nothing else, so the weight is
    passed as B).
  * dγ/dβ: each of sm_count programs (1 off CUDA) owns a fixed block of rows and writes one fp32
    partial row; torch's `.sum(0)` inside liger's host function reduces them.  No atomics, a
    fixed row-to-program map and a fixed-order sum: deterministic by design.
  * RMSNorm "llama" mode rounds x̂ to x's dtype before dγ = Σ dy·x̂ (as HF Llama does).
    in_place=False: liger's default (in_place=True) writes dx over dy, which would destroy an
    input the caller still holds; with in_place=False liger allocates dx with zeros_like, one
    extra memset of rows × d that its default path does not pay.
  * Under the Triton interpreter (CPU): a Python float scalar argument is not converted, so
    the RMSNorm offset is passed as the int 0 there (0.0 on a GPU); and the interpreter
    multiplies bf16 by bf16 wrongly (Triton 3.6), which liger's llama-mode dγ does, so bf16
    RMSNorm raises NotImplementedError under the interpreter rather than return garbage.

quack (quack-kernels 0.6.5; CUDA only, CUTLASS DSL, JIT-compiled on the first call per shape):
    RMSNorm:   quack.rmsnorm.rmsnorm_bwd(x, w, dy, rstd) -> (dx, dw, None, None)
    LayerNorm: quack.rmsnorm.layernorm_bwd(x, w, dy, rstd, mean, has_bias=True) -> (dx, dw, db)
  * One persistent kernel for both norms (is_layernorm); dβ with has_bias.  Weight may have
    its own dtype (fp32 weight with bf16 x).  mean/rstd fp32 (rows,): ours as they are (a
    strided weight, mean or rstd is made dense first).
  * dγ/dβ: fp32 partial rows, one per CTA (get_sm_count(d): a multiple of the SM count that
    depends on d), summed by `.sum(0)` inside quack's host function; CTAs walk a fixed row
    stride, no atomics: deterministic by design.
  * fp16/bf16 with an odd d: quack vectorizes by gcd(d, 16 B / widest itemsize) elements, which
    is 1 for an odd d, and its compiler then rejects the 16-bit cp.async copy (only 32, 64, 128
    bits): NotImplementedError here rather than a compiler traceback.  fp32 with any d is fine.
  * Strided rows: quack compiles for dynamic strides assumed to be multiples of
    gcd(d, 16 bytes / itemsize) elements (and a base pointer aligned to that), and its TVM-FFI
    launcher refuses any other stride ("ValueError: Invalid mX.strides[0]"; quack's own autograd
    path, which only checks the last dim, would fail the same way).  Such a row stride or base
    gets a contiguous copy first, inside the call; other strides pass as they are.  dx comes
    back contiguous.
  * `import quack.rmsnorm as q` gives the *function* rmsnorm (quack/__init__ rebinds the name),
    hence importlib.import_module below.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import math

import torch

from . import _device
from ._registry import Entry, add, get, register_unavailable

__all__ = ["liger_backward", "quack_backward"]


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200]}" if text else type(e).__name__


def _import_reason(dist: str, top: str, modules: list[str], extra: str = "") -> tuple[str, dict]:
    """("", {module: module}) when every module imports, else (why not, {})."""
    try:
        mods = {m: importlib.import_module(m) for m in modules}
    except ModuleNotFoundError as e:
        if e.name == top:
            return f"{dist} is not installed (pip install {dist}): {e}{extra}", {}
        return f"{dist} failed to import: {_one_line(e)}{extra}", {}
    except Exception as e:  # OSError (a missing CUDA library), RuntimeError, AttributeError, ...
        return f"{dist} failed to import: {_one_line(e)}{extra}", {}
    return "", mods


class _Peer(Entry):
    """A registry entry whose `available` and `reason` come from a real import, made on first look.

    `probe()` returns (reason, modules): reason "" when the peer can run here."""

    def __init__(self, probe, **fields):
        self._probe = probe
        self._state: tuple[str, dict] | None = None
        super().__init__(**fields)

    def _settle(self) -> tuple[str, dict]:
        if self._state is None:
            self._state = self._probe()
        return self._state

    def mod(self, name: str):
        return self._settle()[1][name]

    # Entry's dataclass __init__ assigns these fields; availability is the probe's to say.
    available = property(lambda self: self._settle()[0] == "", lambda self, value: None)
    reason = property(lambda self: self._settle()[0], lambda self, value: None)


def _add(name: str, fn, probe, *, deterministic_by_design: bool, workspace, unavailable=None) -> None:
    """Register peer `name`: unavailable now when `unavailable` says why (cheap to know at
    import: not installed, no GPU), else as a _Peer whose import waits for the first look."""
    doc = fn.__doc__.strip().splitlines()[0]
    if unavailable:
        register_unavailable(name, kind="baseline", reason=unavailable,
                             deterministic_by_design=deterministic_by_design, doc=doc)
        return
    add(_Peer(probe, name=name, kind="baseline", deterministic_by_design=deterministic_by_design,
              uses_groups=False, fn=fn, doc=doc, workspace=workspace, writers=lambda rows, g: 1))


def _not_installed(dist: str, top: str, extra: str = "") -> str:
    """Why `dist` is unavailable when its top-level module can't be found ("" if it can):
    a real import then fails at once and gives the error text."""
    try:
        if importlib.util.find_spec(top) is not None:
            return ""
    except Exception:  # e.g. sys.modules[top] is None: let the import below say why
        pass
    return _import_reason(dist, top, [top], extra)[0]


# ---------------------------------------------------------------------------------------- liger
_LIGER = ["liger_kernel.ops.layer_norm", "liger_kernel.ops.rms_norm", "liger_kernel.ops.utils"]


def _lacks(dist: str, against: str, mods: dict, needed: dict[str, list[str]]) -> str:
    """Why an importable `dist` still can't serve ("" if it can): a name this module calls is gone."""
    for mod, names in needed.items():
        for n in names:
            if not hasattr(mods[mod], n):
                try:
                    version = importlib.metadata.version(dist)
                except Exception:
                    version = "?"
                return f"{dist} {version} has no {mod}.{n} (this baseline is written against {against})"
    return ""


def _liger_probe():
    reason, mods = _import_reason("liger-kernel", "liger_kernel", _LIGER)
    reason = reason or _lacks("liger-kernel", "0.8.5", mods, {
        "liger_kernel.ops.layer_norm": ["layer_norm_backward"],
        "liger_kernel.ops.rms_norm": ["rms_norm_backward", "_str_to_casting_mode"],
        "liger_kernel.ops.utils": ["calculate_settings"]})
    return reason, (mods if not reason else {})


def _liger_partial_rows() -> int:
    """liger's number of partial rows: the SM count on CUDA, 1 elsewhere."""
    dev = _device.default_device()
    if dev.type == "cuda":
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return 1


def liger_backward(x, dy, weight, mean, rstd, *, groups=None):
    """liger-kernel's Triton layer-norm / RMS-norm ("llama") backward, from the saved statistics."""
    e = get("liger")
    weight = weight.contiguous()        # liger's kernels read the weight as dense columns
    # rows that overlap (dy.unfold(0, d, 1)): liger's RMSNorm allocates dx like dy, which is
    # then column-major, and its kernel writes rows at dx's row stride — over each other
    x, dy = _dense_rows(x), _dense_rows(dy)
    if mean is not None:
        ln = e.mod("liger_kernel.ops.layer_norm")
        # B only gives dβ its dtype: the weight's.
        return ln.layer_norm_backward(dy, x, weight, weight, mean, rstd)
    rms = e.mod("liger_kernel.ops.rms_norm")
    interp = x.device.type == "cpu" and _device.interpreted()
    if interp and x.dtype == torch.bfloat16:
        raise NotImplementedError("liger RMSNorm with bf16 x needs a GPU: the Triton interpreter "
                                  "multiplies bf16 by bf16 wrongly, as liger's llama-mode dγ does")
    block, num_warps = e.mod("liger_kernel.ops.utils").calculate_settings(x.shape[1])
    dx, dw = rms.rms_norm_backward(dy, x, weight, rstd, 0 if interp else 0.0,
                                   rms._str_to_casting_mode["llama"], block, num_warps,
                                   False, None)
    return dx, dw, None


def _liger_notes(x, dy, weight, mean, rstd) -> str:
    if mean is not None:
        text = "liger_kernel.ops.layer_norm.layer_norm_backward"
    else:
        text = "liger_kernel.ops.rms_norm.rms_norm_backward, casting mode llama, in_place=False"
    if weight.dtype != x.dtype:
        text += f"; {_short(weight.dtype)} weight loaded and upcast in-kernel, dγ cast to it"
    copied = [n for n, t in (("x", x), ("dy", dy)) if _dense_rows(t) is not t]
    if copied:
        text += f"; {', '.join(copied)} copied contiguous first (rows that overlap)"
    return text


def _short(dt: torch.dtype) -> str:
    return {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}.get(dt, str(dt))


liger_backward.notes = _liger_notes

_add("liger", liger_backward, _liger_probe, deterministic_by_design=True,
     workspace=lambda rows, d, g, has_bias: _liger_partial_rows() * d * 4 * (2 if has_bias else 1),
     unavailable=_not_installed("liger-kernel", "liger_kernel"))


# ---------------------------------------------------------------------------------------- quack
_QUACK = ["quack", "quack.rmsnorm"]


def _quack_unavailable() -> str:
    """Why quack can't run here, as far as is known without importing it ("" if it may)."""
    gpu = torch.cuda.is_available() and not _device.interpreted()
    missing = _not_installed("quack-kernels", "quack", "" if gpu else "; it also needs a CUDA GPU")
    if missing or gpu:
        return missing
    why = "the Triton interpreter is on (CPU tensors)" if torch.cuda.is_available() else "none here"
    return (f"needs a CUDA GPU ({why}): quack-kernels is installed but runs only on CUDA "
            f"devices (Hopper/Blackwell)")


def _quack_probe():
    reason, mods = _import_reason("quack-kernels", "quack", _QUACK)
    if reason and "cutlass" in reason.lower():
        reason += " (its CUTLASS DSL runtime: pip install nvidia-cutlass-dsl)"
    reason = reason or _lacks("quack-kernels", "0.6.5", mods, {"quack.rmsnorm": ["rmsnorm_bwd", "get_sm_count"]})
    return reason, (mods if not reason else {})


def _dense_rows(t: torch.Tensor) -> torch.Tensor:
    """t itself, or a contiguous copy where its rows overlap (a row stride below d, which
    `check_args` accepts): a peer that allocates dx like its input would get a column-major
    dx and write rows over each other.  Never copies the inputs the benchmark makes."""
    return t.contiguous() if t.shape[1] > 1 and t.stride(0) < t.shape[1] else t


def _quack_rows(t: torch.Tensor) -> torch.Tensor:
    """t itself when quack's compiled layout assumption holds for it, else a contiguous copy.

    quack compiles x/dy/dx with dynamic strides divisible by gcd(d, 16 B / itemsize) elements
    and a base pointer aligned to as many elements."""
    d = t.shape[1]
    if d == 1 and t.stride(1) != 1:
        # a column of one element (a transposed row, strides (1, rows)): the same memory viewed
        # with a unit column stride, the layout quack compiles for (.contiguous() returns it
        # unchanged: torch calls it contiguous)
        t = t.as_strided(t.shape, (t.stride(0), 1))
    div = math.gcd(d, 16 // t.element_size())
    if _dense_rows(t) is not t or t.stride(0) % div or t.data_ptr() % (div * t.element_size()):
        return t.contiguous()
    return t


def _quack_partial_rows(d: int) -> int:
    q = get("quack").mod("quack.rmsnorm")
    return q.get_sm_count(d, torch.device("cuda", torch.cuda.current_device()))


def quack_backward(x, dy, weight, mean, rstd, *, groups=None):
    """quack-kernels' CUTLASS-DSL RMSNorm / LayerNorm backward (one persistent kernel), saved statistics."""
    if x.device.type != "cuda":
        raise ValueError(f"x: quack needs CUDA tensors, got device {x.device}")
    if x.element_size() == 2 and x.shape[1] % 2:
        raise NotImplementedError("quack needs an even d for fp16/bf16: with an odd d its 16-bit "
                                  "copies fail to compile (cp.async needs 32 bits or more)")
    q = get("quack").mod("quack.rmsnorm")
    x, dy = _quack_rows(x), _quack_rows(dy)
    # the weight and statistics as dense vectors (a no-op for ours; a strided view, e.g. the
    # saved statistics in one (rows, 2) buffer, is copied: quack's layout is not checked here)
    weight, rstd = weight.contiguous(), rstd.contiguous()
    mean = mean.contiguous() if mean is not None else None
    if mean is None:
        dx, dw, _db, _dres = q.rmsnorm_bwd(x, weight, dy, rstd)
        return dx, dw, None
    if not hasattr(q, "layernorm_bwd"):     # an older quack-kernels
        raise NotImplementedError("quack has no LayerNorm backward")
    return q.layernorm_bwd(x, weight, dy, rstd, mean, has_bias=True)


def _quack_notes(x, dy, weight, mean, rstd) -> str:
    text = "quack.rmsnorm." + ("rmsnorm_bwd" if mean is None else "layernorm_bwd (has_bias=True)")
    if weight.dtype != x.dtype:
        text += f"; {_short(weight.dtype)} weight with {_short(x.dtype)} x"
    copied = [n for n, t in (("x", x), ("dy", dy)) if _quack_rows(t).data_ptr() != t.data_ptr()]
    if copied:
        why = ("rows that overlap" if any(_dense_rows(t) is not t for t in (x, dy))
               else "row stride off quack's alignment")
        text += f"; {', '.join(copied)} copied contiguous first ({why})"
    return text


quack_backward.notes = _quack_notes

_add("quack", quack_backward, _quack_probe, deterministic_by_design=True,
     workspace=lambda rows, d, g, has_bias: _quack_partial_rows(d) * d * 4 * (2 if has_bias else 1),
     unavailable=_quack_unavailable())
