#!/usr/bin/env bash
# (Its tuning options — first_alone, l2_hints, gamma_late — were removed after round 44:
# run it at 41a8a8c, which has them.)
# Round 44's second call (issue 16; from the repo root on one H200, carrying .pyd/; about 2
# minutes): LayerNorm and RMSNorm 4096 × 16384 bf16 row by row (`disjoint_strided`) at the rule
# and with `first_alone` (bench/timeline_staged.py --rows 31 --override): does asking for the
# first row alone move the first row's end, when it moved nothing of the call (first call)?
# Everything lands in $OUT/round44b.tgz.
. bench/device_start.sh
. bench/peers_env.sh
F='{"first_alone": true}'
timeout ${TL_S:-150} python3 bench/timeline_staged.py --shapes layernorm:4096x16384,rmsnorm:4096x16384 \
  --names disjoint_strided --rows 31 --n 20 --override "$F" \
  --out $T/rows4096.csv > $T/rows4096.log 2>&1
echo "== rows (rc $?)"; grep -o '"case[^}]*' $T/rows4096.log | sed 's/"per_sm.*//' | cut -c1-700; tail -n 6 $T/rows4096.log
tar -czf $OUT/round44b.tgz -C $OUT t && rm -rf $T
