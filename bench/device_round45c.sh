#!/usr/bin/env bash
# Round 45's next call, prepared for the next device session (issue 16; from the repo root on
# one H200, carrying .pk1/ — pydantic with the peers' first piece; about 6 minutes): the GPU
# tests of `full_sectors` (-k full_sectors: its cases at fp16 and an fp32 γ, by shuffles and
# through shared memory), then in turn on fresh inputs with GPU time, at the lines where the
# counted run at 22ed27a read `full_sectors` slower: the rule (off there since 6bd4698)
# against the shuffles ({"sectors_off": []}) and the trade through shared memory
# ({"full_sectors": 2, ...}) — RMS 8192 × 16384 fp16/fp32 and bf16/fp32, LN 8192 × 16384
# fp16/fp16 — and at LN 4096 × 16384 bf16, where the shuffles are the rule, the rule against
# the shared-memory trade.  Everything lands in $OUT/round45c.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-4} A_S=${A_S:-75} AB_NAME=disjoint_strided
gpu_tests 150 "full_sectors"
SH='{"sectors_off": []}'
SM='{"full_sectors": 2, "sectors_off": []}'
ab rms8192w16 rmsnorm 8192x16384 fp16 fp32 '{}' "$SH" "$SM"
ab rms8192wb rmsnorm 8192x16384 bf16 fp32 '{}' "$SH" "$SM"
ab ln8192h layernorm 8192x16384 fp16 same '{}' "$SH" "$SM"
ab ln4096s layernorm 4096x16384 bf16 same '{}' '{"full_sectors": 2}'
tar -czf $OUT/round45c.tgz -C $OUT t && rm -rf $T
