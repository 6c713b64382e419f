#!/usr/bin/env bash
# Round 47's first call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic; about
# 8 minutes): `l2_ahead` (the staged kernel asks L2 for the row K rows past its stages' — one bulk
# prefetch of its x and one of its dy, no shared memory) at K = 1 and 2 against the rule, in turn
# on fresh inputs, six rounds, GPU time: LayerNorm's rows of 16384 with an fp32 γ (two stages beside
# γ: the bf16 and fp16 lines at 8192 rows are 0.2 and 1.2 points short of 85 % of copy), 4096 of
# them, RMSNorm 4096 × 16384 bf16/bf16 (two stages) and bf16/fp32, LN 8192 × 16384 bf16/bf16 (three
# stages) and disjoint_smem's LN 8192 × 16384 fp16/fp32 (its fastest strategy there); then the GPU
# tests -k l2_ahead.  Everything lands in $OUT/round47.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-80}
K1='{"l2_ahead": 1}'
K2='{"l2_ahead": 2}'
ab ln8192wb layernorm 8192x16384 bf16 fp32 '{}' "$K1" "$K2"
ab ln8192wh layernorm 8192x16384 fp16 fp32 '{}' "$K1" "$K2"
ab ln4096wb layernorm 4096x16384 bf16 fp32 '{}' "$K1" "$K2"
ab rms4096b rmsnorm 4096x16384 bf16 bf16 '{}' "$K1" "$K2"
ab rms4096wb rmsnorm 4096x16384 bf16 fp32 '{}' "$K1" "$K2"
ab ln8192b layernorm 8192x16384 bf16 bf16 '{}' "$K1" "$K2"
AB_NAME=disjoint_smem ab smem8192wh layernorm 8192x16384 fp16 fp32 '{}' "$K1" "$K2"
gpu_tests 100 "l2_ahead"
tar -czf $OUT/round47.tgz -C $T . && rm -rf $T
