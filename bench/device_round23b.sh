#!/usr/bin/env bash
# Round 23's second call (issue 16; from the repo root on one H200, carrying .pyd/ and, for
# the peers' run in the next call, .pk1/; about 4 minutes), at the rule that reads every
# partial row in one step without dβ at n ≥ 2048: the GPU tests of RMSNorm at full size,
# of the deterministic strategies' bits and of pdl; the new reduce against the old one (64
# rows a step, 128 columns a program) at the staged widths round 23's first call did not
# reach (RMS 8192 × 12288 and 4096 × 16384, bf16 and fp32); and two rows a tile at 4 stages
# at 65536 × 1024 (faster for RMSNorm bf16 in the first call) for LayerNorm bf16 and RMSNorm
# fp16 with an fp32 γ.  Everything lands in $OUT/round23b.tgz; ROUNDS, REP, DEVICE and
# SHAPE_* from the environment (DEVICE=cpu with tiny shapes: a smoke test, GPU=0 skips the
# GPU tests).
. bench/device_start.sh
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, and .pyd/'s wheels unpacked
[ "${GPU:-1}" = 1 ] && gpu_tests 120 "full_size and rmsnorm or deterministic_by_design or pdl_gives"
OLD='{"reduce": {"BLOCK_G": 64, "BLOCK_N": 128}}'
ab rmswide rmsnorm ${SHAPES_WIDE:-8192x12288,4096x16384} bf16 same '{}' "$OLD"
ab rmswide32 rmsnorm ${SHAPES_WIDE:-8192x12288,4096x16384} fp32 same '{}' "$OLD"
TILE='{"block_r": 2, "num_stages": 4}'
ab ln1024 layernorm ${SHAPE_1024:-65536x1024} bf16 same '{}' "$TILE"
ab rms1024h rmsnorm ${SHAPE_1024:-65536x1024} fp16 fp32 '{}' "$TILE"
tar -czf $OUT/round23b.tgz -C $OUT t && rm -rf $T
