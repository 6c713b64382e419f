#!/usr/bin/env bash
# Round 27 (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic, which the
# harness needs and the device lacks; about 5 minutes): where the rows of 16384 lose their
# time at 4096 rows, and one A/B.
#   1. bench/kernel_time.py: each kernel of a call of disjoint_strided and disjoint_smem at
#      RMS and LN 4096 and 8192 × 16384 bf16 (the profiler's kernel records: the row kernel,
#      the reduce, the span between them) — at 4096 rows both norms sit 8-9 points below
#      their 8192-row copy fractions; and LN 8192 × 16384 with fp16, where the same
#      strategy is 1.9 % faster than with bf16 in the counted runs (221.6 against 225.9 µs).
#   2. bench/ab_repeat.py: disjoint_strided's LayerNorm rows of 16384 bf16 at 8 warps against
#      the rule's 16 (three stages; round 25 timed 8 warps for disjoint_smem only).
# Everything lands in $OUT/round27.tgz; K_S, A_S, ROUNDS, REP, DEVICE and SHAPES from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh     # .pyd/: pydantic
: ${A_S:=90}
S=${SHAPES:-4096x16384,8192x16384}
timeout ${K_S:-150} python3 bench/kernel_time.py --impls disjoint_strided,disjoint_smem \
  --shapes $S --norms rmsnorm,layernorm --dtype bf16 --calls 30 --rep 50 \
  --out $T/kt-bf16 > $T/kt-bf16.log 2>&1; echo "== kt-bf16 (rc $?)"; tail -n 12 $T/kt-bf16.log
timeout ${K_S:-150} python3 bench/kernel_time.py --impls disjoint_strided,disjoint_smem \
  --shapes ${S##*,} --norms layernorm --dtype fp16 --calls 30 --rep 50 \
  --out $T/kt-fp16 > $T/kt-fp16.log 2>&1; echo "== kt-fp16 (rc $?)"; tail -n 4 $T/kt-fp16.log
ab ln16384w8 layernorm $S bf16 same '{}' '{"num_warps": 8}'
tar -czf $OUT/round27.tgz -C $OUT t && rm -rf $T
