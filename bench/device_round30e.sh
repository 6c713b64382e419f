#!/usr/bin/env bash
# Round 30's fifth call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic and
# the first piece of the peers' runtime for the counted run of the next call; about 3.5
# minutes): the GPU tests of the staged fp32 rows at round 30's rule (STAGE_FROM = 28 KB: fp32
# rows of 7168 to 8192), then round 28's per-SM timeline (bench/timeline_staged.py --per-sm,
# whose wrapper lacked round 29's W_REGS in the fourth call) of RMS 4096 and 8192 × 16384 bf16.
# Everything lands in $OUT/round30e.tgz; G_S, K, TL_S, N and SHAPES from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-90} "wide_fp32_rows or strided_staged"
timeout ${TL_S:-110} python3 bench/timeline_staged.py --n ${N:-30} --out $T/timeline.csv \
  --per-sm $T/per-sm.csv --shapes ${SHAPES:-rmsnorm:4096x16384,rmsnorm:8192x16384} \
  > $T/timeline.log 2>&1
echo "== timeline (rc $?)"; tail -n 8 $T/timeline.log
tar -czf $OUT/round30e.tgz -C $OUT t && rm -rf $T
