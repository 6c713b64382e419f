#!/usr/bin/env bash
# The two-GPU measurements (issue 21, points 1-3) in one device call on nvidia-h200-x2, from
# the repository root there (NVLink multicast left off, as the device's KINDS.md says):
#   1. CONFIG on GPU 0 alone, then with --gpus 2: same record set (bench/scaleout_check.py),
#      wall times, `compare` of the two (json), and how far the host-bound records measured
#      side by side moved;
#   2. --shard 0/2 on GPU 0 and --shard 1/2 on GPU 1 at the same time, then merge: the same
#      record set again;
#   3. --gpus 2 again with one Dask worker killed by SIGKILL once K records are in: the
#      sweep finishes, nothing lost (at most the killed worker's case is an error).
# Carry .peers-b (pydantic, Dask wheels, liger) after a call that carried .peers-a (quack's
# runtime, part one), as bench/peers_env.sh explains:
#   NORMBENCH_GIT_COMMIT=<sha> bash bench/device_x2.sh
# A command may run 10 minutes: default.yaml took 376 s cold on one H200, 150 s with warm
# Triton caches; step 1's first run warms the caches for the rest.  Knobs: CONFIG,
# KILL_CONFIG (default CONFIG), K (records before the kill, 8), S1/S2/S3/S4 step limits (s).
# Everything lands under $OUT: *.log, compare.json, summary.txt, runs.tgz (h200x2-* dirs).
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
. bench/peers_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
CONFIG=${CONFIG:-configs/default.yaml}; KILL_CONFIG=${KILL_CONFIG:-$CONFIG}; K=${K:-8}
R=/tmp/runs; rm -rf $R; mkdir -p $R
S="$OUT/summary.txt"; : > "$S"
say() { echo "$*" | tee -a "$S"; }
run() { local name=$1 limit=$2; shift 2; local t0=$(date +%s.%N)
  timeout "$limit" python3 run_bench.py run "$@" --no-report > "$OUT/$name.log" 2>&1; local rc=$?
  say "$name: exit $rc, wall $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"; }
nvidia-smi -L | tee -a "$S"
# 1. one GPU, then two
CUDA_VISIBLE_DEVICES=0 run h200x2-one ${S1:-280} "$CONFIG" --out $R/h200x2-one
run h200x2-two ${S2:-150} "$CONFIG" --gpus 2 --out $R/h200x2-two
python3 bench/scaleout_check.py $R/h200x2-one $R/h200x2-two 2>&1 | tee -a "$S"
python3 run_bench.py compare $R/h200x2-one $R/h200x2-two --format json > "$OUT/compare.json" 2> "$OUT/compare.err"
say "compare one -> two: exit $?"
python3 run_bench.py compare $R/h200x2-one $R/h200x2-two --format markdown > "$OUT/compare.md" 2>&1
# 2. two shards side by side, then merge
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0 timeout ${S3:-150} python3 run_bench.py run "$CONFIG" --shard 0/2 --out $R/h200x2-shard0 --no-report > "$OUT/shard0.log" 2>&1 &
CUDA_VISIBLE_DEVICES=1 timeout ${S3:-150} python3 run_bench.py run "$CONFIG" --shard 1/2 --out $R/h200x2-shard1 --no-report > "$OUT/shard1.log" 2>&1
wait
say "shards: wall $(( $(date +%s) - t0 )) s"
python3 run_bench.py merge $R/h200x2-merged $R/h200x2-shard0 $R/h200x2-shard1 --no-report 2>&1 | tee -a "$S"
python3 bench/scaleout_check.py $R/h200x2-one $R/h200x2-merged 2>&1 | tee -a "$S"
# 3. a worker killed with SIGKILL mid-sweep
python3 run_bench.py run "$KILL_CONFIG" --gpus 2 --out $R/h200x2-killed --no-report > "$OUT/killed.log" 2>&1 &
pid=$!
python3 - "$pid" "$R/h200x2-killed" "$K" >> "$S" 2>&1 <<'PY'
import os, signal, sys, time
import psutil
sys.path.insert(0, os.getcwd())
from normbench.harness.store import load_records
pid, out, k = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
deadline = time.time() + 240
while time.time() < deadline and psutil.pid_exists(pid):
    try:
        if len(load_records(out)) >= k:
            break
    except Exception:
        pass
    time.sleep(0.5)
workers = [c for c in psutil.Process(pid).children() if c.children()]
if workers:
    workers[0].send_signal(signal.SIGKILL)
    print(f"killed Dask worker pid {workers[0].pid} after {len(load_records(out))} records")
else:
    print("no Dask worker found to kill")
PY
timeout ${S4:-200} tail --pid=$pid -f /dev/null; wait $pid; say "killed run: exit $?"
python3 bench/scaleout_check.py $R/h200x2-one $R/h200x2-killed --allow-died 2 2>&1 | tee -a "$S"
tar -czf "$OUT/runs.tgz" -C $R .
