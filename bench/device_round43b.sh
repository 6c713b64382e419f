#!/usr/bin/env bash
# Round 43's second call (issue 16; from the repo root on one H200, carrying .pyd/; about 6
# minutes), after the first (docs/PERF_NOTES.md round 43): in turn on fresh inputs with the
# GPU time (bench/ab_repeat.py), `disjoint_smem`'s LayerNorm rows of 16384
#  * with an fp32 γ at 16 warps (the rule's 8 since tune-14; `bf16_pairs` and `xhat_fma`
#    bring 16 warps to 128 registers and 8 bytes of stack), with γ in registers too (three
#    stages), bf16 and fp16 activations, 8192 and 4096 rows;
#  * bf16 with a bf16 γ at 4096 rows: the options against the rule again, and
#    `disjoint_strided` with them.
# Everything lands in $OUT/round43b.tgz; A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=90}
export AB_GPU=${AB_GPU-1}
W='"wide_weight_warps": 16'; PF='"bf16_pairs": true, "xhat_fma": true'
AB_NAME=disjoint_smem ab ln8192w layernorm 8192x16384 bf16 fp32 '{}' "{$W, $PF}" \
  "{$W, \"w_regs\": true, $PF}" "{$W, \"bf16_pairs\": true}"
AB_NAME=disjoint_smem ab ln8192hw layernorm 8192x16384 fp16 fp32 '{}' "{$W}" \
  "{$W, \"xhat_fma\": true}" '{"xhat_fma": true}'
AB_NAME=disjoint_smem ab ln4096w layernorm 4096x16384 bf16 fp32 '{}' "{$W, $PF}" \
  "{$W, \"w_regs\": true, $PF}"
AB_NAME=disjoint_smem ab ln4096 layernorm 4096x16384 bf16 same '{}' "{$PF}" \
  '{"strategy": "disjoint_strided"}' "{\"strategy\": \"disjoint_strided\", $PF}"
tar -czf $OUT/round43b.tgz -C $OUT t && rm -rf $T
