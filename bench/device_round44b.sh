#!/usr/bin/env bash
# Round 44's second call (issue 16; from the repo root on one H200, carrying .pyd/; about 4
# minutes): round 44's options at 8192 rows of 16384 in turn (bench/ab_repeat.py, GPU time),
# and LayerNorm 4096 × 16384 bf16 row by row at the rule and with `first_alone`
# (bench/timeline_staged.py --rows 31 --override).  Everything lands in $OUT/round44b.tgz.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=95}
export AB_GPU=${AB_GPU-1}
F='{"first_alone": true}'; L3='{"l2_hints": 3}'; FL='{"first_alone": true, "l2_hints": 3}'
AB_NAME=disjoint_smem ab ln8192w layernorm 8192x16384 bf16 fp32 '{}' "$F" "$L3" "$FL"
AB_NAME=disjoint_strided ab ln8192s layernorm 8192x16384 bf16 same '{}' "$F" "$L3" "$FL"
timeout ${TL_S:-100} python3 bench/timeline_staged.py --shapes layernorm:4096x16384,rmsnorm:4096x16384 \
  --names disjoint_strided --rows 31 --n 20 --override "$F" --override "$L3" \
  --out $T/rows4096.csv > $T/rows4096.log 2>&1
echo "== rows (rc $?)"; tail -n 8 $T/rows4096.log
tar -czf $OUT/round44b.tgz -C $OUT t && rm -rf $T
