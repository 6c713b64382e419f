#!/usr/bin/env bash
# Round 31's first call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic and
# the first piece of the peers' runtime for a counted run in the next call; about 5 minutes):
# the GPU tests that session 26's last commit refactored (test_gpu's partial-row checks through
# _partials_hold_own_rows), then 8 warps instead of 16 for round 30's staged fp32 rows of
# 7168-8192 (`_row_staged`) — both norms, 16384 × 8192 and 16384 × 7168 — and at fp32 RMS 4096
# × 16384 `w_regs` with 8 and with 16 warps, in turn on fresh inputs (bench/ab_repeat.py).
# Everything lands in $OUT/round31.tgz; ROUNDS, REP, A_S, G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
gpu_tests ${G_S:-90} "strided_staged_on_gpu or smem_interleave_on_gpu"
st() {   # st WARPS: round 30's staged fp32 rows of block 8192 at 64 KB ahead (_row_staged)
  echo "{\"block_d\":8192,\"one_chunk\":true,\"num_warps\":$1,\"wide_weight_warps\":16,\"ln_split_warps\":16,\"num_stages\":0,\"inflight\":65536,\"split_inflight\":0,\"ln_inflight\":0,\"split\":false,\"pdl\":true,\"interleave\":true,\"half_rows\":false,\"w_regs\":false,\"rms_split_w_regs\":0,\"staged\":true}"
}
ab rms8192-w8 rmsnorm 16384x8192 fp32 same '{}' "$(st 8)"
ab ln8192-w8 layernorm 16384x8192 fp32 same '{}' "$(st 8)"
ab rms7168-w8 rmsnorm 16384x7168 fp32 same '{}' "$(st 8)"
ab ln7168-w8 layernorm 16384x7168 fp32 same '{}' "$(st 8)"
A_S=110 ab rms16384-wregs rmsnorm 4096x16384 fp32 same '{}' '{"w_regs": true}' \
  '{"w_regs": true, "num_warps": 8}'
tar -czf $OUT/round31.tgz -C $OUT t && rm -rf $T
