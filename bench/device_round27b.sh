#!/usr/bin/env bash
# Round 27's second call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic,
# and the first half of quack's runtime for the next call; about 2 minutes): `ln_warps` (8
# warps for disjoint_strided's LayerNorm rows of 16384 with a 16-bit weight of the
# activations' width) against 16, in turn, where the first call did not settle it — fp16 at
# 8192 and 4096 rows, bf16 at 4096 rows (its rule's rounds hit by the timing hazard there) —
# and, where G_S (s) is set, the GPU tests of disjoint_strided at the new rule (about 100 s:
# left out by default since the session's device time ran short; the counted run of
# device_round27c.sh checks the rule against fp64, and its bits over repeats, at its shapes).
# Everything lands in $OUT/round27b.tgz; ROUNDS, REP, DEVICE, A_S, G_S, K and SHAPES from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=70}
S=${SHAPES:-8192x16384,4096x16384}
ab ln16384h layernorm $S fp16 same '{}' '{"num_warps": 16}'
ab ln4096 layernorm ${S##*,} bf16 same '{}' '{"num_warps": 16}'
[ -n "${G_S:-}" ] && gpu_tests $G_S "strided"
tar -czf $OUT/round27b.tgz -C $OUT t && rm -rf $T
