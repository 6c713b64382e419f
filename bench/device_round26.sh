#!/usr/bin/env bash
# Prepared in session 22 for the next device session (issue 16; from the repo root on one
# H200, carrying .pk1/ — which holds pydantic's wheels since session 22 — for the peers' runs
# of bench/device_round26b.sh in the next call, within 30 s; about 5 minutes): the GPU tests
# that no call has run at one commit since fd28996 — `-k "not (smem or strided or
# interleave)"` (340 s cut them at fd28996 with 106 passed) — at the current rules.
# Everything lands in $OUT/round26.tgz; G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh     # .pk1/'s pieces to /tmp/peers, its pydantic unpacked
gpu_tests ${G_S:-330} "not (smem or strided or interleave)"
tar -czf $OUT/round26.tgz -C $OUT t && rm -rf $T
