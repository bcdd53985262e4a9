#!/usr/bin/env bash
# The tour (./lab run), in two parts:
#   formats   chapter 04's table of number formats, and its examples of overflow, underflow and
#             lost precision in FP16 (chapter 04's program needs only the formats library, so
#             ./lab run builds it in seconds and shows this while the engine compiles)
#   training  the same MLP trained for one epoch on a slice of FashionMNIST three ways — FP32
#             and AMP (chapter 10), naive FP16 (chapter 06) — then a comparison table with each
#             time as a multiple of FP32's, and where the run logs are. The epochs are the ones
#             `./lab bench amp` times (10000 images, batch 128, no gradient statistics), so the
#             two agree.
# Usage: lessons/tour.sh BUILD_DIR [formats|training|all]   (all: the default; the training
# part takes about half a minute on 2 cores; HG_TOUR_LIMIT=N trains on the first N images
# instead, -1 for all 60000)
set -euo pipefail
BUILD="${1:?usage: tour.sh BUILD_DIR [formats|training|all]}"
PART="${2:-all}"
LIMIT="${HG_TOUR_LIMIT:-10000}"
case "$PART" in
  formats) programs=(04) ;;
  training) programs=(06 10) ;;
  all) programs=(04 06 10) ;;
  *) echo "tour: unknown part '$PART' (formats, training or all)" >&2; exit 2 ;;
esac
for n in "${programs[@]}"; do
  [ -x "$BUILD/lessons/lesson_$n" ] || { echo "tour: $BUILD/lessons/lesson_$n is missing; run ./lab build" >&2; exit 1; }
done

formats() {
  echo "halfgrad tour, part 1: the number formats (chapter 04: ./lab lesson 04)"
  echo
  "$BUILD/lessons/lesson_04"
}

training() {
  OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

  if [ "$LIMIT" = "-1" ]; then what="all 60000"; else what="the first $LIMIT"; fi
  echo "halfgrad tour, part 2: one MLP, one epoch on $what FashionMNIST training images, four precisions"
  echo "(AMP's speed comes from tensor cores: units that multiply 16-bit tiles at several times F32's"
  echo " rate — a GPU's, or the BF16 unit of some CPUs (AMX, AVX512_BF16): chapter 05. F16 has no such"
  echo " unit on a CPU: every F16 value is converted to F32 and back in software, so F16 costs time"
  echo " here. The line 'on the CPU:' below says what this CPU does with BF16.)"
  echo
  # The same runs as ./lab bench amp: --stats-every 0 (gradient statistics cost time), test on 1000.
  common=(--epochs 1 --limit-train "$LIMIT" --limit-test 1000 --stats-every 0 --run-name tour_mlp --overwrite)
  echo "-- FP32, AMP F16 (autocast + GradScaler) and AMP BF16 (autocast; chapters 10, 11: ./lab lesson 10) --"
  "$BUILD/lessons/lesson_10" "${common[@]}" --runs fp32,amp_f16,amp_bf16 | tee "$OUT/10.txt" | grep -E "epoch 1|^on the CPU:"
  echo
  echo "-- naive FP16: every tensor F16 (chapter 06: ./lab lesson 06) --"
  "$BUILD/lessons/lesson_06" "${common[@]}" --only fp16 | tee "$OUT/06.txt" | grep -E "epoch 1|^  2048|^  1 \+"
  echo
  echo "== comparison (seconds: wall time on this machine, noisy when it is shared) =="
  cat "$OUT/10.txt" "$OUT/06.txt" | grep '^RESULT' | awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      p[NR] = v["precision"]; a[NR] = v["test_accuracy"]; t[NR] = v["seconds_per_epoch"] }
    END { for (i = 1; i <= NR; i++)
            printf "  %-11s test accuracy %.4f   %6.2f s/epoch   x%.2f FP32\n", p[i], a[i], t[i], t[i] / t[1] }'
  echo "(./lab bench amp times the same epochs, with the small CNN and PyTorch beside; on a GPU also ResNet-50)"
  echo
  echo "run logs (open them with ./lab view):"
  echo "  runs/tour_mlp_fp32/  runs/tour_mlp_amp_f16/  runs/tour_mlp_amp_bf16/  runs/tour_mlp_fp16_naive/"
  echo "what the precisions mean, and why naive FP16 loses updates: lessons/06_fp16_naive/README.md,"
  echo "lessons/10_autocast_amp/README.md"
}

case "$PART" in
  formats) formats ;;
  training) training ;;
  all) formats; echo; training ;;
esac
