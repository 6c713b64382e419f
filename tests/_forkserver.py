"""The server behind tests/forkcli.py: import the heavy third-party modules once, then for each
request on stdin (a JSON line) fork a child that runs the request's script as `python SCRIPT`
would, and answer its exit code (a JSON line on stdout).  Requests and answers go through the
raw file descriptors, so the child inherits sys.stdin/stdout/stderr as a fresh interpreter
has them, over the request's files."""
import atexit
import json
import os
import runpy
import select
import signal
import sys
import threading

# third-party only: normbench (which reads NORMBENCH_* and decides TRITON_INTERPRET) is imported
# by each child afresh.  Triton, and Dynamo and Inductor which import it, only where
# TRITON_INTERPRET is already set: triton.language reads it on import, and normbench refuses a
# triton imported before it decided.
import matplotlib.pyplot  # noqa: F401  (the backend is chosen when a figure is first made)
import numpy  # noqa: F401
import pandas  # noqa: F401
import pydantic  # noqa: F401
import rich.console  # noqa: F401
import seaborn  # noqa: F401
import torch  # noqa: F401
import typer  # noqa: F401
import yaml  # noqa: F401

if os.environ.get("TRITON_INTERPRET") == "1":
    import torch._dynamo  # noqa: F401
    import torch._inductor.compile_fx  # noqa: F401
    import triton.language  # noqa: F401


def _requests():
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = os.read(0, 1 << 16)
            if not chunk:
                return
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        yield json.loads(line)


def _answer(**reply):
    os.write(1, json.dumps(reply).encode() + b"\n")


def _wait(pid, timeout):
    """The child's exit code as subprocess gives it (-N for signal N), or None past timeout."""
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], timeout)[0]:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None
    finally:
        os.close(fd)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def serve():
    """Returns only in a child, with its request."""
    os.write(1, b"ready\n")
    for req in _requests():
        pid = os.fork()
        if pid == 0:
            return req
        code = _wait(pid, req["timeout"])
        _answer(timed_out=True) if code is None else _answer(returncode=code)
    sys.exit(0)


def become(req):
    """Take the request's streams, directory, environment and argv, as `python SCRIPT` has."""
    for fd, name, flags in ((0, "stdin", os.O_RDONLY),
                            (1, "stdout", os.O_WRONLY | os.O_TRUNC),
                            (2, "stderr", os.O_WRONLY | os.O_TRUNC)):
        f = os.open(req[name], flags | (os.O_CREAT if fd else 0), 0o600)
        os.dup2(f, fd)
        os.close(f)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    script = req["argv"][0]
    sys.argv = list(req["argv"])
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    return script


def run_and_exit(script):
    """Run `script` as __main__ and exit as the interpreter would, but without tearing down the
    modules: Python's finalization writes to every object's refcount, and in a forked child
    copying the server's pages on write costs 2 s.  Kept from Py_FinalizeEx, in its order: the
    wait for non-daemon threads, the atexit hooks, the flush of the standard streams.  Not kept:
    finalizers of objects still alive at exit and the module teardown."""
    code, kill = 0, None
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException as e:  # noqa: BLE001  (the interpreter's own handling)
        tb = e.__traceback__          # from the script's frames on, as `python SCRIPT` prints
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, "<frozen runpy>"):
            tb = tb.tb_next
        sys.excepthook(type(e), e.with_traceback(tb), tb)
        code, kill = 1, signal.SIGINT if isinstance(e, KeyboardInterrupt) else None
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            code = code or 120
    if kill is not None:              # an uncaught KeyboardInterrupt: killed by SIGINT, as Python
        signal.signal(kill, signal.SIG_DFL)
        os.kill(os.getpid(), kill)
    os._exit(code & 0xFF)


if __name__ == "__main__":
    run_and_exit(become(serve()))
