#!/usr/bin/env bash
# Round 50 (session 48; from the repo root on one H200, carrying .pyd/ — pydantic — and liger's
# wheel in .pk1/; about 6 minutes): two open A/Bs at issue 16's nearest misses, timed in turn on
# fresh inputs by bench/ab_repeat.py (six rounds, call and GPU time, every configuration
# checked against fp64), then liger's RMSNorm with an fp32 weight, which no run has measured.
#  1. disjoint_strided's row loop at d = 4096 at 8 warps (one program an SM, tiles of 2 rows)
#     against the rule's 16: RMS 16384 × 4096 with every 16-bit mix (bf16/fp32 is the copy
#     target's nearest miss, 87.94 %), 8192 × 4096 bf16/fp32 beside it, LayerNorm bf16 as the
#     control.  Round 23's third call timed it by call time only (106.1–106.2 µs against the
#     rule's 106.8 in the rounds where neither read slow); no GPU time was ever taken.
#  2. the reduce's 64-column tile at rows of 16384 and few rows a program (4096 and 2048 rows),
#     both norms, 16-bit and fp32 activations: round 48 on the H200 had it 1.1 µs faster at
#     fp32 RMS 4096 × 16384 (a 0.995× GPU-time tie with quack), round 49 on an H100 0.4–1.0 %
#     faster at every 4096-row line and level or slower at 8192 rows.
#  3. `run configs/quick.yaml` with liger, torch and disjoint_strided at RMSNorm fp16 and bf16
#     with an fp32 weight: the harness's verdict on liger's dγ (tests/checks.py expects ✗ for
#     both; fp16 only inferred).
# Everything lands in $OUT/round50.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-60}
W8='{"num_warps": 8}'
ab w8_rms_bf16w rmsnorm ${SHAPES_4096:-16384x4096,8192x4096} bf16 fp32 '{}' "$W8"
ab w8_rms_bf16 rmsnorm ${SHAPE_4096:-16384x4096} bf16 bf16 '{}' "$W8"
ab w8_rms_fp16w rmsnorm ${SHAPE_4096:-16384x4096} fp16 fp32 '{}' "$W8"
ab w8_rms_fp16 rmsnorm ${SHAPE_4096:-16384x4096} fp16 fp16 '{}' "$W8"
ab w8_ln_bf16 layernorm ${SHAPE_4096:-16384x4096} bf16 bf16 '{}' "$W8"
R64='{"reduce": {"BLOCK_N": 64}}'
ab r64_rms_bf16 rmsnorm ${SHAPES_WIDE:-4096x16384,2048x16384} bf16 bf16 '{}' "$R64"
ab r64_rms_bf16w rmsnorm ${SHAPE_WIDE:-4096x16384} bf16 fp32 '{}' "$R64"
ab r64_rms_fp32 rmsnorm ${SHAPE_WIDE:-4096x16384} fp32 fp32 '{}' "$R64"
ab r64_ln_bf16 layernorm ${SHAPES_WIDE:-4096x16384,2048x16384} bf16 bf16 '{}' "$R64"
ab r64_ln_bf16w layernorm ${SHAPE_WIDE:-4096x16384} bf16 fp32 '{}' "$R64"
ab r64_ln_fp32 layernorm ${SHAPE_WIDE:-4096x16384} fp32 fp32 '{}' "$R64"
timeout ${L_S:-120} python3 run_bench.py run configs/quick.yaml ${L_ARGS:-} \
  --only ${L_ONLY:-liger,torch,disjoint_strided} 'norm=[rmsnorm]' 'dtype=[fp16,bf16]' \
  'weight_dtype=[fp32]' --out $T/liger-fp32w --no-report > $T/liger-fp32w.log 2>&1
echo "== liger-fp32w (rc $?)"; tail -n 4 $T/liger-fp32w.log
tar -czf $OUT/round50.tgz -C $T . && rm -rf $T
