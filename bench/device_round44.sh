#!/usr/bin/env bash
# (Its tuning options — first_alone, l2_hints, gamma_late — were removed after round 44:
# run it at 41a8a8c, which has them.)
# Round 44's first call (issue 16; from the repo root on one H200, carrying .pyd/; about 7
# minutes): when the staged kernel asks for its rows, and what it tells L2 (docs/PERF_NOTES.md
# round 44).
#  1. The GPU tests -k "first_alone_and_l2_hints": both options the same bits as the rule.
#  2. In turn on fresh inputs with the GPU time (bench/ab_repeat.py): the rule against
#     {"first_alone": true}, {"l2_hints": 2}, {"l2_hints": 3} and both, at the rows of 16384
#     below target at 4096 rows (each with the strategy whose line it is).
# Everything lands in $OUT/round44.tgz; G_S, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=95}
export AB_GPU=${AB_GPU-1}
gpu_tests 150 "first_alone_and_l2_hints"
F='{"first_alone": true}'; L2='{"l2_hints": 2}'; L3='{"l2_hints": 3}'
FL='{"first_alone": true, "l2_hints": 3}'
AB_NAME=disjoint_strided ab ln4096s layernorm 4096x16384 bf16 same '{}' "$F" "$L2" "$L3" "$FL"
AB_NAME=disjoint_smem ab ln4096w layernorm 4096x16384 bf16 fp32 '{}' "$F" "$L3" "$FL"
AB_NAME=disjoint_strided ab rms4096 rmsnorm 4096x16384 bf16 same '{}' "$F" "$L3" "$FL"
tar -czf $OUT/round44.tgz -C $OUT t && rm -rf $T
