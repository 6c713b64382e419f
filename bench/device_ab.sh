#!/usr/bin/env bash
# One device call that compares source code rather than launch parameters (issue 16, round 19;
# run from the repo root there, on one H200, peers not needed).  Each grid — a line of $GRIDS:
# `label|tune.py arguments|variants` — times the shipped defaults (`bench/tune.py --round19`)
# with this tree's files (A), then with each variant's files in their place, then with A
# again (the drift between A's two timings is the noise floor of the comparison).  A variant is
# a folder that mirrors the repo (ab/before/strategies/rowgrad.py stands in for
# strategies/rowgrad.py); only the files it holds are swapped, and A's are put back after each.
# Triton's cache is keyed by the source, so each variant compiles its own kernels.
# Everything lands in $OUT/ab.tgz: per grid and variant a tune.csv and a log (A first as a/,
# then each variant by its folder's name, then A again as a2/), gpu.txt, and the files each
# variant swapped in (sha256sum).
. bench/device_start.sh
TUNE="python3 bench/tune.py --round19 --warm-jobs ${J:-14} --rep ${REP:-25} --device ${DEVICE:-cuda}"
swap_in() {   # variant folder: back up the files it replaces, put its own in their place
  (cd "$1" && find . -type f) | while read -r f; do
    mkdir -p "$T/orig/$(dirname "$f")"; cp "$f" "$T/orig/$f"; cp "$1/$f" "$f"
    sha256sum "$1/$f" >> "$T/swapped.txt"
  done
}
swap_out() {  # put A's files back
  (cd "$1" && find . -type f) | while read -r f; do cp "$T/orig/$f" "$f"; done
}
GRIDS=${GRIDS:-"ln-bf16|--norms layernorm --names disjoint_smem,disjoint_strided --shapes 8192x16384,4096x16384,8192x12288,16384x4096,32768x3072,16384x7168,65536x1024|ab/before
ln-fp32w|--norms layernorm --names disjoint_smem,disjoint_strided --weight-dtype fp32 --shapes 8192x16384,32768x3072|ab/before
rms-fp32w|--norms rmsnorm --names disjoint_smem --weight-dtype fp32 --shapes 8192x12288|ab/b0b432c"}
while IFS='|' read -r label args variants; do
  [ -n "$label" ] || continue
  for v in a $variants a2; do
    name=${v##*/}
    case $v in a|a2) ;; *) swap_in "$v" ;; esac
    timeout ${S:-200} $TUNE $args --out $T/$label/$name > $T/$label-$name.log 2>&1
    echo "== $label $name: exit $?"; grep -E "^(disjoint|torch)" $T/$label-$name.log | head -40
    case $v in a|a2) ;; *) swap_out "$v" ;; esac
  done
done <<< "$GRIDS"
tar -czf $OUT/ab.tgz -C $OUT t && rm -rf $T
