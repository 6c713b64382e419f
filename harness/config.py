"""Sweep configuration: a YAML file -> a validated, frozen `Sweep`.

A config names the axes of a sweep; `harness/plan.py` expands them into cases (a cartesian
product).  Every list field also takes a single value (``norm: layernorm`` is
``norm: [layernorm]``).  A key given with an empty value (YAML null) is an error, except where
null is a valid value (``description``, ``implementations``, ``peak_tbps``).

Fields
------
name            text, letters/digits/``._-``, at most 64 characters.  Default: the file's stem
                (``configs/quick.yaml`` -> ``quick``), or ``sweep`` for a string.
description     free text.  Default: empty.
norm            ``layernorm`` and/or ``rmsnorm``.  Default: both.
rows            B*T, the number of rows reduced into dγ/dβ: integers >= 1.
batch, seq      instead of ``rows``: both lists, every batch*seq product becomes a row count
                (the record keeps batch and seq).  Not allowed together with ``rows``.
d               the normalized (hidden) size: integers 1..65536.
shapes          instead of rows (or batch+seq) and d, when the shapes of interest are not a
                product: a list of ``[rows, d]`` pairs or ``{rows: R, d: D}`` mappings, run in
                the given order.  Not allowed together with rows, batch, seq or d.
                One of ``rows``, ``batch`` + ``seq`` or ``shapes`` is required; ``d`` is
                required unless ``shapes`` is given.
dtype           activation dtype of x, dy, dx: ``bf16``, ``fp16``, ``fp32``.  Default: bf16.
weight_dtype    dtype of the weight and of dγ/dβ: ``same`` (as ``dtype``), ``fp32``, ``bf16``,
                ``fp16``.  Default: same.
groups          GROUPS, the number of partial dγ/dβ rows (for implementations that use it):
                integers 1..1048576 or ``auto`` (the implementation's default).  Default: auto.
implementations names of implementations to run, in this order.  Default (omitted or null):
                every implementation available on the machine.  Names are checked against the
                registry's list when the caller gives one.
timing          ``{warmup_ms: 25, rep_ms: 100}``: the warm-up and measurement budgets per case,
                milliseconds, numbers > 0.
determinism     ``{repeats: 10}``: how many times each case is rerun and compared bitwise;
                an integer >= 2.
peak_tbps       datasheet peak bandwidth in TB/s, > 0, overriding the device table
                (``harness/model.py``).  Default: null (use the table).
seed            integer 0 .. 2**63-1 for the random inputs.  Default: 0.
timeout_s       per-case timeout, seconds (> 0), used by ``run --isolate``.  Default: 120.

Lists must not be empty or hold duplicates.  Sizes must be YAML integers: ``"4096"``,
``4096.0`` and ``true`` are rejected.  Numbers are read as YAML 1.2 writes them, not as
YAML 1.1 (PyYAML's default): an integer is decimal digits without a leading zero, so
``0100`` (1.1: octal 64), ``1:30`` (1.1: base 60, 90), ``0x10``, ``0b11`` and ``1_000`` are
strings, and a size written so is rejected; ``1e3`` is the number 1000.0 (1.1: a string).
The config must be a regular file (a FIFO or device is refused, not read).

Errors
------
Everything wrong raises `ConfigError`, whose text is one line::

    config error: FILE: FIELD: problem

FIELD is a dotted path into the config (``timing.rep_ms``, ``d[2]``, ``shapes[1].rows``),
``line N`` for YAML syntax errors, ``(file)`` for a file that cannot be read as text, and
``(top level)`` when the document is not a mapping.
"""
from __future__ import annotations

import difflib
import hashlib
import math
import os
import re
import reprlib
import stat
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from normbench.harness.text import one_line

NORMS = ("layernorm", "rmsnorm")
DTYPES = ("bf16", "fp16", "fp32")
WEIGHT_DTYPES = ("same",) + DTYPES
MAX_D = 65536
MAX_ROWS = 2**31 - 1
MAX_GROUPS = 2**20
MAX_SEED = 2**63 - 1
MAX_FILE_BYTES = 1 << 20

