#!/usr/bin/env bash
# Round 31's fifth call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 4 minutes): 8 warps for round 31's fp32 rows of 16384 by halves (RMS 4096 × 16384, the
# one fp32 line still short of quack by GPU time), and γ in registers (`w_regs`) for fp32 rows
# of 12288 — staged in two parts, one stage beside γ, two with γ in registers — both norms, in
# turn on fresh inputs (bench/ab_repeat.py).  Everything lands in $OUT/round31e.tgz; ROUNDS,
# REP, A_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
ab rms16384-w8 rmsnorm 4096x16384 fp32 same '{}' '{"num_warps": 8}'
ab rms12288-wregs rmsnorm 8192x12288 fp32 same '{}' '{"w_regs": true}'
ab ln12288-wregs layernorm 8192x12288 fp32 same '{}' '{"w_regs": true}'
ab rms12288-4096-wregs rmsnorm 4096x12288 fp32 same '{}' '{"w_regs": true}'
tar -czf $OUT/round31e.tgz -C $OUT t && rm -rf $T
