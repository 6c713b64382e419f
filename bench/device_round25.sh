#!/usr/bin/env bash
# Round 25's first call (issue 16; from the repo root on one H200, carrying .pyd/ and .pk1/
# for the peers' run in the next call, bench/device_round25b.sh; about 4 minutes), each timed
# in turn by bench/ab_repeat.py (six rounds rotated, fresh inputs each): disjoint_strided's
# LayerNorm rows of 16384 dealt round-robin with round 24's 128 KB in flight (three stages
# with a 16-bit γ; its rule keeps 64 KB, two: ln_inflight 0) at 8192 and 4096 rows, and
# disjoint_smem's RMSNorm 4096 × 16384 bf16 with 128 KB (round 14 had RMSNorm 1-1.5 % slower
# with it at 8192 rows; 4096 rows were not timed).  Then the GPU tests of the staged kernels
# at round 24's rules (ln_inflight and split_inflight have had none).  Everything lands in
# $OUT/round25.tgz; ROUNDS, REP, DEVICE, A_S, G_S and SHAPE_* from the environment.
. bench/device_start.sh
: ${A_S:=60}     # each A/B step's time limit, s
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, and .pyd/'s wheels unpacked
L='{"ln_inflight": 131072}'
ab ln16384 layernorm ${SHAPE_16384:-8192x16384} bf16 same '{}' "$L"
ab ln16384s layernorm ${SHAPE_16384S:-4096x16384} bf16 same '{}' "$L"
AB_NAME=disjoint_smem ab rms16384s rmsnorm ${SHAPE_16384S:-4096x16384} bf16 same '{}' \
  '{"inflight": 131072}'
gpu_tests 200 "full_size and disjoint_smem or two_parts or strided_staged or smem"
tar -czf $OUT/round25.tgz -C $OUT t && rm -rf $T
