#!/usr/bin/env bash
# Fuzz the IDX and checkpoint readers with libFuzzer (clang + AddressSanitizer + UBSan).
#
#   tests/fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     default: 60 s each, idx checkpoint
#
# Configures a separate clang build in build-fuzz/ (the normal build stays g++), builds
# fuzz_<target>, and runs each one for SECONDS seeded with the committed corpus
# tests/fuzz/corpus/<target>/. New interesting inputs go to build-fuzz/corpus/<target>/,
# crashes to build-fuzz/artifacts/. A crash makes this script fail; to keep a finding as a
# regression test, copy the file into tests/fuzz/corpus/<target>/ (ctest's fuzz_replay_*
# replays it with the normal compiler).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
SECONDS_PER_TARGET="${1:-60}"
shift || true
TARGETS=("$@")
[ "${#TARGETS[@]}" -gt 0 ] || TARGETS=(idx checkpoint)
BUILD="${HG_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}"
CLANGXX="${CLANGXX:-$(command -v clang++ || true)}"
[ -n "$CLANGXX" ] || { echo "run.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }

cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="$CLANGXX" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DHG_CUDA=OFF -DHG_VIEWER=OFF > "$BUILD.configure.log" 2>&1 \
  || { echo "run.sh: configure failed, see $BUILD.configure.log" >&2; exit 1; }
cmake --build "$BUILD" -j "${HG_JOBS:-2}" --target "${TARGETS[@]/#/fuzz_}"

mkdir -p "$BUILD/artifacts"
status=0
for t in "${TARGETS[@]}"; do
  mkdir -p "$BUILD/corpus/$t"
  echo "== fuzz_$t for ${SECONDS_PER_TARGET}s"
  # -max_len 4096 keeps gzip outputs and inputs small; -timeout flags a hang after 10 s.
  if ! "$BUILD/tests/fuzz_$t" -max_total_time="$SECONDS_PER_TARGET" -max_len=4096 -timeout=10 \
       -print_final_stats=1 -artifact_prefix="$BUILD/artifacts/$t-" \
       "$BUILD/corpus/$t" "$ROOT/tests/fuzz/corpus/$t" 2> "$BUILD/fuzz_$t.log"; then
    echo "fuzz_$t FOUND A PROBLEM: see $BUILD/fuzz_$t.log and $BUILD/artifacts/" >&2
    status=1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb|^#[0-9]+ *DONE" "$BUILD/fuzz_$t.log" || true
done
exit $status
