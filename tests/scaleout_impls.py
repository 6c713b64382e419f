"""Implementations that kill the process measuring them, for the scale-out tests only
(NORMBENCH_PLUGINS=tests.fake_impls,tests.scaleout_impls; never in a plain run: they would
kill the runner itself)."""
import os
import signal

from normbench import strategies
from normbench.strategies import register

_torch = strategies.get("torch")


@register("test_segfault", kind="strategy", deterministic_by_design=True, uses_groups=False)
def segfault(x, dy, weight, mean, rstd, *, groups=None):
    """Dies of SIGSEGV, as a kernel that corrupts the host's memory would."""
    os.kill(os.getpid(), signal.SIGSEGV)
    return _torch.fn(x, dy, weight, mean, rstd)
