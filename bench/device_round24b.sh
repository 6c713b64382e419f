#!/usr/bin/env bash
# Round 24's second call (issue 16; from the repo root on one H200, carrying .pyd/ and .pk1/
# for the peers' run in the next call; about 5 minutes): the staged kernel's rows of 12288 (two
# parts, 8192 + 4096) with 32 KB of x and dy in flight (two stages) instead of the rule's 64
# KB (three) — round 21's one process had it 1.0-3.2 % faster for LayerNorm with an fp32 γ and
# 1 % for RMSNorm bf16 — timed in turn by bench/ab_repeat.py (six rounds rotated, fresh
# inputs each): LayerNorm bf16 and fp16 with an fp32 γ and bf16 with its own, at 8192 × 12288
# and (a width no target names) 8192 × 10240; RMSNorm bf16, and with an fp32 γ beside 16 warps
# (round 21: 198.9 -> 165.8 µs there), for disjoint_strided and disjoint_smem.  Then the GPU
# tests of round 24's `balance`.  Everything lands in $OUT/round24b.tgz; ROUNDS, REP, DEVICE,
# A_S, G_S and SHAPE_* from the environment.
. bench/device_start.sh
: ${A_S:=60}     # each A/B step's time limit, s
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, and .pyd/'s wheels unpacked
I='{"inflight": 32768}'
S12=${SHAPE_12288:-8192x12288}
ab ln12288w layernorm $S12 bf16 fp32 '{}' "$I"
ab ln12288wh layernorm $S12 fp16 fp32 '{}' "$I"
ab ln10240w layernorm ${SHAPE_10240:-8192x10240} bf16 fp32 '{}' "$I"
ab ln12288 layernorm $S12 bf16 same '{}' "$I"
ab rms12288 rmsnorm $S12 bf16 same '{}' "$I"
ab rms12288w rmsnorm $S12 bf16 fp32 '{}' "$I" '{"wide_weight_warps": 16}'
AB_NAME=disjoint_smem ab rms12288ws rmsnorm $S12 bf16 fp32 '{}' "$I"
gpu_tests 150 "interleave_right and balance"
tar -czf $OUT/round24b.tgz -C $OUT t && rm -rf $T
