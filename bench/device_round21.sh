#!/usr/bin/env bash
# One device call for tuning round 21 (issue 16; run from the repo root there, on one H200,
# peers not needed: about 6 minutes, each step under its own timeout): `bench/tune.py
# --round21` — the staged kernel (disjoint_smem, and disjoint_strided's rows dealt
# round-robin) where it stages a row in two parts, at its rule, at the other warps and at
# 32 and 128 KB in flight, beside torch, at three widths of two parts (12288, issue 16's, and
# 10240 and 11264, which no issue lists), in three grids, one at a time:
#   bf16    bf16 activations and weights;
#   fp32w   bf16 activations, fp32 weights;
#   fp16w   fp16 activations, fp32 weights (RMS 12288 there: 9.5 points behind 16384).
# Everything lands in $OUT/round21.tgz (tune.csv and a log per grid, gpu.txt).  Shapes, names,
# norms and device can be changed through the environment (tests/test_tune.py runs this on
# CPU, tiny).
. bench/device_start.sh
TUNE="python3 bench/tune.py --round21 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm} --names ${NAMES:-disjoint_smem,disjoint_strided}"
SHAPES=${SHAPES:-8192x12288,8192x10240,8192x11264}
timeout ${A_S:-130} $TUNE --out $T/bf16 --shapes $SHAPES > $T/bf16.log 2>&1
timeout ${B_S:-130} $TUNE --weight-dtype fp32 --out $T/fp32w --shapes $SHAPES > $T/fp32w.log 2>&1
timeout ${C_S:-130} $TUNE --dtype fp16 --weight-dtype fp32 --out $T/fp16w --shapes $SHAPES \
  > $T/fp16w.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round21.tgz -C $OUT t && rm -rf $T
