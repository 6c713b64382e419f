#!/usr/bin/env bash
# Round 29's third call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic,
# and the first half of quack's runtime for bench/device_round29d.sh in the next call, within
# 30 s; about 2.5 minutes): the GPU tests of disjoint_strided and of `w_regs` at round 29's
# rule.  Everything lands in $OUT/round29c.tgz; G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-150} "strided or w_regs"
tar -czf $OUT/round29c.tgz -C $OUT t && rm -rf $T
