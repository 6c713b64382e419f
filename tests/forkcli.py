"""`python SCRIPT ARGS` for the tests, without paying for torch's import each time.

Most CLI tests run `python run_bench.py ...` as a subprocess, and about 3 of the 4 seconds
each takes on this machine's CPUs go to importing torch and pandas, before normbench reads its
first argument.  `run()` instead asks a server process, started once per test process, that
has imported those third-party modules (and nothing of normbench): it forks, the child takes
the call's argv, environment, working directory and standard streams, and runs SCRIPT as
`__main__` (runpy), so normbench is imported afresh in every call, its exit code, atexit hooks
and tracebacks are those of `python SCRIPT`, and signals sent to the pid reach that one process.

Where a fork would not be the same as a fresh interpreter, `run()` is `subprocess.run`:
a server that did not start.  A server serves one environment, but for NORMBENCH_* and the
terminal's size, which are read when normbench runs (the others may be read by the preloaded
modules on import): another environment gets its own server.  NORMBENCH_TEST_FORK=0 turns the server off.
"""
from __future__ import annotations

import atexit
import json
import locale
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SERVER = Path(__file__).with_name("_forkserver.py")
# read by normbench (or rich) when the CLI runs, never by torch/pandas on import
_LATE = ("COLUMNS", "LINES")
_lock = threading.Lock()
_servers: dict = {}
_seen: dict = {}


def _key(env: dict):
    return tuple(sorted((k, v) for k, v in env.items()
                        if not k.startswith("NORMBENCH_") and k not in _LATE))


def _start(env: dict):
    """The server for `env`'s kind of environment, started on its second call (a server costs
    more than one call saves; a few kinds at once), or None."""
    key = _key(env)
    srv = _servers.get(key)
    if srv is not None and srv.poll() is None:
        return srv
    _seen[key] = _seen.get(key, 0) + 1
    if _seen[key] != 2:               # the first call, or a server that did not start or died
        return None
    if len(_servers) >= 4:
        _stop(next(iter(_servers)))
    srv = subprocess.Popen([sys.executable, str(SERVER)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, env=env, cwd="/")
    if srv.stdout.readline().strip() != b"ready":
        srv.kill()
        srv.wait()
        return None
    _servers[key] = srv
    return srv


def _stop(key):
    srv = _servers.pop(key, None)
    if srv is not None and srv.poll() is None:
        srv.stdin.close()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def _stop_all():
    for key in list(_servers):
        _stop(key)


atexit.register(_stop_all)


def run(argv, *, env=None, cwd=None, timeout=None, input=None, text=False):
    """subprocess.run(argv, capture_output=True, ...) for argv = [sys.executable, SCRIPT, ...]."""
    argv = [str(a) for a in argv]
    env = dict(os.environ if env is None else env)
    cwd = str(cwd or os.getcwd())
    if os.environ.get("NORMBENCH_TEST_FORK") == "0" or argv[0] != sys.executable \
            or len(argv) < 2 or argv[1].startswith("-"):
        return subprocess.run(argv, env=env, cwd=cwd, timeout=timeout, input=input, text=text,
                              capture_output=True)
    with _lock, tempfile.TemporaryDirectory(prefix="forkcli-") as tmp:
        srv = _start(env)
        if srv is None:               # a first call of its kind, or a server that did not start
            return subprocess.run(argv, env=env, cwd=cwd, timeout=timeout, input=input,
                                  text=text, capture_output=True)
        files = {k: os.path.join(tmp, k) for k in ("stdin", "stdout", "stderr")}
        data = input.encode() if isinstance(input, str) else (input or b"")
        Path(files["stdin"]).write_bytes(data)
        req = {"argv": argv[1:], "env": env, "cwd": cwd, "timeout": timeout, **files}
        srv.stdin.write(json.dumps(req).encode() + b"\n")
        srv.stdin.flush()
        reply = json.loads(srv.stdout.readline() or b'{"lost": true}')
        if reply.get("lost"):
            _stop(_key(env))
            raise RuntimeError("the test fork server died")
        out, err = (Path(files[k]).read_bytes() for k in ("stdout", "stderr"))
        if text:                          # as subprocess.run(text=True) decodes
            enc = locale.getpreferredencoding(False)
            out, err = (b.decode(enc).replace("\r\n", "\n").replace("\r", "\n")
                        for b in (out, err))
        if reply.get("timed_out"):
            raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
        return subprocess.CompletedProcess(argv, reply["returncode"], out, err)
