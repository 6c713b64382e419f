#!/usr/bin/env bash
# Round 28's third call (issue 16; from the repo root on the warm H200 after
# bench/device_round28b.sh, carrying .pk2/; about 2.5 minutes): the counted run with every
# peer of LayerNorm's rows of 16384 with 16-bit activations and an fp32 weight at `half_rows`
# (24 records).  NORMBENCH_GIT_COMMIT from the environment; S1 the run's limit (s);
# SHAPES_16384 to shrink it.  Records and logs under $OUT/runs/, tarred into $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
s16=""; for s in ${SHAPES_16384:-8192x16384 4096x16384}; do s16="$s16 --shape $s"; done
name=h200-targets-widest-16384-lnfp32-$sha
timeout ${S1:-150} python3 run_bench.py run configs/targets-widest.yaml 'norm=[layernorm]' \
  'weight_dtype=[fp32]' 'dtype=[bf16,fp16]' $s16 --out $OUT/runs/$name --resume --no-report \
  > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
