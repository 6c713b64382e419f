#!/usr/bin/env bash
# One device call for tuning round 9 (issue 16; run from the repo root there, on one H200,
# with no peers carried: about 6 minutes, each step under its own timeout).  First the GPU
# tests of the kernels this round touched (the one-row strategies' shared accumulate-rows
# helper, both row-loop kernels), then `bench/tune.py --round9` — the shipped defaults against
# round 9's candidates, timed side by side in one process, every configuration checked
# against fp64 — in three grids, one at a time on the one GPU:
#   wide-fp32w  rows of 12288 and 16384, bf16 activations, fp32 weights: w_tile (the weight
#               as a tile in x's layout) against the default;
#   wide-bf16   the same rows with bf16 weights (w_tile changes nothing there: a control);
#   pow2        d = 3072 and 7168 (tiles partly masked: a fourth stage, and twice the rows a
#               tile at 3072) next to d = 4096 and 8192, whose ceiling fractions they must
#               come within 5 % of (issue 16.3).
# torch is timed in each grid (liger/quack too if importable).  Everything lands in
# $OUT/targets.tgz (tune.csv and a log per grid, gpu.txt, gpu-tests.log).
# Pass NORMBENCH_GIT_COMMIT=<sha> if the copy has no .git.  The shapes, names, norms and
# device can be changed through the environment (tests/test_tune.py runs this script on CPU
# under the interpreter with tiny shapes: DEVICE=cpu J=1 REP=1 WIDE=2x40 ...).
. bench/device_start.sh
gpu_tests 90 "direct_launch or full_size and not torch and not liger and not quack"
TUNE="python3 bench/tune.py --round9 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --names ${NAMES:-disjoint_block,disjoint_fused} --norms ${NORMS:-layernorm,rmsnorm}"
timeout ${A_S:-120} $TUNE --weight-dtype fp32 --out $T/wide-fp32w \
  --shapes ${WIDE:-8192x16384,4096x16384,8192x12288} > $T/wide-fp32w.log 2>&1
timeout ${B_S:-80} $TUNE --out $T/wide-bf16 --shapes ${WIDE_BF16:-8192x16384,8192x12288} \
  > $T/wide-bf16.log 2>&1
timeout ${C_S:-120} $TUNE --out $T/pow2 --shapes ${POW2:-32768x3072,16384x4096,16384x7168,16384x8192} \
  > $T/pow2.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/targets.tgz -C $OUT t && rm -rf $T
