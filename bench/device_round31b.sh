#!/usr/bin/env bash
# Round 31's second call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 6 minutes): at the rows of 16384, GROUPS that give every program the same rows — 128
# instead of the auto 132 (4096 rows: 31 or 32 a program; 8192: 62 or 63) — for
# disjoint_strided (RMSNorm, the det best there) and disjoint_smem (LayerNorm's at 4096 rows),
# and round 28's halves with γ in registers for fp32 rows of 16384 (`w_regs` + `half_rows`:
# 2 + 1 half slots instead of one whole-row stage), in turn on fresh inputs
# (bench/ab_repeat.py).  Everything lands in $OUT/round31b.tgz; ROUNDS, REP, A_S from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
G='{"groups": 128}'
H='{"w_regs": true, "half_rows": true}'
HG='{"w_regs": true, "half_rows": true, "groups": 128}'
ab rms4096-g rmsnorm 4096x16384 bf16 same '{}' "$G"
ab rms4096w-g rmsnorm 4096x16384 bf16 fp32 '{}' "$G"
ab rms8192-g rmsnorm 8192x16384 bf16 same '{}' "$G"
AB_NAME=disjoint_smem ab ln4096-smem-g layernorm 4096x16384 bf16 same '{}' "$G"
AB_NAME=disjoint_smem ab ln4096w-smem-g layernorm 4096x16384 bf16 fp32 '{}' "$G"
A_S=120 ab rms4096-fp32 rmsnorm 4096x16384 fp32 same '{}' "$G" "$H" "$HG"
A_S=100 ab ln4096-fp32 layernorm 4096x16384 fp32 same '{}' "$H" "$HG"
ab rms8192-fp32 rmsnorm 8192x16384 fp32 same '{}' "$H"
tar -czf $OUT/round31b.tgz -C $OUT t && rm -rf $T
