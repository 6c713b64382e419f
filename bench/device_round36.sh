#!/usr/bin/env bash
# Round 36's first call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic
# and the peers' first piece; about 6 minutes): what round 35 left unmeasured.
#  1. GPU tests of disjoint_strided's paths after their choice moved into one place
#     (`disjoint_strided.path`): the staged rows, the staged fp32 rows of d ≤ 8192 and 16384,
#     and the awkward shapes.
#  2. The row loop's fourth stage at a tile of 8192 that is 87.5 % real (7168, the issue's
#     16384 × 7168: the rule keeps 3) and with fp16 activations at tiles at most 75 % real
#     (5120, 6144: the rule takes 4 for any 16-bit activations, timed with bf16 only), in
#     turn on fresh inputs with the GPU time (bench/ab_repeat.py).
# Everything lands in $OUT/round36.tgz; A_S, ROUNDS, REP, G_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=75}
export AB_GPU=${AB_GPU-1}
gpu_tests ${G_S:-120} "strided_staged or strided_stages or strided_fp32 or (awkward and disjoint_strided)"
S3='{"num_stages": 3}'; S4='{"num_stages": 4}'
ab ln7168 layernorm 16384x7168 bf16 same '{}' "$S4"
ab rms7168w rmsnorm 16384x7168 bf16 fp32 '{}' "$S4"
ab ln5120h layernorm 8192x5120 fp16 same '{}' "$S3"
ab rms6144hw rmsnorm 8192x6144 fp16 fp32 '{}' "$S3"
tar -czf $OUT/round36.tgz -C $OUT t && rm -rf $T
