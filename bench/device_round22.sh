#!/usr/bin/env bash
# One device call for tuning round 22 (issue 16; run from the repo root there, on one H200,
# peers not needed: about 8 minutes, each step under its own timeout): first the GPU tests
# of `pdl` (test_pdl_gives_the_same_bits as 46567e7 widened it has not run on the device),
# then `bench/tune.py --round22` — disjoint_strided's row loop where its tile is partly
# masked (d ≤ 8192 not a power of two), at its rule, with twice the rows a tile (at the
# rule's stages and one fewer) and half the warps, beside torch, both norms, in four grids:
#   bf16    bf16 activations and weights;
#   fp32w   bf16 activations, fp32 weights;
#   fp16    fp16 activations and weights;
#   fp32    fp32 activations and weights (3072 and 7168 only).
# Everything lands in $OUT/round22.tgz (tune.csv and a log per grid, gpu.txt, gpu-tests.log).
# Shapes, names, norms and device can be changed through the environment (tests/test_tune.py
# runs this on CPU, tiny: the GPU tests skip there).
. bench/device_start.sh
gpu_tests 100 "pdl"
TUNE="python3 bench/tune.py --round22 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm} --names ${NAMES:-disjoint_strided}"
SHAPES=${SHAPES:-32768x3072,32768x2560,65536x1536,16384x7168,16384x5120}
timeout ${A_S:-125} $TUNE --out $T/bf16 --shapes $SHAPES > $T/bf16.log 2>&1
timeout ${B_S:-125} $TUNE --weight-dtype fp32 --out $T/fp32w --shapes $SHAPES > $T/fp32w.log 2>&1
timeout ${C_S:-110} $TUNE --dtype fp16 --out $T/fp16 --shapes $SHAPES > $T/fp16.log 2>&1
timeout ${D_S:-60} $TUNE --dtype fp32 --out $T/fp32 --shapes ${SHAPES_FP32:-32768x3072,16384x7168} \
  > $T/fp32.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round22.tgz -C $OUT t && rm -rf $T
