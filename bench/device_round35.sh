#!/usr/bin/env bash
# Round 35's first call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic;
# about 5 minutes): what round 34's general run (results/h200-general-a156a9d) left open.
#  1. The host-bound 2048 × 768 and 4096 × 1024 again, ours against torch and torch_compile
#     (the fastest call there), twice: the general run's first record of each norm (2048 × 768
#     bf16/bf16) spread 11-2032 µs.  Run directories under $OUT/runs/.
#  2. The row loop's masked tiles of 8192 (4096 < d < 8192: 5120 fills 62.5 % of the tile,
#     6144 75 %) at 3, 4 and 5 stages, and 2560's (already 4 stages) at 5, in turn on fresh
#     inputs with the GPU time (bench/ab_repeat.py).
# Everything lands in $OUT/round35.tgz; A_S, ROUNDS, REP, S1 from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
export AB_GPU=${AB_GPU-1}
mkdir -p $T/runs
for k in 1 2; do
  timeout ${S1:-100} python3 run_bench.py run configs/general.yaml --shape 2048x768 \
    --shape 4096x1024 --only disjoint_strided,torch,torch_compile --out $T/runs/small-$k \
    --no-report > $T/runs/small-$k.log 2>&1
  echo "== small-$k (rc $?)"; grep -E "^\[" $T/runs/small-$k.log | grep -v " ok " | head -3
done
S4='{"num_stages": 4}'; S5='{"num_stages": 5}'
ab ln5120 layernorm 8192x5120 bf16 same '{}' "$S4" "$S5"
ab rms5120w rmsnorm 8192x5120 bf16 fp32 '{}' "$S4" "$S5"
ab rms6144 rmsnorm 8192x6144 bf16 same '{}' "$S4" "$S5"
ab ln2560 layernorm 16384x2560 bf16 same '{}' "$S5"
tar -czf $OUT/round35.tgz -C $OUT t && rm -rf $T
