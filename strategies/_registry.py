"""The registry: a strategy or baseline is one decorated function, with its rules beside it.

    @register("mine", kind="strategy", deterministic_by_design=True, uses_groups=True,
              launch=_tuning.ROW_LOOP, auto_groups=_groups.row_loop_programs,
              contention=Contention(writers=1, partial_rows="groups"))   # partition="block"
    def backward(x, dy, weight, mean, rstd, *, groups): ...

The name is written once, there: the launch rule is declared under it (`_tuning.params(name,
d)`, and `backward.params(d)` inside the strategy), the GROUPS=auto rule and the contention
model (`_contention.Contention`, data) and how rows are dealt to the partial rows
(`partition`, which caps GROUPS at a shape) live on its Entry.  The harness discovers
implementations through this registry only.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import math
import numbers
import os
import re
import sys
import types
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Callable

import torch

from . import _device, _tuning
from ._args import MAX_D, MAX_ROWS, check_args
from ._contention import Contention
from ._launch import remember

KINDS = ("strategy", "baseline")
# how a strategy deals rows to its GROUPS partial rows, which decides the GROUPS that can each
# get a row (Entry.effective_groups): "block", program p the contiguous rows [p·⌈rows/GROUPS⌉,
# (p + 1)·⌈rows/GROUPS⌉) — the default, and the cap the strategies that deal tiles round-robin
# (disjoint_strided, disjoint_cluster) are measured under too, beside their max_groups;
# "modulo", row r to partial row r mod GROUPS (grouped_atomic, spin_lock)
PARTITIONS = ("block", "modulo")
_NO_PARAMS = MappingProxyType({})
GROUPS_KEEP = 1024      # an entry's cached (rows, d, groups, device) -> GROUPS: the oldest goes past this
# the weight dtypes a workspace model is asked at, besides None (Entry.workspace_bytes checks)
_WEIGHT_NAMES = ("fp32", "bf16", "fp16")
_WEIGHT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def _no_workspace(rows: int, d: int, groups: int | None, has_bias: bool, *,
                  weight_dtype=None) -> int:
    return 0


def _takes_weight_dtype(model) -> bool:
    """Whether a workspace model takes the `weight_dtype` keyword (or any keyword); a model of
    the older form (rows, d, groups, has_bias) — a plugin's — does not, and is called without
    it, as is one whose signature Python cannot read.  Read at each call (once a record:
    Entry.workspace_at), so a model swapped in after registration is read as it is."""
    try:
        params = inspect.signature(model).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD or (p.name == "weight_dtype" and p.kind is not
                                           p.POSITIONAL_ONLY) for p in params)


@dataclass
class Entry:
    name: str
    kind: str
    deterministic_by_design: bool
    uses_groups: bool
    fn: Callable | None
    available: bool = True
    reason: str = ""
    doc: str = ""
    # (rows, d, sm_count, launch params at d) -> GROUPS used when groups=None
    auto_groups: Callable[[int, int, int, dict], int] | None = None
    # (rows, d, groups_effective, has_bias, *, weight_dtype=None) -> fp32 workspace bytes; the
    # keyword optional (the older form, a plugin's, is called without it: workspace_at)
    workspace: Callable[..., int] = field(default=_no_workspace)
    # (rows, groups_effective) -> writers into one dγ slot
    writers: Callable[[int, int | None], int] | None = None
    # (rows, d, launch params at d) -> the most partial rows that each get a row (None: rows)
    max_groups: Callable[[int, int, dict], int] | None = None
    # how rows are dealt to the partial rows (PARTITIONS): what caps GROUPS at a shape
    partition: str = "block"
    # its partial rows are summed by the separate reduce kernel (reduce.reduce_partials), the
    # one `_tuning.OVERRIDE["reduce"]` tunes (bench/ab_repeat.py, bench/reduce_tune.py refuse
    # that override for an entry without it: it would time the entry's own code unchanged)
    reduce_kernel: bool = False
    # the launch rule (strategies with Triton kernels) and the contention model, as declared
    launch: _tuning.Rule | None = None
    contention: Contention | None = None
    # (rows, d, groups, device) -> effective GROUPS, cached for the hot path of backward()
    # (the last GROUPS_KEEP keys)
    _groups: dict = field(default_factory=dict, repr=False, compare=False)
    # register's arguments as given (None for an entry added whole): what a second
    # registration of the same function is compared with
    _declared: dict | None = field(default=None, repr=False, compare=False)

    def params(self, d: int):
        """The launch parameters this entry's rule picks at d (tuning overrides applied);
        empty for an entry that declared no launch rule."""
        return _tuning.params(self.name, d) if self.launch is not None else _NO_PARAMS

    def effective_groups(self, rows: int, d: int, groups: int | None,
                         device: torch.device | str | None = None) -> int | None:
        """The number of partial rows actually used for this call (None if groups are unused).

        More partial rows than rows would leave some empty, so GROUPS is capped so that every
        partial row receives at least one row — at the entry's `max_groups` where its kernel
        deals rows out in larger units (tiles dealt round-robin: one partial row a tile).  How
        far depends on the entry's `partition`: "block" (contiguous blocks of ⌈rows/GROUPS⌉
        rows) gives ⌈rows/⌈rows/GROUPS⌉⌉ — 50 at 100 rows for 60 or 99 asked; "modulo" (row r
        to partial row r mod GROUPS) gives min(GROUPS, rows), since any GROUPS up to rows
        leaves none empty.

        rows and d are checked as `backward` checks x's shape (ValueError "rows: …" / "d: …"),
        and groups as it checks groups ("groups: …"), for every entry, one that uses no GROUPS
        too: the model functions built on this one (workspace_bytes, writers_per_slot,
        default_groups) answer only for calls backward would run."""
        rows, d = _as_size("rows", rows, MAX_ROWS), _as_size("d", d, MAX_D)
        if groups is not None:      # checked as backward checks it, even where it is unused
            groups = _as_groups(groups)
            if isinstance(groups, bool) or not isinstance(groups, int):
                raise ValueError(f"groups: must be a positive int or None, got {groups!r}")
            if groups < 1:
                raise ValueError(f"groups: must be >= 1, got {groups}")
        if not self.uses_groups:
            return None
        if groups is None:
            groups = (self._rule_groups("auto_groups", self._call_rule(
                "auto_groups", rows, d, _device.sm_count(device), self.params(d)), rows, d)
                if self.auto_groups else 1)
        if self.max_groups is not None:
            groups = max(1, min(groups, self._rule_groups(
                "max_groups", self._call_rule("max_groups", rows, d, self.params(d)), rows, d)))
        if self.partition == "modulo":
            return min(groups, rows)
        per = math.ceil(rows / groups)
        return math.ceil(rows / per)

    def _call_rule(self, rule: str, *args, **kwargs):
        """The declared rule `rule` (auto_groups, max_groups, workspace, writers) called.  What
        it raises goes on as it is, marked with the rule's name (`rule_raised`), so that the
        case's error record can say whose failure it was: a plugin's ZeroDivisionError in its
        workspace model was recorded as if the case itself had raised it."""
        try:
            return getattr(self, rule)(*args, **kwargs)
        except BaseException as e:      # a rule's SystemExit too; the caller decides what stops
            try:
                # set on the way out: where a rule calls another entry's rule, the outer one,
                # the measured entry's own, is named
                e._normbench_rule = rule
            except Exception:           # an exception that takes no attribute goes unmarked
                pass
            raise

    def _rule_groups(self, rule: str, value, rows: int, d: int) -> int:
        """A GROUPS count a declared rule gave, checked: a plugin's rule that gives -3 (or 2.5,
        or None) would otherwise be called with a GROUPS no kernel can take, and its record kept
        as ok.  ValueError naming the rule: the case's error record, the sweep goes on."""
        value = _as_groups(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"implementation {self.name!r}: its {rule} rule gave {value!r} "
                             f"at rows={rows}, d={d}; a GROUPS is an int >= 1")
        return value

    def workspace_bytes(self, rows: int, d: int, groups: int | None, has_bias: bool = True,
                        weight_dtype=None) -> int:
        """The fp32 workspace bytes a call allocates at GROUPS `groups` (as asked: the effective
        GROUPS are worked out) with a weight of `weight_dtype` (None: not known); rows, d,
        groups and weight_dtype checked (ValueError naming the one refused)."""
        g = self.effective_groups(rows, d, groups)
        # "float32" (or "bogus") was priced as a weight that is not fp32
        if weight_dtype is not None and not (
                isinstance(weight_dtype, str) and weight_dtype in _WEIGHT_NAMES
                or isinstance(weight_dtype, torch.dtype) and weight_dtype in _WEIGHT_DTYPES):
            raise ValueError("weight_dtype: must be None, 'fp32', 'bf16', 'fp16', torch.float32, "
                             f"torch.bfloat16 or torch.float16, got {weight_dtype!r}")
        return self.workspace_at(rows, d, g, has_bias, weight_dtype)

    def workspace_at(self, rows: int, d: int, groups_effective: int | None, has_bias: bool,
                     weight_dtype=None) -> int:
        """The workspace model at the effective GROUPS, unchecked: `weight_dtype` ("fp32",
        "bf16", "fp16" or a torch dtype; None: not known) passed where the model takes it — a
        model of the older form (rows, d, groups, has_bias) is called without it."""
        if weight_dtype is not None and _takes_weight_dtype(self.workspace):
            return self._call_rule("workspace", rows, d, groups_effective, has_bias,
                                   weight_dtype=weight_dtype)
        return self._call_rule("workspace", rows, d, groups_effective, has_bias)

    def writers_at(self, rows: int, groups_effective: int | None) -> int | None:
        """The writers model at the effective GROUPS, unchecked (None: the entry has none)."""
        return None if self.writers is None else self._call_rule("writers", rows, groups_effective)

    def writers_per_slot(self, rows: int, d: int, groups: int | None) -> int | None:
        g = self.effective_groups(rows, d, groups)     # checks the arguments, for every entry
        return self.writers_at(rows, g)

    def backward(self, x, dy, weight, mean, rstd, groups=None):
        """dx, dγ, dβ (dβ None for RMSNorm, i.e. mean=None).  Raises ValueError on bad arguments."""
        if not self.available:
            raise RuntimeError(f"implementation {self.name!r} is not available: {self.reason}")
        if groups is not None and type(groups) is not int:    # a numpy integer from records
            groups = _as_groups(groups)
        check_args(x, dy, weight, mean, rstd, groups)
        dev = elsewhere(x)
        if dev is not None:             # a client's tensors on another GPU than the current one
            with torch.cuda.device(dev):
                return self._call(x, dy, weight, mean, rstd, groups)
        return self._call(x, dy, weight, mean, rstd, groups)

    def _call(self, x, dy, weight, mean, rstd, groups):
        if not self.uses_groups:
            return self.fn(x, dy, weight, mean, rstd, groups=None)
        # every call asks: a dict hit, nothing more — except while launch parameters are
        # overridden (bench/tune.py), since the auto GROUPS of the row loop follows the warps
        key = (*x.shape, groups, x.device)
        g = None if _tuning.OVERRIDE else self._groups.get(key)
        if g is None:
            g = self.effective_groups(key[0], key[1], groups, key[3])
            if not _tuning.OVERRIDE:
                remember(self._groups, key, g, GROUPS_KEEP)
        return self.fn(x, dy, weight, mean, rstd, groups=g)


