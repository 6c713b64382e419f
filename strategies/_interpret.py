"""The Triton interpreter without its repeated set-up: CPU runs only (TRITON_INTERPRET=1).

Under the interpreter every call of a `@triton.jit` device function from inside a kernel
(this package's shared per-row gradient helper, the reduce's `reduce_pair`, ...) patches
`triton.language` again (`interpreter._patch_lang`: `inspect.getmembers` over `tl`, `tl.core`,
`tl.math` and `tl.tensor`), although the launch around it has already patched those same
modules and keeps them patched until it ends.  It is 44 % of the CPU default run's time
(cProfile of `run_bench.py run configs/cpu.yaml`: 36 of 82 s; 37 344 calls, 480 of them
launches).  Patching a module again changes nothing: a member patched once is no builtin any
more, and the rest is set to new functions that do what the launch's do.

`install()` has each launch patch both language modules, `tl` and `tl.core`, whichever its
kernel's globals hold (Triton's own device functions, `tl.sum`, `tl.zeros`, ..., see
`tl.core` where this package's kernels see `tl`), and then skips the patch of every device
function called inside it: the launch's patch already covers every module a function's
globals can hold, and the launch restores them all when it ends, as before.  Anything else —
a call outside a launch, a kernel or device function whose module sees no language module
(Triton's own error, "triton.language must be visible") — goes to
Triton's own `_patch_lang` as before.  Nothing here runs on a GPU, and it installs nothing
where the interpreter's internals are not as expected (another Triton version): then every
call patches, as Triton does.  NORMBENCH_INTERPRET_REPATCH=1 (read at import) leaves Triton's
way in place.

The same `install()` skips the interpreter's integer-overflow check where it can do nothing.
Every `+`, `-` and `*` of int32 values in a kernel (offsets, row numbers) asks
`TritonSemantic.binary_op_sanitize_overflow_impl`, which redoes the operation in int64,
compares it with both bounds and hands the result to `device_assert` — which returns without
reading it unless the builder's `options.debug` is set, and the interpreter's builder never
sets it (`InterpreterOptions()`, debug False): the check's four extra operations a call were
computed and dropped, about 40 % of the interpreter's time in the reduce kernel at d = 65536
(cProfile of tests/test_strategies.py::test_widest_supported_row).  So under the interpreter's
builder with debug off it returns after the same type assertions, as the check's result was
dropped; with debug on (or any other builder: a compile for a GPU) Triton's own check runs.

And it drops three repeated costs of every op (`_fast_paths`): `_get_np_dtype` built its table
of 19 types at every call (a splat, a load, a cast); `broadcast_impl_value` broadcast two
blocks of one shape to that shape (it compares a tuple with a list, never equal: a view of
the same values in a new tensor); and each `tl.block_type` and `tl.tensor` unwrapped,
checked and tupled its shape and formatted its name again, where the shape alone decides
them.  The same values and attributes, every result the same bits (tests/test_interpret.py
compares every strategy with NORMBENCH_INTERPRET_REPATCH=1, which leaves all of this out);
40 % less CPU time in the CPU run's kernels (190 cases of disjoint_block and spin_lock:
28.3 -> 16.3 s), test_widest_supported_row's reduce of 2048 programs alike.
"""
from __future__ import annotations

import functools
import inspect
import threading

_state = threading.local()          # per thread: the stack of running launches' patched modules


class _Unpatched:
    """What a skipped patch hands back: nothing to restore (the launch restores its own)."""

    def restore(self) -> None:
        pass


@functools.lru_cache(maxsize=None)
def _langs(fn, tl) -> frozenset[int]:
    """The language modules `_patch_lang(fn)` would patch: those of fn's globals (as Triton
    finds them).  Once a function: it runs at every device-function call, and a module that
    sees triton.language keeps seeing it (one seen without it goes to Triton's own patch,
    which looks again)."""
    return frozenset(id(v) for v in fn.__globals__.values()
                     if inspect.ismodule(v) and v in (tl, tl.core))


