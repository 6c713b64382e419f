#!/usr/bin/env bash
# Round 37's timing call (issue 16; from the repo root on one H200, carrying .pyd/ — pydantic;
# about 4 minutes): what round 36 left untimed, each configuration against three stages in
# turn on fresh inputs with the GPU time (bench/ab_repeat.py) —
#   RMSNorm 16384 × 7168 with a bf16 weight and with fp16 (the rule's 4 stages; round 36
#   timed LayerNorm and RMSNorm bf16/fp32), and disjoint_block, which shares the rule, at
#   LayerNorm bf16 and RMSNorm bf16/fp32; then bench/host_cpu.py on the device's own CPU (the
#   Python path of a call with its kernels stubbed: what a small shape pays before the GPU).
# Everything lands in $OUT/round37.tgz; A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
: ${A_S:=65}
export AB_GPU=${AB_GPU-1}
S3='{"num_stages": 3}'
ab rms7168 rmsnorm 16384x7168 bf16 same '{}' "$S3"
ab rms7168h rmsnorm 16384x7168 fp16 same '{}' "$S3"
AB_NAME=disjoint_block ab block_ln7168 layernorm 16384x7168 bf16 same '{}' "$S3"
AB_NAME=disjoint_block ab block_rms7168w rmsnorm 16384x7168 bf16 fp32 '{}' "$S3"
timeout 120 python3 bench/host_cpu.py > $T/host_cpu.log 2>&1; echo "== host_cpu (rc $?)"; tail -n 6 $T/host_cpu.log
tar -czf $OUT/round37.tgz -C $OUT t && rm -rf $T