def elsewhere(x) -> int | None:
    """The index of x's GPU where it is not the current device, else None.  Triton launches on
    the current device, and the kept launch plans, scratch and streams are the current
    device's: tensors on cuda:1 while cuda:0 is current (a client holding several GPUs in one
    process) were read by a kernel on cuda:0 — without peer access an illegal memory access
    that breaks the process's CUDA context (inferred from Triton's launch, not seen on two
    GPUs).  Entry.backward runs such a call with x's device current."""
    if not x.is_cuda:
        return None
    i = x.get_device()
    return None if i == torch.cuda.current_device() else i


def _redefined(old, new) -> bool:
    """Whether `new` is `old` defined again: another function object of the same module and
    qualified name, as a module's reload makes (another module's function of the name is a
    clash, never a redefinition)."""
    mod = getattr(old, "__module__", None)
    return (mod is not None and mod == getattr(new, "__module__", None)
            and getattr(old, "__qualname__", None) == getattr(new, "__qualname__", 0))


def rule_raised(e: BaseException) -> str | None:
    """The declared rule of an entry (auto_groups, max_groups, workspace, writers) whose call
    raised `e` (Entry._call_rule marks it); None for an exception raised anywhere else."""
    try:            # never raises: a failure is being recorded
        rule = getattr(e, "_normbench_rule", None)
        return rule if isinstance(rule, str) and rule in _RULE_CALLS else None
    except Exception:
        return None


