#!/usr/bin/env bash
# ./lab bench gemm [FLAGS]  — the GEMM ladder table: every rung validated, then timed, vs cuBLAS.
#   FLAGS go to gemm_ladder: --quick, --all, --shape MxNxK (repeatable), --target-ms MS,
#   --format f32,f16,bf16,tf32,fp8,fp8_e5m2 (the default: all; fp8 needs sm_89+).
# Needs a CUDA build and a GPU. Without a GPU this prints why and exits 1: nothing is measured.
set -uo pipefail
BUILD="${1:?usage: tests/bench/gemm.sh BUILD_DIR [gemm_ladder flags]}"
shift
bin="$BUILD/cuda/gemm_ladder"
if [ ! -x "$bin" ]; then
  echo "bench gemm: $bin was not built: this build has no CUDA (nvcc not found, or HG_CUDA=OFF)" >&2
  exit 1
fi
"$bin" "$@"
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "bench gemm: no GPU on this machine, so no GEMM number was measured" >&2
  exit 1
fi
exit "$rc"
