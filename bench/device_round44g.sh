#!/usr/bin/env bash
# Round 44's seventh call (issue 16; from the repo root on one H200, carrying .pyd/; about 7
# minutes): `full_sectors` — the partial rows stored in whole 32-byte sectors (each warp
# trades its accumulators among its threads first; docs/PERF_NOTES.md round 44).
#  1. The GPU tests -k full_sectors: the same bits as the rule, the partial rows their own.
#  2. In turn on fresh inputs with the GPU time: the rule against {"full_sectors": true} at
#     the rows of 16384 below target (each with the strategy whose line it is).
# Everything lands in $OUT/round44g.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=60}
export AB_GPU=${AB_GPU-1}
gpu_tests 90 "full_sectors"
S='{"full_sectors": true}'
AB_NAME=disjoint_strided ab ln4096s layernorm 4096x16384 bf16 same '{}' "$S"
AB_NAME=disjoint_smem ab ln8192w layernorm 8192x16384 bf16 fp32 '{}' "$S"
AB_NAME=disjoint_strided ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$S"
AB_NAME=disjoint_strided ab ln8192s layernorm 8192x16384 bf16 same '{}' "$S"
tar -czf $OUT/round44g.tgz -C $OUT t && rm -rf $T