def _as_size(arg: str, value, most: int) -> int:
    """rows or d as an int in 1..most (a numpy integer, read from records, taken); ValueError
    naming the argument otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{arg}: must be an int, got {value!r}")
    if not 1 <= value <= most:
        raise ValueError(f"{arg}: must be in 1..{most}, got {value}")
    return int(value)


def _as_groups(groups):
    """An integral GROUPS of another type (numpy's, read from records) as an int; anything else
    as it is, for the argument check to name."""
    if isinstance(groups, numbers.Integral) and not isinstance(groups, bool):
        return int(groups)
    return groups


def _four_args(auto_groups):
    """An auto-GROUPS rule of the older form (rows, d, sms), as (rows, d, sms, launch)."""
    if auto_groups is None:
        return None
    try:
        n = len(inspect.signature(auto_groups).parameters)
    except (TypeError, ValueError):
        return auto_groups
    if n == 3:
        return lambda rows, d, sms, launch: auto_groups(rows, d, sms)
    return auto_groups


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


_REGISTRY: dict[str, Entry] = {}
_plugins_loaded = False


def register(name: str, *, kind: str, deterministic_by_design: bool, uses_groups: bool,
             launch: _tuning.Rule | None = None, auto_groups=None, contention: Contention | None = None,
             workspace=None, writers=None, max_groups=None, partition: str = "block",
             reduce_kernel: bool = False, doc: str | None = ""):
    """Decorator registering `fn(x, dy, weight, mean, rstd, *, groups)` under `name` (a
    function that cannot be called so, its signature read where Python can, is refused here).

    launch: the launch rule (`_tuning.Rule`); the decorated function gets `fn.params(d)`, its
    parameters at d (overrides applied), so its body never repeats the name.  auto_groups:
    (rows, d, sms, launch params) -> GROUPS for groups=None.  max_groups: (rows, d, launch
    params) -> the most partial rows that each get a row, where the kernel deals rows out in
    units larger than one (GROUPS, given or auto, is capped there).  partition: how the
    kernel deals rows to its partial rows (PARTITIONS), "block" (contiguous blocks: GROUPS
    capped at ⌈rows/⌈rows/GROUPS⌉⌉) or "modulo" (row r to partial row r mod GROUPS: capped
    at rows).  contention: the contention model as data (`Contention`); `workspace` /
    `writers` callables instead, for a model that is not of that form (they win over it):
    workspace(rows, d, groups_effective, has_bias, *, weight_dtype=None) -> bytes, the keyword
    optional (a model without it is called without it), writers(rows, groups_effective).
    reduce_kernel: its partial rows are summed by reduce.reduce_partials (the kernel that
    `_tuning.OVERRIDE["reduce"]` tunes).  The same function registered again under its name
    with the same declaration is no change; with any other property, or another function
    under the name, ValueError — but the function defined again by its module (same module
    and qualified name: `importlib.reload`) replaces the entry, its new declaration with it."""
    _check_kind(kind)
    _check_contention(name, uses_groups, contention)
    declared = dict(kind=kind, deterministic_by_design=deterministic_by_design,
                    uses_groups=uses_groups, launch=launch, auto_groups=auto_groups,
                    contention=contention, workspace=workspace, writers=writers,
                    max_groups=max_groups, partition=partition,
                    reduce_kernel=bool(reduce_kernel))
    if contention is not None:
        workspace = workspace or contention.workspace
        writers = writers or contention.writers_per_slot

    def deco(fn):
        mine = {**declared, "doc": doc or _first_line(fn.__doc__)}
        old = _REGISTRY.get(name)
        if old is not None and old.fn is not fn and _redefined(old.fn, fn):
            # its module run again (importlib.reload of a plugin being written, in a notebook):
            # the new definition replaces the old, as Python's own names are rebound
            del _REGISTRY[name]
            _tuning.forget(name)            # declared again below, if the new one has a rule
            old = None
        if old is not None and old.fn is fn and old._declared is not None:
            # the same function declared again — a registering function run twice (an entry
            # point's module:function that its module's import runs too): no change if the
            # declaration is the same; another one is refused (it was dropped silently: the
            # first declaration measured as the plugin's, deterministic or not)
            if differ := _differences(old._declared, mine):
                raise ValueError(f"implementation {name!r} registered twice, with other "
                                 f"properties: {differ}")
            return fn
        add(Entry(
            name=name, kind=kind, deterministic_by_design=deterministic_by_design,
            uses_groups=uses_groups, fn=fn, doc=mine["doc"],
            auto_groups=auto_groups, workspace=workspace or _no_workspace,
            writers=writers, launch=launch, contention=contention, max_groups=max_groups,
            partition=partition, reduce_kernel=bool(reduce_kernel), _declared=mine))
        if launch is not None:
            _tuning.declare(name, launch)
            fn.params = functools.partial(_tuning.params, name)
        return fn
    return deco


def _differences(old: dict, new: dict) -> str:
    """The properties two declarations of one function give differently, each as "deterministic_
    by_design True, then False" ("" where none does)."""
    said = []
    for k in old:
        if not _same(old[k], new[k]):
            was, now = _shown(old[k]), _shown(new[k])
            # a lambda made twice with other captured values shows the same both times
            said.append(f"{k} {was}, then {now}" if was != now else
                        f"{k} {was}, then the same with other defaults or captured values")
    return "; ".join(said)


def _same(a, b, deep: bool = True) -> bool:
    """Whether two declared values are the same: one object, or equal values of one type; and,
    `deep`, functions of one definition whose defaults and closure are the same (a registering
    function run twice makes its lambdas anew), or dataclasses (a Rule, a Contention) whose
    fields are."""
    if a is b:
        return True
    if type(a) is not type(b):          # 1 is no True here: a flag is a bool
        return False
    try:
        if deep and isinstance(a, types.FunctionType):
            ca, cb = a.__closure__ or (), b.__closure__ or ()
            return (a.__code__ is b.__code__ and len(ca) == len(cb)
                    and all(_same(x, y, False) for x, y in [
                        (a.__defaults__, b.__defaults__), (a.__kwdefaults__, b.__kwdefaults__),
                        *((x.cell_contents, y.cell_contents) for x, y in zip(ca, cb))]))
        if deep and dataclasses.is_dataclass(a) and not isinstance(a, type):
            return all(_same(getattr(a, f.name), getattr(b, f.name))
                       for f in dataclasses.fields(a))
        return bool(a == b)
    except Exception:                   # an empty cell, a value whose == cannot answer
        return False


def _shown(value) -> str:
    """A declared value as the refusal shows it: a function by its name and where it is
    defined, anything else as its repr (cut short)."""
    if isinstance(value, types.FunctionType):
        code = value.__code__
        return f"{value.__qualname__} ({os.path.basename(code.co_filename)}:{code.co_firstlineno})"
    try:
        text = " ".join(repr(value).split())
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:57] + "..."


