#!/usr/bin/env bash
# Round 40's second call (issue 16; from the repo root on one H200, carrying .pyd/; about 3
# minutes): what the reduce adds after disjoint_strided's row kernel at the shapes where a
# reduce that starts on the partial rows as they land (round 40's note, not built) would
# count — the profiler's kernel records (bench/kernel_time.py: after_first_us, the call's end
# less the row kernel's) at RMSNorm and LayerNorm 65536 × 1024, 16384 × 4096 and 32768 × 3072
# bf16, and RMSNorm fp32 16384 × 8192 and 4096 × 16384 (the two fp32 ties with quack).
# Everything lands in $OUT/round40b.tgz; K_S from the environment.
. bench/device_start.sh
. bench/peers_env.sh
kt() {   # kt NAME NORMS SHAPES DTYPE
  timeout ${K_S:-100} python3 bench/kernel_time.py --impls disjoint_strided --shapes $3 \
    --norms $2 --dtype $4 --calls 30 --rep 50 --out $T/$1 > $T/$1.log 2>&1
  echo "== $1 (rc $?)"; tail -n 8 $T/$1.log
}
kt kt-bf16 rmsnorm,layernorm 65536x1024,16384x4096,32768x3072 bf16
kt kt-fp32 rmsnorm 16384x8192,4096x16384 fp32
tar -czf $OUT/round40b.tgz -C $OUT t && rm -rf $T
