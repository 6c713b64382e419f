"""The register budget at d = 16384, checked by compiling for sm_90 here (bench/regs.py):
reading each row twice (rowgrad_reload) must spill less than keeping x̂ and g in registers,
and not at all for RMSNorm.  A kernel change that brings the spills back fails here, before
it costs device time."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def regs(*args):
    out = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "regs.py"), *args],
                         capture_output=True, text=True, check=True,
                         env={**os.environ, "NORMBENCH_QUIET": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_reload_spills_less_at_16384():
    reload = regs("--d", "16384")
    plain = regs("--d", "16384", "--override", '{"reload": false}')
    assert reload["reload"] and not plain["reload"]
    assert reload["stack"] < plain["stack"], (reload, plain)
    assert regs("--d", "16384", "--norm", "rmsnorm")["stack"] == 0


def test_the_prefetching_loop_does_not_spill_at_4096():
    r = regs("--d", "4096")
    assert r["prefetch"] and r["stack"] == 0, r
