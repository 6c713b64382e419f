#!/usr/bin/env bash
# Round 28's second call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic,
# and the first half of quack's runtime for bench/device_round28c.sh in the next call, within
# 30 s; about 7 minutes): `half_rows` (LayerNorm rows of one 16384 block with 16-bit
# activations and an fp32 γ staged by halves, five half-row slots) against whole rows (two
# stages), in turn on fresh inputs, for disjoint_smem with bf16 and fp16 activations and for
# disjoint_strided with bf16, at 8192 and 4096 rows; then the GPU tests of the staged kernel
# (`-k "half_rows or smem"`).  Everything lands in $OUT/round28b.tgz; ROUNDS, REP, A_S, G_S,
# K and SHAPES from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
S=${SHAPES:-8192x16384,4096x16384}
AB_NAME=disjoint_smem ab smem-bf16 layernorm $S bf16 fp32 '{}' '{"half_rows": false}'
AB_NAME=disjoint_smem ab smem-fp16 layernorm $S fp16 fp32 '{}' '{"half_rows": false}'
ab strided-bf16 layernorm $S bf16 fp32 '{}' '{"half_rows": false}'
gpu_tests ${G_S:-220} "half_rows or smem"
tar -czf $OUT/round28b.tgz -C $OUT t && rm -rf $T
