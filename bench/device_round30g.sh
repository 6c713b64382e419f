#!/usr/bin/env bash
# Round 30's last call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 4 minutes): the GPU tests of disjoint_strided at the session's final code — `-k
# strided` (its staged rows, the fp32 rows of 7168-8192 staged since round 30, its row loop
# with the tiles dealt round-robin kept there by {stage_from: 0}, w_regs, pdl).  Everything
# lands in $OUT/round30g.tgz; G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-300} "strided"
tar -czf $OUT/round30g.tgz -C $OUT t && rm -rf $T
