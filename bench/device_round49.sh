#!/usr/bin/env bash
# Round 49 (session 46; from the repo root on one H200, carrying .pyd/ — pydantic — about 5
# minutes): the reduce's tile where round 48 found 64 columns a program faster (fp32 RMSNorm
# 4096 × 16384: 209.7 -> 208.6 µs by GPU time) — at every width ≥ 12288 of the table, both
# norms (LayerNorm sums dγ's and dβ's partials in one loop: twice the accumulator), 16-bit and
# fp32 activations, and at widths of 8192 (16384 × 8192, RMS bf16 and fp32) where 64 columns
# leave fewer programs (128) than the H200's 132 SMs — so that a rule, if any, is read from
# all of them, not from the one line.  Per shape: the rule (32 columns, every partial row in
# one step), 64 columns, and 64 columns walking the partial rows 128 at a time (the grid's
# 131 partial rows at 8192 rows in two steps, a tile half the size; at 4096 rows the registry
# caps GROUPS at 128, which the rule's step already takes whole, so there the third
# configuration is the second again — a session-52 audit; bench/ab_repeat.py now refuses
# that pair at those shapes).  disjoint_strided, the fastest
# deterministic strategy at all of these lines; six rounds in turn on fresh inputs, call and
# GPU time, every configuration checked against fp64.  Then the GPU tests of disjoint_fused
# round 48's 150 s did not reach.  Everything lands in $OUT/round49.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-110}
R64='{"reduce": {"BLOCK_N": 64}}' R64G='{"reduce": {"BLOCK_N": 64, "BLOCK_G": 128}}'
W=${SHAPES_WIDE:-4096x16384,8192x16384,8192x12288}
ab rms_bf16 rmsnorm $W bf16 bf16 '{}' "$R64" "$R64G"
ab rms_bf16w rmsnorm ${SHAPES_WIDE_W:-4096x16384,8192x16384} bf16 fp32 '{}' "$R64" "$R64G"
ab rms_fp32 rmsnorm ${SHAPES_FP32:-4096x16384,8192x16384,16384x8192} fp32 fp32 '{}' "$R64" "$R64G"
ab ln_bf16 layernorm $W bf16 bf16 '{}' "$R64" "$R64G"
ab ln_bf16w layernorm ${SHAPES_WIDE_W:-4096x16384,8192x16384} bf16 fp32 '{}' "$R64" "$R64G"
ab ln_fp32 layernorm ${SHAPE_LN_FP32:-4096x16384} fp32 fp32 '{}' "$R64" "$R64G"
ab rms_8192 rmsnorm ${SHAPE_8192:-16384x8192} bf16 bf16 '{}' "$R64" "$R64G"
gpu_tests ${G_T:-150} "fused and (exchanged or l2_prefetch or syncs or direct or interleave)"
# atomic LayerNorm 16384 × 4096's two states (round 48: 375 or 433 µs of GPU time, 390 or 436
# of call time, whatever the inputs): in which does each fresh process of a plain `quick` run
# land?  (The CI gate's baseline, results/h200-quick-runs, holds two runs of one state.)
for i in $(seq 1 ${QUICK_N:-3}); do
  python3 run_bench.py run configs/quick.yaml --only atomic,disjoint_strided --out $T/quick-$i \
    --no-report > $T/quick-$i.log 2>&1; tail -n 3 $T/quick-$i.log
done
tar -czf $OUT/round49.tgz -C $T . && rm -rf $T
