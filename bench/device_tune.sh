#!/usr/bin/env bash
# One device call for tuning round 4 (run from the repo root there, on nvidia-h200-x2; about
# 7 minutes).  GPU 0: host time per call, the bf16 grid at the four large shapes, then the GPU
# tests.  GPU 1 at the same time: fp16 and fp32 for the row-loop strategies, then the bf16
# grid at the small shapes (last, when GPU 0's compiling is over: small shapes are host-bound).
# Each grid first compiles its configurations in parallel processes (--warm-jobs).
# Everything lands in $OUT/tune.tgz.  With one GPU the two halves run one after the other.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1 PYTHONPATH=$PWD
T=$OUT/t; mkdir -p $T
# part one of the peers' CUTLASS DSL runtime, kept for bench/device_session.sh's call
[ -d .peers-a1 ] && cp .peers-a1/cu13.part.aa /tmp/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $T/gpu.txt
N=$(nvidia-smi -L | wc -l)
J=${J:-12}
TUNE="python3 bench/tune.py --warm-jobs $J"
half0() {
  export CUDA_VISIBLE_DEVICES=0
  timeout 60 python3 bench/host.py > $T/host.log 2>&1
  timeout ${A_S:-260} $TUNE --budget-s $(( ${A_S:-260} - 40 )) --out $T/bf16 \
    --shapes 8192x16384,16384x4096,16384x8192,65536x1024 > $T/bf16.log 2>&1
  timeout ${G_S:-150} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py > $T/gpu-tests.log 2>&1
}
half1() {
  export CUDA_VISIBLE_DEVICES=$(( N > 1 ? 1 : 0 ))
  for dt in fp16 fp32; do
    timeout ${B_S:-100} $TUNE --names disjoint_block,disjoint_fused --dtype $dt --out $T/$dt \
      --shapes 16384x4096,65536x1024,8192x16384 > $T/$dt.log 2>&1
  done
  timeout ${C_S:-150} $TUNE --budget-s $(( ${C_S:-150} - 30 )) --out $T/small \
    --shapes 2048x768,4096x1024,4096x4096 > $T/small.log 2>&1
}
if [ "$N" -gt 1 ]; then half0 & half1; wait; else half0; half1; fi
tail -n 4 $T/*.log
tar -czf $OUT/tune.tgz -C $OUT t && rm -rf $T
