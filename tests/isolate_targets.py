"""Targets for tests/test_isolate.py, imported inside the worker process."""
from __future__ import annotations

import os
import signal
import time


def echo(payload):
    return {"payload": payload, "pid": os.getpid()}


def fail(payload):
    raise ValueError(f"bad payload {payload!r}")


def sleep_forever(payload):
    while True:
        time.sleep(1.0)


def spin_forever(payload):
    # Holds the GIL like a busy host loop; only killing the process stops it.
    while True:
        pass


def exit_3(payload):
    os._exit(3)


def segfault(payload):
    os.kill(os.getpid(), signal.SIGSEGV)


def env(payload):
    return {name: os.environ.get(name) for name in payload}


def sigint_ignored(payload):
    return signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def nap(seconds):
    time.sleep(seconds)
    return seconds


def unpicklable(payload):
    return lambda: None


def system_exit(payload):
    raise SystemExit(4)


class _BadStr(Exception):
    def __str__(self):
        raise ValueError("no str")


def bad_str(payload):
    raise _BadStr()


def plugin_error(payload):
    # as the registry raises it when a plugin does not load in this process
    from normbench.strategies._registry import PluginError
    raise PluginError("plugin nb_x (NORMBENCH_PLUGINS) cannot be loaded: RuntimeError: no")


def ready_slowly():
    # a `ready` slower than the calls' timeout_s: the worker's start, not a call
    time.sleep(2.0)


def ready_fails():
    plugin_error(None)


def retire_when_told(payload):
    """echo, and where the payload says so, retire this process (isolate.retire) after it."""
    if payload == "retire":
        from normbench.harness import isolate
        isolate.retire("told to")
    return {"payload": payload, "pid": os.getpid()}


def progress_then(payload):
    """Send two progress values, then return, hang or die as the payload says."""
    from normbench.harness import isolate
    isolate.progress({"step": 1})
    isolate.progress({"step": 2, "payload": payload})
    if payload == "hang":
        while True:
            time.sleep(1.0)
    if payload == "die":
        os._exit(5)
    return "done"
