#!/usr/bin/env bash
# ./lab bench peak — the measured peak of each arithmetic unit this CPU has (FP32 FMA,
# VDPBF16PS, AMX TDPBF16PS), one thread and one thread per core, printed with the CPU's name:
# the ceilings every CPU GEMM benchmark divides by (tests/bench/peak.h).
set -uo pipefail
BUILD="${1:?usage: tests/bench/peak.sh BUILD_DIR}"
shift
bin="$BUILD/tests/bench_peak"
[ -x "$bin" ] || { echo "bench peak: $bin was not built (./lab bench builds it)" >&2; exit 1; }
echo "== halfgrad unit peaks — $(date -u '+%Y-%m-%d %H:%M UTC'), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$bin" "$@"
