#!/usr/bin/env bash
# One device call for tuning round 16 (`pdl`) and round 15 (`split`), and the L2-flush check
# (issue 16; run from the repo root there, on one H200, peers not needed: about 9 minutes,
# each step under its own timeout).  First the GPU tests never run before (`pdl`'s bits, the
# split rows, disjoint_smem's paths), then bench/flush_check.py (what do_bench's L2 flush
# costs a sample: the same calls and copies after a dirty flush, a clean one, and back to
# back), then `bench/tune.py --round16` — disjoint_block and disjoint_smem with and without
# `pdl`, beside torch — over issue 16's eight shapes with bf16 weights and four with fp32
# ones, then `--round15` (the split rows) at 8192 × 12288 with both weights.  Everything lands
# in $OUT/round16.tgz (tune.csv and a log per grid, flush.csv/.log, gpu.txt, gpu-tests.log).
# Pass NORMBENCH_GIT_COMMIT=<sha> if the copy has no .git.  Shapes, names, norms and device
# can be changed through the environment (tests/test_tune.py runs this on CPU, tiny; the flush
# check needs a GPU and says so there).  Measured at 3f6d28f: docs/perf/tune-15, tune-16,
# flush-3f6d28f (docs/PERF_NOTES.md, rounds 15 and 16).
. bench/device_start.sh
gpu_tests 130 "smem or pdl"
timeout ${F_S:-90} python3 bench/flush_check.py --out $T/flush.csv > $T/flush.log 2>&1
cat $T/flush.log
TUNE="python3 bench/tune.py --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}
  --norms ${NORMS:-layernorm,rmsnorm} --names ${NAMES:-disjoint_block,disjoint_smem}"
SHAPES=${SHAPES:-8192x16384,4096x16384,8192x12288,16384x8192,16384x7168,16384x4096,32768x3072,65536x1024}
timeout ${A_S:-170} $TUNE --round16 --out $T/r16-bf16 --shapes $SHAPES > $T/r16-bf16.log 2>&1
timeout ${B_S:-80} $TUNE --round16 --weight-dtype fp32 --out $T/r16-fp32w \
  --shapes ${FP32W:-16384x4096,65536x1024,32768x3072,8192x16384} > $T/r16-fp32w.log 2>&1
timeout ${C_S:-40} $TUNE --round15 --out $T/r15-bf16 --shapes ${R15:-8192x12288} > $T/r15-bf16.log 2>&1
timeout ${D_S:-40} $TUNE --round15 --weight-dtype fp32 --out $T/r15-fp32w --shapes ${R15:-8192x12288} \
  > $T/r15-fp32w.log 2>&1
tail -n 4 $T/r1*.log
tar -czf $OUT/round16.tgz -C $OUT t && rm -rf $T
