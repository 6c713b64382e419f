#!/bin/bash
# A sweep as a SLURM job array, one GPU per task, no engine: each task runs its shard, then
# one merge joins them (refused, with the missing cases named, until every shard is complete).
#   sbatch configs/cluster/slurm-array.sh configs/default.yaml runs/default
# then:  python run_bench.py merge runs/default runs/default-{0..7}
# A task that hit its time limit is finished by resubmitting it: the line below resumes.
#SBATCH --array=0-7
#SBATCH --gres=gpu:1
#SBATCH --time=02:00:00
CONFIG=${1:-configs/default.yaml}; OUT=${2:-runs/default}
I=${SLURM_ARRAY_TASK_ID}; N=${SLURM_ARRAY_TASK_COUNT:-8}
RESUME=; [ -f "$OUT-$I/meta.json" ] && RESUME=--resume
python run_bench.py run "$CONFIG" --shard "$I/$N" --out "$OUT-$I" --no-report $RESUME
