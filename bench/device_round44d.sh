#!/usr/bin/env bash
# Round 44's fourth call (issue 16; from the repo root on one H200, carrying .pyd/; about 1
# minute warm): what the staged programs' first row waits for — LayerNorm and RMSNorm 4096 ×
# 16384 bf16 (`disjoint_strided`) row by row with L2 flushed before each sample (as every
# timing here) and without (bench/timeline_staged.py --rows 31 [--no-flush]): without the
# flush the kernel's code and γ are in L2, the first rows of x and dy are not (the call before
# ended on the last rows).  Everything lands in $OUT/round44d.tgz.
. bench/device_start.sh
. bench/peers_env.sh
for mode in flush no-flush; do
  extra=; [ $mode = no-flush ] && extra=--no-flush
  timeout ${TL_S:-60} python3 bench/timeline_staged.py --shapes layernorm:4096x16384,rmsnorm:4096x16384 \
    --names disjoint_strided --rows 31 --n 20 $extra --out $T/rows-$mode.csv > $T/rows-$mode.log 2>&1
  echo "== $mode (rc $?)"; grep -o '"case[^}]*' $T/rows-$mode.log | sed 's/"per_sm.*//' | cut -c1-600
done
tar -czf $OUT/round44d.tgz -C $OUT t && rm -rf $T
