"""Config file reading, below the validation in `harness/config.py`: the file -> text
(only a regular file of at most 1 MiB of UTF-8 text is read; a FIFO or device is refused
without waiting for a writer) and the text -> Python data with a YAML loader that reads
numbers as YAML 1.2 writes them and rejects duplicate keys.  `ConfigError` lives here, the
lowest layer, and is re-exported by `harness/config.py` (see its docstring for the rules)."""
from __future__ import annotations

import os
import re
import reprlib
import stat
from pathlib import Path
from typing import Any

import yaml

from normbench.harness.text import one_line

MAX_FILE_BYTES = 1 << 20


class ConfigError(Exception):
    """A config that cannot be used.  str(e) == "config error: FILE: FIELD: problem" (one line)."""

    def __init__(self, file: str, field: str, problem: str):
        super().__init__(file, field, problem)     # args kept so that the error pickles
        self.file = one_line(str(file))
        self.field = one_line(str(field))
        self.problem = one_line(str(problem))

    def __str__(self) -> str:
        return f"config error: {self.file}: {self.field}: {self.problem}"



# Short reprs of user values in messages (shared with harness/config_fields.py).
_R = reprlib.Repr()
_R.maxstring, _R.maxother, _R.maxlong = 40, 40, 40
_R.maxlist, _R.maxtuple, _R.maxdict, _R.maxset, _R.maxlevel = 4, 4, 3, 3, 1


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

# Numbers and booleans as YAML 1.2's core schema has them: PyYAML's 1.1 resolvers read 0100
# as octal 64, 1:30 as base-60 90, 1_000 as 1000, leave 1e3 a string, and read yes, no, on
# and off as booleans (`name: off` was refused as "got boolean false"; 1.2: the string).
_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"""^(?:[-+]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?
                        |[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$""", re.X)
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers
            if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float",
                           "tag:yaml.org,2002:bool")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_Loader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+.0123456789"))


class _Dumper(yaml.SafeDumper):
    """SafeDumper that quotes a string exactly where _Loader would read it as something else
    (it resolves plain scalars with _Loader's resolvers): "1e3" stays a string through a
    dump and a load (harness/overrides.py writes a config back out that way)."""


_Dumper.yaml_implicit_resolvers = _Loader.yaml_implicit_resolvers


def dump_yaml(data) -> str:
    """`data` as YAML text that _load_yaml reads back as the same values (keys in order)."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


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



# ----------------------------------------------------------------------------- the file

def read_config_file(path: str | Path) -> str:
    """The text of the config file at `path`; anything that is not a regular UTF-8 text file
    of at most 1 MiB raises `ConfigError` (FIELD ``(file)``)."""
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
    return text
