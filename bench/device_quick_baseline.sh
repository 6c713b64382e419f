#!/usr/bin/env bash
# The CI gate's baseline, refreshed (from the repo root on the warm H200 after the calls that
# carried the peers — .pk1/ … .pkN/ — or carrying .pyd/ for a run without them; about 2
# minutes): two plain runs of configs/quick.yaml, one after the other, as the workflow
# header's refresh recipe says (`results/h200-quick-runs/run-1`, `run-2`).  Then, if parts are
# named (bench/device_gpu_suite.sh's 1 2 1a 1b 2a 2b), those parts of the GPU suite side by
# side, after the timed runs so that nothing else shares the GPU while they time.
# NORMBENCH_GIT_COMMIT from the environment; Q_ARGS (e.g. --no-report: the reports are made
# here afterwards by `run_bench.py report`) added to both runs.  Runs and logs in $OUT/quick.tgz, the suite's
# logs in $OUT/gpu-suite.tgz.
. bench/peers_env.sh
. bench/device_start.sh
mkdir -p $OUT/quick
for k in 1 2; do
  timeout ${Q_S:-150} python3 run_bench.py run configs/quick.yaml ${Q_ARGS:-} --out $OUT/quick/run-$k \
    > $OUT/quick/run-$k.log 2>&1
  echo "== run-$k (rc $?)"; tail -n 2 $OUT/quick/run-$k.log
done
cp $T/gpu.txt $OUT/quick/
(cd $OUT && tar -czf quick.tgz quick && rm -rf quick)
[ $# -gt 0 ] && bash bench/device_gpu_suite.sh "$@"
exit 0
