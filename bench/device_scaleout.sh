#!/usr/bin/env bash
# One device call on the one-GPU machine (scale-out issue, point 6; about 3 minutes): a plain
# run of configs/quick.yaml, then the same config with --gpus 1 (a Dask worker on the GPU),
# then `compare` of the two (exit 0 expected) and bench/scaleout_check.py (same keys,
# statuses, correctness, determinism verdicts).  Run from the repository root there, carrying
# .peers-b (../shared/tools/peer-wheels.sh fills it: pydantic, which the harness needs, and
# the Dask wheels dask, distributed, dask-cuda; quack only if .peers-a came in a call before):
#   NORMBENCH_GIT_COMMIT=<sha> bash bench/device_scaleout.sh
# Everything lands under $OUT: imports.log, plain.log, gpus1.log, compare.log, check.log,
# runs.tgz (both run directories).  Step limits: P_S, G_S seconds.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
. bench/peers_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT" /tmp/runs
CONFIG=${CONFIG:-configs/quick.yaml}
python3 - > "$OUT/imports.log" 2>&1 <<'PY'
import importlib
for m in ("pydantic", "dask", "distributed", "dask_cuda", "cuda.core"):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "FAILS:", type(e).__name__, e)
PY
cat "$OUT/imports.log"
rm -rf /tmp/runs/plain /tmp/runs/gpus1
timeout ${P_S:-80} python3 run_bench.py run "$CONFIG" --out /tmp/runs/plain --no-report > "$OUT/plain.log" 2>&1
echo "plain run: exit $?"; tail -3 "$OUT/plain.log"
timeout ${G_S:-110} python3 run_bench.py run "$CONFIG" --gpus 1 --out /tmp/runs/gpus1 --no-report > "$OUT/gpus1.log" 2>&1
echo "--gpus 1 run: exit $?"; grep -E "Dask|note|error" "$OUT/gpus1.log" | head -5; tail -3 "$OUT/gpus1.log"
python3 run_bench.py compare /tmp/runs/plain /tmp/runs/gpus1 > "$OUT/compare.log" 2>&1
echo "compare: exit $?" | tee -a "$OUT/compare.log"; tail -12 "$OUT/compare.log"
python3 bench/scaleout_check.py /tmp/runs/plain /tmp/runs/gpus1 > "$OUT/check.log" 2>&1
echo "scaleout_check: exit $?" | tee -a "$OUT/check.log"; cat "$OUT/check.log"
tar -czf "$OUT/runs.tgz" -C /tmp runs/plain runs/gpus1
