#!/bin/bash
# A sweep as a SLURM job array, one GPU per task, no engine: each task runs its shard, then
# one merge joins them (refused, with the missing cases named, until every shard is complete).
#   sbatch configs/cluster/slurm-array.sh default runs/default 8
# CONFIG (the first argument, default `default`) is a shipped config's name or a file.
# then:  python -m normbench merge runs/default runs/default-{0..7}
# `python -m normbench`: the command from a checkout (its root the working directory) or an
# install alike.
# N (the third argument, default 8) is the number of shards and must match --array=0-(N-1).
# It is an argument, not SLURM_ARRAY_TASK_COUNT: a task that hit its time limit is finished
# by resubmitting it alone (sbatch --array=3 configs/cluster/slurm-array.sh CONFIG OUT 8),
# whose array has one task; the line below resumes it as the same shard of the same N.
#SBATCH --array=0-7
#SBATCH --gres=gpu:1
#SBATCH --time=02:00:00
CONFIG=${1:-default}; OUT=${2:-runs/default}; N=${3:-8}
I=${SLURM_ARRAY_TASK_ID}
RESUME=; [ -f "$OUT-$I/meta.json" ] && RESUME=--resume
python -m normbench run "$CONFIG" --shard "$I/$N" --out "$OUT-$I" --no-report $RESUME
