#!/usr/bin/env bash
# Round 35's third call (issue 16; from the repo root on the warm H200 right after
# bench/device_round35b.sh, carrying .pk2/; about 2 minutes): the counted run with every peer
# of configs/general.yaml's one shape the new rule changes, 8192 × 5120 (20 records).
# NORMBENCH_GIT_COMMIT from the environment; S1 the run's limit (s).  Records and log under
# $OUT/runs/, tarred into $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
name=h200-general-5120-${NORMBENCH_GIT_COMMIT:-unknown}
timeout ${S1:-240} python3 run_bench.py run configs/general.yaml --shape 8192x5120 \
  --out $OUT/runs/$name --no-report > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
