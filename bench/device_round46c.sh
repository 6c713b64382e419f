#!/usr/bin/env bash
# Round 46's last call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 3 minutes): `full_sectors` 2 (the trade through shared memory, an option no rule sets)
# against the rule's shuffles at LayerNorm's rows of 16384 with an fp32 γ, where the shuffles
# took 8.7-9.9 % off (round 46) and the lines stand at 84-85 % of copy; and at RMSNorm's rows
# of 16384 bf16/fp32, the sectors on beside the pairs off (0.8 % in round 46's medians, within
# the spread) against the rule, at 8192 and 4096 rows.  In turn on fresh inputs, six rounds,
# GPU time.  Everything lands in $OUT/round46c.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1} ROUNDS=${ROUNDS:-6} A_S=${A_S:-90}
ab ln8192wb layernorm 8192x16384 bf16 fp32 '{}' '{"full_sectors": 2}'
ab ln8192wh layernorm 8192x16384 fp16 fp32 '{}' '{"full_sectors": 2}'
ab rms8192wb rmsnorm 8192x16384 bf16 fp32 '{}' '{"sectors_off": ["ln_fp16"]}'
ab rms4096wb rmsnorm 4096x16384 bf16 fp32 '{}' '{"sectors_off": ["ln_fp16"]}'
tar -czf $OUT/round46c.tgz -C $T . && rm -rf $T
