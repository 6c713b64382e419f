#!/usr/bin/env bash
# Round 31's fourth call (issue 16; from the repo root on the warm H200 right after
# bench/device_round31c.sh, carrying .pk2/; about 4 minutes): the counted run with every peer
# of fp32 4096 × 16384 and 8192 × 16384, both norms, at round 31's rule (fp32 rows of 16384
# by halves, γ in registers; configs/targets-widest.yaml, 24 records).  NORMBENCH_GIT_COMMIT
# from the environment; S1 the run's limit (s).  Records and logs under $OUT/runs/, tarred
# into $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
name=h200-targets-widest-16384-fp32-$sha
timeout ${S1:-330} python3 run_bench.py run configs/targets-widest.yaml 'dtype=[fp32]' \
  --shape 4096x16384 --shape 8192x16384 --out $OUT/runs/$name --resume --no-report \
  > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
