#!/usr/bin/env bash
# Round 36's second call (issue 16; from the repo root on one H200, carrying .pk1/; about 3
# minutes): the GPU tests of round 36's rule — every partly masked tile of 8192 (4096 < d <
# 8192) with 16-bit activations at 4 stages — in the round-robin cases (LN 3001 × 7168 fp16
# among them: three strategies, three ways of dealing the rows) and every strategy at the
# awkward shapes of 4097-8191 columns (LN 1001 × 6999 bf16 among them); then LN 16384 × 7168 fp16 at the rule against 3 stages,
# in turn (round 36's first call timed bf16 there).  Then, within 30 s, carrying .pk2/:
#     NORMBENCH_GIT_COMMIT=<sha> bash bench/device_round36c.sh
# Everything lands in $OUT/round36b.tgz; A_S, G_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1}
gpu_tests ${G_S:-150} "interleave_right and (case6 or case7 or case8) or awkward and (4097 or 6999 or 7168 or 8191)"
ab ln7168h layernorm 16384x7168 fp16 same '{}' '{"num_stages": 3}'
tar -czf $OUT/round36b.tgz -C $OUT t && rm -rf $T
