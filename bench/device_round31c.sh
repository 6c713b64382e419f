#!/usr/bin/env bash
# Round 31's third call (issue 16; from the repo root on one H200, carrying .pk1/ — pydantic and
# the first piece of the peers' runtime for the counted run of the next call; about 3
# minutes): the GPU tests of the staged paths at round 31's rule (fp32 rows of 16384 by halves
# with γ in registers: `-k "by_halves or strided_staged_on_gpu or smem_interleave_on_gpu"`),
# then the rule against the whole-row stage it replaced ({"one_stage_halves": false}) at fp32
# LN 8192 × 16384 (the fourth line of the two norms and two row counts; the other three were
# timed in the second call), in turn on fresh inputs.  Everything lands in $OUT/round31c.tgz;
# G_S, K, A_S, ROUNDS, REP from the environment.
. bench/device_start.sh
. bench/peers_env.sh
gpu_tests ${G_S:-120} "by_halves or strided_staged_on_gpu or smem_interleave_on_gpu"
A_S=${A_S:-75} ab ln8192-fp32 layernorm 8192x16384 fp32 same '{}' '{"one_stage_halves": false}'
tar -czf $OUT/round31c.tgz -C $OUT t && rm -rf $T