def _check_contention(name, uses_groups: bool, contention) -> None:
    """A contention model of its type, that counts GROUPS only where the entry gets one."""
    _check_type(name, "contention", contention, Contention)   # read before add() checks it
    if contention is not None and not uses_groups and (contention.writers == "rows/groups"
                                                       or contention.partial_rows == "groups"):
        raise ValueError(f"implementation {name!r}: its contention model counts GROUPS "
                         "(writers 'rows/groups' or partial_rows 'groups'), but "
                         "uses_groups is False: it never gets one")


_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


def _check_kind(kind) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")


def _check_name(name) -> None:
    """A name the command line can select: `--only a,b` splits on commas, compare's
    `kind:strategy` on the colon, and a run's records and file names hold it."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"implementation name {name!r}: use letters, digits and _ . + - "
                         "(not first: . + -)")


def _check_type(name, field_name: str, value, want: type) -> None:
    if value is not None and not isinstance(value, want):
        raise TypeError(f"implementation {name!r}: {field_name} must be a {want.__name__} or "
                        f"None, got {value!r}")


def _check_fields(e: Entry) -> None:
    """The declared fields are of their types, and the function and each rule take their
    calls, so that a plugin's mistake is one line when it loads (PluginError, exit 2), not a
    traceback at its first record (a flag of 1 that the boolean column refuses), in `list` (a
    doc of 5), a model called with nonsense or every record a TypeError (a function without
    `groups`, a writers rule without GROUPS).  An auto_groups of the older form (rows, d,
    sms) is wrapped to take the launch parameters too (_four_args)."""
    _check_kind(e.kind)
    for flag in ("deterministic_by_design", "uses_groups"):
        if not isinstance(getattr(e, flag), bool):       # strictly: 1 is not True here
            raise TypeError(f"implementation {e.name!r}: {flag} must be True or False, "
                            f"got {getattr(e, flag)!r}")
    if e.fn is None:
        if e.available:        # a _Peer's probe is never run here: it always has an fn
            raise TypeError(f"implementation {e.name!r}: no function, yet available")
    elif not callable(e.fn):
        raise TypeError(f"implementation {e.name!r}: {e.fn!r} is not callable")
    else:
        _check_signature(e.name, e.fn)
    if e.doc is None:
        e.doc = ""
    _check_type(e.name, "doc", e.doc, str)
    # reason as given, where it is a plain field: a subclass's property (peers') is its probe
    if not isinstance(vars(e).get("reason", ""), str):
        raise TypeError(f"implementation {e.name!r}: reason must be a str, got {e.reason!r}")
    for rule in _RULE_CALLS:
        value = getattr(e, rule)
        if value is not None and not callable(value):
            raise TypeError(f"implementation {e.name!r}: {rule} must be a function or None, "
                            f"got {value!r}")
        if value is not None:
            _check_rule_signature(e.name, rule, value)
    e.auto_groups = _four_args(e.auto_groups)
    if e.workspace is None:
        e.workspace = _no_workspace
    _check_type(e.name, "launch", e.launch, _tuning.Rule)
    _check_type(e.name, "contention", e.contention, Contention)
    if not isinstance(e.partition, str) or e.partition not in PARTITIONS:
        raise ValueError(f"implementation {e.name!r}: partition must be one of "
                         f"{', '.join(map(repr, PARTITIONS))}, got {e.partition!r}")


# each rule's arguments as the harness calls it (Entry.effective_groups, workspace_at,
# writers_per_slot, measure's writers_per_slot column)
_RULE_CALLS = {"auto_groups": ("rows", "d", "sms", "launch"),
               "workspace": ("rows", "d", "groups", "has_bias"),
               "writers": ("rows", "groups"), "max_groups": ("rows", "d", "launch")}


def _check_rule_signature(name: str, rule: str, value: Callable) -> None:
    """`value` can be called as the harness calls `rule` (_RULE_CALLS, positionally): a
    writers of (rows) or a workspace of (rows, d) passed `list`, then every record was its
    TypeError.  An auto_groups of the older form, three parameters, is called without launch
    (_four_args); a workspace model that takes `weight_dtype` is called with it too
    (workspace_at).  A callable whose signature Python cannot read is taken as it is, as
    _check_signature takes one."""
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return
    args = _RULE_CALLS[rule]
    if rule == "auto_groups" and len(sig.parameters) == 3:
        args = args[:3]
    calls = [{}]
    if rule == "workspace" and _takes_weight_dtype(value):
        calls.append({"weight_dtype": None})
    for keywords in calls:
        try:
            sig.bind(*args, **keywords)
        except TypeError as e:
            label = getattr(value, "__name__", type(value).__name__)
            call = ", ".join([*args, *(f"{k}=..." for k in keywords)])
            raise TypeError(f"implementation {name!r}: its {rule} rule {label}{sig} cannot be "
                            f"called as {rule}({call}): {e}") from None


def _check_signature(name: str, fn: Callable) -> None:
    """fn can be called as Entry.backward calls it, `fn(x, dy, weight, mean, rstd,
    groups=...)`: a function without `groups`, or with four positional arguments, passed
    `list` and then made every record "TypeError: f() got an unexpected keyword argument".
    A callable whose signature Python cannot read (some C or wrapped callables) is taken as
    it is: its first call will tell."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*(None,) * 5, groups=None)
    except TypeError as e:
        label = getattr(fn, "__name__", type(fn).__name__)
        raise TypeError(f"implementation {name!r}: its function {label}{sig} cannot be called "
                        f"as fn(x, dy, weight, mean, rstd, groups=...): {e}") from None


