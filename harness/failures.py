"""What the command line says when something outside its input fails: one line, never a
traceback.  Used by harness/cli.py at its boundary."""
from __future__ import annotations

import os
from pathlib import Path

from normbench.harness.text import describe_exception


def _plugin_modules() -> list[str]:
    return [m.strip() for m in os.environ.get("NORMBENCH_PLUGINS", "").split(",") if m.strip()]


def _frames(e: BaseException):
    tb = e.__traceback__
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


def plugin_failure(e: BaseException) -> str | None:
    """'plugin MODULE cannot be loaded: ExcType: message', worded as the registry's PluginError
    (this covers what the registry does not catch: SystemExit and other BaseExceptions), when
    `e` was raised while the registry loaded its plugins (its traceback passes through
    strategies._registry._load_plugins); None otherwise.  MODULE is the plugin that failed where it can be told: the exception's
    `plugin` attribute (set by a loader that knows it), a frame of that module, the missing
    module's name, or the file a syntax error is in; else the NORMBENCH_PLUGINS value."""
    chain, seen = [], set()
    while e is not None and id(e) not in seen:      # a loader may wrap the original error
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    frames = [f for x in chain for f in _frames(x)]
    if not any(f.f_code.co_name == "_load_plugins" for f in frames):
        return None
    mods = _plugin_modules()
    name = next((getattr(x, "plugin") for x in chain if getattr(x, "plugin", None)), None)
    if name is None:
        name = next((f.f_globals.get("__name__") for f in reversed(frames)
                     if f.f_globals.get("__name__") in mods), None)
    for x in chain:
        if name is not None:
            break
        if isinstance(x, ModuleNotFoundError) and x.name:
            name = next((m for m in mods if m == x.name or m.startswith(x.name + ".")), None)
        elif isinstance(x, SyntaxError) and x.filename:
            stem = Path(x.filename).with_suffix("")
            name = next((m for m in mods if stem.as_posix().endswith(m.replace(".", "/"))), None)
    name = name or "NORMBENCH_PLUGINS=" + os.environ.get("NORMBENCH_PLUGINS", "")
    return f"plugin {name} cannot be loaded: {describe_exception(chain[0])}"
