#!/usr/bin/env bash
# Round 28's last call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 5 minutes): the GPU tests of every staged path at the session's final kernels
# (`-k "smem or strided or interleave or half_rows or pdl"`), since the staged kernel's code
# changed (its whole-row path moved into a branch beside `half_rows`').  Everything lands in
# $OUT/round28e.tgz; G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-400} "smem or strided or interleave or half_rows or pdl"
tar -czf $OUT/round28e.tgz -C $OUT t && rm -rf $T
