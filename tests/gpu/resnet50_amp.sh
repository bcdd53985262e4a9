#!/usr/bin/env bash
# tests/gpu/resnet50_amp.sh — the classic experiment of the AMP literature on halfgrad's own
# kernels: ResNet-50 on FashionMNIST, FP32 vs AMP (autocast F16 + GradScaler), 10 epochs each
# on all 60000 training images, then AMP again at twice the batch size to compare peak GPU
# memory. Needs a GPU and chapter 10's program: the prebuilt one in .gpu-bundle/bin
# (tests/gpu/bundle.sh), else build-gpu/'s (tests/gpu/run.sh builds there when it has to).
#
#   tests/gpu/resnet50_amp.sh [EPOCHS]      default 10; logs in build-gpu/logs/resnet50_amp*.log
#   OUT=/some/dir tests/gpu/resnet50_amp.sh also copies the logs there
#
# What to read in the output: chapter 10's table (accuracy, precision/recall/F1, s/epoch),
# the line "amp_f16 vs fp32: time x...", and "GPU memory at its peak" for each run.
# --stats-every 0: no gradient histograms, whose copy of the weights would add to the peak.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="${HG_GPU_BUILD_DIR:-$ROOT/build-gpu}"
EPOCHS="${1:-10}"
L10="$ROOT/.gpu-bundle/bin/lesson_10"
if [ -x "$L10" ]; then
  export LD_LIBRARY_PATH="$ROOT/.gpu-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export HG_DATA="${HG_DATA:-$ROOT/.gpu-bundle/fashion-mnist}"
else
  L10="$BUILD/lessons/lesson_10"
fi
[ -x "$L10" ] || { echo "resnet50_amp.sh: no lesson_10: run tests/gpu/bundle.sh (or tests/gpu/run.sh) first" >&2; exit 1; }
mkdir -p "$BUILD/logs"
stamp=$(date +%s)  # a run folder of its own per invocation: an existing one is never overwritten
echo "ResNet-50, FashionMNIST, $EPOCHS epochs, $(date -u '+%Y-%m-%d %H:%M UTC')"
"$L10" --device cuda --model resnet50 --epochs "$EPOCHS" --limit-train -1 --limit-test -1 \
  --lr 0.01 --batch-size 128 --runs fp32,amp_f16 --run-name "resnet50_amp_$stamp" --per-class --stats-every 0 \
  2>&1 | tee "$BUILD/logs/resnet50_amp.log"
rc=${PIPESTATUS[0]}
echo
echo "AMP at twice the batch (256), one epoch: its peak GPU memory next to FP32's at 128 above"
"$L10" --device cuda --model resnet50 --epochs 1 --limit-train -1 --limit-test -1 \
  --lr 0.02 --batch-size 256 --runs amp_f16 --run-name "resnet50_amp_b256_$stamp" --stats-every 0 \
  2>&1 | tee "$BUILD/logs/resnet50_amp_b256.log" | grep -E "^RESULT|GPU memory"
rc2=${PIPESTATUS[0]}
[ -n "${OUT:-}" ] && mkdir -p "$OUT" && cp "$BUILD"/logs/resnet50_amp*.log "$OUT"/
[ "$rc" -ne 0 ] && exit "$rc"
exit "$rc2"
