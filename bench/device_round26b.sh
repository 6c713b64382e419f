#!/usr/bin/env bash
# Prepared in session 22 for the next device session (issue 16; from the repo root on a warm
# H200 after a first call that carried .pk1/ — `bash bench/device_round26.sh` — this one
# carrying .pk2/; about 6 minutes): the counted runs with every peer that the committed ones
# lack —
#   1. LayerNorm's rows of 16384 with a 16-bit weight of the activations' width (bf16/bf16,
#      fp16/fp16; 8192 and 4096 rows: 24 records) at round 25's rule, where disjoint_strided
#      keeps three stages — 0cfdd30's run of it had no quack;
#   2. RMSNorm 16384 × 7168, every mix (30 records) — target 3's misses there (5.6-5.8 %
#      behind 16384 × 8192) compare a run from before round 23's one-step reduce with one
#      after it;
#   3. LayerNorm 16384 × 7168, every mix (30 records; bf16 5.02 % behind 8192, one run).
# NORMBENCH_GIT_COMMIT from the environment (the device's tree has no .git); each run's limit
# S1, S2, S3 (s); SHAPES_16384 and SHAPE_7168 to shrink them.  Records and logs under
# $OUT/runs/, tarred into $OUT/runs.tgz.
. bench/peers_env.sh     # .pk2/'s pieces: with .pk1/'s from the call before, all are here
. bench/device_start.sh
mkdir -p $OUT/runs
sha=${NORMBENCH_GIT_COMMIT:-unknown}
s16=""; for s in ${SHAPES_16384:-8192x16384 4096x16384}; do s16="$s16 --shape $s"; done
run() {   # run NAME LIMIT ARGS...: one run_bench.py run into $OUT/runs/NAME, its log beside
  local name=$1 limit=$2; shift 2
  timeout $limit python3 run_bench.py run "$@" --out $OUT/runs/$name --resume --no-report \
    > $OUT/runs/$name.log 2>&1
  echo "== $name (rc $?)"; tail -n 2 $OUT/runs/$name.log
}
run h200-targets-widest-16384-ln16-$sha ${S1:-130} configs/targets-widest.yaml \
  'norm=[layernorm]' 'weight_dtype=[same]' 'dtype=[bf16,fp16]' $s16
run h200-targets-narrow-rms-7168-$sha ${S2:-150} configs/targets-narrow.yaml 'norm=[rmsnorm]' \
  --shape ${SHAPE_7168:-16384x7168}
run h200-targets-narrow-ln-7168-$sha ${S3:-150} configs/targets-narrow.yaml 'norm=[layernorm]' \
  --shape ${SHAPE_7168:-16384x7168}
cp $T/gpu.txt $OUT/runs/ && rm -rf $T
cd $OUT && tar -czf runs.tgz runs
