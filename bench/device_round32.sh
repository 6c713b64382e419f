#!/usr/bin/env bash
# Round 32's first call, prepared in session 27 and not yet run (issue 16; from the repo root on
# one H200, carrying .pyd/ — pydantic; about 4 minutes): RMS 65536 × 1024, the one 16-bit speed
# miss (1.03-1.06× quack by GPU time, 1.10× needed), with one program of 8 warps an SM (GROUPS
# 132: half the partial rows, and half the reduce's steps over them) instead of the rule's two
# of 4 warps (GROUPS 264) — tiles of 8 and of 4 rows — bf16 and bf16 with an fp32 γ, in turn on
# fresh inputs (bench/ab_repeat.py; GROUPS follow the warps: _groups.row_loop_programs).
# Then the GPU tests of the fp32 rows of 16384 by halves and the wide fp32 rows
# (`-k "wide_fp32_rows or by_halves"`: d7d6fd4 changed how disjoint_strided's notes get their
# Launch, never run on a GPU since).
# Everything lands in $OUT/round32.tgz; ROUNDS, REP, A_S, G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=90}
C8='{"num_warps": 8, "block_r": 8}'
C4='{"num_warps": 8, "block_r": 4}'
ab rms1024-w8 rmsnorm ${SHAPE:-65536x1024} bf16 same '{}' "$C8" "$C4"
ab rms1024w-w8 rmsnorm ${SHAPE:-65536x1024} bf16 fp32 '{}' "$C8" "$C4"
gpu_tests 150 "wide_fp32_rows or by_halves"
tar -czf $OUT/round32.tgz -C $OUT t && rm -rf $T
