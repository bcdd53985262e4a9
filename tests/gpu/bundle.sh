#!/usr/bin/env bash
# tests/gpu/bundle.sh — everything tests/gpu/run.sh needs on a GPU machine that has nvcc,
# CMake and a driver but no Debian packages, no network and little time: prebuilt sm_90
# binaries, the libraries they load that such a machine lacks, the FashionMNIST files, and the
# packages' headers for a fallback build there. Run it here, on the CPU machine where `./lab
# setup` installed the packages and nvcc is found; ship .gpu-bundle/ with the repository (git
# ignores it; the device tool's carry list names it: tests/gpu/README.md).
#
#   tests/gpu/bundle.sh             build (HG_CUDA_ARCHS=90, build-gpu-bundle/) and pack .gpu-bundle/
#   tests/gpu/bundle.sh --no-build  pack only the packages and the data (the GPU machine then builds)
#
# Layout: .gpu-bundle/programs.tar.xz  the three folders below, packed (xz: the binaries share
#                                      most of their code, and xz's window sees that; about 3 MiB
#                                      instead of 31); run.sh unpacks it into .gpu-bundle/
#           bin/                       the GPU tests, gemm_ladder, lessons 02 03 05 06 09 10 11 12;
#                                      BUILT says from which commit, for which GPU, with which nvcc
#           lib/                       the shared libraries they load that are not part of the
#                                      C library, the CUDA toolkit or the driver (fmt, zlib, OpenMP)
#           sysroot/usr/               fmt, nlohmann-json, CLI11, doctest, stb, zlib as installed here
#                                      (for run.sh's fallback build: CMAKE_PREFIX_PATH)
#         .gpu-bundle/fashion-mnist/   the four .gz files (already compressed)
# The device tool carries at most 64 MiB with the repository: this script prints the bundle's
# size and the repository's, and fails when the two together pass 60 MiB.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="$ROOT/.gpu-bundle"
BUILD="${HG_GPU_BUNDLE_BUILD_DIR:-$ROOT/build-gpu-bundle}"
PACKAGES=(libfmt-dev libfmt9 nlohmann-json3-dev libcli11-dev doctest-dev libstb-dev libstb0 zlib1g-dev zlib1g)
DATA="${HG_DATA:-/usr/share/datasets/fashion-mnist}"
BUILD_BINARIES=1
for arg in "$@"; do
  case "$arg" in
    --no-build) BUILD_BINARIES=0 ;;
    *) echo "bundle.sh: unknown argument '$arg' (known: --no-build)" >&2; exit 2 ;;
  esac
done

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

