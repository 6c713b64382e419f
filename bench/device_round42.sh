#!/usr/bin/env bash
# (Runs at 434dc8d: `dyn` was removed after round 42; docs/PERF_NOTES.md round 42.)
# Round 42's call (issue 16; from the repo root on one H200, carrying .pyd/; about 9
# minutes): `dyn` — the row loop's last D rounds of tiles handed out at run time
# (disjoint_block._run_time_tiles), each tile's sums a partial row of its own.
#  1. The GPU tests -k "tiles_handed_out" (right against fp64, the same bits in ten calls and
#     from a CUDA graph, the cursor back at zero, each run-time partial row its tile's sums).
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py): disjoint_strided's rule
#     against {"dyn": 1}, {"dyn": 2}, {"dyn": 4} at RMS 16384 × 4096 bf16/fp32, RMS 65536 ×
#     1024 bf16, LN 16384 × 4096 bf16, RMS 32768 × 3072 bf16, fp32 RMS 16384 × 4096.
#  3. The per-program timeline (bench/timeline.py) of the rule's schedule with and without
#     {"dyn": 2} at RMS 16384 × 4096 and 65536 × 1024 bf16: where the programs end.
# Everything lands in $OUT/round42.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
export AB_GPU=${AB_GPU-1}
gpu_tests 150 "tiles_handed_out"
D='{"dyn": 1}'; D2='{"dyn": 2}'; D4='{"dyn": 4}'
ab rms4096w rmsnorm 16384x4096 bf16 fp32 '{}' "$D" "$D2" "$D4"
ab rms1024 rmsnorm 65536x1024 bf16 same '{}' "$D" "$D2" "$D4"
ab ln4096 layernorm 16384x4096 bf16 same '{}' "$D" "$D2" "$D4"
ab rms3072 rmsnorm 32768x3072 bf16 same '{}' "$D" "$D2" "$D4"
ab rms4096f rmsnorm 16384x4096 fp32 same '{}' "$D" "$D2"
timeout ${TL_S:-60} python3 bench/timeline.py --shapes rmsnorm:16384x4096,rmsnorm:65536x1024 \
  --variants 'inter={"interleave":true};dyn2={"interleave":true,"dyn":2}' --n 20 \
  --out $T/timeline.csv > $T/timeline.log 2>&1; echo "== timeline (rc $?)"; tail -n 6 $T/timeline.log
tar -czf $OUT/round42.tgz -C $OUT t && rm -rf $T