def add(entry: Entry) -> Entry:
    """Register a ready-made Entry (a subclass may, for example, settle `available` lazily)."""
    _check_name(entry.name)
    _check_fields(entry)
    if entry.name in _REGISTRY:
        raise ValueError(f"implementation {entry.name!r} registered twice")
    _REGISTRY[entry.name] = entry
    return entry


def register_unavailable(name: str, *, kind: str, reason: str, deterministic_by_design: bool = False,
                         uses_groups: bool = False, doc: str = "",
                         contention: Contention | None = None, partition: str = "block",
                         reduce_kernel: bool = False) -> None:
    """Record an optional implementation that cannot run here, and why (the same record again,
    a module imported twice, is no change; any other entry of the name is a clash).
    contention: its contention model where that is host arithmetic (`Contention`, data), as it
    would be registered where it runs — so a report written on this machine from another's
    records still shows its writers and workspace (harness/report/widget.py); None where the
    model needs what is missing here (a peer's SM count from its package).  partition: as
    `register`'s, so the GROUPS that model is evaluated at are the ones that would run;
    reduce_kernel: as `register`'s, so the entry states the same wherever it is read."""
    _check_kind(kind)
    _check_contention(name, uses_groups, contention)
    entry = Entry(name=name, kind=kind, deterministic_by_design=deterministic_by_design,
                  uses_groups=uses_groups, fn=None, available=False, reason=reason, doc=doc,
                  contention=contention, partition=partition, reduce_kernel=bool(reduce_kernel))
    if contention is not None:
        entry.workspace, entry.writers = contention.workspace, contention.writers_per_slot
    old = _REGISTRY.get(name)
    if old is not None and not (not old.available and old.kind == kind and old.reason == reason):
        raise ValueError(f"implementation {name!r} registered twice")
    if old is None:
        add(entry)


