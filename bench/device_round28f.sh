#!/usr/bin/env bash
# Round 28's timeline call (issue 16; from the repo root on one H200, carrying .pyd/ —
# pydantic; about 2 minutes): bench/timeline_staged.py — each program of the staged kernel's
# start and end on the GPU's clock — for disjoint_smem and disjoint_strided at RMSNorm and
# LayerNorm 4096 and 8192 × 16384 bf16 (where round 27 found 9–21 µs a call that twice the rows
# do not double).  Everything lands in $OUT/round28f.tgz; N, SHAPES and TL_S from the
# environment.
. bench/device_start.sh
. bench/peers_env.sh
timeout ${TL_S:-150} python3 bench/timeline_staged.py --n ${N:-30} --out $T/timeline.csv --per-sm $T/per-sm.csv \
  ${SHAPES:+--shapes $SHAPES} > $T/timeline.log 2>&1
echo "== timeline (rc $?)"; tail -n 12 $T/timeline.log
tar -czf $OUT/round28f.tgz -C $OUT t && rm -rf $T
