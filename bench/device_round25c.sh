#!/usr/bin/env bash
# Round 25's third call (issue 16; from the repo root on one H200, no peers; about 4 minutes),
# each timed in turn by bench/ab_repeat.py (six rounds rotated, fresh inputs each):
# disjoint_smem's rows staged in two parts with 128 KB in flight (`split_inflight`: four
# stages at 12288 with a 16-bit γ, five at 10240) against the rule's 64 KB (three, four) — the
# contiguous blocks' counterpart of round 24's ln_inflight, at RMS 8192 × 12288 bf16 (87.7 % of
# copy, 88 wanted) and fp16, LN 8192 × 12288 bf16 and, a width no target names, RMS and LN
# 8192 × 10240 bf16; and disjoint_smem's LayerNorm 8192 × 16384 bf16 at 8 warps (its fp32-γ
# line, at 8 warps and two stages, times what its bf16-γ line does at 16 and three).
# Everything lands in $OUT/round25c.tgz; ROUNDS, REP, DEVICE, A_S and SHAPE_* from the
# environment.
. bench/device_start.sh
: ${A_S:=60}     # each A/B step's time limit, s
. bench/peers_env.sh     # .pyd/: pydantic, which the harness needs and the device lacks
S='{"split_inflight": 131072}'
S12=${SHAPE_12288:-8192x12288}; S10=${SHAPE_10240:-8192x10240}
export AB_NAME=disjoint_smem
ab rms12288 rmsnorm $S12 bf16 same '{}' "$S"
ab rms12288h rmsnorm $S12 fp16 same '{}' "$S"
ab ln12288 layernorm $S12 bf16 same '{}' "$S"
ab rms10240 rmsnorm $S10 bf16 same '{}' "$S"
ab ln10240 layernorm $S10 bf16 same '{}' "$S"
ab ln16384w8 layernorm ${SHAPE_16384:-8192x16384} bf16 same '{}' '{"num_warps": 8}'
tar -czf $OUT/round25c.tgz -C $OUT t && rm -rf $T