def install() -> bool:
    """Put the skip in place; True if it was (or already is) in place."""
    try:
        import triton.language as tl
        from triton.runtime import interpreter as it
    except Exception:
        return False
    real = getattr(it, "_patch_lang", None)
    grid = getattr(it, "GridExecutor", None)
    if getattr(real, "_normbench", False):
        return True
    if (real is None or grid is None or not hasattr(it, "_LangPatchScope")
            or not callable(getattr(grid, "__call__", None))
            or not hasattr(getattr(it, "InterpretedFunction", None), "__call__")):
        return False
    real_launch = grid.__call__
    ns = {"tl": tl, "core": tl.core}       # a function that sees both language modules
    exec("def every():\n    pass\n", ns)
    every = ns["every"]

    def patch_lang(fn):
        stack = getattr(_state, "stack", None)
        langs = _langs(fn, tl)
        if stack and langs:                          # (none: Triton's own error, as before)
            if stack[-1] is None:                    # the launch's own patch: of both
                scope = real(every)
                stack[-1] = _langs(every, tl)
                return scope
            if langs <= stack[-1]:                   # a device function under it: done already
                return _Unpatched()
        return real(fn)

    def launch(self, *args, **kwargs):
        stack = _state.__dict__.setdefault("stack", [])
        stack.append(None)
        try:
            return real_launch(self, *args, **kwargs)
        finally:
            stack.pop()

    patch_lang._normbench = True
    it._patch_lang = patch_lang
    grid.__call__ = launch
    _skip_dropped_overflow_check(it)
    _fast_paths(it, tl)
    return True


def _skip_dropped_overflow_check(it) -> None:
    """The overflow check returns at once under the interpreter's builder while its debug is off
    (device_assert would drop its result); elsewhere, or with debug on, Triton's own."""
    try:
        from triton.language.semantic import TritonSemantic
    except Exception:
        return
    real = getattr(TritonSemantic, "binary_op_sanitize_overflow_impl", None)
    builder = getattr(it, "interpreter_builder", None)
    if real is None or builder is None or getattr(real, "_normbench", False) \
            or not hasattr(getattr(builder, "options", None), "debug"):
        return

    def sanitize(self, lhs, rhs, binary_op):
        if self.builder is not builder or self.builder.options.debug:
            return real(self, lhs, rhs, binary_op)
        # Triton's own first lines; what follows them only builds device_assert's condition
        if lhs.type.scalar.int_bitwidth >= 64 or not self.builder.options.sanitize_overflow:
            return
        lhs_sca_ty, rhs_sca_ty = lhs.type.scalar, rhs.type.scalar
        assert lhs_sca_ty == rhs_sca_ty, \
            f"expected matching operand types, got {lhs_sca_ty} and {rhs_sca_ty}"
        assert lhs_sca_ty.is_int(), f"expected integer type, got {lhs_sca_ty}"

    sanitize._normbench = True
    TritonSemantic.binary_op_sanitize_overflow_impl = sanitize


def _fast_paths(it, tl) -> None:
    """The interpreter's per-op bookkeeping without its repeated work, every result the same."""
    try:
        from triton.language.semantic import TritonSemantic
    except Exception:
        return
    real_np_dtype = getattr(it, "_get_np_dtype", None)
    if real_np_dtype is not None and not getattr(real_np_dtype, "_normbench", False):
        np_types = {}           # a scalar type's name -> its numpy dtype, as Triton's table has it

        def get_np_dtype(tt_dtype):
            # Triton's builds its table of 19 types at every call (a splat, a load, a cast)
            t = type(tt_dtype)
            el = tt_dtype.element_ty if t is tl.block_type else tt_dtype
            if t is not tl.block_type and t is not tl.dtype or type(el) is not tl.dtype:
                return real_np_dtype(tt_dtype)      # a pointer, or a block of them: its own way
            got = np_types.get(el.name)
            if got is None:
                got = np_types[el.name] = real_np_dtype(el)
            return got
        get_np_dtype._normbench = True
        it._get_np_dtype = get_np_dtype

    real_bcast = getattr(TritonSemantic, "broadcast_impl_value", None)
    if real_bcast is not None and not getattr(real_bcast, "_normbench", False):
        def broadcast_impl_value(self, lhs, rhs):
            # two blocks of one shape: Triton's own compares the shape (a tuple) with the one it
            # built (a list), never equal, and broadcasts each to the shape it has — a copy of
            # the tensor around a view of the same values
            lt, rt = lhs.type, rhs.type
            if (self.builder is it.interpreter_builder and lt.is_block() and rt.is_block()
                    and lt.shape.values == rt.shape.values):
                return lhs, rhs
            return real_bcast(self, lhs, rhs)
        broadcast_impl_value._normbench = True
        TritonSemantic.broadcast_impl_value = broadcast_impl_value

    _fast_bf16_casts(it, tl)
    _fast_type_inits(tl)


