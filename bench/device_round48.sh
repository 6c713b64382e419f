#!/usr/bin/env bash
# Round 48 (session 45; from the repo root on one H200, carrying .pyd/ — pydantic — about 5
# minutes): the open measurements of sessions 43–44, then the GPU tests of the one kernel-side
# change since c0f77f1.  Six rounds in turn on fresh inputs, call and GPU time
# (bench/ab_repeat.py --gpu-time), every configuration checked against fp64:
#  1. `atomic` LayerNorm 16384 × 4096 bf16 (the CI baseline's case whose CUDA-graph GPU time went
#     375 → 434 µs between 9aeab51 and c0f77f1) on make_inputs' rows against rows drawn alike
#     (the recipe before c55c96a, '{"inputs": "alike"}'): do the inputs' values move it?
#     disjoint_strided on both, the control.
#  2. the GROUPS cap of tiles dealt round-robin (session 43, `_groups.row_loop_units`), where it
#     binds: disjoint_strided at 512 and 768 × 1024, LayerNorm and RMSNorm bf16, the capped rule
#     (128 / 192 partial rows) against the kernel launched as before the cap ('{"raw_groups":
#     256}': 256 partial rows, the programs past the tiles storing zeros).
#  3. the reduce's tile at the nearest misses of issue 16 by partial rows: fp32 RMSNorm 4096 ×
#     16384 and 16384 × 8192 (GPU-time ties with quack, 0.995× / 0.998×) and RMS 16384 × 4096
#     bf16/fp32 (87.94 % of copy) — the rule (32 columns a program, 4 warps, every partial row
#     in one step) against 64 and 16 columns and 8 warps.
# then 4. the GPU tests `-k "fused or cluster"` (disjoint_fused's grid counters keyed per
# device and stream since 62f2416; the five disjoint_cluster tests session 44's suite did not
# reach).  Everything lands in $OUT/round48.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-75}
ALIKE='{"inputs": "alike"}'
AB_NAME=atomic ab atomic_ln layernorm ${SHAPE_ATOMIC:-16384x4096} bf16 bf16 '{}' "$ALIKE"
ab strided_ln layernorm ${SHAPE_ATOMIC:-16384x4096} bf16 bf16 '{}' "$ALIKE"
RAW='{"raw_groups": 256}'
ab cap_ln layernorm ${SHAPES_CAP:-512x1024,768x1024} bf16 bf16 '{}' "$RAW"
ab cap_rms rmsnorm ${SHAPES_CAP:-512x1024,768x1024} bf16 bf16 '{}' "$RAW"
R64='{"reduce": {"BLOCK_N": 64}}' R16='{"reduce": {"BLOCK_N": 16}}' W8='{"reduce": {"num_warps": 8}}'
ab red_fp32 rmsnorm ${SHAPES_FP32:-4096x16384,16384x8192} fp32 fp32 '{}' "$R64" "$R16" "$W8"
ab red_4096w rmsnorm ${SHAPE_4096:-16384x4096} bf16 fp32 '{}' "$R64" "$R16" "$W8"
gpu_tests ${G_T:-240} "fused or cluster"
tar -czf $OUT/round48.tgz -C $T . && rm -rf $T
