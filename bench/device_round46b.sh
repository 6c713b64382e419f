#!/usr/bin/env bash
# Round 46's counted run (issue 16; from the repo root on the warm H200 after the calls that
# carried .pk1/ and .pk2/, this one carrying .pk3/; about 2 minutes): RMSNorm's rows of 16384
# with 16-bit activations and an fp32 γ — 8192 and 4096 rows, bf16 and fp16 — at round 46's
# rule (bf16 widened in pairs no longer at these rows), disjoint_strided and disjoint_smem
# with every peer of configs/targets-widest.yaml (24 records).  NORMBENCH_GIT_COMMIT from the
# environment.  Records and logs under $OUT/runs/, in $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
name=h200-targets-widest-16384-rms-fp32w-${NORMBENCH_GIT_COMMIT:-unknown}
timeout ${S:-300} python3 run_bench.py run configs/targets-widest.yaml 'norm=[rmsnorm]' \
  'dtype=[bf16,fp16]' 'weight_dtype=[fp32]' --shape 8192x16384 --shape 4096x16384 \
  --out $OUT/runs/$name --no-report > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
