#!/usr/bin/env bash
# One device call for a tuning round (run from the repo root there; about 5½ minutes):
# host time per call, then bench/tune.py — the deterministic strategies at every bf16 shape,
# disjoint_block at fp16 and fp32.  Everything lands in $OUT/tune.tgz.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1 PYTHONPATH=$PWD
mkdir -p $OUT/t/a $OUT/t/b $OUT/t/c
# part one of the peers' CUTLASS DSL runtime, kept for bench/device_session.sh's call
[ -d .peers-a1 ] && cp .peers-a1/cu13.part.aa /tmp/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $OUT/t/gpu.txt
timeout 100 python3 -m pytest -q -x -p no:cacheprovider tests/test_gpu.py -k "fused_grid or direct_launch" 2>&1 | tail -15 | tee $OUT/t/pytest.log
timeout 60 python3 bench/host.py 2>&1 | tee $OUT/t/host.log
timeout ${A_S:-170} python3 bench/tune.py --names disjoint_block,disjoint_fused,grouped_atomic,spin_lock --budget-s $(( ${A_S:-170} - 25 )) \
  --shapes 2048x768,8192x16384,65536x1024,16384x4096,4096x1024,16384x8192,4096x4096 --out $OUT/t/a 2>&1 | tee $OUT/t/a/tune.log
for dt in fp16 fp32; do
timeout ${B_S:-40} python3 bench/tune.py --names disjoint_block --norms layernorm --dtype $dt \
  --shapes 16384x4096,65536x1024 --out $OUT/t/$dt 2>&1 | tee $OUT/t/$dt.log
done
tar -czf $OUT/tune.tgz -C $OUT t && rm -rf $OUT/t
