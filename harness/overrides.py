"""Where a sweep comes from on the command line, and what the command line changes in it.

    normbench run quick                        a shipped config, by name (normbench.configs)
    normbench run path/to/sweep.yaml           a file (a path that exists as a file wins over
                                               a shipped name; a directory never does)
    normbench run - < sweep.yaml               the config on standard input
    normbench run quick d=[5120] dtype=fp16    overrides: KEY=VALUE, VALUE read as YAML
    normbench run quick --shape 16384x5120     shapes: [[16384, 5120]] instead of rows and d

An override sets one top-level key (``d=[5120]``) or one key of a nested mapping
(``timing.rep_ms=50``); a later override of the same key wins.  Setting one way of giving the
shapes drops the others from the config: ``rows=`` drops ``batch``, ``seq`` and ``shapes``;
``batch=`` / ``seq=`` drop ``rows`` and ``shapes``; ``shapes=`` and ``--shape`` drop ``rows``,
``batch``, ``seq`` and ``d``.  A config may leave its shapes (rows, d) to the command line;
still missing after it, they are the config's fault and the error names the file.  The
result is validated exactly like a file (harness/config.py), and its text, the config with
the overrides applied, is what the run records as ``config_text`` (so its hash tells an
overridden run from the plain one).  A field an override sets is judged there only, and one
it (or --shape) drops is not judged at all: the file may hold anything in it (a plugin's
implementation, run without the plugin; a `d` that --shape replaces); its other faults name
the file.  An error names the override that caused it::

    config error: override 'd=[x]': d[0]: must be an integer, got string 'x'
"""
from __future__ import annotations

import json
import os
import re
import select
import sys
import time
from importlib import resources
from pathlib import Path
from typing import Iterable, TextIO


from normbench.harness.config import (KEYS, MAX_D, MAX_FILE_BYTES, MAX_ROWS, ConfigError, Sweep,
                                      _field_path, _load_yaml, _unknown_key, parse_config,
                                      read_config_file)
from normbench.harness.config_yaml import dump_yaml

STDIN = "-"
_SHAPE_KEYS = ("rows", "batch", "seq", "d", "shapes")
# what setting a key removes from the base config (the other ways of giving the shapes)
_DROPS = {"rows": ("batch", "seq", "shapes"), "batch": ("rows", "shapes"),
          "seq": ("rows", "shapes"), "shapes": ("rows", "batch", "seq", "d")}
_NESTED = {"timing", "determinism"}
# ASCII digits and blanks: \s would also take U+2028, U+0085 ... (YAML line breaks)
_SHAPE_RE = re.compile(r"[ \t]*([0-9]+)[ \t]*[xX×][ \t]*([0-9]+)[ \t]*")
# what a YAML comment cannot hold as it is: PyYAML's line breaks (U+0085, U+2028, U+2029; JSON
# escapes \n and \r) and the characters it refuses (C1 controls, lone surrogates, U+FFFE/F)
_NOT_IN_COMMENT = re.compile("[^\t\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd"
                             "\U00010000-\U0010ffff]")


def shipped() -> dict[str, Path]:
    """The configs this package ships: name -> file."""
    root = resources.files("normbench.configs")
    return {Path(p.name).stem: Path(str(p)) for p in root.iterdir()
            if p.name.endswith(".yaml") and p.is_file()}


def locate(config: str | os.PathLike) -> Path:
    """The file `config` names: a path that exists as a file, else a shipped config's name
    (with or without .yaml).  A directory is no config: `cpu` is the shipped one though a
    run's folder `./cpu` exists.  A name that is neither, or a path with a folder in it, is
    returned as a path (read_config_file then says what is wrong with it).  A Path (any
    os.PathLike, or bytes) is taken as its string."""
    config = os.fsdecode(config)
    p = Path(config)
    try:
        file = p.exists() and not p.is_dir()
    except OSError:            # a name too long: read_config_file says what is wrong with it
        file = False
    if file or "/" in config or "\\" in config:
        return p
    found = shipped().get(config.removesuffix(".yaml"))
    return found if found is not None else p


