#!/usr/bin/env bash
# Round 44's sixth call (issue 16; from the repo root on one H200, carrying .pyd/; about 3
# minutes): the DRAM bytes of the staged row kernel at LayerNorm and RMSNorm 4096 × 16384 bf16
# (`disjoint_strided`), by Nsight Compute (bench/device_ncu.sh with NCU_METRICS): do the
# partial rows stored at the end (LayerNorm 16.8 MB, RMSNorm 8.4) reach DRAM within the
# kernel, or more than they (dirty dx lines evicted)?  The model's bytes: x and dy read, 134 MB
# each, dx written, 134 MB.  Everything lands in $OUT/round44f.tgz.
export NCU_METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sectors_srcunit_tex_op_write.sum,gpu__time_duration.sum
export CASES="disjoint_strided:layernorm:4096:16384 disjoint_strided:rmsnorm:4096:16384"
mkdir -p $OUT/t
OUT=$OUT/t C_S=${C_S:-100} bash bench/device_ncu.sh
tar -czf $OUT/round44f.tgz -C $OUT t && rm -rf $OUT/t
