#!/usr/bin/env bash
# Round 36's counted run (issue 16; from the repo root on the warm H200 of
# bench/device_round36b.sh, carrying .pk2/; about 2 minutes): issue 16's 16384 × 7168 with
# 16-bit activations, both weights, every peer, after round 36's fourth stage there —
#     python run_bench.py run configs/targets-narrow.yaml 'dtype=[bf16, fp16]' --shape 16384x7168
# (fp32 activations at 7168 take the staged kernel: unchanged).  The run directory,
# results/h200-targets-narrow-7168-<commit>, and its log land in $OUT/runs.tgz.
. bench/device_start.sh
. bench/peers_env.sh
R=$OUT/runs; mkdir -p $R
name=h200-targets-narrow-7168-${NORMBENCH_GIT_COMMIT:-unknown}
timeout ${S1:-400} python3 run_bench.py run configs/targets-narrow.yaml 'dtype=[bf16, fp16]' \
  --shape 16384x7168 --out $R/$name --no-report > $R/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 25 $R/$name.log
cp $T/gpu.txt $R/ && rm -rf $T
tar -czf $OUT/runs.tgz -C $R . && rm -rf $R
