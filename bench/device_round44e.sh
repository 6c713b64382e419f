#!/usr/bin/env bash
# (Its tuning options — first_alone, l2_hints, gamma_late — were removed after round 44:
# run it at 41a8a8c, which has them.)
# Round 44's fifth call (issue 16; from the repo root on one H200, carrying .pyd/; about 1
# minute warm): where a staged program's first rows spend their time — each row's copies
# ahead asked for, the row waited for, its sums, its dx (bench/timeline_staged.py --rows
# --phases: the kernel's CLOCKS 2) — at LayerNorm and RMSNorm 4096 × 16384 bf16
# (`disjoint_strided`, also with `first_alone`) and LayerNorm 8192 × 16384 bf16 with an fp32 γ
# (`disjoint_smem`).  Everything lands in $OUT/round44e.tgz.
. bench/device_start.sh
. bench/peers_env.sh
timeout ${TL_S:-70} python3 bench/timeline_staged.py --shapes layernorm:4096x16384,rmsnorm:4096x16384 \
  --names disjoint_strided --rows 31 --phases --n 20 --override '{"first_alone": true}' \
  --out $T/phases4096.csv > $T/phases4096.log 2>&1
echo "== 4096 (rc $?)"; grep -o '"case[^}]*' $T/phases4096.log | sed 's/"per_sm.*//' | cut -c1-1500
timeout ${TL_S:-70} python3 bench/timeline_staged.py --shapes layernorm:8192x16384 --weight-dtype fp32 \
  --names disjoint_smem --rows 62 --phases --n 20 --out $T/phases8192w.csv > $T/phases8192w.log 2>&1
echo "== 8192w (rc $?)"; grep -o '"case[^}]*' $T/phases8192w.log | sed 's/"per_sm.*//' | cut -c1-1500
tar -czf $OUT/round44e.tgz -C $OUT t && rm -rf $T
