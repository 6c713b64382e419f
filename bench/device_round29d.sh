#!/usr/bin/env bash
# Round 29's fourth call (issue 16; from the repo root on the warm H200 after
# bench/device_round29c.sh, carrying .pk2/; about 3 minutes): the counted run with every peer
# of RMSNorm 8192 × 12288, every dtype mix, at round 29's rule (30 records).
# NORMBENCH_GIT_COMMIT from the environment; S1 the run's limit (s); SHAPES to change it.
# Records and logs under $OUT/runs/, tarred into $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
sh=""; for s in ${SHAPES:-8192x12288}; do sh="$sh --shape $s"; done
name=h200-targets-widest-12288-rms-$sha
timeout ${S1:-240} python3 run_bench.py run configs/targets-widest.yaml 'norm=[rmsnorm]' $sh \
  --out $OUT/runs/$name --resume --no-report > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
