#!/usr/bin/env bash
# The device call for issue 15 (fair comparisons), run from the repo root on the H200:
#   1. the GPU tests of torch_compile, the torch baseline's dtype-mix path, the GPU clock
#      (test_torch_compile.py, test_measure.py, test_peers.py, marked gpu; the peers' full
#      numerics are device_session.sh's), log in $OUT/gpu-tests-fair.log;
#   2. configs/peers.yaml (torch_compile; weight_dtype same and fp32) into /tmp/runs/h200-peers,
#      which survives to a next call on the same warm machine: a cut run is finished there
#      (--resume) by calling this again.  The run comes back as $OUT/h200-peers.tgz.
# The peers' wheels come as bench/peers_env.sh says (carry .peers-a first, then .peers-b).
# Budget: TESTS_S (default 120) + RUN_S (default 300) seconds, about 7 minutes with start-up.
# CONFIG=configs/x.yaml runs another config (a tiny one to try the script under the
# interpreter); SKIP_TESTS=1 goes straight to the run.  Pass NORMBENCH_GIT_COMMIT=<sha>: the
# copy has no .git.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
OUT=${OUT:-/tmp/out}
CONFIG=${CONFIG:-configs/peers.yaml}
NAME=$(basename "$CONFIG" .yaml)
RUN=/tmp/runs/h200-$NAME
mkdir -p /tmp/runs "$OUT"
. bench/peers_env.sh
python3 run_bench.py list 2>&1 | tee "$OUT/list.log"
rc=0
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== GPU tests (fair)"
  timeout "${TESTS_S:-120}" python3 -m pytest -q -p no:cacheprovider -m gpu -rs -s \
    tests/test_torch_compile.py tests/test_measure.py \
    "tests/test_peers.py::test_gpu_torch_baseline_takes_pytorchs_path_for_a_dtype_mix" \
    > "$OUT/gpu-tests-fair.log" 2>&1 || rc=$?
  tail -25 "$OUT/gpu-tests-fair.log"
  echo "tests rc=$rc"
fi
echo "== $CONFIG -> $RUN"
/usr/bin/time -f "wall %e s" timeout "${RUN_S:-300}" python3 run_bench.py run "$CONFIG" \
  --out "$RUN" --resume --no-report > "$OUT/$NAME.log" 2>&1
echo "run rc=$?"
tail -60 "$OUT/$NAME.log"
tar -czf "$OUT/h200-$NAME.tgz" -C /tmp/runs "h200-$NAME"
exit $rc