def _fast_bf16_casts(it, tl) -> None:
    """bf16 <-> fp32 casts as bit shifts where Triton's _convert_float gives the same bits.

    Triton converts these field by field in numpy (sign, exponent, significand) and, whenever
    a value's exponent field is 0 (every zero: a masked load's `other`), runs a loop over the
    significand's bits: 1.8 ms a cast on a 2-core machine, a sixth of configs/cpu.yaml's
    kernel time.  For every input but the subnormals (exponent field 0, significand not 0:
    converted there in a way of Triton's own, not the IEEE one) its result is the upper half
    of an fp32's bits (the downcast truncates: rounding mode None) or a bf16's bits shifted
    into the upper half (the upcast); checked for every bf16 and for every fp32 upper half
    with 32 lower halves.  An array holding a subnormal goes to Triton's own."""
    builder = getattr(it, "InterpreterBuilder", None)
    real_cast = getattr(builder, "cast_impl", None)
    handle = getattr(it, "TensorHandle", None)
    if real_cast is None or handle is None or getattr(real_cast, "_normbench", False):
        return
    import numpy as np
    bf16, f32 = tl.bfloat16, tl.float32

    def cast_impl(self, src, dst_type):
        s, d, data = src.dtype.scalar, dst_type.scalar, src.data
        if type(data) is np.ndarray and data.ndim:
            if s == bf16 and d == f32 and data.dtype.itemsize == 2:
                bits = data.view(np.uint16)
                if not np.any(((bits & 0x7F80) == 0) & ((bits & 0x7F) != 0)):
                    out = (bits.astype(np.uint32) << 16).view(it._get_np_dtype(dst_type))
                    return handle(out, dst_type.scalar)
            elif s == f32 and d == bf16 and data.dtype.itemsize == 4:
                bits = data.view(np.uint32)
                if not np.any(((bits & 0x7F800000) == 0) & ((bits & 0x7FFFFF) != 0)):
                    out = (bits >> 16).astype(np.uint16).view(it._get_np_dtype(dst_type))
                    return handle(out, dst_type.scalar)
        return real_cast(self, src, dst_type)
    cast_impl._normbench = True
    builder.cast_impl = cast_impl


def _fast_type_inits(tl) -> None:
    """tl.block_type and tl.tensor built as Triton builds them, their shape's parts reused.

    Every op the interpreter runs builds a block type or two and a tensor, and each unwraps
    its shape again, checks it, builds a `tl.tuple` of it (and its tuple type, one
    constexpr type a dimension) and formats the type's name.  All of that follows from the
    shape (and the element type's name) alone, so it is done once a shape: a new object gets
    the same attributes, with a `tl.tuple` of its own over the same values and type."""
    import builtins

    bt, tensor, ttuple, constexpr = tl.block_type, tl.tensor, tl.tuple, tl.constexpr
    real_bt, real_tensor = bt.__init__, tensor.__init__
    if getattr(real_bt, "_normbench", False):
        return
    types: dict = {}            # (str(element type), shape) -> (shape values, tuple type, numel, name)
    tensors: dict = {}          # a tensor's block type's name (or () for a scalar) -> (dims, ...)

    def dims(shape):
        """shape as a builtins.tuple of ints where it is a list or tl.tuple (what block_type
        takes) of ints or constexprs of ints; else None."""
        t = type(shape)
        vals = shape if t is list else shape.values if t is ttuple else None
        if vals is None:
            return None
        out = []
        for s in vals:
            t = type(s)
            if t is int:
                out.append(s)
            elif t is constexpr and type(s.value) is int:
                out.append(s.value)
            else:
                return None
        return builtins.tuple(out)

    def block_type_init(self, element_ty, shape):
        key = None
        if self.__class__ is bt:
            key = dims(shape)
        if key is None:
            return real_bt(self, element_ty, shape)
        key = (str(element_ty), key)
        got = types.get(key)
        if got is None:
            real_bt(self, element_ty, shape)
            if len(types) < 4096:
                types[key] = (builtins.tuple(self.shape.values), self.shape.type, self.numel,
                              self.name)
            return
        self.element_ty = element_ty
        self.shape = ttuple(list(got[0]), got[1])
        self.numel = got[2]
        self.name = got[3]

    def tensor_init(self, handle, type):
        if self.__class__ is not tensor or type.__class__ not in (bt, tl.dtype, tl.pointer_type):
            return real_tensor(self, handle, type)
        key = type.name if type.__class__ is bt else ()   # the name spells the shape
        got = tensors.get(key)
        if got is None:
            real_tensor(self, handle, type)
            if len(tensors) < 4096:
                tensors[key] = (builtins.tuple(self.shape.values), self.shape.type, self.numel)
            return
        self.handle = handle
        self.shape = None
        self.numel = got[2]
        self.type = type
        self.dtype = type.scalar
        self.shape = ttuple(list(got[0]), got[1])

    block_type_init._normbench = tensor_init._normbench = True
    block_type_init._real, tensor_init._real = real_bt, real_tensor
    bt.__init__ = block_type_init
    tensor.__init__ = tensor_init
