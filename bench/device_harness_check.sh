#!/usr/bin/env bash
# The CUDA check of session 57's harness changes (from the repo root on any card, carrying
# .pk1/ — pydantic; about 3 minutes): SIGINT at a random moment of `run configs/quick.yaml`
# (shortened: timing.rep_ms=20, determinism.repeats=3), ten times on one resumed run directory,
# then the run finished and checked for lost or duplicated records (bench/sigint_loop.py; the
# first seconds are torch's import, where 777b34e holds a signal off); `run --isolate` with a
# plugin (tests.plugin_strategy), whose worker loads it as it starts (9c862e3), --strict; the
# GPU tests of the tools' host time.  Everything lands in $OUT/harness.tgz.  SHAPE_ARGS (e.g.
# "--shape 3x40", its CPU test) is added to every run; ATTEMPTS and the window from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh > $T/peers.log 2>&1
SEED=${SEED:-58} timeout ${L_S:-240} python3 bench/sigint_loop.py configs/quick.yaml $T/sigint \
  ${ATTEMPTS:-10} ${T_MIN:-0.5} ${T_MAX:-12} ${SHAPE_ARGS:-} timing.rep_ms=20 determinism.repeats=3 > $T/sigint.log 2>&1
echo "== sigint loop (rc $?)"; tail -n 3 $T/sigint.log
NORMBENCH_PLUGINS=tests.plugin_strategy timeout ${I_S:-200} python3 run_bench.py run configs/quick.yaml \
  --isolate --only disjoint_block,test_plugin_rows --strict ${SHAPE_ARGS:-} timing.rep_ms=20 determinism.repeats=3 \
  --out $T/isolate --no-report > $T/isolate.log 2>&1
echo "== isolate with a plugin (rc $?)"; tail -n 3 $T/isolate.log
gpu_tests 150 "host_time or ab_repeat"
tar -czf $OUT/harness.tgz -C $T . && rm -rf $T
