#!/usr/bin/env bash
# One device call for tuning round 17 (issue 16; run from the repo root there, on one H200,
# peers not needed: about 6 minutes, each step under its own timeout).  First
# bench/timeline.py — each program's start and end on the GPU's clock in disjoint_block's
# main kernel, at the rule and with `interleave`, bf16 then fp32 activations — then
# `bench/tune.py --round17` (disjoint_block and disjoint_fused: `interleave`, and tiles of
# twice the rows) beside torch over issue 16's five shapes of d ≤ 8192, bf16 (both weights)
# and fp32 activations.  Everything lands in $OUT/round17.tgz (timeline*.csv/.log, tune.csv
# and a log per grid, gpu.txt).  Shapes and norms can be changed through the environment
# (tests/test_tune.py runs the tuning half on CPU, tiny; the timeline needs a GPU and says so).
. bench/device_start.sh
timeout ${T_S:-100} python3 bench/timeline.py --shapes ${TL:-layernorm:16384x4096,rmsnorm:16384x4096,layernorm:65536x1024,rmsnorm:65536x1024,layernorm:32768x3072,layernorm:16384x8192} \
  --out $T/timeline.csv > $T/timeline.log 2>&1
tail -n 14 $T/timeline.log
timeout ${U_S:-60} python3 bench/timeline.py --dtype fp32 \
  --shapes ${TL32:-rmsnorm:16384x4096,rmsnorm:16384x8192,rmsnorm:32768x3072} \
  --out $T/timeline-fp32.csv > $T/timeline-fp32.log 2>&1
tail -n 5 $T/timeline-fp32.log
TUNE="python3 bench/tune.py --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm} --names ${NAMES:-disjoint_block,disjoint_fused} --round17"
SHAPES=${SHAPES:-16384x4096,65536x1024,32768x3072,16384x7168,16384x8192}
timeout ${A_S:-150} $TUNE --out $T/r17-bf16 --shapes $SHAPES > $T/r17-bf16.log 2>&1
timeout ${B_S:-80} $TUNE --weight-dtype fp32 --out $T/r17-fp32w \
  --shapes ${FP32W:-16384x4096,65536x1024,32768x3072} > $T/r17-fp32w.log 2>&1
timeout ${C_S:-100} $TUNE --dtype fp32 --out $T/r17-fp32 \
  --shapes ${FP32:-16384x4096,16384x8192,65536x1024,32768x3072} > $T/r17-fp32.log 2>&1
tail -n 4 $T/r17*.log
tar -czf $OUT/round17.tgz -C $OUT t && rm -rf $T
