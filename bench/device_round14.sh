#!/usr/bin/env bash
# One device call for tuning round 14 — or, with ROUND=15, round 15's candidates (the split
# rows, round 14's at d ≤ 8192), with ROUND=16 round 16's (`pdl` for both strategies; then
# K="smem or pdl" runs its GPU tests too) in the same grids (issue 16; run from the repo root there, on one H200;
# with the peers when bench/peers_env.sh has them: about 8 minutes, each step under its own
# timeout).  First the GPU tests of disjoint_smem (the rows staged in shared memory: against
# fp64 at full size, its bits over repeats, the staged and the fallback paths), then
# `bench/tune.py --round14` — disjoint_smem at its rule and its round-14 candidates beside
# disjoint_block at its rule, timed side by side with torch (and liger, quack where present) in
# one process, every configuration checked against fp64 — in three grids, one at a time:
#   bf16   the eight shapes of issue 16's table, bf16 activations and weights;
#   fp32w  the same with fp32 weights;
#   fp32   fp32 activations and weights at three of them.
# Everything lands in $OUT/round14.tgz (round15.tgz; tune.csv and a log per grid, gpu.txt,
# gpu-tests.log).  Pass NORMBENCH_GIT_COMMIT=<sha> if the copy has no .git.  Shapes, names,
# norms and device can be changed through the environment (tests/test_tune.py runs this on
# CPU, tiny).
. bench/device_start.sh
gpu_tests 120 "smem"
TUNE="python3 bench/tune.py --round${ROUND:-14} --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm}"
NAMES=${NAMES:-disjoint_block,disjoint_smem}
SHAPES=${SHAPES:-8192x16384,4096x16384,8192x12288,16384x8192,16384x7168,16384x4096,32768x3072,65536x1024}
timeout ${A_S:-170} $TUNE --names $NAMES --out $T/bf16 --shapes $SHAPES > $T/bf16.log 2>&1
timeout ${B_S:-150} $TUNE --names $NAMES --weight-dtype fp32 --out $T/fp32w --shapes $SHAPES \
  > $T/fp32w.log 2>&1
timeout ${C_S:-70} $TUNE --names $NAMES --dtype fp32 --out $T/fp32 \
  --shapes ${FP32:-8192x16384,16384x8192,16384x4096} > $T/fp32.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round${ROUND:-14}.tgz -C $OUT t && rm -rf $T
