#!/usr/bin/env bash
# Round 43's call (issue 16; from the repo root on one H200, carrying .pyd/; about 9
# minutes): the staged kernel's row with fewer instructions (docs/PERF_NOTES.md round 43).
#  1. The GPU tests -k "bf16_pairs or xhat_fma": `bf16_pairs` the same bits as without it,
#     `xhat_fma` right against fp64 (also with x shifted by 30 and 100 standard deviations),
#     both the same bits over ten calls.
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py): the rule against
#     {"bf16_pairs": true} and {"bf16_pairs": true, "xhat_fma": true} at the rows of 16384
#     the counted runs have below target (LayerNorm; RMSNorm at 4096 rows), each with the
#     strategy whose line it is.
# Everything lands in $OUT/round43.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=85}
export AB_GPU=${AB_GPU-1}
gpu_tests 170 "bf16_pairs or xhat_fma"
P='{"bf16_pairs": true}'; PF='{"bf16_pairs": true, "xhat_fma": true}'; F='{"xhat_fma": true}'
AB_NAME=disjoint_smem ab ln4096 layernorm 4096x16384 bf16 same '{}' "$P" "$PF"
AB_NAME=disjoint_smem ab ln8192w layernorm 8192x16384 bf16 fp32 '{}' "$P" "$PF"
AB_NAME=disjoint_strided ab ln8192s layernorm 8192x16384 bf16 same '{}' "$P" "$PF"
AB_NAME=disjoint_strided ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$P"
AB_NAME=disjoint_smem ab ln8192hw layernorm 8192x16384 fp16 fp32 '{}' "$F"
tar -czf $OUT/round43.tgz -C $OUT t && rm -rf $T
