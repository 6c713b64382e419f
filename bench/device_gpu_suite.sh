#!/usr/bin/env bash
# The whole GPU suite (tests/test_gpu.py) at one commit on one H200 (from the repo root,
# carrying .pyd/ — pydantic, which the tests import).  The suite takes longer than one call's
# 600 s run one test at a time, so it is cut into parts by -k, and the parts named in one call
# run side by side, each its own pytest process (the tests check results and bits, not time;
# most of their time is Triton compiling on the CPU, which has 16 cores):
#     bash bench/device_gpu_suite.sh 1 2        # the staged kernels and programmatic dependents; the rest
#     bash bench/device_gpu_suite.sh 1a 1b      # part 1 in two (88 + 106 tests)
#     bash bench/device_gpu_suite.sh 2a 2b      # part 2 in two (99 + 125 tests)
# 1 = 1a + 1b and 2 = 2a + 2b; 1 and 2 cover every test once between them.  Each part's log
# is $OUT/t/gpu-tests-PART.log, all of them in $OUT/gpu-suite.tgz; G_S (seconds, default 540)
# from the environment bounds every part.
. bench/device_start.sh
. bench/peers_env.sh
P1="smem or strided or pdl or interleave"
SPLIT="interleave_right or awkward"
[ $# -gt 0 ] || { echo "usage: bash bench/device_gpu_suite.sh PART... (1 2 1a 1b 2a 2b)" >&2; exit 2; }
for part in "$@"; do
  case $part in
    1) k="$P1" ;;
    1a) k="($P1) and not ($SPLIT)" ;;
    1b) k="($P1) and ($SPLIT)" ;;
    2) k="not ($P1)" ;;
    2a) k="not ($P1) and not awkward" ;;
    2b) k="not ($P1) and awkward" ;;
    *) echo "device_gpu_suite.sh: no part '$part' (1 2 1a 1b 2a 2b)" >&2; exit 2 ;;
  esac
  timeout ${G_S:-540} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "$k" \
    > $T/gpu-tests-$part.log 2>&1 &
done
wait
for part in "$@"; do echo "== part $part"; tail -n 3 $T/gpu-tests-$part.log; done
tar -czf $OUT/gpu-suite.tgz -C $OUT t && rm -rf $T
