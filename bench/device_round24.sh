#!/usr/bin/env bash
# Round 24's device call (issue 16; from the repo root on one H200; about 6 minutes): the row
# loop's last, partial round of tiles spread over the programs by rows (`balance`) against the
# rule — each timed in turn by bench/ab_repeat.py (six rounds rotated, fresh inputs each) at
# the shapes whose tiles leave a ragged last round: 16384 × 4096 (2 rows a tile, 16 rows
# left), 65536 × 1024 (4 rows, 64 left; with two rows a tile at 5 stages too), 32768 × 3072 (2
# rows, 32 left), both norms, bf16 with both weights, fp32 — then the GPU tests of the
# schedule (right against fp64, its bits repeated).  Everything lands in $OUT/round24.tgz;
# ROUNDS, REP, DEVICE, A_S, G_S and SHAPE_* from the environment (a CPU smoke test: DEVICE=cpu
# with tiny shapes, G_S=1).
. bench/device_start.sh
: ${A_S:=75}     # each A/B step's time limit, s
B='{"balance": true}'
ab rms4096 rmsnorm ${SHAPE_4096:-16384x4096} bf16 same '{}' "$B"
ab rms4096w rmsnorm ${SHAPE_4096:-16384x4096} bf16 fp32 '{}' "$B"
ab ln4096 layernorm ${SHAPE_4096:-16384x4096} bf16 same '{}' "$B"
ab rms1024 rmsnorm ${SHAPE_1024:-65536x1024} bf16 same '{}' "$B" \
  '{"balance": true, "block_r": 2, "num_stages": 5}'
ab rms1024w rmsnorm ${SHAPE_1024:-65536x1024} bf16 fp32 '{}' "$B"
ab ln1024 layernorm ${SHAPE_1024:-65536x1024} bf16 same '{}' "$B"
ab rmsfp32 rmsnorm ${SHAPES_FP32:-32768x3072,16384x4096} fp32 same '{}' "$B"
ab rms3072 rmsnorm ${SHAPE_3072:-32768x3072} bf16 same '{}' "$B"
gpu_tests 150 "interleave_right and balance"
tar -czf $OUT/round24.tgz -C $OUT t && rm -rf $T
