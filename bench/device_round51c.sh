#!/usr/bin/env bash
# Round 51c (session 63; from the repo root on the warm H200 after the calls that carried .pk1/
# and .pk2/, carrying .pk3/ and .head/ — `git archive HEAD_C strategies harness configs
# run_bench.py`, the code before the candidate): the candidate rule that stands in this tree —
# after `git revert b01fbc5`, which took it back out until it is counted —
# (disjoint_strided's row loop at 8 warps for 16-bit rows of one whole 4096 tile, both norms;
# round 51's A/B) counted as the table counts it — configs/targets-narrow.yaml at 16384 × 4096,
# every dtype mix, every peer in the same run — against the code before it, per norm: the code
# before (HEAD_C), then the candidate (CAND_C), each its own run directory.  Then, with CAND's
# code back in place, the CI gate's baseline (bench/device_quick_baseline.sh: two plain runs of
# configs/quick.yaml, whose one shape is 16384 × 4096) — unless QUICK=0 (a call of its own then:
# `bash bench/device_quick_baseline.sh` on the same warm machine, the candidate in the tree).
# Exits 3 on another card than an H200.
# NORMS (default "rmsnorm layernorm"), SHAPE_C, C_ARGS, C_S (seconds a run) for the CPU test.
# Runs in $OUT/round51c.tgz and $OUT/quick.tgz.
. bench/device_start.sh
[ "${DEVICE:-cuda}" = cpu ] || grep -q H200 $T/gpu.txt || { echo "NOT-H200"; exit 3; }
. bench/peers_env.sh > $T/peers.log 2>&1
python3 -c "import quack, liger_kernel; print('peers ok')" >> $T/peers.log 2>&1; tail -n 1 $T/peers.log
CODE="strategies harness configs run_bench.py"
CANDT=$(mktemp -d); cp -r $CODE $CANDT/
use() {   # use head|cand: that code in the tree (bench/, this script's folder, is not touched)
  if [ $1 = head ]; then cp -r .head/. .; else cp -r $CANDT/. .; fi
}
counted() {   # counted NAME NORM COMMIT
  NORMBENCH_GIT_COMMIT=$3 timeout ${C_S:-150} python3 run_bench.py run configs/targets-narrow.yaml \
    "norm=[$2]" --shape ${SHAPE_C:-16384x4096} ${C_ARGS:-} --out $T/$1 --no-report > $T/$1.log 2>&1
  echo "== $1 (rc $?)"; tail -n 2 $T/$1.log
}
for norm in ${NORMS:-rmsnorm layernorm}; do
  use head; counted counted-head-$norm $norm $HEAD_C
  use cand; counted counted-cand-$norm $norm $CAND_C
done
use cand; rm -rf $CANDT
tar -czf $OUT/round51c.tgz -C $T . && rm -rf $T
[ "${QUICK:-1}" = 0 ] || NORMBENCH_GIT_COMMIT=$CAND_C Q_ARGS=--no-report bash bench/device_quick_baseline.sh
