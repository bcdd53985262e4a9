#!/bin/sh
# no_cublas.sh PROGRAM... — each program needs the CUDA runtime (it is a CUDA build) and not
# cuBLAS or cuBLASLt, which cuda/gemm/cublas_on_demand.h opens only when --gemm cublas asks.
status=0
for p in "$@"; do
  needed=$(readelf -d "$p" 2>&1) || { echo "FAIL $p: readelf: $needed"; status=1; continue; }
  case "$needed" in *libcudart*) ;; *) echo "FAIL $p: does not need libcudart (not a CUDA build?)"; status=1; continue ;; esac
  if printf '%s\n' "$needed" | grep -i "NEEDED.*cublas"; then
    echo "FAIL $p links cuBLAS: every start pays for loading it"; status=1
  else
    echo "ok   $p: libcudart, no cuBLAS"
  fi
done
exit $status
