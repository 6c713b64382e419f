#!/usr/bin/env bash
# Round 35's second call (issue 16; from the repo root on one H200, carrying .pk1/; about 4
# minutes), after the rule took a fourth stage at tiles of 8192 at most three quarters real:
# the GPU tests of the row loop there (`-k "interleave_right or awkward and (strided or block
# or fused)"`), then the new rule against three stages where round 35 did not time it: fp32
# activations (RMS 8192 × 5120), LayerNorm with an fp32 γ (8192 × 6144), and disjoint_block,
# which shares the rule (RMS 8192 × 5120 bf16).  Everything lands in $OUT/round35b.tgz;
# G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=70}
export AB_GPU=${AB_GPU-1}
gpu_tests ${G_S:-150} "interleave_right or awkward and (strided or block or fused)"
S3='{"num_stages": 3}'
ab rms5120-fp32 rmsnorm 8192x5120 fp32 same '{}' "$S3"
ab ln6144w layernorm 8192x6144 bf16 fp32 '{}' "$S3"
AB_NAME=disjoint_block ab rms5120-block rmsnorm 8192x5120 bf16 same '{}' "$S3"
tar -czf $OUT/round35b.tgz -C $OUT t && rm -rf $T
