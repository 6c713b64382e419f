#!/usr/bin/env bash
# Round 40's call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic; about
# 7 minutes): disjoint_fused's `tail` — the last K programs to finish sum the partial rows by
# column slices, the others leave at once (no second kernel, no grid-wide wait) — with the
# rows dealt round-robin, so that its row loop is disjoint_strided's and only the reduce
# differs.
#  1. The GPU tests -k fused_tail (right against fp64, ten calls the same bits, counters at
#     zero, K waiters really running; a grid larger than the GPU holds at once too).
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py): disjoint_strided's rule
#     against disjoint_fused + interleave + tail K at RMS 65536 × 1024 (bf16, and bf16 with
#     an fp32 γ), RMS 16384 × 4096 bf16 with an fp32 γ and LN 16384 × 4096 bf16.
# Everything lands in $OUT/round40.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=110}
export AB_GPU=${AB_GPU-1}
gpu_tests 150 fused_tail
F='"strategy": "disjoint_fused", "interleave": true'
ab rms1024 rmsnorm 65536x1024 bf16 same '{}' "{$F, \"tail\": 32}" "{$F, \"tail\": 64}" "{$F, \"tail\": 128}"
ab rms1024w rmsnorm 65536x1024 bf16 fp32 '{}' "{$F, \"tail\": 64}" "{$F, \"tail\": 128}"
ab rms4096w rmsnorm 16384x4096 bf16 fp32 '{}' "{$F, \"tail\": 32}" "{$F, \"tail\": 64}"
ab ln4096 layernorm 16384x4096 bf16 same '{}' "{$F, \"tail\": 32}" "{$F, \"tail\": 64}"
tar -czf $OUT/round40.tgz -C $OUT t && rm -rf $T
