#!/usr/bin/env bash
# Round 30's fourth call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 5 minutes): how far down round 30's staged fp32 rows carry — fp32 rows of 6144 and
# 5120 (block 8192, a quarter and 3/8 of it masked) staged at 64 KB ahead against the rule (the
# row loop there), both norms — and 8 warps instead of 16 for the staged fp32 rows at RMS 16384
# × 8192 (the rule since round 30) and 4096 × 16384 (one stage of a row), in turn on fresh
# inputs (bench/ab_repeat.py); then the per-SM timeline of RMS 4096 and 8192 × 16384 bf16
# (bench/timeline_staged.py --per-sm).  Everything lands in $OUT/round30d.tgz; ROUNDS, REP, A_S from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
st() {   # st WARPS: the staged fp32 rows of block 8192 at 64 KB ahead (round 30's _row_staged)
  echo "{\"block_d\":8192,\"one_chunk\":true,\"num_warps\":$1,\"wide_weight_warps\":16,\"ln_split_warps\":16,\"num_stages\":0,\"inflight\":65536,\"split_inflight\":0,\"ln_inflight\":0,\"split\":false,\"pdl\":true,\"interleave\":true,\"half_rows\":false,\"w_regs\":false,\"rms_split_w_regs\":0,\"staged\":true}"
}
ab rms6144 rmsnorm 16384x6144 fp32 same '{}' "$(st 16)"
ab ln6144 layernorm 16384x6144 fp32 same '{}' "$(st 16)"
ab rms5120 rmsnorm 16384x5120 fp32 same '{}' "$(st 16)"
ab ln5120 layernorm 16384x5120 fp32 same '{}' "$(st 16)"
ab rms8192-w8 rmsnorm 16384x8192 fp32 same '{}' "$(st 8)"
ab rms16384-w8 rmsnorm 4096x16384 fp32 same '{}' '{"num_warps": 8}'
# and round 28's per-SM timeline (bench/device_round28f.sh's): which SMs draw their rows slowly
timeout ${TL_S:-110} python3 bench/timeline_staged.py --n ${N:-30} --out $T/timeline.csv \
  --per-sm $T/per-sm.csv --shapes ${SHAPES:-rmsnorm:4096x16384,rmsnorm:8192x16384} \
  > $T/timeline.log 2>&1
echo "== timeline (rc $?)"; tail -n 8 $T/timeline.log
tar -czf $OUT/round30d.tgz -C $OUT t && rm -rf $T
