#!/usr/bin/env bash
# Round 44's eighth call (issue 16; from the repo root on one H200, carrying .pyd/; about 3
# minutes): disjoint_strided's rule with `full_sectors` (round 44) — the GPU tests
# -k "full_sectors or (strided and (pdl or interleave))", then the rule against
# {"full_sectors": false} at LN 4096 × 16384 bf16 in turn (the rule takes it: faster).
# Everything lands in $OUT/round44h.tgz.
. bench/device_start.sh
. bench/peers_env.sh
export AB_GPU=${AB_GPU-1}
gpu_tests 140 "full_sectors or (strided and (pdl or interleave))"
ROUNDS=${ROUNDS:-4} A_S=${A_S:-45} AB_NAME=disjoint_strided ab ln4096s layernorm 4096x16384 bf16 same '{}' '{"full_sectors": false}'
tar -czf $OUT/round44h.tgz -C $OUT t && rm -rf $T
