#!/usr/bin/env bash
# One device call for tuning round 20 (issue 16; run from the repo root there, on one H200,
# peers not needed: about 6 minutes, each step under its own timeout): `bench/tune.py
# --round20` — disjoint_strided's row loop (d ≤ 8192) at its rule, with `pdl`, with one stage
# more, and at GROUPS that deal its tiles out evenly (alone and with `pdl`), beside torch, at
# issue 16's five shapes of d ≤ 8192, in three grids, one at a time:
#   bf16   bf16 activations and weights;
#   fp32w  bf16 activations, fp32 weights;
#   fp32   fp32 activations and weights.
# Everything lands in $OUT/round20.tgz (tune.csv and a log per grid, gpu.txt).  Shapes, names,
# norms and device can be changed through the environment (tests/test_tune.py runs this on
# CPU, tiny).  The pdl, stage and GROUPS paths are the GPU suite's already (`-k "pdl or strided"`).
. bench/device_start.sh
TUNE="python3 bench/tune.py --round20 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm} --names ${NAMES:-disjoint_strided}"
SHAPES=${SHAPES:-16384x4096,65536x1024,32768x3072,16384x8192,16384x7168}
timeout ${A_S:-120} $TUNE --out $T/bf16 --shapes $SHAPES > $T/bf16.log 2>&1
timeout ${B_S:-110} $TUNE --weight-dtype fp32 --out $T/fp32w --shapes $SHAPES > $T/fp32w.log 2>&1
timeout ${C_S:-130} $TUNE --dtype fp32 --out $T/fp32 --shapes $SHAPES > $T/fp32.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round20.tgz -C $OUT t && rm -rf $T
