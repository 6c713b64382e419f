#!/usr/bin/env bash
# Round 51 (session 55; from the repo root on one H200, carrying .pk1/ — pydantic and the first
# piece of the peers, bench/peers_split.sh 3; about 5 minutes): round 50's 8-warp A/B again,
# now that an override's parameters are checked once (8023a5b, 6747f31: round 50's call times
# carried 6-20 µs of the tuning tool's host time a call).  disjoint_strided's row loop at d =
# 4096 at 8 warps against the rule's 16, timed in turn on fresh inputs by bench/ab_repeat.py
# (six rounds, call and GPU time, each configuration's host time — host_us — and its check
# against fp64): RMS 16384 × 4096 in every 16-bit mix (bf16/fp32 is the copy target's nearest
# miss, 87.94 %) and fp32, 8192 × 4096 bf16/fp32 beside it, LayerNorm bf16 as the control.
# Then the GPU tests of the tools' host-time fixes (6747f31, d43ac69, 6a9075d), which no GPU
# has run.  Exits 3 on another card than an H200 (round 50's figures are an H200's), unless
# ANY_CARD=1 (session 56: an H100's reading of the same A/B, read as that card's, not the table's).
# Everything lands in $OUT/round51.tgz.
. bench/device_start.sh
[ "${DEVICE:-cuda}" = cpu ] || [ "${ANY_CARD:-0}" = 1 ] || grep -q H200 $T/gpu.txt || { echo "NOT-H200"; exit 3; }
. bench/peers_env.sh > $T/peers.log 2>&1
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-90}
W8='{"num_warps": 8}'
ab w8_rms_bf16w rmsnorm ${SHAPES_4096:-16384x4096,8192x4096} bf16 fp32 '{}' "$W8"
ab w8_rms_bf16 rmsnorm ${SHAPE_4096:-16384x4096} bf16 bf16 '{}' "$W8"
ab w8_rms_fp16w rmsnorm ${SHAPE_4096:-16384x4096} fp16 fp32 '{}' "$W8"
ab w8_rms_fp16 rmsnorm ${SHAPE_4096:-16384x4096} fp16 fp16 '{}' "$W8"
ab w8_rms_fp32 rmsnorm ${SHAPE_4096:-16384x4096} fp32 fp32 '{}' "$W8"
ab w8_ln_bf16 layernorm ${SHAPE_4096:-16384x4096} bf16 bf16 '{}' "$W8"
gpu_tests 150 "host_time or ab_repeat"
tar -czf $OUT/round51.tgz -C $T . && rm -rf $T
