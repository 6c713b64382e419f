#!/usr/bin/env bash
# Round 41's call (issue 16; from the repo root on one H200, carrying .pyd/; about 8
# minutes): `land` — disjoint_strided's reduce, resident early as a programmatic dependent,
# sums each partial row as it lands instead of waiting for the row grid (reduce.lands).
#  1. The GPU tests -k "land_gives or pdl_gives" (the same bits as without it, 10 repeats,
#     from a CUDA graph too, the landing partials SENTINEL after every call; pdl unchanged).
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py): the rule against
#     {"land": true} at RMS 16384 × 4096 bf16/fp32, LN 16384 × 4096 bf16, fp32 RMS 4096 ×
#     16384 and 16384 × 8192 (the two ties with quack), RMS 32768 × 3072 bf16; at RMS 65536 ×
#     1024 bf16 the one-step reduce it needs there (512 rows, 8 columns) with and without it.
# Everything lands in $OUT/round41.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=75}
export AB_GPU=${AB_GPU-1}
gpu_tests 120 "land_gives or pdl_gives"
L='{"land": true}'
ab rms4096w rmsnorm 16384x4096 bf16 fp32 '{}' "$L"
ab ln4096 layernorm 16384x4096 bf16 same '{}' "$L"
ab rms16384f rmsnorm 4096x16384 fp32 same '{}' "$L"
ab rms8192f rmsnorm 16384x8192 fp32 same '{}' "$L"
R='"reduce": {"BLOCK_G": 512, "BLOCK_N": 8}'
ab rms1024 rmsnorm 65536x1024 bf16 same '{}' "{$R}" "{\"land\": true, $R}"
ab rms3072 rmsnorm 32768x3072 bf16 same '{}' "$L"
tar -czf $OUT/round41.tgz -C $OUT t && rm -rf $T