if [ $BUILD_BINARIES -eq 1 ]; then
  command -v nvcc >/dev/null || { echo "bundle.sh: nvcc not found: cannot build the GPU binaries (--no-build packs the rest)" >&2; exit 1; }
  targets=(gemm_ladder lesson_02 lesson_03 lesson_05 lesson_06 lesson_09 lesson_10 lesson_11 lesson_12)
  for src in "$ROOT"/tests/gpu/test_*.cu "$ROOT"/tests/gpu/test_*.cpp; do [ -e "$src" ] && targets+=("$(basename "${src%.*}")"); done
  gen=(); command -v ninja >/dev/null && [ ! -f "$BUILD/Makefile" ] && gen=(-G Ninja)
  # sm_90 machine code plus its PTX: the same flags as `HG_CUDA_ARCHS=90 ./lab build`, so the
  # compile cache serves what that build compiled already.
  cmake -S "$ROOT" -B "$BUILD" "${gen[@]+"${gen[@]}"}" -DHG_CUDA=ON -DHG_VIEWER=OFF -DHG_CUDA_ARCHS=90 \
    >"$BUILD.configure.log" 2>&1 \
    || { tail -n 30 "$BUILD.configure.log" >&2; echo "bundle.sh: configure failed" >&2; exit 1; }
  # Chapter 13 on the GPU (a build with MPI and NCCL): NCCL at world size 1, one process, which
  # Open MPI starts as a singleton (no mpirun: the GPU machine has none), isolated (no orted
  # either: run.sh sets OMPI_MCA_ess_singleton_isolated=1).
  if grep -q "NCCL .*: yes" "$BUILD.configure.log"; then targets+=(test_nccl lesson_13)
  else echo "bundle.sh: this build has no NCCL (see $BUILD.configure.log): chapter 13's GPU checks are not bundled" >&2; fi
  cmake --build "$BUILD" -j "${HG_JOBS:-$(nproc)}" --target "${targets[@]}"
  mkdir -p "$OUT.tmp/bin" "$OUT.tmp/lib"
  for t in "${targets[@]}"; do
    f=$(find "$BUILD" -maxdepth 3 -type f -name "$t" -perm -u+x | head -n 1)
    [ -n "$f" ] || { echo "bundle.sh: $t was not built" >&2; exit 1; }
    cp "$f" "$OUT.tmp/bin/$t"
    strip --strip-unneeded "$OUT.tmp/bin/$t"
  done
  # The shared libraries the binaries load, minus what every Linux and every CUDA machine has:
  # the C library and its loader, the C++ runtime, the CUDA runtime and cuBLAS (the GPU machine's
  # own toolkit, found through run.sh's LD_LIBRARY_PATH), the driver, and NCCL (218 MB: run.sh
  # finds the GPU machine's own, in its toolkit or its Python's nvidia-nccl package).
  system_lib() {
    case "$(basename "$1")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libstdc++.so*|libgcc_s.so*) return 0 ;;
      libcudart.so*|libcublas.so*|libcublasLt.so*|libcuda.so*|libnccl.so*) return 0 ;;
    esac
    return 1
  }
  for t in "${targets[@]}"; do ldd "$OUT.tmp/bin/$t"; done | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
    system_lib "$lib" || cp -L "$lib" "$OUT.tmp/lib/"
  done
  # Open MPI loads its components (transports, collectives, the singleton's runtime) from a
  # folder of plugins at MPI_Init; run.sh points OMPI_MCA_mca_base_component_path at lib/openmpi3.
  # Only the plugins that need nothing beyond the libraries bundled here (and Open MPI's own
  # libmca_common_* helpers): not the InfiniBand, UCX, PSM or libfabric ones.
  ompi_plugins=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
  if [ -f "$OUT.tmp/lib/libmpi.so.40" ] && [ -d "$ompi_plugins" ]; then
    mkdir -p "$OUT.tmp/lib/openmpi3"
    for plugin in "$ompi_plugins"/mca_*.so; do
      ok=1; common=()
      while read -r dep; do
        if system_lib "$dep" || [ -f "$OUT.tmp/lib/$(basename "$dep")" ]; then continue; fi
        case "$(basename "$dep")" in libmca_common_sm.so*|libmca_common_ompio.so*|libmca_common_monitoring.so*) common+=("$dep") ;;
                                     *) ok=0 ;; esac
      done < <(ldd "$plugin" | awk '$3 ~ /^\// {print $3} $3 == "not" {print $1}')
      [ $ok -eq 1 ] || continue
      cp -L "$plugin" "$OUT.tmp/lib/openmpi3/"
      for dep in "${common[@]+"${common[@]}"}"; do cp -L "$dep" "$OUT.tmp/lib/"; done
    done
    echo "bundle.sh: Open MPI for a singleton rank: $(ls "$OUT.tmp/lib/openmpi3" | wc -l) of $(ls "$ompi_plugins"/mca_*.so | wc -l) plugins"
  fi
  {
    echo "commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . ':!.gpu-bundle' || echo '+changes'),"
    echo "sm_90, $(nvcc --version | tail -n 1), built $(date -u '+%Y-%m-%d %H:%M UTC') on $(. /etc/os-release; echo "$PRETTY_NAME")"
  } | tr '\n' ' ' >"$OUT.tmp/bin/BUILT"
fi

unpacked=$(du -sb "$OUT.tmp" | cut -f1)
(cd "$OUT.tmp" && tar -cJf programs.tar.xz $(ls -d bin lib sysroot 2>/dev/null) && rm -rf bin lib sysroot)
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
bytes() { du -sb "$1" | cut -f1; }
repo=$(git -C "$ROOT" ls-files -z | (cd "$ROOT" && xargs -0 du -cb 2>/dev/null) | tail -n 1 | cut -f1)
total=$(( $(bytes "$OUT") + repo ))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
echo "bundle.sh: wrote $OUT: $(mib "$(bytes "$OUT")") ($(mib "$unpacked") unpacked)"
echo "  programs.tar.xz: $(mib "$(bytes "$OUT/programs.tar.xz")"): $(tar -tJf "$OUT/programs.tar.xz" | grep -c '^bin/[a-z]') programs"
echo "  fashion-mnist/: $(mib "$(bytes "$OUT/fashion-mnist")")"
echo "  with the repository's tracked files ($(mib "$repo")): $(mib "$total") of the device tool's 64 MiB"
if [ "$total" -gt $(( 60 * 1048576 )) ]; then
  echo "bundle.sh: too large to ship with the repository (over 60 MiB)" >&2
  exit 1
fi
