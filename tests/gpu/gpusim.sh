#!/usr/bin/env bash
# Runs one GPU test binary on a simulated GPU (GPGPU-Sim, tests/gpu/README.md, "On a simulated
# GPU"): the binary CI built, its kernels executed from their embedded PTX, no GPU needed.
#
#   tests/gpu/gpusim.sh SIMULATOR MEMCPY2D PROGRAM [ARGS...]
#
# SIMULATOR is the simulator's `run` script (../shared/gpgpusim/run beside the repository);
# MEMCPY2D the library that gives the simulator a cudaMemcpy2D of two pitches
# (gpusim_memcpy2d.cpp), preloaded into PROGRAM.
# Exit codes: 0 every check of PROGRAM passed on the simulator; 1 a check failed, the program
# crashed, or it saw no GPU there; 77 (ctest: skipped) no simulator, so nothing ran.
# The program runs with HG_GPU_SIMULATOR=1: the tests then leave out cuBLAS (not simulated)
# and their largest shapes (gpu_test.h, simulated()).
set -u
[ $# -ge 3 ] || { echo "usage: $0 SIMULATOR MEMCPY2D PROGRAM [ARGS...]" >&2; exit 2; }
sim="$1"; memcpy2d="$2"; prog="$3"; shift 3
if [ ! -x "$sim" ]; then
  echo "SKIP: no GPU simulator at $sim (see tests/gpu/README.md, \"On a simulated GPU\")"
  exit 77
fi
[ -x "$prog" ] || { echo "gpusim: no program $prog" >&2; exit 1; }
[ -f "$memcpy2d" ] || { echo "gpusim: no library $memcpy2d" >&2; exit 1; }
memcpy2d="$(cd "$(dirname "$memcpy2d")" && pwd)/$(basename "$memcpy2d")"
prog="$(cd "$(dirname "$prog")" && pwd)/$(basename "$prog")"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/hg-gpusim.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The simulator's lib/ holds its libcudart.so, and libcudart.so.13 (the name the programs ask
# for) should link to it; where a copy turned that link into a text file, the loader stops at
# "file too short". A link of our own, put first on the path by env (the simulator's `run`
# puts its lib/ first), loads the real library either way.
mkdir "$tmp/lib"
ln -s "$(cd "$(dirname "$sim")" && pwd)/lib/libcudart.so" "$tmp/lib/libcudart.so.13"

# The binaries hold PTX for compute_75, compute_80 and compute_90. The simulator parses every
# module its PTX stand-in lists, so list only compute_75's: the Turing-like GPU it models,
# whose PTX has no BF16 or TF32 instructions (which it cannot parse).
# gpusim_ptx_filter.py mends what the simulator computes wrong (F32 -> F16 ties). The program's
# stderr and the simulator's go to GPGPUSIM_LOG.
export GPGPUSIM_MAX_SM=75 HG_GPU_SIMULATOR=1 GPGPUSIM_LOG="$tmp/log"
export GPGPUSIM_PTX_FILTER="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/gpusim_ptx_filter.py"
"$sim" /usr/bin/env LD_LIBRARY_PATH="$tmp/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LD_PRELOAD="$memcpy2d" \
  "$prog" "$@" >"$tmp/out" 2>&1
rc=$?

# stdout mixes the program's lines with the simulator's: show the program's (gpu_test.h's
# format), and on a failure the last of the simulator's too.
grep -aE '^(GPU: |OK     |SKIP: |         mismatch )|NOT OK|checks passed' "$tmp/out"
summary=$(grep -aoE '[0-9]+ of [0-9]+ checks passed' "$tmp/out" | tail -n 1)
if [ $rc = 77 ]; then
  echo "gpusim: $(basename "$prog") saw no GPU on the simulator (exit 77): nothing was checked"
  rc=1
elif [ $rc = 0 ] && { [ -z "$summary" ] || [ "$(echo "$summary" | awk '{print $1}')" != "$(echo "$summary" | awk '{print $3}')" ] \
                       || grep -aq 'NOT OK' "$tmp/out"; }; then
  echo "gpusim: $(basename "$prog") exited 0 without every check passing${summary:+ ($summary)}"
  rc=1
fi
if [ $rc != 0 ]; then
  echo "gpusim: $(basename "$prog") failed (exit $rc); the simulator's last lines:"
  grep -avE '^(OK     |NOT OK|         mismatch )' "$tmp/out" | grep -av '^GPGPU-Sim PTX: Warning' | tail -n 15
  tail -n 15 "$tmp/log"
fi
exit $rc
