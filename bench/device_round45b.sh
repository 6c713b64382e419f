#!/usr/bin/env bash
# Round 45's counted run (issue 16; from the repo root on the warm H200 after the calls that
# carried .pk1/ and .pk2/, this one carrying .pk3/; about 7-8 minutes): the 16-bit lines of
# configs/targets-widest.yaml — rows of 16384 and 12288, bf16 and fp16 activations with a
# weight of their own width and an fp32 one — at round 44's rule (`full_sectors` in
# disjoint_strided's staged rows), disjoint_strided and disjoint_smem with every peer: one run
# a norm (72 records each), LayerNorm's then RMSNorm's, each under its own limit (S1, S2, s).
# A run cut short is finished by a second call on the same warm machine: carry its directory
# back as runs/NAME (the `carry` of the device tool) and it is copied to $OUT/runs/ and
# resumed (a finished one is left as it is).  NORMBENCH_GIT_COMMIT from the environment.
# Records and logs under $OUT/runs/, in $OUT/runs.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
run() {   # run NORM LIMIT: that norm's run into $OUT/runs/NAME, resumed from runs/NAME if carried
  local name=h200-targets-widest-16bit-$1-$sha
  [ -d runs/$name ] && cp -r runs/$name $OUT/runs/
  timeout $2 python3 run_bench.py run configs/targets-widest.yaml "norm=[$1]" \
    'dtype=[bf16,fp16]' 'weight_dtype=[same,fp32]' --out $OUT/runs/$name --resume --no-report \
    >> $OUT/runs/$name.log 2>&1
  echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
}
run layernorm ${S1:-270}
run rmsnorm ${S2:-280}
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
