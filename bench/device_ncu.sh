#!/usr/bin/env bash
# One device call that profiles our kernels and the fastest peer's side by side with Nsight
# Compute (run from the repo root there, on one H200; carry part two of the peers' runtime and
# .peers-b after a call that carried part one, as bench/peers_env.sh says).  For each
# implementation and shape, bench/profile_target.py runs warm-up calls and then one call inside
# a profiler range; ncu captures that call's kernels with the clocks left alone
# (--clock-control none, as the device's METHOD.md asks) and writes a CSV of the sections that
# say where time goes: throughput against the peaks, memory traffic, occupancy, warp stalls.
# The question it is for (docs/PERF_NOTES.md, "Not yet measured"): why quack reaches 84 % of
# copy at RMSNorm 65536 × 1024 and our row loop 78 %, and our 75–77 % at 16384 × 4096.
# NCU_METRICS (comma-separated metric names) adds those to every case's CSV (round 44: the
# DRAM bytes written, dram__bytes_write.sum).  Writes $OUT/ncu-<impl>-<norm>-<rows>x<d>.csv and .log.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1
. bench/peers_env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "device_ncu.sh: no ncu on this machine" >&2; exit 2; }
CASES=${CASES:-"disjoint_block:rmsnorm:65536:1024 quack:rmsnorm:65536:1024 disjoint_fused:rmsnorm:16384:4096 quack:rmsnorm:16384:4096"}
# a case: impl:norm:rows:d[:K=V,...] — the last field forced launch parameters (profile_target --set)
for c in $CASES; do
  IFS=: read -r impl norm rows d set <<< "$c"
  name=ncu-$impl-$norm-${rows}x$d${set:+-${set//[=,]/-}}
  timeout ${C_S:-120} "$NCU" --clock-control none --profile-from-start off --csv --page details \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
    --section LaunchStats --section WarpStateStats --section SchedulerStats \
    ${NCU_METRICS:+--metrics "$NCU_METRICS"} \
    python3 bench/profile_target.py --impl "$impl" --norm "$norm" --rows "$rows" --d "$d" \
    ${set:+--set "$set"} \
    > "$OUT/$name.csv" 2> "$OUT/$name.log"
  echo "== $name: exit $? ($(grep -c . "$OUT/$name.csv") csv lines)"; tail -2 "$OUT/$name.log"
done
