#!/usr/bin/env bash
# One device call for tuning round 12 (issue 16; run from the repo root there, on one H200,
# no peers needed: about 7 minutes, each step under its own timeout).  First the GPU tests of
# the L2 prefetch (bits against the rule without it, 10 repeats), then `bench/tune.py
# --round12` — the shipped defaults against the row loop asking L2 for its tiles ahead
# (`l2_ahead`, rowgrad.prefetch_l2), timed side by side with torch in one process, every
# configuration checked against fp64 — in five grids, one at a time on the one GPU:
#   wide-bf16   rows of 12288 and 16384 (read twice), bf16 activations and weights;
#   wide-fp32w  the same with fp32 weights;
#   wider       rows of 32768 (chunks);
#   fp32        fp32 activations and weights at 8192 × 16384;
#   pipe        the pipelined rows short of the copy ceiling (d = 1024–7168), disjoint_block.
# Everything lands in $OUT/round12.tgz (tune.csv and a log per grid, gpu.txt,
# gpu-tests.log).  Pass NORMBENCH_GIT_COMMIT=<sha> if the copy has no .git.  Shapes, names,
# norms and device can be changed through the environment (tests/test_tune.py runs this on
# CPU, tiny).
. bench/device_start.sh
gpu_tests 100 "l2_prefetch"
TUNE="python3 bench/tune.py --round12 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm}"
NAMES=${NAMES:-disjoint_block,disjoint_fused}
timeout ${A_S:-110} $TUNE --names $NAMES --out $T/wide-bf16 \
  --shapes ${WIDE:-8192x16384,4096x16384,8192x12288} > $T/wide-bf16.log 2>&1
timeout ${B_S:-80} $TUNE --names $NAMES --weight-dtype fp32 --out $T/wide-fp32w \
  --shapes ${WIDE_W:-8192x16384,8192x12288} > $T/wide-fp32w.log 2>&1
timeout ${C_S:-50} $TUNE --names $NAMES --out $T/wider --shapes ${WIDER:-4096x32768} \
  > $T/wider.log 2>&1
timeout ${E_S:-50} $TUNE --names $NAMES --dtype fp32 --out $T/fp32 --shapes ${FP32:-8192x16384} \
  > $T/fp32.log 2>&1
timeout ${P_S:-100} $TUNE --names ${PIPE_NAMES:-disjoint_block} --out $T/pipe \
  --shapes ${PIPE:-16384x4096,65536x1024,16384x8192,32768x3072,16384x7168} > $T/pipe.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round12.tgz -C $OUT t && rm -rf $T
