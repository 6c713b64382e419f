#!/usr/bin/env bash
# (Its tuning options — first_alone, l2_hints, gamma_late — were removed after round 44:
# run it at 41a8a8c, which has them.)
# Round 44's third call (issue 16; from the repo root on one H200, carrying .pyd/; about 7
# minutes): `gamma_late` — γ loaded after the first rows' copies are asked for
# (docs/PERF_NOTES.md round 44).
#  1. The GPU tests -k "first_alone_and_l2_hints and gamma_late": the same bits as the rule.
#  2. LayerNorm 4096 × 16384 bf16 row by row at the rule and with it (timeline_staged --rows).
#  3. In turn on fresh inputs with the GPU time: the rule against {"gamma_late": true} at the
#     staged shapes below target and at two-part rows (each with the strategy whose line it is).
# Everything lands in $OUT/round44c.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=70}
export AB_GPU=${AB_GPU-1}
gpu_tests 100 "first_alone_and_l2_hints and gamma_late"
G='{"gamma_late": true}'
timeout ${TL_S:-60} python3 bench/timeline_staged.py --shapes layernorm:4096x16384 \
  --names disjoint_strided --rows 31 --n 20 --override "$G" --out $T/rows4096.csv > $T/rows4096.log 2>&1
echo "== rows (rc $?)"; tail -n 3 $T/rows4096.log
AB_NAME=disjoint_strided ab ln4096s layernorm 4096x16384 bf16 same '{}' "$G"
AB_NAME=disjoint_smem ab ln4096w layernorm 4096x16384 bf16 fp32 '{}' "$G"
AB_NAME=disjoint_strided ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$G"
AB_NAME=disjoint_smem ab ln8192w layernorm 8192x16384 bf16 fp32 '{}' "$G"
AB_NAME=disjoint_strided ab ln8192s layernorm 8192x16384 bf16 same '{}' "$G"
AB_NAME=disjoint_strided ab rms12288 rmsnorm 8192x12288 bf16 fp32 '{}' "$G"
tar -czf $OUT/round44c.tgz -C $OUT t && rm -rf $T
