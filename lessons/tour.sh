#!/usr/bin/env bash
# The tour (./lab run): the same MLP trained for one epoch on a slice of FashionMNIST three
# ways — FP32, naive FP16 (chapter 06) and AMP (chapter 10) — then a comparison table, where
# the run logs are, and chapter 04's table of number formats.
# Usage: lessons/tour.sh BUILD_DIR   (a minute or two on 2 cores; HG_TOUR_LIMIT=N trains on
# the first N images only, for a quicker look)
set -euo pipefail
BUILD="${1:?usage: tour.sh BUILD_DIR}"
LIMIT="${HG_TOUR_LIMIT:--1}"   # -1: the whole training set (60000 images)
echo "(the seconds are wall time on this machine; on a shared machine they are noisy)"
for n in 04 06 10; do
  [ -x "$BUILD/lessons/lesson_$n" ] || { echo "tour: $BUILD/lessons/lesson_$n is missing; run ./lab build" >&2; exit 1; }
done
OUT=$(mktemp -d); trap 'rm -rf "$OUT"' EXIT

if [ "$LIMIT" = "-1" ]; then what="all 60000"; TEST_LIMIT=-1; else what="the first $LIMIT"; TEST_LIMIT=2000; fi
echo "halfgrad tour: one MLP, one epoch on $what FashionMNIST training images, three precisions"
echo
echo "-- FP32 and naive FP16 (chapter 06: ./lab lesson 06) --"
"$BUILD/lessons/lesson_06" --epochs 1 --limit-train "$LIMIT" --limit-test "$TEST_LIMIT" --run-name tour_mlp --overwrite \
  | tee "$OUT/06.txt" | grep -E "epoch 1|^  2048|^  1 \+"
echo
echo "-- AMP: autocast F16 + GradScaler (chapter 10: ./lab lesson 10) --"
"$BUILD/lessons/lesson_10" --epochs 1 --limit-train "$LIMIT" --limit-test "$TEST_LIMIT" --run-name tour_mlp --overwrite \
  --runs amp_f16 | tee "$OUT/10.txt" | grep -E "epoch 1"
echo
echo "== comparison =="
cat "$OUT/06.txt" "$OUT/10.txt" | grep '^RESULT' | awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
    printf "  %-11s test accuracy %.4f   %6.2f s/epoch\n", v["precision"], v["test_accuracy"], v["seconds_per_epoch"] }'
echo
echo "run logs (open them with ./lab view):"
echo "  runs/tour_mlp_fp32/  runs/tour_mlp_fp16_naive/  runs/tour_mlp_amp_f16/"
echo "what the precisions mean, and why naive FP16 loses updates: lessons/06_fp16_naive/README.md,"
echo "lessons/10_autocast_amp/README.md"
echo
echo "-- number formats (chapter 04: ./lab lesson 04) --"
"$BUILD/lessons/lesson_04"