# Top-level keys a config may hold (source_text/source_path are filled in by the loader).
KEYS = ("name", "description", "norm", "rows", "batch", "seq", "shapes", "d", "dtype",
        "weight_dtype", "groups", "implementations", "timing", "determinism", "peak_tbps",
        "seed", "timeout_s")
_LIST_KEYS = ("norm", "rows", "batch", "seq", "d", "dtype", "weight_dtype", "groups",
              "implementations")
# Names people reach for that difflib would not connect to the right key.
_ALIASES = {
    "impls": "implementations", "impl": "implementations", "providers": "implementations",
    "shape": "shapes", "dtypes": "dtype", "norms": "norm", "group": "groups",
    "weight_dtypes": "weight_dtype", "wdtype": "weight_dtype",
    "hidden": "d", "hidden_size": "d", "dim": "d", "n": "d",
    "m": "rows", "tokens": "rows", "bt": "rows", "batch_size": "batch", "seq_len": "seq",
    "seqlen": "seq", "warmup": "timing.warmup_ms", "warmup_ms": "timing.warmup_ms",
    "rep": "timing.rep_ms", "rep_ms": "timing.rep_ms", "repeats": "determinism.repeats",
    "timeout": "timeout_s", "peak": "peak_tbps", "peak_bw": "peak_tbps",
}
_DTYPE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
                  "float": "fp32", "f32": "fp32", "f16": "fp16"}


class ConfigError(Exception):
    """A config that cannot be used.  str(e) == "config error: FILE: FIELD: problem" (one line)."""

    def __init__(self, file: str, field: str, problem: str):
        super().__init__(file, field, problem)     # args kept so that the error pickles
        self.file = one_line(str(file))
        self.field = one_line(str(field))
        self.problem = one_line(str(problem))

    def __str__(self) -> str:
        return f"config error: {self.file}: {self.field}: {self.problem}"


# ----------------------------------------------------------------------------- messages

_R = reprlib.Repr()
_R.maxstring, _R.maxother, _R.maxlong = 40, 40, 40
_R.maxlist, _R.maxtuple, _R.maxdict, _R.maxset, _R.maxlevel = 4, 4, 3, 3, 1


