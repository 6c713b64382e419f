#!/usr/bin/env bash
# Split the peers' runtime for calls that each carry less (run here, from the repo root):
#     bash bench/peers_split.sh N
# joins the CUTLASS DSL runtime's parts as ../shared/tools/peer-wheels.sh leaves them
# (.peers-a/part-*, .peers-b/part-*), cuts it into N pieces named piece-K-of-N in .pk1/ … .pkN/
# and spreads the small wheels over the folders, largest first into the lightest, so that each
# call carries about the same.  A device call may carry 64 MiB with the working tree: with the
# tree at T MB, choose N so that about (65 + 17) / N + T stays under 64 MiB (the runtime is
# about 65 MB, the wheels 17).  Then carry .pk1, .pk2, … in N calls on a warm machine, the
# last with the real command; bench/peers_env.sh joins the pieces once all have arrived.
set -eu
n=${1:?usage: bash bench/peers_split.sh N}
ls .peers-a/part-* .peers-b/part-* > /dev/null
rm -rf .pk[0-9]* && for k in $(seq 1 "$n"); do mkdir -p ".pk$k"; done
tmp=$(mktemp -d)
cat .peers-a/part-* .peers-b/part-* > "$tmp/runtime.tar.xz"
split -n "$n" -d -a 3 "$tmp/runtime.tar.xz" "$tmp/piece."
k=1
for p in "$tmp"/piece.*; do mv "$p" ".pk$k/piece-$k-of-$n"; k=$((k + 1)); done
rm -rf "$tmp"
# pydantic and what it needs go with the first piece, so that a first call carrying .pk1/
# alone (no .pyd/ beside it: the tree leaves no room) can run the harness and its GPU tests
for w in $(ls -S .peers-a/*.whl .peers-b/*.whl 2>/dev/null); do
  case "$(basename "$w")" in
    pydantic-*|pydantic_core-*|annotated_types-*|typing_extensions-*|typing_inspection-*)
      cp "$w" .pk1/; continue ;;
  esac
  light=$(for k in $(seq 1 "$n"); do echo "$(du -sb ".pk$k" | cut -f1) $k"; done | sort -n | head -1 | cut -d' ' -f2)
  cp "$w" ".pk$light/"
done
tree=$(bash "$(dirname "$0")/device_tree.sh" bytes)
for k in $(seq 1 "$n"); do
  b=$(du -sb ".pk$k" | cut -f1)
  echo ".pk$k: $((b / 1000000)) MB; with the working tree $(( (b + tree) / 1048576 )) MiB of 64"
done
