"""tests/forkcli.py: a call forked from the server gives what `python SCRIPT` gives."""
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests import forkcli

SCRIPT = textwrap.dedent("""\
    import atexit, os, sys, threading, time
    what = sys.argv[1]
    print("argv", sys.argv[1:], "file", os.path.basename(__file__), "name", __name__,
          "path0", sys.path[0] == os.path.dirname(os.path.abspath(__file__)),
          "main", sys.modules["__main__"].__file__ == __file__, "cwd", os.getcwd(),
          "env", os.environ.get("NORMBENCH_FORKCLI_TEST"), "stdin", sys.stdin.read())
    atexit.register(lambda: print("atexit ran", flush=True))
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
    print("to stderr", file=sys.stderr)
    if what == "raise":
        raise ValueError("boom")
    if what == "exit-text":
        sys.exit("a message")
    if what == "exit-3":
        sys.exit(3)
    if what == "ctrl-c":
        raise KeyboardInterrupt
    if what == "killed":
        os.kill(os.getpid(), 15)
        time.sleep(5)
    """)


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    p = tmp_path_factory.mktemp("forkcli") / "s.py"
    p.write_text(SCRIPT)
    return p


@pytest.mark.parametrize("what", ["ok", "raise", "exit-text", "exit-3", "ctrl-c", "killed"])
def test_a_forked_call_is_a_fresh_python_s(script, tmp_path, what):
    env = {**os.environ, "NORMBENCH_FORKCLI_TEST": what}   # read late: one server for all
    argv = [sys.executable, script, what, "x y"]
    real = subprocess.run([str(a) for a in argv], env=env, cwd=tmp_path, input="in", text=True,
                          capture_output=True, timeout=60)
    for _ in range(2):                  # the first call of an environment is a plain subprocess
        forked = forkcli.run(argv, env=env, cwd=tmp_path, input="in", text=True, timeout=60)
    assert forkcli._servers.get(forkcli._key(env)) is not None, "no server served the call"
    assert (forked.returncode, forked.stdout, forked.stderr) == \
        (real.returncode, real.stdout, real.stderr)
    if what != "killed":
        assert "atexit ran" in real.stdout and "thread done" in real.stdout, real.stdout
    assert real.returncode == {"ok": 0, "raise": 1, "exit-text": 1, "exit-3": 3,
                               "ctrl-c": -signal.SIGINT, "killed": -signal.SIGTERM}[what]


def test_a_kind_whose_server_made_room_gets_one_again(monkeypatch):
    """Four servers at most: a fifth kind of environment stops one.  The first one started was
    stopped, and its kind never got a server again (counted as a server that died), so in the
    whole suite every later CLI call of a test file's usual environment was a plain subprocess
    after a test had used four other kinds (the broken-plugin tests): 3.8 s became 20 s.  Now
    the least recently used server makes room, and its kind gets one again on its next call."""
    import io

    class Server:               # what _start and _stop use of a started server
        def __init__(self):
            self.stdin, self.alive = io.BytesIO(), True

        def poll(self):
            return None if self.alive else 0

        def wait(self, timeout=None):
            self.alive = False
            return 0

        kill = wait

    started = []
    monkeypatch.setattr(forkcli, "_spawn", lambda args, env: started.append(env["K"]) or Server())
    for name, value in (("_servers", {}), ("_seen", {}), ("_evicted", set())):
        monkeypatch.setattr(forkcli, name, value, raising=False)
    env = {k: {"K": k} for k in "abcdef"}
    for k in "abcde":
        assert forkcli._start(env[k]) is None           # a first call: a plain subprocess
        assert forkcli._start(env[k]) is not None
    def kinds():
        return "".join(key[0][1] for key in forkcli._servers)

    assert started == list("abcde") and kinds() == "bcde"
    assert forkcli._start(env["a"]) is not None          # its server again, at once
    assert started[-1] == "a" and kinds() == "cdea"
    assert forkcli._start(env["c"]) is not None and kinds() == "deac"   # used: kept
    forkcli._start(env["f"])
    forkcli._start(env["f"])
    assert kinds() == "eacf"                             # d: the least recently used
    # a server that died is not started again
    forkcli._servers[forkcli._key(env["f"])].alive = False
    assert forkcli._start(env["f"]) is None and kinds() == "eac"


def test_a_call_past_its_timeout_is_killed_as_subprocess_does(script, tmp_path):
    env = dict(os.environ)
    p = tmp_path / "slow.py"
    p.write_text("import time; time.sleep(30)")
    for _ in range(2):
        with pytest.raises(subprocess.TimeoutExpired):
            forkcli.run([sys.executable, p], env=env, timeout=1)


def test_a_script_s_python3_calls_are_served_and_give_python_s_results(script, tmp_path):
    env = dict(os.environ)
    sh = tmp_path / "s.sh"
    sh.write_text(f"python3 {script} exit-3 a <<< in; echo rc=$?\n"
                  f"python3 {script} ok b < /dev/null > {tmp_path / 'out'} 2>&1; echo rc=$?\n"
                  f"timeout 1 python3 -c 'import time; time.sleep(5)'; echo rc=$?\n")
    run = subprocess.run(["bash", sh], env=forkcli.script_env(env), cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    real = subprocess.run(["bash", sh], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert (run.stdout, run.stderr) == (real.stdout, real.stderr)
    assert "rc=3" in run.stdout and "rc=0" in run.stdout and "rc=124" in run.stdout
    misses = os.path.join(forkcli._shim_dir, "misses")
    served = [ln for ln in open(misses)] if os.path.exists(misses) else []
    assert not any(str(script) in ln for ln in served), served   # both served by the server
