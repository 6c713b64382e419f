#!/usr/bin/env bash
# Round 37's second call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 7 minutes): disjoint_cluster, each row split between the two CTAs of a cluster.
#  1. Its GPU tests (-k cluster: its own cases, the full-size and awkward shapes with it) —
#     a cluster barrier that some CTA never reaches would hang, so a short limit (G_S).
#  2. Timed in turn against disjoint_strided's rule on fresh inputs, with the GPU time
#     (bench/ab_repeat.py, a configuration's "strategy"), at the rows of 16384 that miss the
#     copy target: RMS and LN 4096 × 16384 bf16, LN 8192 × 16384 bf16 with an fp32 γ; and
#     RMS 8192 × 16384 bf16, where the rule meets it (91 %).
# Everything lands in $OUT/round37b.tgz; A_S, ROUNDS, REP, G_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=50}
export AB_GPU=${AB_GPU-1}
gpu_tests ${G_S:-150} "cluster"
CL='{"strategy": "disjoint_cluster"}'
ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$CL"
ab ln4096 layernorm 4096x16384 bf16 same '{}' "$CL"
ab ln8192w layernorm 8192x16384 bf16 fp32 '{}' "$CL"
ab rms8192 rmsnorm 8192x16384 bf16 same '{}' "$CL"
tar -czf $OUT/round37b.tgz -C $OUT t && rm -rf $T