def _split(raw: str) -> tuple[str, str]:
    where = f"override {raw!r}"
    key, sep, value = raw.partition("=")
    key = ".".join(part.strip() for part in key.split("."))    # "timing . rep_ms=5" too
    if not sep or not key:
        raise ConfigError(where, "(override)", "expected KEY=VALUE, e.g. d=[5120] or "
                                               "timing.rep_ms=50")
    return key, value


def _parse_shape(raw: str) -> list[int]:
    shown = raw if len(raw) <= 60 else f"{raw[:30]}…{raw[-20:]}"   # one readable line
    where = f"--shape {shown!r}"
    m = _SHAPE_RE.fullmatch(raw)
    if not m:
        raise ConfigError(where, "shapes", "expected ROWSxD, e.g. 16384x5120")
    if any(len(g) > 1 and g.startswith("0") for g in m.groups()):
        raise ConfigError(where, "shapes", "a number with a leading zero; "
                                           "expected ROWSxD, e.g. 16384x5120")
    for g, name in zip(m.groups(), ("rows", "d")):
        if len(g) > 19:             # int() of thousands of digits is refused or slow
            limit = MAX_ROWS if name == "rows" else MAX_D
            raise ConfigError(where, "shapes", f"{name} must be at most {limit}, got a "
                                               f"{len(g)}-digit number")
    return [int(m.group(1)), int(m.group(2))]


def _comment_text(value) -> str:
    """`value` as JSON for the header comment of the merged config: readable (non-ASCII kept),
    but one line YAML reads back, whatever the path or the overrides hold."""
    return _NOT_IN_COMMENT.sub(lambda m: json.dumps(m.group())[1:-1],
                               json.dumps(value, ensure_ascii=False))


def apply(text: str, file: str, overrides: Iterable[str] = (), shapes: Iterable[str] = (),
          known_implementations: Iterable[str] | None = None) -> Sweep:
    """The config `text` (from `file`) with `overrides` and `shapes` (--shape) applied,
    validated.  ConfigError names the file for the config's own faults, the override (or
    --shape) for the ones it introduced."""
    overrides, shapes = list(overrides), list(shapes)
    known = None if known_implementations is None else list(known_implementations)
    if not overrides and not shapes:
        return parse_config(text, file, known)
    # the config's own faults name the file; a shape it leaves out is one only if the command
    # line does not give it either (judged on the merged config below)
    base = _parse_base(text, file, known, overrides, bool(shapes))
    data = dict(_load_yaml(text, file))
    data.setdefault("name", base.name)
    origin: dict[str, str] = {}                     # top-level key -> what set it
    dropped: dict[str, str] = {}                    # top-level key -> what removed it
    # a nested key's path (timing.rep_ms) -> what set it: of `timing.rep_ms=0
    # timing.warmup_ms=5` the first is at fault, not the last to set a key of timing
    nested: dict[str, str] = {}
    for raw in overrides:
        key, value_text = _split(raw)
        where = f"override {raw!r}"
        top, dot, sub = key.partition(".")
        if dot and not (top and sub):        # "timing.=5", ".rep_ms=5"
            raise ConfigError(where, key, "a key path has no empty part; e.g. timing.rep_ms=50")
        if top not in KEYS:
            raise ConfigError(where, top, _unknown_key(top, KEYS))
        if sub and (top not in _NESTED or "." in sub):
            raise ConfigError(where, key, f"{top!r} has no keys to set"
                              if top not in _NESTED else "nested too deeply")
        try:
            value = _load_yaml(value_text, where) if value_text.strip() else None
        except ConfigError as e:
            raise ConfigError(where, key, e.problem) from None
        if sub:
            current = data.get(top)
            data[top] = {**(current if isinstance(current, dict) else {}), sub: value}
            nested[_field_path((top, sub))] = where
        else:
            data[top] = value
            nested = {k: v for k, v in nested.items() if not k.startswith((top + ".", top + "["))}
        for other in _DROPS.get(top, ()):
            if other not in origin and other in data:    # the base's, not another override's
                del data[other]
                dropped[other] = where
        if sub:     # a whole mapping set before keeps its name for the keys it gave
            origin.setdefault(top, where)
        else:
            origin[top] = where
    if "d" in origin and "shapes" in data and "shapes" not in origin and not shapes:
        raise ConfigError(origin["d"], "d", "the config gives shapes (rows and d together); "
                                            "set rows=[...] as well, or use --shape ROWSxD")
    if shapes:
        for key in _SHAPE_KEYS:
            if key in origin:
                raise ConfigError(f"--shape {shapes[0]!r}", "shapes",
                                  f"not allowed together with {origin[key]}")
            data.pop(key, None)
        data["shapes"] = [_parse_shape(s) for s in shapes]
    said = _comment_text(overrides + [f"--shape {s}" for s in shapes])
    merged = f"# {_comment_text(file)} with {said}\n" + dump_yaml(data)
    try:
        return parse_config(merged, file, known)
    except ConfigError as e:
        if _still_missing(base, merged, e, known):
            raise ConfigError(file, e.field, e.problem) from None
        top = re.split(r"[.\[]", e.field, maxsplit=1)[0]
        if top == "shapes" and shapes and "shapes" not in origin:
            m = re.match(r"shapes\[(\d+)\]", e.field)
            i = int(m.group(1)) if m else 0
            raise ConfigError(f"--shape {shapes[min(i, len(shapes) - 1)]!r}", e.field,
                              e.problem) from None
        path = re.match(r"[^.\[]*(?:\.[^.\[]*|\[[^\]]*\])?", e.field).group()   # timing.rep_ms
        if path in nested:
            raise ConfigError(nested[path], e.field, e.problem) from None
        if top in origin or top in dropped:
            raise ConfigError(origin.get(top) or dropped[top], e.field, e.problem) from None
        # the config alone was valid: what the command line changed made it invalid
        given = [f"override {o!r}" for o in overrides] + [f"--shape {x!r}" for x in shapes]
        raise ConfigError(given[0] if len(given) == 1 else "the command line's " + ", ".join(given),
                          e.field, e.problem) from None


