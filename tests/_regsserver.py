"""The server behind tests/test_regs.py's regs(): `python bench/regs.py ARGS` forked from a
process that has already done what every such call does first.

Each call of bench/regs.py (a fresh process, or a fork of tests/forkcli.py's server, which
imports torch and nothing of Triton or normbench) imports Triton and normbench with the GPU
pretended, and hashes Triton's own files for its compile cache's key (`triton_key`): about
0.9 s of CPU a call before its compile, the same in every call.  This server imports
bench/regs.py once (its module-level set-up: no TRITON_INTERPRET, a pretended sm_90 GPU,
Triton, normbench), computes that key once, and for each request (a JSON line on stdin:
args, and files for the child's stdout and stderr) forks a child that runs regs.py's main()
with those args, as `python bench/regs.py ARGS` runs it: the compile, cuobjdump and the
JSON line are the child's own, each call starts from the same state (nothing compiled), and
its exit code (argparse's 2 included) is answered on stdout as a JSON line.  A request that
names a script runs it instead (`python SCRIPT ARGS` in the child): the tests' compile
scripts that begin with regs.py's own set-up (no TRITON_INTERPRET, a GPU pretended) and
name their target.
"""
import json
import os
import runpy
import sys
import traceback

os.environ.pop("TRITON_INTERPRET", None)     # as regs.py does first (before Triton's import)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import regs  # noqa: E402  (torch, the pretended GPU, Triton, normbench: regs.py's own set-up)
from triton.runtime.cache import triton_key  # noqa: E402

triton_key()                                 # lru_cached: every child inherits it


def _child(req) -> int:
    for target, name in ((1, "stdout"), (2, "stderr")):
        fd = os.open(req[name], os.O_WRONLY | os.O_TRUNC | os.O_CREAT, 0o600)
        os.dup2(fd, target)
        os.close(fd)
    script = req.get("script")
    sys.argv = [script or regs.__file__, *req["args"]]
    try:
        if script:                           # `python SCRIPT ARGS`, over regs.py's set-up
            sys.path[0] = os.path.dirname(os.path.realpath(script))
            runpy.run_path(script, run_name="__main__")
        else:
            regs.main()
        code = 0
    except SystemExit as e:                  # argparse's exit 2, regs.py's SystemExit(text)
        if e.code is None or isinstance(e.code, int):
            code = e.code or 0
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def main():
    os.write(1, b"ready\n")
    for line in sys.stdin.buffer:
        req = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(req)
            finally:
                os._exit(code)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        os.write(1, json.dumps({"returncode": code}).encode() + b"\n")


if __name__ == "__main__":
    main()
