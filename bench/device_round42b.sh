#!/usr/bin/env bash
# (Runs at 434dc8d: `dyn` was removed after round 42; docs/PERF_NOTES.md round 42.)
# Round 42's second call (issue 16; from the repo root on one H200, carrying .pyd/; about 6
# minutes): `dyn`'s run-time tiles drawn two ahead, the second asked of L2.
#  1. The GPU tests -k "tiles_handed_out" at dyn 2 (right against fp64, the same bits in ten
#     calls and from a CUDA graph, the cursor back at zero, each run-time partial row its
#     tile's sums).
#  2. In turn on fresh inputs with the GPU time: the rule against {"dyn": 1}, {"dyn": 2} at
#     RMS 16384 × 4096 bf16/fp32, RMS 65536 × 1024 bf16, LN 16384 × 4096 bf16.
#  3. The timeline of RMS 16384 × 4096 and 65536 × 1024 bf16 with and without {"dyn": 2}.
# Everything lands in $OUT/round42b.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=70}
export AB_GPU=${AB_GPU-1}
gpu_tests 100 "tiles_handed_out and (None-2 or 7-2 or 300-2)"
D='{"dyn": 1}'; D2='{"dyn": 2}'
ab rms4096w rmsnorm 16384x4096 bf16 fp32 '{}' "$D" "$D2"
ab rms1024 rmsnorm 65536x1024 bf16 same '{}' "$D" "$D2"
ab ln4096 layernorm 16384x4096 bf16 same '{}' "$D" "$D2"
timeout ${TL_S:-60} python3 bench/timeline.py --shapes rmsnorm:16384x4096,rmsnorm:65536x1024 \
  --variants 'inter={"interleave":true};dyn2={"interleave":true,"dyn":2}' --n 20 \
  --out $T/timeline.csv > $T/timeline.log 2>&1; echo "== timeline (rc $?)"; tail -n 6 $T/timeline.log
tar -czf $OUT/round42b.tgz -C $OUT t && rm -rf $T
