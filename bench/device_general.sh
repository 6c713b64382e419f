#!/usr/bin/env bash
# The shapes no tuning round chose, in two or three calls on one warm H200 (from the repo root):
#     bash bench/device_general.sh 1   # carrying .pk1/ (pydantic, the peers' first piece):
#                                      # tests/test_gpu.py -k awkward — every strategy compiled
#                                      # at awkward shapes and layouts (about 4 minutes)
#     bash bench/device_general.sh 2   # carrying .pk2/ within 30 s: configs/general.yaml with
#                                      # every peer (200 records); run again to --resume it
#     CONFIG=general-fp bash bench/device_general.sh 2   # the same shapes at fp16 and fp32
#                                      # activations (configs/general-fp.yaml, 300 records)
# Part 1's log lands in $OUT/general-1.tgz; part 2's records and log under /tmp/nb-runs/ (kept
# between calls on the warm machine), tarred into $OUT/runs.tgz after each call.  G_S, S1 (seconds), CONFIG (general) and NORMBENCH_GIT_COMMIT from the environment.
. bench/device_start.sh
. bench/peers_env.sh
case ${1:?usage: bash bench/device_general.sh 1|2} in
  1) gpu_tests ${G_S:-300} "awkward"
     tar -czf $OUT/general-1.tgz -C $OUT t && rm -rf $T ;;
  2) R=/tmp/nb-runs; mkdir -p $R   # outside $OUT, which each call empties: a resume finds it
     C=${CONFIG:-general}; name=h200-$C-${NORMBENCH_GIT_COMMIT:-unknown}
     timeout ${S1:-540} python3 run_bench.py run configs/$C.yaml --out $R/$name \
       --resume --no-report >> $R/$name.log 2>&1
     echo "== $name (rc $?)"; tail -n 2 $R/$name.log
     cp $T/gpu.txt $R/ && rm -rf $T
     tar -czf $OUT/runs.tgz -C $R . ;;
  *) echo "device_general.sh: part 1 or 2" >&2; exit 2 ;;
esac
