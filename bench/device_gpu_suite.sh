#!/usr/bin/env bash
# The whole GPU suite (tests/test_gpu.py) at one commit, in two calls on one H200 (from the
# repo root, carrying .pyd/ — pydantic, which the tests import; a call may run 600 s and the
# suite takes longer):
#     bash bench/device_gpu_suite.sh 1    # the staged kernels and the programmatic dependents
#     bash bench/device_gpu_suite.sh 2    # everything else
# Each part's log lands in $OUT/gpu-suite-PART.tgz; G_S (seconds, default 560) from the
# environment.  The two -k expressions cover every test once between them.
. bench/device_start.sh
. bench/peers_env.sh
PART1="smem or strided or pdl or interleave"
case ${1:?usage: bash bench/device_gpu_suite.sh 1|2} in
  1) K="$PART1" ;;
  2) K="not ($PART1)" ;;
  *) echo "device_gpu_suite.sh: part 1 or 2" >&2; exit 2 ;;
esac
gpu_tests ${G_S:-560} "$K"
tar -czf $OUT/gpu-suite-$1.tgz -C $OUT t && rm -rf $T