class PluginError(Exception):
    """A plugin that cannot be loaded.  str(e) is one line naming the plugin and the fault."""


PLUGIN_GROUP = "normbench.implementations"
_plugin_error: PluginError | None = None
_PLUGINS: list[dict] = []               # the loaded plugins' provenance, in load order


def _plugin_sources() -> list[tuple[str, str, Callable[[], object], dict]]:
    """(plugin, where it was named, loader, provenance) for every plugin: the modules in
    NORMBENCH_PLUGINS (comma-separated), then the installed packages' entry points in
    PLUGIN_GROUP.  The provenance is what plugins() reports once the plugin has loaded."""
    from importlib.metadata import entry_points

    out = [(m, "NORMBENCH_PLUGINS", lambda m=m: importlib.import_module(m),
            _provenance("NORMBENCH_PLUGINS", m))
           for m in dict.fromkeys(filter(None, (p.strip() for p in
                                                os.environ.get("NORMBENCH_PLUGINS", "").split(","))))]
    for ep in sorted(entry_points(group=PLUGIN_GROUP), key=lambda ep: ep.name):
        dist = getattr(ep, "dist", None)
        where = f"entry point {ep.name!r} of {dist.name if dist else 'an installed package'}"

        # a value that is no `module` or `module:attr` (`my_norm = "pkg.mod extra"`): its
        # module could not be read here (AttributeError outside the load, which named
        # "NORMBENCH_PLUGINS=" as the plugin); its load says what is wrong, naming it
        valid = ep.pattern.match(ep.value) is not None      # as ep.module and ep.load read it

        def load(ep=ep, valid=valid):
            if not valid:
                raise ValueError(f"{ep.value!r} is not a module or module:attribute")
            obj = ep.load()            # imports the module: its @register calls run
            if ep.attr and callable(obj):
                obj()                  # module:function names a function that registers
        out.append((ep.value, where, load, _provenance(
            "entry point", ep.module if valid else ep.value, ep.name, dist)))
    return out


