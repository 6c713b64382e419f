#!/usr/bin/env bash
# Round 38's call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic; about
# 6 minutes): disjoint_cluster's exchange one row ahead of dx (`ahead`).  Run in session 32 at
# 80e2307 (docs/perf/tune-38/); `ahead` was removed after it (slower, its partial rows wrong):
# to run this again, check out 80e2307.
#  1. The GPU tests -k cluster: every disjoint_cluster case with the exchange where round 37
#     had it and a row ahead, the fallback, the full-size and awkward shapes with it (a
#     cluster barrier that some CTA never reaches would hang: a short limit, G_S).
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py): disjoint_strided's rule,
#     disjoint_cluster as round 37 timed it, and with `ahead`, at RMS and LN 4096 × 16384
#     bf16 and RMS 8192 × 16384 bf16.
# Everything lands in $OUT/round38.tgz; A_S, ROUNDS, REP, G_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
export AB_GPU=${AB_GPU-1}
gpu_tests ${G_S:-180} "cluster"
CL='{"strategy": "disjoint_cluster"}'
AH='{"strategy": "disjoint_cluster", "ahead": true}'
ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$CL" "$AH"
ab ln4096 layernorm 4096x16384 bf16 same '{}' "$CL" "$AH"
ab rms8192 rmsnorm 8192x16384 bf16 same '{}' "$CL" "$AH"
tar -czf $OUT/round38.tgz -C $OUT t && rm -rf $T
