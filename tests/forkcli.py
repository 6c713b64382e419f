"""`python SCRIPT ARGS` for the tests, without paying for torch's import each time.

The CLI tests run `python run_bench.py ...` as a subprocess, and about 3 of the 4 seconds each
takes on this machine's CPUs go to importing torch and pandas before normbench reads its first
argument (more with seaborn, Dynamo and Triton).  `run()` asks a server process instead
(tests/_forkserver.py), which has imported those third-party modules and nothing of normbench:
it forks, and the child takes the call's argv, environment, working directory and standard
streams and runs SCRIPT in a new `__main__`.  So normbench is imported afresh in every call,
and the exit code, atexit hooks, stream flushing and tracebacks are those of `python SCRIPT`,
a signal sent to the pid reaching that one process.  The one difference: the child exits
without tearing its modules down (no finalizers of objects alive at exit), which in a fork
would copy the server's memory page by page.

A server serves one environment but for NORMBENCH_*, the terminal's size and pytest's current
test, which are read only when normbench runs (the rest may be read by the preloaded modules on import); another
environment gets its own server from its second call (a server costs more than one call
saves), and a call is plain `subprocess.run` where no server serves it.
NORMBENCH_TEST_FORK=0 turns all of this off.

Shell scripts (the committed device scripts run tiny on CPU) get the same through
`script_env()`: a `python3` on their PATH that hands `python3 SCRIPT ...` to a server over a
Unix socket, with its own standard streams, and forwards signals to the child.
"""
from __future__ import annotations

import atexit
import json
import locale
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SERVER = Path(__file__).with_name("_forkserver.py")
# read by normbench (or rich) when the CLI runs, never by torch/pandas on import; and pytest's
# name of the test running, which changes with every test
_LATE = ("COLUMNS", "LINES", "PYTEST_CURRENT_TEST")
_lock = threading.Lock()
_servers: dict = {}
_seen: dict = {}
_evicted: set = set()   # kinds whose server was stopped to make room for another's


def _key(env: dict, preload: str | None = None):
    key = tuple(sorted((k, v) for k, v in env.items()
                       if not k.startswith("NORMBENCH_") and k not in _LATE))
    return key + (("--preload", preload),) if preload else key   # a server of its own


def _start(env: dict, preload: str | None = None):
    """The server for `env`'s kind of environment, started on its second call (a server costs
    more than one call saves), or None.  Four at most: the least recently used is stopped to
    make room, and its kind gets a server again on its next call (a kind whose server did not
    start or died gets none)."""
    key = _key(env, preload)
    srv = _servers.pop(key, None)
    if srv is not None and srv.poll() is None:
        _servers[key] = srv             # the most recently used last: the first makes room
        return srv
    if key in _evicted:
        _evicted.discard(key)
    else:
        _seen[key] = _seen.get(key, 0) + 1
        if _seen[key] != 2:           # the first call, or a server that did not start or died
            return None
    while len(_servers) >= 4:
        key_out = next(iter(_servers))
        _stop(key_out)
        _evicted.add(key_out)
    srv = _spawn(["--preload", preload] if preload else [], env)
    if srv is not None:
        _servers[key] = srv
    return srv


def _spawn(args: list, env: dict):
    """A server (`_forkserver.py ARGS`) once it says it is ready, or None."""
    srv = subprocess.Popen([sys.executable, str(SERVER), *args], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, env=env, cwd="/")
    if srv.stdout.readline().strip() == b"ready":
        return srv
    srv.kill()
    srv.wait()
    return None


def _stop(key, servers=None):
    srv = (_servers if servers is None else servers).pop(key, None)
    if srv is not None and srv.poll() is None:
        srv.stdin.close()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def _stop_all():
    global _shim_dir
    for key in list(_servers):
        _stop(key)
    for name in list(_script_servers):
        _stop(name, _script_servers)
    if _shim_dir is not None:                   # the stand-in, its sockets and misses
        shutil.rmtree(_shim_dir, ignore_errors=True)
        _shim_dir = None


atexit.register(_stop_all)


def run(argv, *, env=None, cwd=None, timeout=None, input=None, text=False, preload=None):
    """subprocess.run(argv, capture_output=True, ...) for argv = [sys.executable, SCRIPT, ...].
    preload: a script whose module-level set-up the server does once (_forkserver.preload:
    bench/regs.py's for its calls and the compile scripts that begin as it does), a server of
    its own."""
    argv = [str(a) for a in argv]
    env = dict(os.environ if env is None else env)
    cwd = str(cwd or os.getcwd())
    preload = str(preload) if preload else None
    if os.environ.get("NORMBENCH_TEST_FORK") == "0" or argv[0] != sys.executable \
            or len(argv) < 2 or argv[1].startswith("-"):
        return subprocess.run(argv, env=env, cwd=cwd, timeout=timeout, input=input, text=text,
                              capture_output=True)
    with _lock, tempfile.TemporaryDirectory(prefix="forkcli-") as tmp:
        srv = _start(env, preload)
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
            _stop(_key(env, preload))
            raise RuntimeError("the test fork server died")
        out, err = (Path(files[k]).read_bytes() for k in ("stdout", "stderr"))
        if text:                          # as subprocess.run(text=True) decodes
            enc = locale.getpreferredencoding(False)
            out, err = (b.decode(enc).replace("\r\n", "\n").replace("\r", "\n")
                        for b in (out, err))
        if reply.get("timed_out"):
            raise subprocess.TimeoutExpired(argv, timeout, output=out, stderr=err)
        return subprocess.CompletedProcess(argv, reply["returncode"], out, err)


