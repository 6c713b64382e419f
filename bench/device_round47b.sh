#!/usr/bin/env bash
# Round 47's second call (issue 16; from the repo root on one H200, carrying .pk1/ — the first
# piece of the peers, pydantic among them — for the counted run two calls on; about 5 minutes):
# the GPU tests of `l2_ahead` and of disjoint_strided's staged options at the new rule
# (`ln_l2_ahead` 1: LayerNorm's rows of one block ask L2 a row ahead, but not at fp16/fp16:
# `l2_off`), then in turn at the two 16-bit LayerNorm lines round 47's first call did not time:
# 8192 × 16384 fp16/fp16 (the rule, off there, against `{"l2_off": []}`) and 4096 × 16384
# bf16/bf16 (the rule against `{"ln_l2_ahead": 0}`); and LayerNorm's rows of two parts (8192 ×
# 12288 bf16/bf16 and bf16/fp32, off in the rule) against `{"l2_ahead": 1}` — six rounds on
# fresh inputs, GPU time.
# Everything lands in $OUT/round47b.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-60}
gpu_tests 150 "l2_ahead or (strided and (pairs or sectors or ln_warps))"
OFF='{"ln_l2_ahead": 0}'
ab ln8192h layernorm 8192x16384 fp16 fp16 '{}' '{"l2_off": []}'
ab ln4096b layernorm 4096x16384 bf16 bf16 '{}' "$OFF"
K1='{"l2_ahead": 1}'
ab ln12288b layernorm 8192x12288 bf16 bf16 '{}' "$K1"
ab ln12288wb layernorm 8192x12288 bf16 fp32 '{}' "$K1"
tar -czf $OUT/round47b.tgz -C $T . && rm -rf $T
