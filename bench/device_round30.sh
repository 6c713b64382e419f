#!/usr/bin/env bash
# Round 30's first call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 6 minutes): the staged kernel (disjoint_smem's Gluon kernel, rows dealt round-robin)
# at rows of d ≤ 8192 with fp32 activations — a row of 32 KB of x and 32 KB of dy at 8192, as
# a 16-bit row of 16384 — against disjoint_strided's rule (the pipelined row loop), in turn on
# fresh inputs (bench/ab_repeat.py): RMS and LN 16384 × 8192 at 64 and 128 KB in flight, RMS
# 16384 × 7168, 16384 × 4096 and 32768 × 3072 at 128 KB; and `w_regs` (γ in registers) at
# fp32 RMS 4096 × 16384.  Everything lands in $OUT/round30.tgz; ROUNDS, REP, A_S from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
st() {   # st BLOCK_D INFLIGHT: disjoint_smem's rule at that block, staged, round-robin, pdl
  echo "{\"block_d\":$1,\"one_chunk\":true,\"num_warps\":16,\"wide_weight_warps\":16,\"ln_split_warps\":16,\"num_stages\":0,\"inflight\":$2,\"split_inflight\":0,\"ln_inflight\":0,\"split\":false,\"pdl\":true,\"interleave\":true,\"half_rows\":false,\"w_regs\":false,\"rms_split_w_regs\":0,\"staged\":true}"
}
ab rms8192-fp32 rmsnorm 16384x8192 fp32 same '{}' "$(st 8192 65536)" "$(st 8192 131072)"
ab ln8192-fp32 layernorm 16384x8192 fp32 same '{}' "$(st 8192 65536)" "$(st 8192 131072)"
ab rms7168-fp32 rmsnorm 16384x7168 fp32 same '{}' "$(st 8192 131072)"
ab rms4096-fp32 rmsnorm 16384x4096 fp32 same '{}' "$(st 4096 131072)"
ab rms3072-fp32 rmsnorm 32768x3072 fp32 same '{}' "$(st 4096 131072)"
ab rms16384-fp32-wregs rmsnorm 4096x16384 fp32 same '{}' '{"w_regs": true}'
tar -czf $OUT/round30.tgz -C $OUT t && rm -rf $T
