#!/usr/bin/env bash
# ./lab bench bf16 [FLAGS] — the CPU's BF16 GEMM rungs side by side: F32 sgemm, BF16 widened
# to F32, VDPBF16PS (AVX512_BF16) and AMX tiles, n = 1024, 2048, 4096 on 1 thread and one per
# core; each result validated bit for bit against its reference first, then GFLOP/s, % of its
# own unit's measured peak and x the F32 rung, with the goals (AMX >= 70% of its peak,
# VDPBF16PS >= 80%) as PASS / NOT MET. FLAGS go to bench_gemm_bf16 (--sizes, --threads,
# --min-time).
set -uo pipefail
BUILD="${1:?usage: tests/bench/bf16.sh BUILD_DIR [bench_gemm_bf16 flags]}"
shift
bin="$BUILD/tests/bench_gemm_bf16"
[ -x "$bin" ] || { echo "bench bf16: $bin was not built (./lab bench builds it)" >&2; exit 1; }
cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "== halfgrad BF16 GEMM rungs on the CPU — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "   machine: $(nproc)-core ${cpu:-x86-64}; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$bin" "$@"
