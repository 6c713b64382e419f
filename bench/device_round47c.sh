#!/usr/bin/env bash
# Round 47's counted run (issue 16; from the repo root on the warm H200 after the calls that
# carried .pk1/ and .pk2/, this one carrying .pk3/; about 4 minutes): LayerNorm's rows of 16384
# with 16-bit activations — 8192 and 4096 rows, bf16 and fp16, their own and an fp32 weight — at
# round 47's rule (the row one past the stages' asked of L2), disjoint_strided and
# disjoint_smem with every peer of configs/targets-widest.yaml (48 records).
# NORMBENCH_GIT_COMMIT from the environment.  Records and logs under $OUT/runs/, in
# $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
name=h200-targets-widest-16384-ln-${NORMBENCH_GIT_COMMIT:-unknown}
timeout ${S:-480} python3 run_bench.py run configs/targets-widest.yaml 'norm=[layernorm]' \
  'dtype=[bf16,fp16]' --shape 8192x16384 --shape 4096x16384 \
  --out $OUT/runs/$name --no-report > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
