# Sourced first by the one-call tuning scripts (bench/device_targets.sh, device_round10.sh,
# device_round11.sh), from the repo root on the device: the environment they run in, the
# folder $T under $OUT that their tarball is made of, and the GPU and versions in $T/gpu.txt.
set -u
export PYTHONUNBUFFERED=1 NORMBENCH_QUIET=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
T=$OUT/t; mkdir -p $T
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee $T/gpu.txt
# (the installed distributions' versions, as torch.__version__ and triton.__version__ give them,
# without importing either: two seconds of a script's start on a CPU)
python3 -c "from importlib.metadata import version as v; print('triton', v('triton'), 'torch', v('torch'))" \
  | tee -a $T/gpu.txt
gpu_tests() {   # default seconds, default -k expression: this call's GPU tests into $T/gpu-tests.log
  if [ "${DEVICE:-cuda}" = cpu ]; then   # the scripts' own CPU tests: every GPU test would skip
    echo "DEVICE=cpu: tests/test_gpu.py -k \"${K:-$2}\" not run (each of its tests needs a CUDA GPU)" \
      > $T/gpu-tests.log
  else
    timeout ${G_S:-$1} python3 -m pytest -q -p no:cacheprovider tests/test_gpu.py -k "${K:-$2}" \
      > $T/gpu-tests.log 2>&1
  fi
  tail -n 3 $T/gpu-tests.log
}
ab() {   # ab NAME NORM SHAPES DTYPE WEIGHT CONFIG...: bench/ab_repeat.py of disjoint_strided (or
         # $AB_NAME), configurations timed in turn on fresh inputs, into $T/NAME and its log
         # (AB_GPU=1: the GPU time of each timing too, --gpu-time)
  local name=$1 norm=$2 shapes=$3 dt=$4 wd=$5; shift 5
  timeout ${A_S:-85} python3 bench/ab_repeat.py --name ${AB_NAME:-disjoint_strided} --norm $norm \
    --shapes $shapes --dtype $dt --weight-dtype $wd --rounds ${ROUNDS:-6} --fresh-inputs \
    --rep ${REP:-25} --device ${DEVICE:-cuda} ${AB_GPU:+--gpu-time} --configs "$@" --out $T/$name > $T/$name.log 2>&1
  echo "== $name (rc $?)"; tail -n 6 $T/$name.log
}
