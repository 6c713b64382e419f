#!/usr/bin/env bash
# Prepared in session 23 for the next device session (issue 16; from the repo root on one
# H200, carrying .pk1/ — pydantic, and the first half of quack's runtime for
# bench/device_round27c.sh in the next call, within 30 s; about 2.5 minutes): the GPU tests
# of disjoint_strided at round 27's rule (`ln_warps`: 8 warps for its LayerNorm rows of one
# 16384 block with bf16 activations and weight), which no call has run.  Everything lands in
# $OUT/round28.tgz; G_S and K from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-150} "strided"
tar -czf $OUT/round28.tgz -C $OUT t && rm -rf $T
