# Sourced by the device scripts (bench/device_tune.sh, device_session.sh, device_small.sh,
# device_round22b.sh, device_round23*.sh) on the device, in every call.  The peers' wheels:
# quack's CUTLASS DSL runtime travels as a .tar.xz in two parts, since a call carries at most
# 64 MiB.  A first call carries part one — .peers-a/ as ../shared/tools/peer-wheels.sh makes it, or .peers-a1/ — and this file copies it
# to /tmp; the next call on the same warm machine carries part two and the small wheels —
# .peers-b/ (the tool's layout) or .peers-a2/ + .peers-b/ — and this file unpacks everything
# into /tmp/site, which PYTHONPATH names.  Without them the peers are skipped with a note.
# .peers-b (or .peers-a) also holds pydantic, which the harness itself needs and the device's Python lacks:
# carry it for any run_bench.py call.
# /tmp/site and /tmp/peers unless NB_SITE and NB_PEERS name other folders (a CPU test).
# Two scripts may source this at once on one machine (bench/device_gpu_suite.sh beside a run):
# the unpacking is done under a lock, and what is unpacked is not unpacked again.
NB_SITE=${NB_SITE:-/tmp/site} NB_PEERS=${NB_PEERS:-/tmp/peers}
mkdir -p "$NB_SITE/.unpacked" "$NB_PEERS"
_nb_unpack() {
  # or in N calls, where the working tree leaves less room: .pk1/ … .pkN/ each carry pieces
  # named piece-K-of-N of the runtime's .tar.xz (and any wheels; bench/peers_split.sh N makes
  # them); once all N have arrived they are joined in order and unpacked
  for d in .pk[0-9]; do [ -d "$d" ] && cp "$d"/* $NB_PEERS/; done
  if ! ls -d $NB_SITE/nvidia_cutlass_dsl_libs_cu13-*.dist-info > /dev/null 2>&1; then
    first=$(ls $NB_PEERS/piece-1-of-* 2>/dev/null | head -1)
    if [ -n "$first" ]; then
      n=${first##*-of-}
      if [ "$(ls $NB_PEERS/piece-*-of-$n | wc -l)" = "$n" ]; then
        for k in $(seq 1 $n); do cat $NB_PEERS/piece-$k-of-$n; done | tar -xJ -C $NB_SITE
      fi
    fi
  fi
  [ -d .peers-a ] && cp .peers-a/part-* $NB_PEERS/ && { cp .peers-a/*.whl $NB_PEERS/ 2>/dev/null || true; }
  [ -d .peers-a1 ] && cp .peers-a1/cu13.part.aa $NB_PEERS/
  if ! ls -d $NB_SITE/nvidia_cutlass_dsl_libs_cu13-*.dist-info > /dev/null 2>&1; then
    if ls $NB_PEERS/part-* .peers-b/part-* > /dev/null 2>&1; then
      cat $NB_PEERS/part-* .peers-b/part-* | tar -xJ -C $NB_SITE
    elif [ -f $NB_PEERS/cu13.part.aa ] && [ -d .peers-a2 ]; then
      cat $NB_PEERS/cu13.part.aa .peers-a2/cu13.part.a* | tar -xJ -C $NB_SITE
    fi
  fi
  # wheels: the small ones may travel in either call (part one's leave room for the tree in
  # part two's); unpack whatever has arrived — and .pyd/, pydantic's wheels alone (what the
  # harness needs of the extras, for a call that carries no peers or only their first part)
  # — each once: unpacked again, a wheel's files are rewritten in place under a process that is
  # importing them (session 54: a quick run beside a GPU-suite part, which sources this file
  # again, died with a segmentation fault importing pydantic_core from /tmp/site)
  for w in $NB_PEERS/*.whl .peers-b/*.whl .pyd/*.whl; do
    [ -f "$w" ] && [ ! -e "$NB_SITE/.unpacked/${w##*/}" ] \
      && python3 -m zipfile -e "$w" $NB_SITE && touch "$NB_SITE/.unpacked/${w##*/}"
  done
  return 0
}
if command -v flock > /dev/null; then
  { flock 9 && _nb_unpack; } 9> "$NB_SITE/.lock"
else
  _nb_unpack
fi
unset -f _nb_unpack
# the wheels are CPython 3.12's (../shared/tools/peer-wheels.sh downloads those, the device's
# Python): another Python (this repo's CPU tests of the device scripts) must not import them
if python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))'; then
  export PYTHONPATH=$PWD:$NB_SITE:$NB_SITE/nvidia_cutlass_dsl/dsl_packages
else
  export PYTHONPATH=$PWD
  echo "peers_env.sh: $(python3 -V) here; the carried wheels are for 3.12: not used" >&2
fi
