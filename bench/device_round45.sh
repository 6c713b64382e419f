#!/usr/bin/env bash
# Round 45's first call (issue 16; from the repo root on one H200, carrying .pk1/ — the first
# third of the peers and pydantic; about 2.5 minutes, then the GPU suite's part 1 in the same
# call): `full_sectors` (round 44) where disjoint_strided's rule took it untimed — rows of two
# parts (8192 × 12288, LayerNorm and RMSNorm, bf16) and fp16 rows (LN 4096 × 16384) — the rule
# against {"full_sectors": false}, in turn on fresh inputs with GPU time.  Everything lands in
# $OUT/round45.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1}
OFF='{"full_sectors": false}'
export ROUNDS=${ROUNDS:-4} A_S=${A_S:-60} AB_NAME=disjoint_strided
ab ln12288 layernorm 8192x12288 bf16 same '{}' "$OFF"
ab rms12288 rmsnorm 8192x12288 bf16 same '{}' "$OFF"
ab ln4096h layernorm 4096x16384 fp16 same '{}' "$OFF"
tar -czf $OUT/round45.tgz -C $OUT t && rm -rf $T
