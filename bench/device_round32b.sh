#!/usr/bin/env bash
# Round 32's second call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic
# with the peers' first piece; about 4 minutes): RMS 65536 × 1024 — disjoint_strided's rule
# against disjoint_fused (one launch: a grid barrier, then each program sums a slice of the
# partial rows' columns) with its rows dealt round-robin ("interleave") and at its own rule,
# in turn on fresh inputs (bench/ab_repeat.py, a configuration's "strategy"), bf16, bf16 with
# an fp32 γ and fp16 with an fp32 γ.  Everything lands in $OUT/round32b.tgz; SHAPE, ROUNDS,
# REP, A_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=100}
FI='{"strategy": "disjoint_fused", "interleave": true}'
F='{"strategy": "disjoint_fused"}'
ab rms1024-fused rmsnorm ${SHAPE:-65536x1024} bf16 same '{}' "$FI" "$F"
ab rms1024w-fused rmsnorm ${SHAPE:-65536x1024} bf16 fp32 '{}' "$FI" "$F"
ab rms1024hw-fused rmsnorm ${SHAPE:-65536x1024} fp16 fp32 '{}' "$FI" "$F"
tar -czf $OUT/round32b.tgz -C $OUT t && rm -rf $T
