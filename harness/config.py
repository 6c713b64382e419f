"""Sweep configuration: a YAML file -> a validated, frozen `Sweep`.

A config names the axes of a sweep; `harness/plan.py` expands them into cases (a cartesian
product).  Every list field also takes a single value (``norm: layernorm`` is
``norm: [layernorm]``; ``shapes: {rows: 4, d: 8}`` is ``shapes: [{rows: 4, d: 8}]``, but a
single pair is written ``[[4, 8]]``: ``[4, 8]`` would read as two shapes and is refused).  A
key given with an empty value (YAML null) is an error, except where null is a valid value
(``description``, ``implementations``, ``peak_tbps``).

Fields
------
name            text, letters/digits/``._-``, at most 64 characters.  Default: the file's stem
                (``configs/quick.yaml`` -> ``quick``), or ``sweep`` for a string.
description     free text.  Default: empty.
norm            ``layernorm`` and/or ``rmsnorm``.  Default: both.
rows            B*T, the number of rows reduced into dγ/dβ: integers 1..1073741824 (2^30,
                what the kernels' int32 row numbers can index: strategies/_args.MAX_ROWS).
batch, seq      instead of ``rows``: both lists, every batch*seq product becomes a row count
                (at most 2^30; the record keeps batch and seq).  Not allowed together with
                ``rows``.
d               the normalized (hidden) size: integers 1..65536.
shapes          instead of rows (or batch+seq) and d, when the shapes of interest are not a
                product: a list of ``[rows, d]`` pairs or ``{rows: R, d: D}`` mappings, run in
                the given order.  Not allowed together with rows, batch, seq or d.
                One of ``rows``, ``batch`` + ``seq`` or ``shapes`` is required; ``d`` is
                required unless ``shapes`` is given (a config run with overrides or
                ``--shape`` may leave them to the command line: harness/overrides.py).
dtype           activation dtype of x, dy, dx: ``bf16``, ``fp16``, ``fp32``.  Default: bf16.
weight_dtype    dtype of the weight and of dγ/dβ: ``same`` (as ``dtype``), ``fp32``, ``bf16``,
                ``fp16``.  Default: same.
groups          GROUPS, the number of partial dγ/dβ rows (for implementations that use it):
                integers 1..1048576 or ``auto`` (the implementation's default).  Default: auto.
implementations names of implementations to run, in this order.  Default (omitted or null):
                every implementation available on the machine (every one known with --shard
                or --scheduler: skipped where unavailable).  Names are checked against the
                registry's list when the caller gives one.
timing          ``{warmup_ms: 25, rep_ms: 100}``: the warm-up and measurement budgets per case,
                milliseconds, numbers > 0 and at most 3600000 (an hour a case).
determinism     ``{repeats: 10}``: how many calls of each case, the first included, are
                compared bitwise; an integer from 2 to 1000000.
peak_tbps       datasheet peak bandwidth in TB/s (0.001-1000), overriding the device table
                (``harness/model.py``).  Default: null (use the table).
seed            integer 0 .. 2**63-1 for the random inputs.  Default: 0.
timeout_s       per-case timeout, seconds (> 0, at most a week), used by ``run --isolate``;
                the worker's start-up (its imports, the plugins) does not count.  Default: 120.

Lists must not be empty or hold duplicates.  Sizes must be YAML integers: ``"4096"``,
``4096.0`` and ``true`` are rejected.  Numbers are read as YAML 1.2 writes them, not as
YAML 1.1 (PyYAML's default): an integer is decimal digits without a leading zero, so
``0100`` (1.1: octal 64), ``1:30`` (1.1: base 60, 90), ``0x10``, ``0b11`` and ``1_000`` are
strings, and a size written so is rejected; ``1e3`` is the number 1000.0 (1.1: a string).
Booleans likewise: ``true`` and ``false`` (or True, TRUE, False, FALSE) only; ``yes``, ``no``, ``on`` and ``off``
are strings (1.1: booleans).
The config must be a regular file (a FIFO or device is refused, not read).

Errors
------
Everything wrong raises `ConfigError`, whose text is one line::

    config error: FILE: FIELD: problem

FIELD is a dotted path into the config (``timing.rep_ms``, ``d[2]``, ``shapes[1].rows``),
``line N`` for YAML syntax errors, ``(file)`` for a file that cannot be read as text, and
``(top level)`` when the document is not a mapping.

Layout: this module holds the `Sweep` model and the entry points; `harness/config_fields.py`
the allowed values and per-field validators, `harness/config_yaml.py` the file reading, the
YAML loader and `ConfigError`.  Every public name is importable from here.
"""
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainValidator,
    ValidationError,
    ValidationInfo,
    PrivateAttr,
    model_validator,
)

