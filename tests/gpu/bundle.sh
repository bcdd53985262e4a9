#!/usr/bin/env bash
# tests/gpu/bundle.sh — pack what tests/gpu/run.sh needs besides nvcc and CMake, for a GPU
# machine that has neither these Debian packages nor a network: the headers, CMake package
# files and shared libraries of fmt, nlohmann-json, CLI11, doctest, stb and zlib, copied from
# this machine's installed packages, and the FashionMNIST files. Run it here (where `./lab
# setup` installed them), then copy the repository with its .gpu-bundle/ folder (git
# ignores it) to the GPU machine: run.sh uses the bundle when it finds one.
#
#   tests/gpu/bundle.sh            writes .gpu-bundle/ in the repository root (about 35 MB)
#
# Layout: .gpu-bundle/sysroot/usr/...   the packages' files, at their usual paths
#         .gpu-bundle/fashion-mnist/    the four .gz files
# Nothing there is unpacked into /: CMake is pointed at sysroot/usr (CMAKE_PREFIX_PATH), and
# the binaries find the bundled libraries through the build tree's RUNPATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/.gpu-bundle"
PACKAGES=(libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev doctest-dev libstb-dev libstb0 zlib1g-dev zlib1g)
DATA="${HG_DATA:-/usr/share/datasets/fashion-mnist}"

command -v dpkg >/dev/null || { echo "bundle.sh: needs dpkg (a Debian machine with the packages installed)" >&2; exit 1; }
for p in "${PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || { echo "bundle.sh: package $p is not installed here; run ./lab setup first" >&2; exit 1; }
done
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
  [ -f "$DATA/$f" ] || { echo "bundle.sh: $DATA/$f is missing (set HG_DATA to the FashionMNIST folder)" >&2; exit 1; }
done

rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp/sysroot" "$OUT.tmp/fashion-mnist"
for p in "${PACKAGES[@]}"; do
  # every file and link the package installed (not its directories, not /usr/share/doc)
  dpkg -L "$p" | while read -r path; do
    case "$path" in /usr/share/doc/*|/usr/share/lintian/*) continue ;; esac
    if [ -f "$path" ] || [ -L "$path" ]; then
      mkdir -p "$OUT.tmp/sysroot$(dirname "$path")"
      cp -P "$path" "$OUT.tmp/sysroot$path"
    fi
  done
done
# A link to an absolute path (zlib's libz.so -> /lib/...) would point outside the bundle on
# the other machine: replace it by a copy of what it points to.
find "$OUT.tmp/sysroot" -type l | while read -r link; do
  target="$(readlink "$link")"
  case "$target" in /*) rm "$link"; cp -L "$target" "$link" ;; esac
done
cp "$DATA"/*.gz "$OUT.tmp/fashion-mnist/"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "bundle.sh: wrote $OUT ($(du -sh "$OUT" | cut -f1)): ${PACKAGES[*]}, FashionMNIST"
