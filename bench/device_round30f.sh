#!/usr/bin/env bash
# Round 30's sixth call (issue 16; from the repo root on the warm H200 right after
# bench/device_round30e.sh, carrying .pk2/): bench/device_round30c.sh's counted run with every
# peer, of fp32 16384 × 7168 (both norms, at STAGE_FROM = 28 KB).  NORMBENCH_GIT_COMMIT and S1
# from the environment.
SHAPE=16384x7168 exec bash "$(dirname "$0")/device_round30c.sh"