from normbench.harness.config_fields import (  # noqa: F401  (re-exported)
    _DTYPE_ALIASES, DTYPES, MAX_D, MAX_GROUPS, MAX_ROWS, MAX_SEED, NORMS, WEIGHT_DTYPES, BudgetMs,
    DType, Dim, Group, Implementation, Norm, Positive, Size, TBps, TimeoutS, WeightDType, _choice,
    _did_you_mean, _fail, _group, _implementation, _int, _name, _pair_to_mapping, _positive, _show,
    _text)
from normbench.harness.config_yaml import (  # noqa: F401  (re-exported)
    MAX_FILE_BYTES, ConfigError, _first_line, _load_yaml, _Loader, _R, dump_yaml,
    read_config_file)

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


def _list(default=None):
    """A non-empty list field (strict: a YAML list, not a set or mapping)."""
    return Field(default=default, min_length=1, strict=True)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Timing(_Model):
    warmup_ms: BudgetMs = 25.0
    rep_ms: BudgetMs = 100.0


class Determinism(_Model):
    repeats: Annotated[int, PlainValidator(lambda v: _int(v, 2, 10**6))] = 10


class Shape(_Model):
    rows: Size
    d: Dim


ShapeEntry = Annotated[Shape, BeforeValidator(_pair_to_mapping)]


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


# The first line of a config changed on the command line (harness/overrides.apply writes it).
OVERRIDE_HEADER = re.compile(r'\A# ".*" with \[.*\]\n')
# The first line of Sweep.config_text where no config file's text is what runs (a Sweep built
# in Python, or changed after loading): such a text, loaded again, hashes by its settings too.
SETTINGS_HEADER = re.compile(r"\A# normbench: the validated settings of ")
_BUILT = "# normbench: the validated settings of a Sweep built in Python (no config file)\n"
_CHANGED = ("# normbench: the validated settings of a Sweep changed after it was loaded "
            "(not its file's text)\n")


class Sweep(_Model):
    """A validated sweep.  Lists are normalized (a scalar becomes a one-element list).
    Exactly one of `rows`, (`batch`, `seq`) or `shapes` is set; `d` is None iff `shapes` is
    set.  `source_text` is the config verbatim, `source_path` where it came from (both
    empty for a Sweep built in Python); `config_text` the config that runs."""

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
    peak_tbps: TBps | None = None
    seed: Annotated[int, PlainValidator(lambda v: _int(v, 0, MAX_SEED))] = 0
    timeout_s: TimeoutS = 120.0
    source_text: str = ""
    source_path: str = ""
    # the settings' hash as parse_config validated them: source_text is what runs only while
    # they still hash so (a Sweep built in Python has none; model_copy(update=...) keeps it)
    _loaded: str | None = PrivateAttr(default=None)

    def _settings_hash(self) -> str:
        settings = self.model_dump(exclude={"source_text", "source_path"}, mode="json")
        return _hash(json.dumps(settings, sort_keys=True, ensure_ascii=False))

    @property
    def from_text(self) -> bool:
        """source_text is the config that runs: loaded from it (parse_config) and not
        changed since.  False for a Sweep built in Python or changed after loading."""
        return bool(self.source_text) and self._loaded == self._settings_hash()

    @property
    def config_text(self) -> str:
        """The config that runs, as meta.json records it: source_text where it is that
        (from_text), else the validated settings as YAML below a one-line comment saying
        they were built in Python or changed after loading (parse_config reads it back as
        the same sweep, and it hashes alike)."""
        if self.from_text:
            return self.source_text
        settings = self.model_dump(exclude={"source_text", "source_path"}, mode="json",
                                   exclude_none=True)
        return (_CHANGED if self._loaded else _BUILT) + dump_yaml(settings)

    @property
    def config_hash(self) -> str:
        """sha256 of the verbatim config text, first 16 hex digits.  A config changed on the
        command line (harness/overrides.py writes it out below a comment naming the path as
        typed and the overrides in the order given) is hashed by its validated settings
        instead, keys sorted: the same sweep reached by another path, another order of
        overrides or another spelling of a value (``d=8`` / ``d=[8]``, ``rep_ms=5`` /
        ``5.0``) hashes alike.  So is a Sweep whose text is not what runs (not from_text:
        built in Python, or changed after loading) and one loaded from such a sweep's
        config_text: two sweeps built in Python hash alike only where their settings are."""
        if self.from_text and OVERRIDE_HEADER.match(self.source_text) is None \
                and SETTINGS_HEADER.match(self.source_text) is None:
            return _hash(self.source_text)
        return self._settings_hash()

    @property
    def raw_data_hash(self) -> str:
        """What config_hash was for a config changed on the command line while it hashed the
        YAML data of the merged text rather than the validated settings (so ``d=8`` and
        ``d=[8]`` differed): a run started then is still resumed.  config_hash where the
        text is not what runs (not from_text)."""
        if not self.from_text:
            return self.config_hash
        m = OVERRIDE_HEADER.match(self.source_text)
        if m is None:
            return _hash(self.source_text)
        data = _load_yaml(self.source_text[m.end():], self.source_path or "<config>")
        return _hash(json.dumps(data, sort_keys=True, default=str, ensure_ascii=False))

    @property
    def text_hash(self) -> str:
        """sha256 of the whole text, first 16 hex digits: what config_hash was for a config
        changed on the command line before raw_data_hash (a run started then is still
        resumed).  config_hash where the text is not what runs (not from_text: an earlier
        version hashed a Sweep built in Python as the empty text, whatever its settings)."""
        return _hash(self.source_text) if self.from_text else self.config_hash

    @model_validator(mode="after")
    def _check(self, info: ValidationInfo) -> "Sweep":
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
            # parse_config(shapes_later=True): the command line may still give the shapes
            later = bool((info.context or {}).get("shapes_later"))
            if self.rows is None and not later:
                if self.batch is None and self.seq is None:
                    _fail("required field is missing (or give batch and seq, or shapes)",
                          "rows")
                if self.batch is None:
                    _fail("required when 'seq' is given", "batch")
                if self.seq is None:
                    _fail("required when 'batch' is given", "seq")
            if self.batch is not None and self.seq is not None:
                big = max(self.batch) * max(self.seq)
                if big > MAX_ROWS:
                    _fail(f"batch*seq must be at most {MAX_ROWS}, got {big}", "seq")
            if self.d is None and not later:
                _fail("required field is missing", "d")
        return self


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


