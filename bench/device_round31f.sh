#!/usr/bin/env bash
# Round 31's last call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic,
# which the tests import, set up by peers_env.sh; about 5 minutes): the GPU tests of every
# staged path at the session's final strategy code — `-k "smem or strided or half or w_regs"`
# (disjoint_smem, disjoint_strided, the halves with and without γ in registers) — since
# launch_meta changed for all of them in round 31.  The log lands in $OUT/round31f.tgz; G_S
# and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-330} "smem or strided or half or w_regs"
tar -czf $OUT/round31f.tgz -C $OUT t && rm -rf $T
