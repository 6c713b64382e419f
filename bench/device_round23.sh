#!/usr/bin/env bash
# Tuning round 23's device call (issue 16; from the repo root on one H200, carrying .pyd/ —
# pydantic's wheels, which the harness needs — and, for a run with the peers in the next call,
# .pk1/: bench/peers_env.sh puts its pieces in /tmp/peers; about 4 minutes).  The partial rows'
# reduce read in one step (every partial row at once, BLOCK_G ≥ GROUPS) where the rule reads 64
# a step — RMSNorm (no dβ) at every width, LayerNorm at d = 1024 — and a tile of fewer rows at
# 16384 × 4096 and 65536 × 1024 (the last round of tiles less ragged), each timed in turn
# against the rule by bench/ab_repeat.py, rounds rotated, fresh inputs each round; then
# RMSNorm's 8 warps at 32768 × 3072 (round 22's leftover).  Everything lands in
# $OUT/round23.tgz.  ROUNDS, REP, DEVICE and SHAPE_* come from the environment (a CPU smoke
# test: DEVICE=cpu with tiny shapes).
. bench/device_start.sh
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, and .pyd/'s wheels unpacked
R16='{"reduce": {"BLOCK_G": 256, "BLOCK_N": 16}}'
R32='{"reduce": {"BLOCK_G": 256, "BLOCK_N": 32}}'
ab rms4096 rmsnorm ${SHAPE_4096:-16384x4096} bf16 same '{}' "$R16" "$R32" \
  '{"block_r": 1, "num_stages": 4}'
ab rms4096w rmsnorm ${SHAPE_4096:-16384x4096} bf16 fp32 '{}' "$R16" "$R32"
ab rms1024 rmsnorm ${SHAPE_1024:-65536x1024} bf16 same '{}' \
  '{"reduce": {"BLOCK_G": 512, "BLOCK_N": 8}}' "$R16" '{"block_r": 2, "num_stages": 4}'
ab ln1024 layernorm ${SHAPE_1024:-65536x1024} bf16 same '{}' \
  '{"reduce": {"BLOCK_G": 512, "BLOCK_N": 8, "PAIRED": true}}' \
  '{"reduce": {"BLOCK_G": 512, "BLOCK_N": 8}}'
ab rmsfp32 rmsnorm ${SHAPES_FP32:-32768x3072,16384x8192,4096x16384} fp32 same '{}' "$R16" "$R32"
ab rms3072 rmsnorm ${SHAPE_3072:-32768x3072} bf16 same '{}' '{"num_warps": 8}' "$R16"
tar -czf $OUT/round23.tgz -C $OUT t && rm -rf $T
