#!/usr/bin/env bash
# Round 25's second call (issue 16; from the repo root on the warm H200 of
# bench/device_round25.sh, carrying .pk2/; about 7 minutes): the counted runs of the rows of
# 16384 with every peer at round 24's rules (disjoint_smem's ln_inflight: three stages for
# LayerNorm; no run with the peers since) — LayerNorm 8192 × 16384 and 4096 × 16384, every
# dtype mix (60 records), then RMSNorm at the same shapes (60).  NORMBENCH_GIT_COMMIT from the
# environment (the device's tree has no .git); LN_S and RMS_S each run's time limit, s.
# Each run's records and log land under $OUT/runs/, tarred into $OUT/runs.tgz.
. bench/peers_env.sh     # .pk2/'s pieces: every piece is here now, unpacked into /tmp/site
. bench/device_start.sh
mkdir -p $OUT/runs
for norm in layernorm rmsnorm; do
  [ $norm = layernorm ] && s=${LN_S:-270} || s=${RMS_S:-250}
  timeout $s python3 run_bench.py run configs/targets-widest.yaml "norm=[$norm]" \
    --shape ${SHAPE_A:-8192x16384} --shape ${SHAPE_B:-4096x16384} \
    --out $OUT/runs/h200-targets-widest-16384-$norm --resume --no-report \
    > $OUT/runs/run-$norm.log 2>&1
  echo "== $norm (rc $?)"; tail -n 4 $OUT/runs/run-$norm.log
done
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