def _provenance(source: str, module: str, entry_point: str | None = None, dist=None) -> dict:
    """A plugin's entry in meta.json's `plugins`: how it was named (`source`: "entry point" or
    "NORMBENCH_PLUGINS"), its module, its entry point's name, and the distribution that
    installed it and that one's version (null where not known: a module on PYTHONPATH)."""
    return {"source": source, "module": module, "entry_point": entry_point,
            "distribution": getattr(dist, "name", None), "version": getattr(dist, "version", None)}


def _claiming(top: str) -> list[str]:
    """`importlib.metadata.packages_distributions().get(top, [])`, the same names in the same
    order, without what made it half a second of every CLI call with NORMBENCH_PLUGINS set:
    reading every installed distribution's METADATA (only a claimer's name is read here) and
    parsing every RECORD to infer top-level names (a file's top-level name is its path's first
    part, or its name less ".py": a RECORD none of whose lines, quotes and leading "./" left
    out, starts with `top` lists no file that gives `top`)."""
    from importlib import metadata
    declared = getattr(metadata, "_top_level_declared", None)
    inferred = getattr(metadata, "_top_level_inferred", None)
    if declared is None or inferred is None:
        return metadata.packages_distributions().get(top, [])
    names = []
    for dist in metadata.distributions():
        pkgs = declared(dist)
        if not pkgs:
            record = dist.read_text("RECORD")       # what `dist.files` lists, where it is one
            pkgs = (() if record and not any(line.lstrip('"./').startswith(top)
                                             for line in record.replace('"', "").splitlines())
                    else inferred(dist))
        claims = sum(1 for p in pkgs if p == top)
        if claims:
            names += [dist.metadata["Name"]] * claims
    return names


