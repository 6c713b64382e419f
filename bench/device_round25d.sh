#!/usr/bin/env bash
# Round 25's fourth call (issue 16; from the repo root on one H200, no peers; about 3
# minutes): LayerNorm 8192 × 16384 fp16/fp16 with three stages (the rules' ln_inflight,
# 128 KB) against two (64 KB), timed in turn by bench/ab_repeat.py (six rounds rotated, fresh
# inputs each) for disjoint_smem and disjoint_strided — round 24 and this round's first call
# timed bf16 only, and the counted run of the second had fp16 at 224.6 µs where an earlier
# run at two stages had 221.8; then the GPU tests of disjoint_strided at its new rule.
# Everything lands in $OUT/round25d.tgz; ROUNDS, REP, DEVICE, A_S, G_S and SHAPE_16384 from
# the environment.
. bench/device_start.sh
: ${A_S:=60}     # each A/B step's time limit, s
. bench/peers_env.sh     # .pyd/: pydantic, which the harness needs and the device lacks
S16=${SHAPE_16384:-8192x16384}
AB_NAME=disjoint_smem ab ln16384h layernorm $S16 fp16 same '{}' '{"ln_inflight": 65536}'
ab ln16384hs layernorm $S16 fp16 same '{}' '{"ln_inflight": 65536}'
gpu_tests 200 "strided"
tar -czf $OUT/round25d.tgz -C $OUT t && rm -rf $T