# Keys whose model field is Optional (only one way of giving the shapes is set), but which,
# given, must hold a value: null there is an error (the module docstring), not "not given".
_NOT_NULL = ("rows", "batch", "seq", "shapes", "d")


def parse_config(text: str, file: str = "<string>",
                 known_implementations: Iterable[str] | None = None, *,
                 shapes_later: bool = False) -> Sweep:
    """Validate the config `text`; `file` names it in errors and in `Sweep.source_path`.
    `known_implementations`: the names `implementations` may use (None: do not check).
    `shapes_later`: a missing rows (or batch and seq) or d is no fault, for a config the
    command line completes (harness/overrides.apply validates the result in full); the
    Sweep returned then may lack its shapes."""
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
    for key in _NOT_NULL:              # Optional in the model (one way of the shapes is set)
        if key in data and data[key] is None:
            raise ConfigError(file, key, "must be a list, got null (leave the key out instead)")
    wrapped = set()
    for key in _LIST_KEYS:
        v = data.get(key)
        if isinstance(v, (str, int, float, date)):      # bool is an int: wrapped, rejected
            data[key] = [v]
            wrapped.add(key)
    shapes = data.get("shapes")
    if isinstance(shapes, dict):                        # one {rows, d} mapping
        data["shapes"] = [shapes]
        wrapped.add("shapes")
    elif isinstance(shapes, list) and len(shapes) == 2 and all(type(x) is int for x in shapes):
        r, d = shapes                                   # two shapes, or one pair unwrapped?
        raise ConfigError(file, "shapes", f"must be a list of [rows, d] pairs; for one shape "
                                          f"write [[{r}, {d}]] or {{rows: {r}, d: {d}}}")
    data.setdefault("name", _default_name(file))
    data["source_text"], data["source_path"] = text, file
    known = None if known_implementations is None else list(known_implementations)
    try:
        sweep = Sweep.model_validate(data, context={"known_implementations": known,
                                                    "shapes_later": shapes_later})
    except ValidationError as e:
        errors = e.errors(include_url=False)
        # an unknown key first: a misspelt one ("Rows") also makes its field missing, and
        # "shapes[0].rows: required field is missing" would hide the typo
        errors.sort(key=lambda x: x.get("type") != "extra_forbidden")
        field, problem = _translate(errors[0], wrapped) if errors else ("(file)", "invalid")
        raise ConfigError(file, field, problem) from None
    sweep._loaded = sweep._settings_hash()          # its text is what runs (Sweep.from_text)
    return sweep


def load_config(path: str | Path,
                known_implementations: Iterable[str] | None = None) -> Sweep:
    """Read and validate the config file at `path` (see the module docstring)."""
    return parse_config(read_config_file(path), str(path), known_implementations)
