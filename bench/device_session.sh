#!/usr/bin/env bash
# One device call that produces every committed H200 result (run from the repo root there).
# Needs the peers unpacked under /tmp/site (see shared/tools/peer-wheels.sh and README).
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1  # pass NORMBENCH_GIT_COMMIT=<sha>: the copy has no .git
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
for w in .peers-b/*.whl; do python3 -m zipfile -e "$w" /tmp/site; done
R=$OUT/runs; mkdir -p $R
python3 run_bench.py list
echo "== hang test (isolate) on the GPU"
NORMBENCH_PLUGINS=tests.fake_impls timeout 120 python3 run_bench.py run bench/hang.yaml --out $R/hang --isolate --no-report 2>&1 | tail -5
for c in quick peers default seed-worked-example; do
  echo "== $c"; /usr/bin/time -f "wall %e s" timeout 200 python3 run_bench.py run configs/$c.yaml --out $R/h200-$c --no-report 2>&1 | tail -40
done
echo "== fp32 d=65536 correctness"
timeout 60 python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "fp32" 2>&1 | tail -3
tar -czf $OUT/runs.tgz -C $OUT runs && rm -rf $R
