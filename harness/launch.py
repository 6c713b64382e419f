"""How this process was started, as the words a printed command begins with.

The CLI's hints (the resume command after a stop, `report` after a signal) are pasted into
the same shell to run the same normbench: `normbench run …` printed to a process started as
`python run_bench.py` in a checkout, as `python -m normbench`, or as a virtual
environment's normbench that is not on PATH ran whatever `normbench` PATH finds — another
install, or none.
"""
from __future__ import annotations

import os
import shutil
import sys

_MODULES = ("normbench", "normbench.__main__", "normbench.harness.cli")
_ENTRY = "run_bench.py"


def command() -> list[str]:
    """The words that start this normbench again, short where that is the same program:
    `python -m normbench` run as a module; `python run_bench.py` (the path as given) run
    through the checkout's script; `normbench` where PATH finds the normbench script this
    process runs, else that script's absolute path (a virtual environment's, not on PATH);
    `normbench` too where the process runs no normbench script (main() called from Python,
    `python -c`, a notebook).  `python`: the name on PATH that is this interpreter, else its path."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name in _MODULES:
        return [_python(), "-m", "normbench"]
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if os.path.basename(argv0) == _ENTRY:
        return [_python(), argv0]
    script = argv0 if os.sep in argv0 else shutil.which(argv0) if argv0 else None
    if (script is None or not os.path.isfile(script)
            or os.path.splitext(os.path.basename(script))[0] != "normbench"):
        return ["normbench"]    # main() called from another program (python -c, a notebook)
    on_path = shutil.which("normbench")
    if on_path is not None and _same(on_path, script):
        return ["normbench"]
    return [os.path.abspath(script)]


def _python() -> str:
    """`python3` or `python` where that name on PATH is this interpreter (not only the same
    binary: a virtual environment's python links to its base's), else its path."""
    exe = sys.executable
    if not exe:
        return "python3"
    for name in ("python3", "python"):
        found = shutil.which(name)
        if found is not None and os.path.abspath(found) == os.path.abspath(exe):
            return name
    return exe


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
