#!/usr/bin/env bash
# Round 43's fifth call (issue 16; from the repo root on one H200, carrying .pyd/; about 3
# minutes): where a staged program's time goes row by row — bench/timeline_staged.py --rows,
# the kernel's clock after each row (CLOCKS), at LayerNorm and RMSNorm 4096 and 8192 × 16384
# bf16, both staged strategies at their rules.  Everything lands in $OUT/round43d.tgz.
. bench/device_start.sh
. bench/peers_env.sh
for spec in "4096 31" "8192 62"; do
  set -- $spec
  timeout ${TL_S:-120} python3 bench/timeline_staged.py --shapes rmsnorm:${1}x16384,layernorm:${1}x16384 \
    --rows $2 --n 20 --out $T/rows$1.csv > $T/rows$1.log 2>&1
  echo "== rows $1 (rc $?)"; grep -o '"case[^}]*' $T/rows$1.log | sed 's/"per_sm.*//' | cut -c1-900
done
tar -czf $OUT/round43d.tgz -C $OUT t && rm -rf $T
