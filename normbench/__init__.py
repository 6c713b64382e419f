"""normbench: benchmark the dγ/dβ reduction of LayerNorm/RMSNorm backward on GPUs.

Installed, this package holds `normbench.harness`, `normbench.strategies` and
`normbench.configs` (setuptools maps the repository's top-level `harness/`, `strategies/` and
`configs/` folders onto them, see pyproject.toml).  Run from a checkout without installing, the
same names resolve to those folders: the checkout's root is added to this package's path.
"""
from __future__ import annotations

import os as _os

__version__ = "0.2.0"

_root = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if (not _os.path.isdir(_os.path.join(_os.path.dirname(__file__), "harness"))
        and _os.path.isfile(_os.path.join(_root, "harness", "cli.py"))):
    __path__.append(_root)  # a checkout: normbench.harness is <root>/harness