def _set_by(overrides: list[str], shapes: bool = False) -> set[tuple[str, str]]:
    """(top-level key, nested key or '') of every override that names a key it can set, and
    of each key of the base that it drops (_DROPS: `shapes=` drops rows and d); with
    `shapes` (--shape given) every key of the shapes.  A malformed override is left to
    apply, which says what is wrong with it."""
    out = {(k, "") for k in _SHAPE_KEYS} if shapes else set()
    for raw in overrides:
        try:
            key, _ = _split(raw)
        except ConfigError:
            continue
        top, _, sub = key.partition(".")
        if top in KEYS and (not sub or (top in _NESTED and "." not in sub)):
            out.add((top, sub))
            if not sub:
                out.update((other, "") for other in _DROPS.get(top, ()))
    return out


def _parse_base(text: str, file: str, known, overrides: list[str],
                shapes: bool = False) -> Sweep:
    """The config `text` validated but for the fields `overrides` (and --shape, `shapes`)
    set or drop: what the file holds there is replaced, and the merged config validates the
    new value.  So a fault in such a field is no fault (`--shape 5x33` runs a file whose
    `d: [0]` it replaces, as `rows=[5] d=[33]` does), nor is a conflict with one (`d` beside
    the `shapes` that rows= drops); any other still names the file and its field."""
    try:
        return parse_config(text, file, known, shapes_later=True)
    except ConfigError as e:
        replaced = _set_by(overrides, shapes)
        parts = re.split(r"[.\[]", e.field, maxsplit=2)
        mine = any(top == parts[0] and (not sub or parts[1:2] == [sub]) for top, sub in replaced)
        if not replaced or parts[0] not in KEYS:
            raise                   # the text, its YAML, an unknown key -- or
        data = dict(_load_yaml(text, file))   # the mapping a nested override sets a key of
        for top, sub in replaced:
            if not sub:             # the override replaces the whole value
                data.pop(top, None)
            elif isinstance(data.get(top), dict):
                data[top] = {k: v for k, v in data[top].items() if k != sub}
            elif top in data:       # `timing: 5` under timing.rep_ms=2: the file's own fault
                raise
        if not mine:    # a field kept: its fault, unless it was a conflict with one replaced
            try:
                return parse_config(dump_yaml(data), file, known, shapes_later=True)
            except ConfigError:
                raise e from None
    return parse_config(dump_yaml(data), file, known, shapes_later=True)


