#!/usr/bin/env bash
# Round 51's last call (session 55; on the warm H200 after the calls that carried .pk1/ and
# .pk2/, carrying .pk3/ and, for `cand`, the candidate rule's code in .cand/ — `git archive
# <commit> strategies harness bench configs run_bench.py`): with CAND=1, the counted run of RMS
# 16384 × 4096 (configs/targets-narrow.yaml, every mix, every peer) at this tree's rule and then
# at the candidate's, each with every peer in the same run; then the CI gate's baseline
# (bench/device_quick_baseline.sh: two plain runs of configs/quick.yaml) at the code that
# stands — the candidate's with CAND=1.  HEAD_C and CAND_C are the two commits.
# Runs in $OUT/round51b.tgz and $OUT/quick.tgz.
. bench/device_start.sh
. bench/peers_env.sh > $T/peers.log 2>&1
python3 -c "import quack, liger_kernel; print('peers ok')" >> $T/peers.log 2>&1; tail -n 1 $T/peers.log
counted() {   # counted NAME COMMIT
  NORMBENCH_GIT_COMMIT=$2 timeout ${C_S:-150} python3 run_bench.py run configs/targets-narrow.yaml \
    'norm=[rmsnorm]' --shape ${SHAPE_C:-16384x4096} ${C_ARGS:-} --out $T/$1 --no-report > $T/$1.log 2>&1
  echo "== $1 (rc $?)"; tail -n 2 $T/$1.log
}
C=$HEAD_C
if [ "${CAND:-0}" = 1 ]; then
  counted counted-head $HEAD_C
  cp -r .cand/. . && C=$CAND_C
  counted counted-cand $CAND_C
fi
tar -czf $OUT/round51b.tgz -C $T . && rm -rf $T
NORMBENCH_GIT_COMMIT=$C Q_ARGS=--no-report bash bench/device_quick_baseline.sh
