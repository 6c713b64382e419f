#!/usr/bin/env bash
# The device call that produces the committed H200 runs (run from the repo root there).
# Peers: the CUTLASS DSL runtime travels as a .tar.xz in two parts (a call carries at most
# 64 MiB): an earlier call on the same warm machine copied part one to /tmp/cu13.part.aa
# (bench/device_tune.sh does), this one carries .peers-a2 (the rest) and .peers-b (the
# wheels).  Runs are written under /tmp/runs, which survives to a next call on the same warm
# machine (a cut run is finished there with --resume), and come back as one runs.tgz.
# Pass NORMBENCH_GIT_COMMIT=<sha>: the copy has no .git.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
mkdir -p /tmp/site /tmp/runs
if [ ! -d /tmp/site/nvidia_cutlass_dsl ] && [ -f /tmp/cu13.part.aa ]; then
  cat /tmp/cu13.part.aa .peers-a2/cu13.part.a* | tar -xJ -C /tmp/site
fi
for w in .peers-b/*.whl; do python3 -m zipfile -e "$w" /tmp/site; done
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
python3 run_bench.py list
for c in ${CONFIGS:-peers:200 default:340}; do
  n=${c%%:*}; t=${c##*:}
  echo "== $n"; /usr/bin/time -f "wall %e s" timeout $t python3 run_bench.py run configs/$n.yaml \
    --out /tmp/runs/h200-$n --resume --no-report 2>&1 | tail -45
done
tar -czf $OUT/runs.tgz -C /tmp runs
