"""normbench strategies: LayerNorm/RMSNorm backward implementations, registered by name.

    from normbench import strategies
    strategies.names()
    dx, dw, db = strategies.get(name).backward(x, dy, weight, mean, rstd, groups=G)

`mean=None` means RMSNorm (then db is None).  See docs/DESIGN.md for the whole contract.
"""
from . import _device  # noqa: F401  (first: decides TRITON_INTERPRET before any kernel exists)
from ._device import default_device, interpreted, sm_count
from ._contention import Contention
from ._registry import (Entry, entries, get, known, names, plugins, register,
                        register_unavailable, rule_raised)
from ._tuning import ONE_ROW, ROW_LOOP, Rule

# One module per implementation; importing registers it.
from . import atomic, grouped_atomic, spin_lock, disjoint_block, disjoint_fused  # noqa: E402,F401
from . import disjoint_strided  # noqa: E402,F401
from . import disjoint_smem  # noqa: E402,F401  (Gluon: registered unavailable where it cannot run)
from . import disjoint_cluster  # noqa: E402,F401  (Gluon, clusters: likewise)
from . import torch_native  # noqa: E402,F401
from . import peers  # noqa: E402,F401  (liger, quack: registered only as far as importable)
from . import torch_compile  # noqa: E402,F401  (Inductor; compiles nothing at import)


def default_groups(name: str, rows: int, d: int, device=None) -> int | None:
    """The GROUPS `groups=None` gives implementation `name` at this shape."""
    return get(name).effective_groups(rows, d, None, device)


__all__ = ["Contention", "Entry", "ONE_ROW", "ROW_LOOP", "Rule", "default_device", "default_groups",
           "entries", "get", "interpreted", "known", "names", "plugins", "register",
           "register_unavailable", "rule_raised", "sm_count"]
