#!/usr/bin/env bash
# One device call for tuning round 8 (run from the repo root there, on one H200; about 7
# minutes): first the fused kernel's GPU tests (its grid sync now spans as many programs per
# SM as the driver says fit), then disjoint_fused at 2 and 3 programs per SM against the
# defaults at d ≤ 2048 (bf16; --new-only), then the whole round-7 grid in fp16 at 16384 × 4096
# and 16384 × 8192 (issue 5.5).  One grid at a time on one GPU: every configuration is timed
# alone.  Each grid first compiles its configurations in parallel processes (--warm-jobs).
# torch and liger are timed in the same grids; quack too where an earlier call on this warm
# machine left part one of its runtime (bench/peers_env.sh).  Carry .peers-b: the harness
# needs its pydantic.  Everything lands in $OUT/tune.tgz.  Rounds 4–7 ran other grids (git
# history of this file).
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
T=$OUT/t; mkdir -p $T
. bench/peers_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $T/gpu.txt
timeout ${P_S:-120} python3 -m pytest -q -s tests/test_gpu.py -k fused > $T/gpu-fused.log 2>&1
TUNE="python3 bench/tune.py --warm-jobs ${J:-14} --names disjoint_block,disjoint_fused"
timeout ${A_S:-150} $TUNE --new-only --out $T/bf16-fused \
  --shapes 65536x1024,4096x1024,2048x768,16384x2048 > $T/bf16-fused.log 2>&1
timeout ${B_S:-180} $TUNE --dtype fp16 --out $T/fp16 --shapes 16384x4096,16384x8192 \
  > $T/fp16.log 2>&1
tail -n 3 $T/*.log
tar -czf $OUT/tune.tgz -C $OUT t && rm -rf $T
