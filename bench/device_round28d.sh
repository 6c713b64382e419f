#!/usr/bin/env bash
# Round 28's third call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic,
# and the first half of quack's runtime for a counted run in the next call; about 4 minutes):
# `half_rows` in two rings (first halves in 3 slots, second halves in 2) against whole rows
# (two stages), in turn on fresh inputs, for disjoint_smem at LayerNorm 8192 and 4096 × 16384
# with bf16 and fp16 activations and an fp32 γ; then the GPU tests `-k half_rows`.
# Everything lands in $OUT/round28d.tgz; ROUNDS, REP, A_S, G_S, K and SHAPES from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
S=${SHAPES:-8192x16384,4096x16384}
AB_NAME=disjoint_smem ab smem-bf16 layernorm $S bf16 fp32 '{"half_rows": true}' '{}'
AB_NAME=disjoint_smem ab smem-fp16 layernorm $S fp16 fp32 '{"half_rows": true}' '{}'
gpu_tests ${G_S:-90} "half_rows"
tar -czf $OUT/round28d.tgz -C $OUT t && rm -rf $T
