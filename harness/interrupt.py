"""SIGINT/SIGTERM as an exception, so that a sweep stops between two stores, never mid-write."""
from __future__ import annotations

import signal


class Interrupted(BaseException):
    """SIGINT or SIGTERM arrived; `signum` says which.  A BaseException, like
    KeyboardInterrupt, so that no `except Exception` records it as the case's failure."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def raise_interrupted(signum, frame):
    raise Interrupted(signum)


def install() -> dict:
    """Make SIGINT and SIGTERM raise Interrupted; returns the previous handlers."""
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    for s in previous:
        signal.signal(s, raise_interrupted)
    return previous
