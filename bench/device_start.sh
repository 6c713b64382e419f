# Sourced first by the one-call tuning scripts (bench/device_targets.sh, device_round10.sh,
# device_round11.sh), from the repo root on the device: the environment they run in, the
# folder $T under $OUT that their tarball is made of, and the GPU and versions in $T/gpu.txt.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
T=$OUT/t; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $T/gpu.txt
python3 -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)" | tee -a $T/gpu.txt