def _installed_by(module: str) -> dict:
    """The distribution whose files hold `module` (imported), as {"distribution", "version"};
    nulls where none does (a module on PYTHONPATH, a checkout's tests)."""
    from importlib import metadata

    file = getattr(sys.modules.get(module), "__file__", None)
    try:
        for name in _claiming(module.split(".")[0]) if file else []:
            dist = metadata.distribution(name)
            if any(os.path.basename(f) == os.path.basename(file)
                   and os.path.realpath(dist.locate_file(f)) == os.path.realpath(file)
                   for f in dist.files or []):
                return {"distribution": dist.name, "version": dist.version}
    except Exception:                   # an installed distribution's unreadable metadata
        pass
    return {"distribution": None, "version": None}


def _load_plugins() -> None:
    """Import every plugin once.  A plugin that fails (missing module, syntax error, an
    exception on import, a name registered twice) raises PluginError, now and on every
    later call: the registry is never silently missing a plugin."""
    global _plugins_loaded, _plugin_error
    if _plugin_error is not None:
        raise _plugin_error
    if _plugins_loaded:
        return
    _plugins_loaded = True              # before importing: a plugin may call get() itself
    for plugin, where, load, about in _plugin_sources():
        try:
            load()
        except Exception as e:          # SyntaxError and ImportError included
            text = " ".join(str(e).split()) or "(no message)"
            _plugin_error = PluginError(f"plugin {plugin} ({where}) cannot be loaded: "
                                        f"{type(e).__name__}: {text}"[:500])
            raise _plugin_error from None
        except BaseException as e:      # SystemExit from the plugin, or Ctrl-C while it loads
            # the plugin and those after it did not load: say so on every later call
            _plugin_error = PluginError(f"plugin {plugin} ({where}) did not finish loading: "
                                        f"{type(e).__name__} while importing it")
            if isinstance(e, SystemExit):   # the plugin's own exit: one line, exit 2, as above
                raise PluginError(f"plugin {plugin} ({where}) cannot be loaded: SystemExit: "
                                  f"{e.code}") from None
            raise
        if about["source"] == "NORMBENCH_PLUGINS":
            about = {**about, **_installed_by(about["module"])}
        _PLUGINS.append(about)


def plugins() -> list[dict]:
    """The plugins loaded, in load order, each as _provenance gives it (meta.json's
    `plugins`: which plugin code a run's records were measured with)."""
    _load_plugins()
    return [dict(p) for p in _PLUGINS]


def known() -> list[str]:
    """Every registered name, available or not."""
    _load_plugins()
    return list(_REGISTRY)


def names() -> list[str]:
    """Names of the implementations that can run here."""
    _load_plugins()
    return [n for n, e in _REGISTRY.items() if e.available]


def get(name: str) -> Entry:
    _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown implementation {name!r}; known: {', '.join(_REGISTRY)}") from None


def entries() -> list[Entry]:
    _load_plugins()
    return list(_REGISTRY.values())
