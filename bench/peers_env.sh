# Sourced by the device scripts (bench/device_tune.sh, bench/device_session.sh) on the device.
# The peers' wheels: the CUTLASS DSL runtime travels as a .tar.xz in two parts (a call carries
# at most 64 MiB): an earlier call on the same warm machine carried .peers-a1 and copied part
# one to /tmp/cu13.part.aa; the calling one carries .peers-a2 (the rest) and .peers-b (the
# wheels).  All land in /tmp/site, which PYTHONPATH names; without them the peers are skipped
# with a note (quack needs all three parts, liger only .peers-b).  .peers-b also holds
# pydantic, which the harness itself needs and the device's Python lacks: carry it for any
# run_bench.py call.
mkdir -p /tmp/site
if [ ! -d /tmp/site/nvidia_cutlass_dsl ] && [ -f /tmp/cu13.part.aa ] && [ -d .peers-a2 ]; then
  cat /tmp/cu13.part.aa .peers-a2/cu13.part.a* | tar -xJ -C /tmp/site
fi
if [ -d .peers-b ]; then
  for w in .peers-b/*.whl; do python3 -m zipfile -e "$w" /tmp/site; done
fi
export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
