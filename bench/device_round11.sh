#!/usr/bin/env bash
# One device call for tuning round 11 (issue 16; run from the repo root there, on one H200,
# no peers needed: about 7 minutes, each step under its own timeout).  First the GPU tests of
# the row-sum exchange (bits against the split row without it, 10 repeats), then
# `bench/tune.py --round11` — the shipped defaults against programs that share a row and
# exchange its sums (strategies/_exchange.py), timed side by side with torch in one process,
# every configuration checked against fp64 — in four grids, one at a time on the one GPU:
#   wide-bf16   rows of 12288 and 16384, bf16 activations and weights;
#   wide-fp32w  the same with fp32 weights;
#   wider       rows of 32768 (chunks today): parts of 8192 and of 16384;
#   fp32        fp32 activations and weights at 8192 × 16384.
# Everything lands in $OUT/round11.tgz (tune.csv and a log per grid, gpu.txt,
# gpu-tests.log).  Pass NORMBENCH_GIT_COMMIT=<sha> if the copy has no .git.  Shapes, names,
# norms and device can be changed through the environment (tests/test_tune.py runs this on
# CPU, tiny).
. bench/device_start.sh
gpu_tests 100 "row_sums_exchanged"
TUNE="python3 bench/tune.py --round11 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --names ${NAMES:-disjoint_block,disjoint_fused} --norms ${NORMS:-layernorm,rmsnorm}"
timeout ${A_S:-130} $TUNE --out $T/wide-bf16 --shapes ${WIDE:-8192x16384,4096x16384,8192x12288} \
  > $T/wide-bf16.log 2>&1
timeout ${B_S:-100} $TUNE --weight-dtype fp32 --out $T/wide-fp32w \
  --shapes ${WIDE_W:-8192x16384,8192x12288} > $T/wide-fp32w.log 2>&1
timeout ${C_S:-60} $TUNE --out $T/wider --shapes ${WIDER:-4096x32768} > $T/wider.log 2>&1
timeout ${E_S:-60} $TUNE --dtype fp32 --out $T/fp32 --shapes ${FP32:-8192x16384} \
  > $T/fp32.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round11.tgz -C $OUT t && rm -rf $T
