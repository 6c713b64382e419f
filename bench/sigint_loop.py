"""Send SIGINT to `run_bench.py run CONFIG` at a random moment, again and again, resuming the
same run directory each time; then finish the run and check that nothing is lost or duplicated.

    python3 bench/sigint_loop.py CONFIG OUT ATTEMPTS T_MIN T_MAX [KEY=VALUE ...]

Each attempt starts the run (`--resume` once OUT exists), sleeps a random T_MIN..T_MAX seconds
and sends SIGINT; an exit other than 0 or 130 prints the attempt's stderr.  The last step runs
`--resume` to the end and checks that the run is complete and that no (case, implementation)
is recorded twice.  Prints one line per attempt and a summary; exits 1 on any bad exit, lost
or duplicated record.  (Session 57's reproduction of an abort in torch's import, kept as a
tool: CPU under TRITON_INTERPRET=1 with a small config, or the device's GPU.)"""
import collections
import json
import os
import pathlib
import random
import signal
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _run(cfg, out, extra, resume):
    return subprocess.Popen(
        [sys.executable, str(ROOT / "run_bench.py"), "run", cfg, "--out", str(out), "--no-report",
         *(["--resume"] if resume else []), *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "COLUMNS": "200",   # the caller's path kept (peers_env.sh's pydantic)
             "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT),
                                                         os.environ.get("PYTHONPATH"))))})


def main(argv):
    cfg, out, n, lo, hi, *extra = argv
    out = pathlib.Path(out)
    rng = random.Random(int(os.environ.get("SEED", "0")) or None)
    bad = 0
    codes = collections.Counter()
    for i in range(int(n)):
        p = _run(cfg, out, extra, out.exists())
        t = rng.uniform(float(lo), float(hi))
        time.sleep(t)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=600)
        codes[p.returncode] += 1
        ok = p.returncode in (0, 130)
        bad += not ok
        print(f"attempt {i} t={t:.2f}s rc={p.returncode}" + ("" if ok else "\n" + err), flush=True)
    p = _run(cfg, out, extra, out.exists())
    _, err = p.communicate(timeout=3600)
    print(f"final resume rc={p.returncode}", flush=True)
    if p.returncode != 0:
        print(err)
        bad += 1
    import pandas as pd
    rec = pd.read_csv(out / "records.csv")
    dup = int(rec.duplicated(["case_id", "implementation"]).sum())
    done = json.loads((out / "meta.json").read_text()).get("completed")
    print(f"exit codes {dict(codes)}; records {len(rec)}, duplicated {dup}, completed {done}; "
          f"status {rec.status.value_counts().to_dict()}")
    bad += dup > 0 or not done
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
