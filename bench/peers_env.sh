# Sourced by the device scripts (bench/device_tune.sh, device_session.sh, device_small.sh,
# device_round22b.sh, device_round23*.sh) on the device, in every call.  The peers' wheels:
# quack's CUTLASS DSL runtime travels as a .tar.xz in two parts, since a call carries at most
# 64 MiB.  A first call carries part one — .peers-a/ as ../shared/tools/peer-wheels.sh makes it, or .peers-a1/ — and this file copies it
# to /tmp; the next call on the same warm machine carries part two and the small wheels —
# .peers-b/ (the tool's layout) or .peers-a2/ + .peers-b/ — and this file unpacks everything
# into /tmp/site, which PYTHONPATH names.  Without them the peers are skipped with a note.
# .peers-b (or .peers-a) also holds pydantic, which the harness itself needs and the device's Python lacks:
# carry it for any run_bench.py call.
mkdir -p /tmp/site /tmp/peers
# or in N calls, where the working tree leaves less room: .pk1/ … .pkN/ each carry pieces
# named piece-K-of-N of the runtime's .tar.xz (and any wheels; bench/peers_split.sh N makes
# them); once all N have arrived they are joined in order and unpacked
for d in .pk[0-9]; do [ -d "$d" ] && cp "$d"/* /tmp/peers/; done
if ! ls -d /tmp/site/nvidia_cutlass_dsl_libs_cu13-*.dist-info > /dev/null 2>&1; then
  first=$(ls /tmp/peers/piece-1-of-* 2>/dev/null | head -1)
  if [ -n "$first" ]; then
    n=${first##*-of-}
    if [ "$(ls /tmp/peers/piece-*-of-$n | wc -l)" = "$n" ]; then
      for k in $(seq 1 $n); do cat /tmp/peers/piece-$k-of-$n; done | tar -xJ -C /tmp/site
    fi
  fi
fi
[ -d .peers-a ] && cp .peers-a/part-* /tmp/peers/ && { cp .peers-a/*.whl /tmp/peers/ 2>/dev/null || true; }
[ -d .peers-a1 ] && cp .peers-a1/cu13.part.aa /tmp/peers/
if ! ls -d /tmp/site/nvidia_cutlass_dsl_libs_cu13-*.dist-info > /dev/null 2>&1; then
  if ls /tmp/peers/part-* .peers-b/part-* > /dev/null 2>&1; then
    cat /tmp/peers/part-* .peers-b/part-* | tar -xJ -C /tmp/site
  elif [ -f /tmp/peers/cu13.part.aa ] && [ -d .peers-a2 ]; then
    cat /tmp/peers/cu13.part.aa .peers-a2/cu13.part.a* | tar -xJ -C /tmp/site
  fi
fi
# wheels: the small ones may travel in either call (part one's leave room for the tree in
# part two's); unpack whatever has arrived — and .pyd/, pydantic's wheels alone (what the
# harness needs of the extras, for a call that carries no peers or only their first part)
for w in /tmp/peers/*.whl .peers-b/*.whl .pyd/*.whl; do
  [ -f "$w" ] && python3 -m zipfile -e "$w" /tmp/site
done
# the wheels are CPython 3.12's (../shared/tools/peer-wheels.sh downloads those, the device's
# Python): another Python (this repo's CPU tests of the device scripts) must not import them
if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))'; then
  export PYTHONPATH=$PWD:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
else
  export PYTHONPATH=$PWD
  echo "peers_env.sh: $(python3 -V) here; the carried wheels are for 3.12: not used" >&2
fi
