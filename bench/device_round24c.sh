#!/usr/bin/env bash
# Round 24's third call (issue 16; from the repo root on one H200, carrying .pyd/ and .pk1/
# for the peers' run in the next call; about 4 minutes): disjoint_strided's new SPLIT_INFLIGHT
# (32 KB in flight at rows staged in two parts) against the 64 KB before it, timed in turn by
# bench/ab_repeat.py (six rounds rotated, fresh inputs each) where round 24's second call did
# not look — RMSNorm fp16 with an fp32 γ (round 21's one process: 16 % slower), LayerNorm fp16
# with its own γ, 4096 rows of 12288 with an fp32 γ, and 8192 × 11264 — then the GPU tests of
# the staged kernel's two-part rows.  Everything lands in $OUT/round24c.tgz; ROUNDS, REP,
# DEVICE, A_S, G_S and SHAPE_* from the environment.
. bench/device_start.sh
: ${A_S:=60}     # each A/B step's time limit, s
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, and .pyd/'s wheels unpacked
OLD='{"split_inflight": 65536}'
S12=${SHAPE_12288:-8192x12288}
ab rms12288wh rmsnorm $S12 fp16 fp32 '{}' "$OLD"
ab ln12288h layernorm $S12 fp16 same '{}' "$OLD"
ab ln4096w layernorm ${SHAPE_4096:-4096x12288} bf16 fp32 '{}' "$OLD"
ab rms4096 rmsnorm ${SHAPE_4096:-4096x12288} bf16 same '{}' "$OLD"
ab ln11264 layernorm ${SHAPE_11264:-8192x11264} bf16 same '{}' "$OLD"
gpu_tests 200 "two_parts or split_rows or strided_staged or full_size and disjoint_strided"
tar -czf $OUT/round24c.tgz -C $OUT t && rm -rf $T
