"""Config field validation for `harness/config.py`: the allowed values and limits, the
per-element validators (strict integers, positive numbers, choices with a did-you-mean hint)
and the annotated types the `Sweep` model is built from.  Each validator raises a pydantic
error carrying our own short message, which `harness/config.py` turns into a `ConfigError`."""
from __future__ import annotations

import difflib
import math
import re
from collections.abc import Iterable
from datetime import date
from typing import Annotated, Any, Literal, Union

from pydantic import PlainValidator, ValidationInfo
from pydantic_core import PydanticCustomError

from normbench.harness.config_yaml import _R

NORMS = ("layernorm", "rmsnorm")
DTYPES = ("bf16", "fp16", "fp32")
WEIGHT_DTYPES = ("same",) + DTYPES
MAX_D = 65536
MAX_ROWS = 2**30        # what the kernels can index (strategies/_args.MAX_ROWS says why)
MAX_GROUPS = 2**20
MAX_SEED = 2**63 - 1
_DTYPE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32",
                  "float": "fp32", "f32": "fp32", "f16": "fp16"}


# ----------------------------------------------------------------------------- messages

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
    """Free text; null (an empty `description:`) is no text."""
    if v is None:
        return ""
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


def _at_most(limit: float, what: str):
    """_positive, and at most `limit` (`what` says it in words): a budget of 1e300 ms was
    accepted, --dry-run estimated a time 300 digits long, and the case never ended."""
    def check(v: Any) -> float:
        v = _positive(v)
        if v > limit:
            _fail(f"must be at most {limit:.10g} ({what}), got {v:.15g}")
        return v
    return check


BudgetMs = Annotated[float, PlainValidator(_at_most(3.6e6, "an hour a case"))]
TimeoutS = Annotated[float, PlainValidator(_at_most(7 * 86400.0, "a week"))]


def _bandwidth(v: Any) -> float:
    """A peak bandwidth in TB/s: positive, and within what a memory system has (1 GB/s to
    1000 TB/s), so that the percentages derived from it stay finite numbers."""
    v = _positive(v)
    if not 1e-3 <= v <= 1e3:
        _fail(f"must be a bandwidth in TB/s between 0.001 and 1000, got {v!r}")
    return v


TBps = Annotated[float, PlainValidator(_bandwidth)]
