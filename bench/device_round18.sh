#!/usr/bin/env bash
# One device call for tuning round 18 (issue 16; run from the repo root there, on one H200,
# peers not needed: about 7 minutes, each step under its own timeout).  First the GPU tests
# of disjoint_smem (`-k smem`: the new interleave test — right against fp64, its bits over
# repeats, partial row p holding rows p, p + G, … — and the staged, fallback and split
# paths), then `bench/tune.py --round18`: disjoint_smem at its rule, with `interleave` and
# with `interleave` and `pdl`, beside disjoint_strided at its rule (rows wider than 8192 read
# twice: never timed before) and torch, in three grids, one at a time:
#   bf16   issue 16's three widest shapes and one it does not list (6144 × 14336), bf16;
#   fp32w  the three with bf16 activations and fp32 weights;
#   fp32   the three with fp32 activations and weights.
# Everything lands in $OUT/round18.tgz (tune.csv and a log per grid, gpu.txt,
# gpu-tests.log).  Shapes, names, norms and device can be changed through the environment
# (tests/test_tune.py runs this on CPU, tiny).
. bench/device_start.sh
gpu_tests 150 "smem"
TUNE="python3 bench/tune.py --round18 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm} --names ${NAMES:-disjoint_smem,disjoint_strided}"
SHAPES=${SHAPES:-8192x16384,4096x16384,8192x12288}
timeout ${A_S:-150} $TUNE --out $T/bf16 --shapes $SHAPES,${EXTRA:-6144x14336} > $T/bf16.log 2>&1
timeout ${B_S:-110} $TUNE --weight-dtype fp32 --out $T/fp32w --shapes $SHAPES > $T/fp32w.log 2>&1
timeout ${C_S:-110} $TUNE --dtype fp32 --out $T/fp32 --shapes $SHAPES > $T/fp32.log 2>&1
tail -n 4 $T/*.log
tar -czf $OUT/round18.tgz -C $OUT t && rm -rf $T
