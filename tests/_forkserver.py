"""The server behind tests/forkcli.py: import the heavy third-party modules once, then for each
request fork a child that runs the request's script as `python SCRIPT` would, and answer its
exit code.  Two ways in:
- `_forkserver.py [--preload SCRIPT]`: requests on stdin (a JSON line naming files for the
  child's streams), the exit code on stdout (a JSON line), one at a time: forkcli.run's
  (`--preload`: SCRIPT's module-level set-up done once, `preload`);
- `_forkserver.py --socket PATH`: requests on a Unix socket (a JSON packet with the caller's
  three standard streams passed along), answered with the child's pid, then its exit code;
  any number at once: forkcli's `python3` stand-in for shell scripts (forkcli.SHIM).
Requests and answers go through raw file descriptors, so the child inherits
sys.stdin/stdout/stderr as a fresh interpreter has them, over the request's streams."""
import atexit
import json
import os
import importlib
import importlib.machinery
import select
import selectors
import signal
import socket
import sys
import threading
import types

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


def preload(path):
    """Import the script at `path` as a module of its name, its folder on sys.path only for
    that import: the module-level set-up every call of that script does first (bench/regs.py's:
    Triton and normbench with an sm_90 GPU pretended), done once for the children to inherit —
    each still runs the script as its `__main__`, the set-up again cheap (its imports done).
    Where that left Triton imported for compiling, not the interpreter's, its cache key too
    (`triton_key`: Triton's own files hashed, some 0.9 s of every call's first compile)."""
    folder = os.path.dirname(os.path.realpath(path))
    sys.path.insert(0, folder)
    try:
        importlib.import_module(os.path.splitext(os.path.basename(path))[0])
    finally:
        sys.path.remove(folder)
    if "triton" in sys.modules and os.environ.get("TRITON_INTERPRET") != "1":
        from triton.runtime.cache import triton_key
        triton_key()                  # lru_cached


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


def serve_socket(path):
    """Returns only in a child, with its request and the caller's three streams."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sock.bind(path)
    sock.listen(64)
    sel = selectors.DefaultSelector()
    sel.register(sock, selectors.EVENT_READ, None)
    sel.register(0, selectors.EVENT_READ, None)      # end of stdin: the test process is done
    os.write(1, b"ready\n")
    while True:
        for key, _ in sel.select():
            if key.fileobj == 0:
                if not os.read(0, 1 << 16):
                    sys.exit(0)
            elif key.fileobj is sock:
                conn, _ = sock.accept()
                msg, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                if len(fds) != 3 or not msg:
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:                            # none of the server's sockets
                    for other in sel.get_map().values():
                        if other.data is not None:
                            other.data[1].close()
                            os.close(other.fileobj)
                    sel.close()
                    sock.close()
                    conn.close()
                    return json.loads(msg), fds
                for fd in fds:
                    os.close(fd)
                conn.send(json.dumps({"pid": pid}).encode())
                sel.register(os.pidfd_open(pid), selectors.EVENT_READ, (pid, conn))
            else:                                       # a child's pidfd: it ended
                pid, conn = key.data
                sel.unregister(key.fileobj)
                os.close(key.fileobj)
                code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
                try:
                    conn.send(json.dumps({"returncode": code}).encode())
                except OSError:                         # the caller is gone
                    pass
                conn.close()


def become(req, fds=None):
    """Take the request's streams (its files, or the caller's `fds`), directory, environment
    and argv, as `python SCRIPT` has them."""
    if fds is None:
        fds = [os.open(req["stdin"], os.O_RDONLY)] + [
            os.open(req[name], os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o600)
            for name in ("stdout", "stderr")]
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    script = req["argv"][0]
    sys.argv = list(req["argv"])
    sys.path[0] = os.path.dirname(os.path.realpath(script))
    return script


def _run_main(script):
    """Run `script` as `python SCRIPT` does: in a new `__main__` module whose __file__ is the
    script's absolute path (multiprocessing's spawn starts its children from it), sys.argv[0]
    as given."""
    path = os.path.abspath(script)
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=path, __cached__=None, __package__=None, __spec__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", path))
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def run_and_exit(script):
    """Run `script` as __main__ and exit as the interpreter would, but without tearing down the
    modules: Python's finalization writes to every object's refcount, and in a forked child
    copying the server's pages on write costs 2 s.  Kept from Py_FinalizeEx, in its order: the
    wait for non-daemon threads, the atexit hooks, the flush of the standard streams.  Not kept:
    finalizers of objects still alive at exit and the module teardown."""
    code, kill = 0, None
    try:
        _run_main(script)
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException as e:  # noqa: BLE001  (the interpreter's own handling)
        tb = e.__traceback__          # from the script's frames on, as `python SCRIPT` prints
        while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
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
    if sys.argv[1:2] == ["--socket"]:
        run_and_exit(become(*serve_socket(sys.argv[2])))
    if sys.argv[1:2] == ["--preload"]:
        preload(sys.argv[2])
    run_and_exit(become(serve()))
