#!/usr/bin/env bash
# The second device call of tuning round 22 (issue 16; run from the repo root there, on one
# H200, carrying .pyd/ — pydantic's wheels, which the harness needs and the device lacks —
# peers not needed: about 4 minutes): bench/ab_repeat.py times disjoint_strided at LayerNorm
# 32768 × 3072 and 32768 × 2560 (bf16) with 16 and with 8 warps in turn, six rounds, fresh
# inputs each round (round 22's first call read 8 warps 146-154 µs in 8 timings and 186-213
# in 5); then the GPU tests of the strided row loop, and the LayerNorm 32768 × 3072 lines of
# configs/targets-narrow.yaml at this tree's rule (quack and liger skipped: not carried).
# Everything lands in $OUT/round22b.tgz.  Shapes and device can be changed through the
# environment (tests/test_tune.py runs the A/B step on CPU, tiny).
. bench/device_start.sh
. bench/peers_env.sh     # .pyd/'s wheels unpacked into /tmp/site, on PYTHONPATH
: ${A_S:=120}     # the A/B step's time limit, s
ab ab layernorm ${SHAPES:-32768x3072,32768x2560} bf16 same '{"num_warps": 16}' '{"num_warps": 8}'
if [ "${RUN:-1}" = 1 ]; then
  gpu_tests 80 "interleave_right and disjoint_strided"
  timeout ${R_S:-200} python3 run_bench.py run configs/targets-narrow.yaml 'norm=[layernorm]' \
    --shape 32768x3072 --out $T/runs/h200-targets-narrow-ln-3072 --resume --no-report \
    > $T/run.log 2>&1
  tail -n 12 $T/run.log
fi
tar -czf $OUT/round22b.tgz -C $OUT t && rm -rf $T
