#!/usr/bin/env bash
# Round 29's second call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 4 minutes): `w_regs` for disjoint_strided's rows staged in two parts with an fp32 γ
# beside 16-bit activations, where call 1 had it 12 % faster at RMSNorm 8192 × 12288 fp16 —
# the other widths, rows, activations and LayerNorm, in turn on fresh inputs
# (bench/ab_repeat.py).  Everything lands in $OUT/round29b.tgz; ROUNDS, REP and A_S from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=90}
W='{"w_regs": true}'
ab rms-bf16w32 rmsnorm 8192x12288,8192x10240,4096x12288 bf16 fp32 "$W" '{}'
ab rms-fp16w32 rmsnorm 8192x10240,4096x12288 fp16 fp32 "$W" '{}'
ab rms12-fp16w32-4st rmsnorm 8192x12288 fp16 fp32 "$W" '{"w_regs": true, "num_stages": 4}'
ab ln-bf16w32 layernorm 8192x12288,8192x10240 bf16 fp32 "$W" '{}'
ab ln-fp16w32 layernorm 8192x12288 fp16 fp32 "$W" '{}'
tar -czf $OUT/round29b.tgz -C $OUT t && rm -rf $T
