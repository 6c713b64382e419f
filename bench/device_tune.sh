#!/usr/bin/env bash
# One device call for tuning round 7 (run from the repo root there, on one H200; about 7
# minutes): the pipelined row loop (bench/tune.py's grid) at the four large shapes in bf16,
# the two open targets first (65536 × 1024, 16384 × 4096), then fp32 at those two.  One grid
# at a time on one GPU: every configuration is timed alone.  Each grid first compiles its
# configurations in parallel processes (--warm-jobs).  torch and liger are timed in the same
# grids; quack too where an earlier call on this warm machine left part one of its runtime
# (bench/peers_env.sh).  Carry .peers-b: the harness needs its pydantic.  Everything lands in
# $OUT/tune.tgz.  Rounds 4–6 split the grid over two GPUs at once (git history of this file);
# their peers' figures were inflated by it.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
T=$OUT/t; mkdir -p $T
. bench/peers_env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $T/gpu.txt
TUNE="python3 bench/tune.py --warm-jobs ${J:-14} --names disjoint_block,disjoint_fused"
timeout ${A_S:-170} $TUNE --out $T/bf16-a --shapes 65536x1024,16384x4096 > $T/bf16-a.log 2>&1
timeout ${B_S:-150} $TUNE --out $T/bf16-b --shapes 16384x8192,8192x16384 > $T/bf16-b.log 2>&1
timeout ${C_S:-110} $TUNE --dtype fp32 --out $T/fp32 --shapes 65536x1024,16384x4096 \
  > $T/fp32.log 2>&1
tail -n 3 $T/*.log
tar -czf $OUT/tune.tgz -C $OUT t && rm -rf $T
