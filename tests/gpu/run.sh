#!/usr/bin/env bash
# tests/gpu/run.sh — every GPU check of halfgrad, in one go, on a machine with an NVIDIA GPU.
#
#   tests/gpu/run.sh            from the repository root; logs go to build-gpu/logs/
#   OUT=/some/dir tests/gpu/run.sh   also copies the logs there
#
# A GPU machine without the Debian packages (fmt, nlohmann-json, CLI11, doctest, stb, zlib)
# and without FashionMNIST: make .gpu-bundle/ with tests/gpu/bundle.sh on a machine that has
# them and copy it along; this script then configures against it and reads the data from it.
#
# Steps (planned for about 8 minutes on a 16-core machine with one H100/H200-class GPU):
#   1. configure (-DHG_VIEWER=OFF -DHG_CUDA_ARCHS=90 unless HG_CUDA_ARCHS is set) and build
#   2. tests:     every GPU test binary (ctest -L gpu): kernels vs the CPU reference, bit-exact cases
#   3. ladder:    the GEMM ladder driver: validation, then GFLOP/s and % of cuBLAS (chapters 03, 05)
#   4. chapter02: chapter 02 on --device cuda (the MLP, 5 epochs)
#   5. chapter10: chapter 10 on --device cuda: FP32 vs AMP on ResNet-50, one epoch of 10000
#                 images (the full 10-epoch experiment is tests/gpu/resnet50_amp.sh)
#   6. chapters:  chapters 06, 09 and 11 on --device cuda, short runs
# HG_GPU_STEPS="tests ladder" runs only those of steps 2-6 (the build always runs; a second
# call on the same machine reuses build-gpu/). Each step has its own time limit; a failing
# step is reported and the next one still runs. With OUT set, the summary and every step's
# output are appended to $OUT/summary.txt and $OUT/steps.log as they happen, so what ran
# comes back even if the whole command is stopped.
# Exit status: 0 when every step passed, 1 otherwise, 77 when there is no GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${HG_GPU_BUILD_DIR:-$ROOT/build-gpu}"
ARCHS="${HG_CUDA_ARCHS:-90}"
JOBS="${HG_JOBS:-$(nproc 2>/dev/null || echo 4)}"
LOGS="$BUILD/logs"
mkdir -p "$LOGS"
SINK=/dev/null  # where step output is also appended: $OUT/steps.log when OUT is set
if [ -n "${OUT:-}" ]; then mkdir -p "$OUT" && SINK="$OUT/steps.log"; fi
status=0
started=$(date +%s)

log() {
  printf '[run.sh %4ds] %s\n' "$(( $(date +%s) - started ))" "$*" | tee -a "$LOGS/summary.txt"
  if [ -n "${OUT:-}" ]; then printf '[run.sh %4ds] %s\n' "$(( $(date +%s) - started ))" "$*" >>"$OUT/summary.txt"; fi
}
# note LINES...: lines from a step's log worth keeping in the summary
note() { tee -a "$LOGS/summary.txt" | { if [ -n "${OUT:-}" ]; then tee -a "$OUT/summary.txt"; else cat; fi; }; }
want() { [ -z "${HG_GPU_STEPS:-}" ] || [[ " $HG_GPU_STEPS " == *" $1 "* ]]; }

# step NAME LIMIT_SECONDS COMMAND...: run with a time limit, log to $LOGS/NAME.log (and
# $OUT/steps.log), record the result.
step() {
  local name="$1" limit="$2"; shift 2
  log "step $name (limit ${limit}s): $*"
  echo "===== $name: $*" >>"$SINK"
  timeout --kill-after=10 "$limit" "$@" 2>&1 | tee "$LOGS/$name.log" >>"$SINK"
  local rc=${PIPESTATUS[0]}
  if [ $rc -eq 0 ]; then log "step $name: ok"
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then log "step $name: TIMED OUT after ${limit}s"; status=1
  else log "step $name: FAILED (exit $rc), see $LOGS/$name.log"; tail -n 20 "$LOGS/$name.log"; status=1; fi
  return $rc
}

: >"$LOGS/summary.txt"
log "halfgrad GPU checks, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m), $JOBS cores"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | note
else
  log "nvidia-smi not found"
fi

gen=()
command -v ninja >/dev/null && [ ! -f "$BUILD/Makefile" ] && gen=(-G Ninja)
bundle=()
if [ -d "$ROOT/.gpu-bundle/sysroot/usr" ]; then
  bundle=(-DCMAKE_PREFIX_PATH="$ROOT/.gpu-bundle/sysroot/usr")
  export HG_DATA="${HG_DATA:-$ROOT/.gpu-bundle/fashion-mnist}"
  log "using .gpu-bundle/ (libraries from tests/gpu/bundle.sh; data: $HG_DATA)"
fi
step configure 120 cmake -S "$ROOT" -B "$BUILD" "${gen[@]+"${gen[@]}"}" "${bundle[@]+"${bundle[@]}"}" \
  -DHG_VIEWER=OFF -DHG_CUDA=ON -DHG_CUDA_ARCHS="$ARCHS" -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" || exit 1
step build 300 cmake --build "$BUILD" -j "$JOBS" || exit 1

# No GPU visible: say so once and stop (a skipped run never counts as passed).
if "$BUILD/tests/test_cuda_runtime" >"$LOGS/probe.log" 2>&1; [ $? -eq 77 ]; then
  log "$(head -n 1 "$LOGS/probe.log") — nothing to check"
  exit 77
fi

if want tests; then
  step gpu_tests 180 ctest --test-dir "$BUILD" -L gpu --output-on-failure --no-tests=error
  grep -hE '^(NOT OK|GPU:)|checks passed' "$LOGS/gpu_tests.log" | note
fi

if want ladder; then
  step gemm_ladder 240 "$BUILD/cuda/gemm_ladder"
  grep -E '^(GPU|GOAL)|FAILED' "$LOGS/gemm_ladder.log" | note
fi

L="$BUILD/lessons"
if want chapter02; then
  step chapter02_cuda 240 "$L/lesson_02" --device cuda --overwrite
  grep -E '^RESULT' "$LOGS/chapter02_cuda.log" | note
fi

if want chapter10; then
  step chapter10_resnet50_cuda 180 "$L/lesson_10" --device cuda --model resnet50 --epochs 1 \
    --limit-train 10000 --limit-test 2000 --lr 0.01 --runs fp32,amp_f16 --run-name gpu_resnet50 --overwrite --stats-every 0
  grep -E '^RESULT|vs fp32|GPU memory' "$LOGS/chapter10_resnet50_cuda.log" | note
fi

if want chapters; then
  for nn in 06 09 11; do
    step "chapter${nn}_cuda" 60 "$L/lesson_$nn" --device cuda --limit-train 5000 --limit-test 1000 \
      --epochs 1 --run-name "gpu_$nn" --overwrite
    grep -E '^RESULT' "$LOGS/chapter${nn}_cuda.log" | note
  done
fi

log "done: $([ $status -eq 0 ] && echo 'every step passed' || echo 'SOME STEPS FAILED')"
exit $status
