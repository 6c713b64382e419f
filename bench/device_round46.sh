#!/usr/bin/env bash
# Round 46's first call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic; about
# 4 minutes): round 43's `bf16_pairs` where it was never timed in turn — RMSNorm's rows of 16384
# with bf16 x and an fp32 γ, where 608c60e's counted run (before the pairs) read 210.6 µs at 8192
# rows and the rule with the same sectors reads 225.7 now (round 45c) — and at the other bf16 lines
# with an fp32 γ (LN 8192/4096 × 16384, RMS 8192 × 12288), with `full_sectors` off at LayerNorm's
# fp32-γ rows beside them (on in the rule there, never timed in turn there), and disjoint_smem's own
# pairs at RMS 8192 × 16384 bf16/fp32.  In turn on fresh inputs, six rounds, GPU time.  Everything
# lands in $OUT/round46.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-90}
NP='{"bf16_pairs": false}'
ab rms8192wb rmsnorm 8192x16384 bf16 fp32 '{}' "$NP" '{"bf16_pairs": false, "sectors_off": []}'
ab rms4096wb rmsnorm 4096x16384 bf16 fp32 '{}' "$NP"
ab rms12288wb rmsnorm 8192x12288 bf16 fp32 '{}' "$NP"
ab ln8192wb layernorm 8192x16384 bf16 fp32 '{}' "$NP" '{"full_sectors": false}'
ab ln4096wb layernorm 4096x16384 bf16 fp32 '{}' "$NP"
ab ln8192wh layernorm 8192x16384 fp16 fp32 '{}' '{"full_sectors": false}'
AB_NAME=disjoint_smem ab smem8192wb rmsnorm 8192x16384 bf16 fp32 '{}' "$NP"
tar -czf $OUT/round46.tgz -C $T . && rm -rf $T
