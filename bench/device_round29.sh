#!/usr/bin/env bash
# Round 29's first call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 8 minutes): `w_regs` — γ held in fp32 registers instead of shared memory — against the
# rule, in turn on fresh inputs (bench/ab_repeat.py), where γ's bytes in shared memory cost
# stages or reads: RMSNorm 8192 × 12288 with an fp32 γ (fp16 and bf16 x; also four stages),
# LayerNorm 8192 and 4096 × 16384 with an fp32 γ (three stages instead of two), RMSNorm 4096 ×
# 16384 (bf16 x with both weights; fp32); then the GPU tests `-k w_regs` first.
# Everything lands in $OUT/round29.tgz; ROUNDS, REP, A_S, G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
gpu_tests ${G_S:-110} "w_regs"
W='{"w_regs": true}'
AB_NAME=disjoint_smem ab rms12-smem-fp16 rmsnorm 8192x12288 fp16 fp32 "$W" '{"w_regs": true, "num_stages": 4}' '{}'
ab rms12-strided-fp16 rmsnorm 8192x12288 fp16 fp32 "$W" '{}'
AB_NAME=disjoint_smem ab rms12-smem-bf16 rmsnorm 8192x12288 bf16 fp32 "$W" '{}'
AB_NAME=disjoint_smem ab ln16-smem-bf16 layernorm 8192x16384,4096x16384 bf16 fp32 "$W" '{}'
AB_NAME=disjoint_smem ab ln16-smem-fp16 layernorm 8192x16384 fp16 fp32 "$W" '{}'
ab rms16-strided-bf16w32 rmsnorm 4096x16384 bf16 fp32 "$W" '{"w_regs": true, "num_stages": 3}' '{}'
ab rms16-strided-bf16 rmsnorm 4096x16384 bf16 same "$W" '{}'
ab rms16-strided-fp32 rmsnorm 4096x16384 fp32 same "$W" '{}'
tar -czf $OUT/round29.tgz -C $OUT t && rm -rf $T
