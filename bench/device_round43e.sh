#!/usr/bin/env bash
# (Runs at b698c25: `early_partials` was removed after this call; docs/PERF_NOTES.md round 43.)
# Round 43's sixth call (issue 16; from the repo root on one H200, carrying .pyd/; about 5
# minutes): `early_partials` — each row's contributions added with its sums, the partial rows
# stored after the last row's sums, while its dx is worked out (the same bits).
#  1. The GPU tests -k early_partials (the rule's bits, bit for bit).
#  2. In turn on fresh inputs with the GPU time: the rule against it at LN 4096 and 8192 ×
#     16384 bf16 (disjoint_strided, and disjoint_smem at 4096), RMS 4096 × 16384 bf16.
# Everything lands in $OUT/round43e.tgz.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=75}
export AB_GPU=${AB_GPU-1}
gpu_tests 100 "early_partials"
E='{"early_partials": true}'
AB_NAME=disjoint_strided ab ln4096 layernorm 4096x16384 bf16 same '{}' "$E"
AB_NAME=disjoint_smem ab ln4096m layernorm 4096x16384 bf16 same '{}' "$E"
AB_NAME=disjoint_strided ab ln8192 layernorm 8192x16384 bf16 same '{}' "$E"
AB_NAME=disjoint_strided ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$E"
tar -czf $OUT/round43e.tgz -C $OUT t && rm -rf $T
