#!/usr/bin/env bash
# Round 23's third call (issue 16; from the repo root on one H200, carrying .pyd/ and .pk1/ for
# the peers' run in the next call; about 2.5 minutes), at a61b342's rule: the row loop's bytes
# in flight where RMSNorm is still short — RMS 16384 × 4096 with an fp32 γ (87.94 % of copy,
# target 88) at a fourth stage and at 8 warps; RMS 65536 × 1024 (1.03-1.06× quack, 1.10
# wanted) at two rows a tile with 4 and 5 stages and at four rows with 4 stages — each timed
# in turn against the rule by bench/ab_repeat.py (six rounds rotated, fresh inputs each).
# Everything lands in $OUT/round23c.tgz; ROUNDS, REP, DEVICE and SHAPE_* from the environment.
. bench/device_start.sh
: ${A_S:=75}     # each A/B step's time limit, s
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, and .pyd/'s wheels unpacked
ab rms4096w rmsnorm ${SHAPE_4096:-16384x4096} bf16 fp32 '{}' '{"num_stages": 4}' \
  '{"num_warps": 8}'
ab rms1024 rmsnorm ${SHAPE_1024:-65536x1024} bf16 same '{}' '{"block_r": 2, "num_stages": 4}' \
  '{"block_r": 2, "num_stages": 5}' '{"num_stages": 4}'
tar -czf $OUT/round23c.tgz -C $OUT t && rm -rf $T
