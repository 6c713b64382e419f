#!/usr/bin/env bash
# Round 39's call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic; about
# 4 minutes): what holds disjoint_cluster back (round 37: 1.34–1.48× slower than
# disjoint_strided; round 38: the exchange a row ahead no faster).
#  1. bench/kernel_time.py, the profiler's kernel records: disjoint_strided and
#     disjoint_cluster at RMS 4096 and 8192 × 16384 bf16 — the row kernel's fixed part
#     (2·t(4096) − t(8192)) against its part a row.
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py) at RMS 4096 × 16384 bf16:
#     the rule (disjoint_strided), disjoint_cluster at its rule, at 8 warps, with 64 KB and
#     192 KB of x and dy in flight a CTA, and over 33 clusters instead of 66 (half the SMs:
#     twice the rows a cluster — latency-bound if it takes twice as long).
# Everything lands in $OUT/round39.tgz; K_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=150}
export AB_GPU=${AB_GPU-1}
timeout ${K_S:-120} python3 bench/kernel_time.py --impls disjoint_strided,disjoint_cluster \
  --shapes 4096x16384,8192x16384 --norms rmsnorm --dtype bf16 --calls 30 --rep 50 \
  --out $T/kt > $T/kt.log 2>&1; echo "== kt (rc $?)"; tail -n 8 $T/kt.log
CL='"strategy": "disjoint_cluster"'
ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "{$CL}" "{$CL, \"num_warps\": 8}" \
  "{$CL, \"inflight\": 65536}" "{$CL, \"inflight\": 196608}" "{$CL, \"groups\": 33}"
tar -czf $OUT/round39.tgz -C $OUT t && rm -rf $T