def _still_missing(base: Sweep, merged: str, e: ConfigError, known) -> bool:
    """`e`, the merged config's fault, is a shape the base config left out and the command
    line did not give: the config's own fault."""
    if e.field in ("rows", "batch", "seq"):
        lacked = base.rows is None and (base.batch is None or base.seq is None)
    elif e.field == "d":
        lacked = base.d is None
    else:
        return False
    if not lacked or base.shapes is not None:
        return False
    try:            # a missing shape is its only fault (not, say, d: 0 written as a scalar)
        parse_config(merged, base.source_path, known, shapes_later=True)
    except ConfigError:
        return False
    return True


def _read_to_end(buf, limit: int) -> bytes:
    """At most `limit` bytes of the binary stream `buf`, read to its end.  A non-blocking
    descriptor (a pipe its parent set so) is waited on: read as it was, a read before the
    writer's first bytes gave None (a TypeError traceback), and one between two of its writes
    took the first part for the whole config (`rows: [4]` alone: 'd: required field is
    missing', or a valid prefix run as the sweep)."""
    chunks, got = [], 0
    while got < limit:
        try:
            part = buf.read(limit - got)
        except BlockingIOError:
            part = None
        if part is None:                # nothing yet: wait until the writer gives more
            try:
                select.select([buf.fileno()], [], [], 1.0)
            except (OSError, ValueError, AttributeError):
                time.sleep(0.01)
            continue
        if not part:
            break
        chunks.append(part)
        got += len(part)
    return b"".join(chunks)


def load(config: str | os.PathLike, overrides: Iterable[str] = (), shapes: Iterable[str] = (),
         known_implementations: Iterable[str] | None = None,
         stdin: TextIO | None = None) -> Sweep:
    """The sweep the command line names: `config` a path, a shipped name or '-' (stdin).  A
    Path (any os.PathLike, or bytes) is taken as its string, except that Path('-') is a file
    named '-', not stdin."""
    if config == STDIN:
        stream = stdin if stdin is not None else sys.stdin
        if stream is None or getattr(stream, "closed", False):
            raise ConfigError("<stdin>", "(file)", "is closed; pipe a config into it "
                                                   "(normbench run - < sweep.yaml)")
        if stream.isatty():
            raise ConfigError("<stdin>", "(file)", "is a terminal; pipe a config into it "
                                                   "(normbench run - < sweep.yaml)")
        # UTF-8 as a file is read, whatever the locale's encoding of stdin, and its size in
        # bytes as a file's (a text stream without a buffer: its characters' UTF-8 bytes)
        buf = getattr(stream, "buffer", None)
        raw = (_read_to_end(buf, MAX_FILE_BYTES + 1) if buf is not None
               else stream.read(MAX_FILE_BYTES + 1).encode("utf-8", "surrogatepass"))
        if len(raw) > MAX_FILE_BYTES:
            raise ConfigError("<stdin>", "(file)", "is larger than 1 MiB; not a config?")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ConfigError("<stdin>", "(file)", f"is not UTF-8 text (bad byte at offset "
                                                   f"{e.start})") from None
        return apply(text, "<stdin>", overrides, shapes, known_implementations)
    config = os.fsdecode(config)     # a Path: "/" in config below takes a str
    if config == "":        # Path('') is '.': "is a directory" would name a path never given
        raise ConfigError("''", "(file)", "an empty path is no config; give a YAML file, the "
                                          f"name of a shipped one or {STDIN} for stdin")
    path = locate(config)
    try:
        text = read_config_file(path)       # file faults name the path
    except ConfigError as e:
        if e.problem == "does not exist":
            names = shipped()
            if path.stem in names and path.suffix in ("", ".yaml", ".yml"):
                # configs/default.yaml outside a checkout (the shipped file is in the package)
                e.problem += (f" (a config named {path.stem} is shipped with normbench: give "
                              f"it by name, normbench run {path.stem})")
            elif "/" not in config:
                e.problem += f" (nor is it a shipped config: {', '.join(sorted(names))})"
        raise
    return apply(text, str(path), overrides, shapes, known_implementations)