def without_interpreter(env: dict | None = None) -> dict:
    """`env` (os.environ) for a tool that pretends a GPU and compiles for it (bench/regs.py, which
    drops TRITON_INTERPRET itself): without TRITON_INTERPRET, so that its server has not
    imported Triton as the interpreter's; NORMBENCH_QUIET=1."""
    env = dict(os.environ if env is None else env)
    env.pop("TRITON_INTERPRET", None)
    return {**env, "NORMBENCH_QUIET": "1"}


# --- shell scripts: a `python3` on PATH that forks from a server --------------------------------
# What Python's start or the preloaded modules may read of the environment: a script's
# `python3 SCRIPT` call is served by the server started with the same values of these, the
# rest (the script's own variables, NORMBENCH_*) being read when the script runs
_EARLY = ("PYTHON", "LD_", "LC_", "LANG", "HOME", "TMP", "TEMP", "TORCH", "PYTORCH", "TRITON",
          "CUDA", "NVIDIA", "OMP_", "MKL_", "OPENBLAS", "KMP_", "MPL", "MATPLOTLIB", "XDG_",
          "NUMPY", "NPY_", "PANDAS", "PYDANTIC", "PATH")
SHIM = r"""#!{python} -IS
# `python3` for a test's shell script (tests/forkcli.py): `python3 SCRIPT ARGS` runs in a
# child forked from the server started for this environment's early part, with this process's
# standard streams; anything else, or no such server, is the real python3
import hashlib, json, os, signal, socket, sys
REAL, EARLY, HERE = {python!r}, {early!r}, {here!r}
args = sys.argv[1:]
def real():
    os.execv(REAL, [REAL] + args)
early = {{k: v for k, v in os.environ.items() if k.startswith(EARLY)}}
early["PATH"] = os.pathsep.join(p for p in early.get("PATH", "").split(os.pathsep) if p != HERE)
name = os.path.join(HERE, hashlib.sha1(json.dumps(early, sort_keys=True).encode()).hexdigest())
if not args or args[0].startswith("-") or not os.path.isfile(args[0]) or not os.path.exists(name):
    with open(os.path.join(HERE, "misses"), "a") as f:
        f.write(json.dumps({{"args": args[:1], "early": early}}) + "\n")
    real()
conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
try:
    conn.connect(name)
    socket.send_fds(conn, [json.dumps({{"argv": args, "env": dict(os.environ),
                                        "cwd": os.getcwd()}}).encode()], [0, 1, 2])
    pid = json.loads(conn.recv(1 << 16))["pid"]
except (OSError, ValueError, KeyError):
    real()
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1):
    signal.signal(s, lambda n, f: os.kill(pid, n))
msg = conn.recv(1 << 16)
code = json.loads(msg)["returncode"] if msg else 1
if code < 0:                      # killed by a signal: so is this stand-in
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
os._exit(code & 0xFF)
"""
_shim_dir: str | None = None   # the stand-in python3's folder: one a process
_script_servers: dict = {}     # its socket's path -> the server behind it


def _early(env: dict, here: str) -> dict:
    early = {k: v for k, v in env.items() if k.startswith(_EARLY)}
    early["PATH"] = os.pathsep.join(p for p in early.get("PATH", "").split(os.pathsep)
                                    if p != here)
    return early


def script_env(env: dict, *served: dict) -> dict:
    """`env` with a `python3` on PATH whose `python3 SCRIPT ...` calls fork from a server, one
    for each environment in `served` (the script's python calls' as the script sets them;
    `env` where none is given).  The servers start on first use and live as long as this
    process; a call whose environment none of them has is the real python3, and is noted in
    the shim folder's `misses`."""
    if os.environ.get("NORMBENCH_TEST_FORK") == "0":
        return dict(env)
    import hashlib
    global _shim_dir
    with _lock:
        if _shim_dir is None:
            _shim_dir = tempfile.mkdtemp(prefix="fk")
        here = _shim_dir
        shim = os.path.join(here, "python3")
        if not os.path.exists(shim):
            Path(shim).write_text(SHIM.format(python=sys.executable, early=_EARLY, here=here))
            os.chmod(shim, 0o755)
        for e in served or (env,):
            early = _early(e, here)
            name = os.path.join(here, hashlib.sha1(
                json.dumps(early, sort_keys=True).encode()).hexdigest())
            if name in _script_servers:
                continue
            srv = _spawn(["--socket", name], {**early, "PATH": e.get("PATH", "")})
            if srv is not None:
                _script_servers[name] = srv
    return {**env, "PATH": here + os.pathsep + env.get("PATH", "")}