def _show(v: Any) -> str:
    """A short description of a value as it came from YAML: kind and (truncated) value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean " + ("true" if v else "false")
    if isinstance(v, int):
        return f"integer {v}" if v.bit_length() < 128 else "a very large integer"
    if isinstance(v, float):
        return f"float {v!r}"
    if isinstance(v, str):
        return f"string {_R.repr(v)}"
    if isinstance(v, (list, tuple)):
        return f"list {_R.repr(list(v))}" if v else "empty list"
    if isinstance(v, dict):
        return "mapping" if v else "empty mapping"
    if isinstance(v, date):
        return f"date {v.isoformat()}"
    if isinstance(v, (bytes, bytearray)):
        return "binary data"
    if isinstance(v, (set, frozenset)):
        return "set"
    return type(v).__name__


def _fail(problem: str, field: str | None = None):
    """Raise a validation error carrying our own short message (and, optionally, the field
    path when the validator that finds it is not the field's own)."""
    ctx = {"problem": problem}
    if field is not None:
        ctx["field"] = field
    raise PydanticCustomError("config", "{problem}", ctx)


def _did_you_mean(word: str, choices: Iterable[str], aliases: dict[str, str] | None = None):
    choices = list(choices)
    low = word.lower() if isinstance(word, str) else ""
    if aliases and low in aliases and aliases[low] is not None:
        return aliases[low]
    lowered = {c.lower(): c for c in choices}
    hit = difflib.get_close_matches(low, list(lowered), n=1, cutoff=0.6)
    return lowered[hit[0]] if hit else None


def _choice(v: Any, choices: Iterable[str], what: str, aliases=None) -> str:
    choices = list(choices)
    if not isinstance(v, str):
        _fail(f"must be a string, got {_show(v)}")
    if v not in choices:
        hint = _did_you_mean(v, choices, aliases)
        if hint:
            _fail(f"unknown {what} {_R.repr(v)}; did you mean {hint!r}?")
        listed = ", ".join(choices[:12]) + (", ..." if len(choices) > 12 else "")
        _fail(f"unknown {what} {_R.repr(v)}; expected one of: {listed}" if listed
              else f"unknown {what} {_R.repr(v)}")
    return v


# ----------------------------------------------------------------------------- element types

def _int(v: Any, lo: int, hi: int) -> int:
    if type(v) is not int:          # strict: no bool, no "4096", no 4096.0
        if isinstance(v, str) and re.fullmatch(r"[-+]?(0[0-9_]+|0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*(:[0-5]?[0-9])+|[0-9]+(_[0-9]+)+)", v):
            _fail(f"must be an integer in decimal digits without a leading zero, got "
                  f"{_R.repr(v)}")
        _fail(f"must be an integer, got {_show(v)}")
    if v < lo:
        _fail(f"must be at least {lo}, got {v}")
    if v > hi:
        _fail(f"must be at most {hi}, got {_show(v).removeprefix('integer ')}")
    return v


def _positive(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        _fail(f"must be a number, got {_show(v)}")
    if isinstance(v, int) and v.bit_length() > 1000:
        _fail("must be a finite number, got a very large integer")
    if not math.isfinite(v):
        _fail(f"must be a finite number, got {v!r}")
    if v <= 0:
        _fail(f"must be greater than 0, got {v!r}")
    return float(v)


def _group(v: Any) -> int | str:
    if v == "auto" and isinstance(v, str):
        return v
    if type(v) is not int:
        if isinstance(v, str):
            _fail(f"must be an integer or 'auto', got string {_R.repr(v)}")
        _fail(f"must be an integer or 'auto', got {_show(v)}")
    return _int(v, 1, MAX_GROUPS)


def _implementation(v: Any, info: ValidationInfo) -> str:
    if not isinstance(v, str):
        _fail(f"must be a string, got {_show(v)}")
    known = (info.context or {}).get("known_implementations")
    if known is not None:
        _choice(v, known, "implementation")
    elif not v.strip():
        _fail("must not be blank")
    return v


def _name(v: Any) -> str:
    if not isinstance(v, str):
        _fail(f"must be a string, got {_show(v)}")
    if not re.fullmatch(r"[A-Za-z0-9._-]{1,64}", v):
        _fail(f"must be 1-64 letters, digits, '.', '_' or '-', got {_R.repr(v)}")
    return v


def _text(v: Any) -> str:
    if not isinstance(v, str):
        _fail(f"must be a string, got {_show(v)}")
    return v


def _pair_to_mapping(v: Any) -> Any:
    if isinstance(v, (list, tuple)) and len(v) == 2:
        return {"rows": v[0], "d": v[1]}
    return v


Size = Annotated[int, PlainValidator(lambda v: _int(v, 1, MAX_ROWS))]
Dim = Annotated[int, PlainValidator(lambda v: _int(v, 1, MAX_D))]
Norm = Annotated[str, PlainValidator(lambda v: _choice(v, NORMS, "norm"))]
DType = Annotated[str, PlainValidator(lambda v: _choice(v, DTYPES, "dtype", _DTYPE_ALIASES))]
WeightDType = Annotated[str, PlainValidator(
    lambda v: _choice(v, WEIGHT_DTYPES, "weight dtype", _DTYPE_ALIASES))]
Group = Annotated[Union[int, Literal["auto"]], PlainValidator(_group)]
Implementation = Annotated[str, PlainValidator(_implementation)]
Positive = Annotated[float, PlainValidator(_positive)]


def _list(default=None):
    """A non-empty list field (strict: a YAML list, not a set or mapping)."""
    return Field(default=default, min_length=1, strict=True)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Timing(_Model):
    warmup_ms: Positive = 25.0
    rep_ms: Positive = 100.0


class Determinism(_Model):
    repeats: Annotated[int, PlainValidator(lambda v: _int(v, 2, 10**6))] = 10


class Shape(_Model):
    rows: Size
    d: Dim


ShapeEntry = Annotated[Shape, BeforeValidator(_pair_to_mapping)]


class Sweep(_Model):
    """A validated sweep.  Lists are normalized (a scalar becomes a one-element list).
    Exactly one of `rows`, (`batch`, `seq`) or `shapes` is set; `d` is None iff `shapes` is
    set.  `source_text` is the config verbatim, `source_path` where it came from."""

    name: Annotated[str, PlainValidator(_name)] = "sweep"
    description: Annotated[str, PlainValidator(_text)] = ""
    norm: list[Norm] = _list(["layernorm", "rmsnorm"])
    rows: list[Size] | None = _list()
    batch: list[Size] | None = _list()
    seq: list[Size] | None = _list()
    shapes: list[ShapeEntry] | None = _list()
    d: list[Dim] | None = _list()
    dtype: list[DType] = _list(["bf16"])
    weight_dtype: list[WeightDType] = _list(["same"])
    groups: list[Group] = _list(["auto"])
    implementations: list[Implementation] | None = _list()
    timing: Timing = Timing()
    determinism: Determinism = Determinism()
    peak_tbps: Positive | None = None
    seed: Annotated[int, PlainValidator(lambda v: _int(v, 0, MAX_SEED))] = 0
    timeout_s: Positive = 120.0
    source_text: str = ""
    source_path: str = ""

    @property
    def config_hash(self) -> str:
        """sha256 of the verbatim config text, first 16 hex digits."""
        return hashlib.sha256(self.source_text.encode("utf-8")).hexdigest()[:16]

    @model_validator(mode="after")
    def _check(self) -> "Sweep":
        for key in ("norm", "rows", "batch", "seq", "shapes", "d", "dtype", "weight_dtype",
                    "groups", "implementations"):
            values = getattr(self, key)
            if values is None:
                continue
            seen: dict[Any, int] = {}
            for i, v in enumerate(values):
                k = (v.rows, v.d) if isinstance(v, Shape) else (type(v), v)
                if k in seen:
                    shown = f"[{v.rows}, {v.d}]" if isinstance(v, Shape) else _R.repr(v)
                    _fail(f"duplicate value {shown} (also {key}[{seen[k]}])", f"{key}[{i}]")
                seen[k] = i
        if self.shapes is not None:
            for other in ("rows", "batch", "seq", "d"):
                if getattr(self, other) is not None:
                    _fail("not allowed together with 'shapes' (shapes give rows and d)", other)
        else:
            if self.rows is not None and (self.batch is not None or self.seq is not None):
                which = "batch" if self.batch is not None else "seq"
                _fail("not allowed together with 'rows'; give rows, or batch and seq", which)
            if self.rows is None:
                if self.batch is None and self.seq is None:
                    _fail("required field is missing (or give batch and seq, or shapes)",
                          "rows")
                if self.batch is None:
                    _fail("required when 'seq' is given", "batch")
                if self.seq is None:
                    _fail("required when 'batch' is given", "seq")
                big = max(self.batch) * max(self.seq)
                if big > MAX_ROWS:
                    _fail(f"batch*seq must be at most {MAX_ROWS}, got {big}", "seq")
            if self.d is None:
                _fail("required field is missing", "d")
        return self


# ----------------------------------------------------------------------------- YAML

class _Loader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate keys (PyYAML silently keeps the last one)."""


def _construct_map(loader: _Loader, node: yaml.MappingNode):
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise ConfigError(loader.name, f"line {line}",
                              f"duplicate key {_R.repr(key)} (first at line {seen[key]})")
        seen[key] = line
    data: dict = {}
    yield data
    data.update(loader.construct_mapping(node))


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)

# Numbers as YAML 1.2's core schema has them: PyYAML's 1.1 resolvers read 0100 as octal 64,
# 1:30 as base-60 90, 1_000 as 1000, and leave 1e3 a string.
_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"""^(?:[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?
                        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789"))


def _construct_int(loader: _Loader, node: yaml.ScalarNode):
    text = loader.construct_scalar(node)
    if not _INT.match(text):        # an explicit !!int 0100 or 0x10: no octal, hex, base 60
        raise yaml.constructor.ConstructorError(
            None, None, f"integer {text!r} is not written in decimal digits", node.start_mark)
    return int(text)


_Loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def _load_yaml(text: str, file: str) -> Any:
    loader = None
    try:
        loader = _Loader(text)
        loader.name = file
        return loader.get_single_data()
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        problem = e.problem or e.context or "syntax error"
        if e.context and e.problem and e.problem.startswith("but "):
            problem = f"{e.context} {e.problem}"       # "expected X but found Y"
        where = f"line {mark.line + 1}" if mark is not None else "(file)"
        col = f" (column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(file, where, f"invalid yaml: {problem}{col}") from None
    except yaml.reader.ReaderError as e:
        line = text[: e.position].count("\n") + 1
        c = e.character
        shown = f"#x{c:04x}" if isinstance(c, int) else f"#x{ord(c):04x}" if len(c) == 1 \
            else repr(c)
        raise ConfigError(file, f"line {line}",
                          f"invalid yaml: control character {shown} is not allowed") from None
    except yaml.YAMLError as e:
        raise ConfigError(file, "(file)", f"invalid yaml: {_first_line(e)}") from None
    except RecursionError:
        raise ConfigError(file, "(file)", "invalid yaml: nested too deeply") from None
    except (ValueError, OverflowError, TypeError) as e:   # e.g. an integer of 5000 digits
        problem = "an integer has too many digits" if "digits" in str(e) else _first_line(e)
        raise ConfigError(file, "(file)", f"invalid yaml: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return lines[0][:120] if lines else type(e).__name__


# ----------------------------------------------------------------------------- entry points

def _field_path(loc: Iterable[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", part):
            out += f".{part}" if out else part
        else:
            out += f"[{_R.repr(part)}]" if out else _R.repr(part)
    return out or "(top level)"


def _keys_at(loc: tuple) -> tuple[str, ...]:
    """The keys allowed in the mapping at `loc` (indices dropped)."""
    path = tuple(p for p in loc if not isinstance(p, int))
    return {(): KEYS, ("timing",): tuple(Timing.model_fields),
            ("determinism",): tuple(Determinism.model_fields),
            ("shapes",): tuple(Shape.model_fields)}.get(path, ())


def _unknown_key(key: Any, allowed: Iterable[str]) -> str:
    if not isinstance(key, str):
        return f"unknown key (keys are names, got {_show(key)})"
    hint = _did_you_mean(key, allowed, _ALIASES if tuple(allowed) == KEYS else None)
    return f"unknown key; did you mean {hint!r}?" if hint else "unknown key"


def _translate(err: dict, wrapped: set[str]) -> tuple[str, str]:
    """One pydantic error -> (field, problem)."""
    loc = tuple(err.get("loc", ()))
    if loc and loc[0] in wrapped and len(loc) > 1 and loc[1] == 0:
        loc = (loc[0],) + loc[2:]          # a scalar the user wrote, shown without [0]
    kind, value, ctx = err.get("type"), err.get("input"), err.get("ctx") or {}
    if kind == "config":
        return ctx.get("field") or _field_path(loc), str(ctx.get("problem", err.get("msg")))
    if kind == "extra_forbidden":
        return _field_path(loc), _unknown_key(loc[-1], _keys_at(loc[:-1]))
    if kind == "missing":
        return _field_path(loc), "required field is missing"
    if kind == "too_short":
        return _field_path(loc), "must not be empty"
    if kind == "list_type":
        return _field_path(loc), f"must be a list, got {_show(value)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        if len(loc) == 2 and loc[0] == "shapes":
            return _field_path(loc), f"must be a [rows, d] pair or a mapping with rows and " \
                                     f"d, got {_show(value)}"
        return _field_path(loc), f"must be a mapping, got {_show(value)}"
    return _field_path(loc), _first_line(Exception(err.get("msg", "invalid value"))).lower()


def _default_name(file: str) -> str:
    if file.startswith("<"):
        return "sweep"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", Path(file).stem)[:64].strip("-")
    return stem or "sweep"


def parse_config(text: str, file: str = "<string>",
                 known_implementations: Iterable[str] | None = None) -> Sweep:
    """Validate the config `text`; `file` names it in errors and in `Sweep.source_path`.
    `known_implementations`: the names `implementations` may use (None: do not check)."""
    if not isinstance(text, str):
        raise TypeError(f"parse_config wants str, got {type(text).__name__}")
    file = str(file)
    if "\x00" in text:
        raise ConfigError(file, "(file)", "contains NUL characters; not a text file")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ConfigError(file, "(file)", "contains characters that are not valid unicode") \
            from None
    if not text.strip():
        raise ConfigError(file, "(file)", "is empty")
    data = _load_yaml(text, file)
    if data is None:
        raise ConfigError(file, "(file)", "holds no settings (only comments?)")
    if not isinstance(data, dict):
        raise ConfigError(file, "(top level)",
                          f"must be a mapping of settings (key: value), got {_show(data)}")
    for key in data:
        if key not in KEYS:
            field = _field_path((key,)) if isinstance(key, str) else _R.repr(key)
            raise ConfigError(file, field, _unknown_key(key, KEYS))
    data = dict(data)
    wrapped = set()
    for key in _LIST_KEYS:
        v = data.get(key)
        if isinstance(v, (str, int, float, date)):      # bool is an int: wrapped, rejected
            data[key] = [v]
            wrapped.add(key)
    data.setdefault("name", _default_name(file))
    data["source_text"], data["source_path"] = text, file
    known = None if known_implementations is None else list(known_implementations)
    try:
        return Sweep.model_validate(data, context={"known_implementations": known})
    except ValidationError as e:
        errors = e.errors(include_url=False)
        field, problem = _translate(errors[0], wrapped) if errors else ("(file)", "invalid")
        raise ConfigError(file, field, problem) from None


def load_config(path: str | Path,
                known_implementations: Iterable[str] | None = None) -> Sweep:
    """Read and validate the config file at `path` (see the module docstring)."""
    file = str(path)
    p = Path(path)
    try:
        if p.is_dir():
            raise ConfigError(file, "(file)", "is a directory, not a config file")
        # O_NONBLOCK: opening a FIFO must not wait for a writer; only a regular file is read
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
        with open(fd, "rb") as f:
            mode = os.fstat(f.fileno()).st_mode
            if not stat.S_ISREG(mode):
                kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device"
                        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket"
                        if stat.S_ISSOCK(mode) else "not a regular file")
                raise ConfigError(file, "(file)", f"is {kind}, not a config file")
            raw = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(file, "(file)", "does not exist") from None
    except PermissionError:
        raise ConfigError(file, "(file)", "cannot be read (permission denied)") from None
    except OSError as e:
        raise ConfigError(file, "(file)", f"cannot be read ({e.strerror or e})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise ConfigError(file, "(file)", "is larger than 1 MiB; not a config file?")
    if b"\x00" in raw:
        raise ConfigError(file, "(file)", "contains NUL bytes; not a text file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(file, "(file)", f"is not UTF-8 text (bad byte at offset {e.start})") \
            from None
    return parse_config(text, file, known_implementations)
