"""A peer installed on one machine and not on another, loaded with
NORMBENCH_PLUGINS=tests.optional_peer: with NORMBENCH_TEST_PEER_MISSING set it registers as
unavailable (as strategies/peers.py does for liger or quack when their package is missing);
else it runs PyTorch's backward, and with NORMBENCH_TEST_PEER_SIGINT set its call sends
SIGINT to its own process first (Ctrl-C arriving while it is measured)."""
import os
import signal

from normbench import strategies
from normbench.strategies import register, register_unavailable

NAME = "test_optional_peer"

if os.environ.get("NORMBENCH_TEST_PEER_MISSING"):
    register_unavailable(NAME, kind="baseline", reason="test-peer is not installed here",
                         deterministic_by_design=True)
else:
    _torch = strategies.get("torch")

    @register(NAME, kind="baseline", deterministic_by_design=True, uses_groups=False)
    def optional_peer(x, dy, weight, mean, rstd, *, groups=None):
        """PyTorch's backward, as a peer package would give it."""
        if os.environ.get("NORMBENCH_TEST_PEER_SIGINT"):
            os.kill(os.getpid(), signal.SIGINT)
        return _torch.fn(x, dy, weight, mean, rstd)
