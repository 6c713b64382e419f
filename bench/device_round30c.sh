#!/usr/bin/env bash
# Round 30's third call (issue 16; from the repo root on the warm H200 right after
# bench/device_round30b.sh, carrying .pk2/; about 2 minutes): the counted run with every peer
# of fp32 16384 × 8192 (SHAPE; bench/device_round30f.sh: 16384 × 7168), both norms, at round
# 30's rule (configs/targets-narrow.yaml, 12 records).  NORMBENCH_GIT_COMMIT from the
# environment; S1 the run's limit (s).  Records and logs under $OUT/runs/, tarred into
# $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
shape=${SHAPE:-16384x8192}
name=h200-targets-narrow-fp32-${shape#*x}-$sha
timeout ${S1:-300} python3 run_bench.py run configs/targets-narrow.yaml 'dtype=[fp32]' \
  --shape $shape --out $OUT/runs/$name --resume --no-report > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
