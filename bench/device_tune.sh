#!/usr/bin/env bash
# One device call for a tuning round (run from the repo root there; about 9 minutes):
# host time per call, then bench/tune.py for the deterministic strategies on every shape and
# for the nondeterministic ones on the four large shapes.  Everything lands in $OUT/tune.tgz.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1 PYTHONPATH=$PWD
mkdir -p $OUT/t/a $OUT/t/b
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $OUT/t/gpu.txt
timeout 60 python3 bench/host.py 2>&1 | tee $OUT/t/host.log
timeout ${A_S:-330} python3 bench/tune.py --names disjoint_block,disjoint_fused --budget-s $(( ${A_S:-330} - 40 )) \
  --out $OUT/t/a 2>&1 | tee $OUT/t/a/tune.log
timeout ${B_S:-150} python3 bench/tune.py --names grouped_atomic,spin_lock,atomic --norms layernorm \
  --shapes 16384x4096,16384x8192,65536x1024,8192x16384 --budget-s $(( ${B_S:-150} - 40 )) \
  --out $OUT/t/b 2>&1 | tee $OUT/t/b/tune.log
tar -czf $OUT/tune.tgz -C $OUT t && rm -rf $OUT/t
