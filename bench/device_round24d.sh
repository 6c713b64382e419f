#!/usr/bin/env bash
# Round 24's fourth call (issue 16; from the repo root on one H200; about 2 minutes), each
# timed in turn by bench/ab_repeat.py (six rounds rotated, fresh inputs each): disjoint_smem's
# LayerNorm rows of 16384 with 128 KB in flight (three stages with a 16-bit γ) against the
# rule's 64 KB (two) — round 14 timed it once, 0.6 % faster — at 8192 and 4096 rows, the
# LayerNorm lines furthest from the copy target; and disjoint_strided's RMSNorm fp16 8192 ×
# 12288 with round 24's 32 KB against 64 KB (3.7 % faster in the counted run, not timed in
# turn).  Everything lands in $OUT/round24d.tgz; ROUNDS, REP, DEVICE, A_S and SHAPE_* from
# the environment.
. bench/device_start.sh
: ${A_S:=60}     # each A/B step's time limit, s
AB_NAME=disjoint_smem ab ln16384 layernorm ${SHAPE_16384:-8192x16384} bf16 same '{}' \
  '{"inflight": 131072}'
AB_NAME=disjoint_smem ab ln16384s layernorm ${SHAPE_16384S:-4096x16384} bf16 same '{}' \
  '{"inflight": 131072}'
ab rms12288h rmsnorm ${SHAPE_12288:-8192x12288} fp16 same '{}' '{"split_inflight": 65536}'
tar -czf $OUT/round24d.tgz -C $OUT t && rm -rf $T
