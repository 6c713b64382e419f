#!/usr/bin/env bash
# One device call for tuning round 5 (run from the repo root there, on nvidia-h200-x2; about
# 7 minutes).  First the host time per call (alone on the machine), then two halves at once,
# each on its own GPU: GPU 0 the bf16 grid at 16384 × 4096 and 16384 × 8192, then fp16 at the
# two widest shapes; GPU 1 the bf16 grid at 65536 × 1024 and 8192 × 16384, then fp32 at the
# widest shapes and the GPU tests.  Each grid first compiles its configurations in parallel
# processes (--warm-jobs); the peers (bench/peers_env.sh: carry part two and the wheels after a
# call that carried part one) are timed in the same grids.  Everything lands in
# $OUT/tune.tgz.  With one GPU the two halves run one after the other.  The small shapes are
# host-bound; bench/device_session.sh's runs time them, not here, where compiling loads the CPU.
# HOST_ONLY=1: the host probe alone — the first of the two calls, the one carrying part one of
# the peers' runtime.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
T=$OUT/t; mkdir -p $T
. bench/peers_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $T/gpu.txt
[ "${HOST_ONLY:-0}" = 1 ] && {
  CUDA_VISIBLE_DEVICES=0 timeout 60 python3 bench/host.py > $T/host.log 2>&1
  tail -n 25 $T/host.log; tar -czf $OUT/tune.tgz -C $OUT t; exit 0; }
N=$(nvidia-smi -L | wc -l)
TUNE="python3 bench/tune.py --warm-jobs ${J:-12} --names disjoint_block,disjoint_fused"
half0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout ${A_S:-200} $TUNE --out $T/bf16-a --shapes 16384x4096,16384x8192 > $T/bf16-a.log 2>&1
  timeout ${B_S:-100} $TUNE --dtype fp16 --out $T/fp16 --shapes 16384x8192,8192x16384 \
    > $T/fp16.log 2>&1
}
half1() {
  export CUDA_VISIBLE_DEVICES=$(( N > 1 ? 1 : 0 ))
  timeout ${A_S:-200} $TUNE --out $T/bf16-b --shapes 65536x1024,8192x16384 > $T/bf16-b.log 2>&1
  timeout ${B_S:-100} $TUNE --dtype fp32 --out $T/fp32 --shapes 16384x8192,8192x16384 \
    > $T/fp32.log 2>&1
  timeout ${G_S:-200} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py > $T/gpu-tests.log 2>&1
}
if [ "$N" -gt 1 ]; then half0 & half1; wait; else half0; half1; fi
tail -n 3 $T/*.log
tar -czf $OUT/tune.tgz -C $OUT t && rm -rf $T
