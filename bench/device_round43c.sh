#!/usr/bin/env bash
# Round 43's counted run (issue 16; from the repo root on the warm H200 after the calls that
# carried .pk1/ and .pk2/, this one carrying .pk3/; about 3 minutes): LayerNorm's rows of
# 16384 with bf16 activations — a bf16 and an fp32 γ, 8192 and 4096 rows — with every peer,
# at the rule that widens bf16 in pairs (`bf16_pairs`).  NORMBENCH_GIT_COMMIT from the
# environment; S1 the run's limit (s).  Records and logs under $OUT/runs/, in $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
name=h200-targets-widest-16384-ln-bf16-$sha
timeout ${S1:-300} python3 run_bench.py run configs/targets-widest.yaml 'norm=[layernorm]' \
  'weight_dtype=[same,fp32]' 'dtype=[bf16]' --shape 8192x16384 --shape 4096x16384 \
  --out $OUT/runs/$name --resume --no-report > $OUT/runs/$name.log 2>&1
echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
