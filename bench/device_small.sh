#!/usr/bin/env bash
# One short device call for a change to the host path (run from the repo root there, on one
# H200; under 4 minutes): configs/small.yaml against PyTorch — the one peer that matters at
# these shapes — then the host time per call (bench/host.py), then the GPU tests of the direct
# launch (K=all: all of tests/test_gpu.py).  Carry .peers-b: the harness needs pydantic,
# which the device lacks and .peers-b holds (with liger's wheel); quack is recorded as skipped
# unless an earlier call on the same warm machine left part one of its runtime in /tmp and
# this one carries .peers-a2 too.
# Everything lands under $OUT: runs.tgz, host.log, gpu-tests.log.
# Pass NORMBENCH_GIT_COMMIT=<sha>: the copy has no .git.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
. bench/peers_env.sh
mkdir -p /tmp/runs
python3 -c "import pydantic" 2>/dev/null || echo "device_small.sh: no pydantic here (carry .peers-b); the run will fail" >&2
timeout ${S_S:-70} python3 run_bench.py run configs/small.yaml --out /tmp/runs/h200-small \
  --no-report > /tmp/runs/small.log 2>&1
tail -22 /tmp/runs/small.log
tar -czf $OUT/runs.tgz -C /tmp runs
timeout ${H_S:-60} python3 bench/host.py > $OUT/host.log 2>&1
head -14 $OUT/host.log
# K=all: the whole GPU test file (about 4 minutes; give T_S room), after a kernel change
K=${K:-direct_launch or repeats_bits or fused_grid}
[ "$K" = all ] && K=
timeout ${T_S:-60} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py ${K:+-k "$K"} \
  > $OUT/gpu-tests.log 2>&1
tail -3 $OUT/gpu-tests.log
