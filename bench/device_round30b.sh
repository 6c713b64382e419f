#!/usr/bin/env bash
# Round 30's second call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic and
# the first piece of the peers' runtime for the counted run of the next call; about 4 minutes):
# the GPU tests of the staged paths at round 30's rule (`-k "fp32_rows_of_8192 or
# strided_staged or w_regs"`), then the rule against the row loop it replaced ({"stage_from":
# 0}) at fp32 16384 × 8192, both norms — the adopted code path, not an override of it — and
# fp32 rows of 7168 staged at 64 KB ahead against the rule (the row loop there), both norms.
# Everything lands in $OUT/round30b.tgz; ROUNDS, REP, A_S, G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=80}
gpu_tests ${G_S:-150} "fp32_rows_of_8192 or strided_staged or w_regs"
ab rule8192-rms rmsnorm 16384x8192 fp32 same '{}' '{"stage_from": 0}'
ab rule8192-ln layernorm 16384x8192 fp32 same '{}' '{"stage_from": 0}'
S='{"block_d":8192,"one_chunk":true,"num_warps":16,"wide_weight_warps":16,"ln_split_warps":16,"num_stages":0,"inflight":65536,"split_inflight":0,"ln_inflight":0,"split":false,"pdl":true,"interleave":true,"half_rows":false,"w_regs":false,"rms_split_w_regs":0,"staged":true}'
ab rms7168-64k rmsnorm 16384x7168 fp32 same '{}' "$S"
ab ln7168-64k layernorm 16384x7168 fp32 same '{}' "$S"
tar -czf $OUT/round30b.tgz -C $OUT t && rm -rf $T
