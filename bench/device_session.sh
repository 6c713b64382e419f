#!/usr/bin/env bash
# The device call that produces the committed H200 runs (run from the repo root there).
# The peers' wheels come as bench/peers_env.sh says (an earlier call on the same warm machine
# carried part one; this one carries part two and the wheels).  Runs are written under
# /tmp/runs, which survives to a next call on the same warm machine (a cut run is finished
# there with --resume), and come back as one runs.tgz.
# CONFIGS0 run one after the other on GPU 0, then CONFIGS1.  Each entry is config:seconds;
# an empty CONFIGS1 (CONFIGS1="") runs none, an unset one the default run.
# PARALLEL=1 on a two-GPU machine runs CONFIGS1 on GPU 1 at the same time instead — only for
# runs whose numbers will not be quoted: on 5f52088 two runs at once inflated the host-heavy
# records of both (quack RMSNorm 16384 × 4096: 298 µs, against 128 µs alone).
# Pass NORMBENCH_GIT_COMMIT=<sha>: the copy has no .git.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
mkdir -p /tmp/runs
. bench/peers_env.sh
python3 run_bench.py list
N=$(nvidia-smi -L | wc -l)
runs() {   # GPU, then config:seconds entries
  local gpu=$1; shift
  for c in "$@"; do
    n=${c%%:*}; t=${c##*:}
    echo "== $n (GPU $gpu)"
    CUDA_VISIBLE_DEVICES=$gpu /usr/bin/time -f "wall %e s" timeout $t python3 run_bench.py run \
      configs/$n.yaml --out /tmp/runs/h200-$n --resume --no-report > /tmp/runs/$n.log 2>&1
    tail -45 /tmp/runs/$n.log
  done
}
if [ "$N" -gt 1 ] && [ "${PARALLEL:-0}" = 1 ]; then
  runs 0 ${CONFIGS0-peers:200 small:60} & runs 1 ${CONFIGS1-default:420}; wait
else
  runs 0 ${CONFIGS0-peers:200 small:60} ${CONFIGS1-default:420}
fi
tar -czf $OUT/runs.tgz -C /tmp runs
