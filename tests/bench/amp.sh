#!/usr/bin/env bash
# ./lab bench amp — FP32 vs AMP (F16 autocast + GradScaler) vs BF16 autocast on the CPU:
# time per epoch and the activation bytes of one training step, for MLP and SmallCNN, and
# the cost of gradient statistics. Usage: tests/bench/amp.sh BUILD_DIR [--limit-train N]
set -euo pipefail
BUILD="${1:?usage: amp.sh BUILD_DIR [--limit-train N]}"; shift
LIMIT=10000
if [ "${1:-}" = "--limit-train" ]; then LIMIT="$2"; shift 2; fi
L10="$BUILD/lessons/lesson_10"
[ -x "$L10" ] || { echo "amp.sh: $L10 is missing; run ./lab build" >&2; exit 1; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

echo "halfgrad AMP benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -m)"
echo "(CPU only: F16/BF16 are emulated in software, so AMP cannot be faster here; GPU: not measured, no GPU)"
echo
for model in mlp smallcnn; do
  echo "== $model: one epoch of $LIMIT images, batch 128 =="
  "$L10" --model "$model" --epochs 1 --limit-train "$LIMIT" --limit-test 1000 \
         --runs fp32,amp_f16,amp_bf16 --run-name "bench_amp_$model" --stats-every 0 \
         >"$TMP/$model.txt" 2>&1 || { cat "$TMP/$model.txt"; exit 1; }
  grep '^RESULT' "$TMP/$model.txt" | awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      p[NR] = v["precision"]; t[NR] = v["seconds_per_epoch"]; a[NR] = v["activation_bytes"]; acc[NR] = v["test_accuracy"] }
    END {
      printf "  %-9s %10s %9s %16s %10s %9s\n", "precision", "s/epoch", "x FP32", "activation bytes", "x FP32", "test acc"
      for (i = 1; i <= NR; i++)
        printf "  %-9s %10.2f %9.2f %16d %10.2f %9.4f\n", p[i], t[i], t[i] / t[1], a[i], a[i] / a[1], acc[i]
    }'
  echo
done
if [ -x "$BUILD/tests/bench_amp_gradstats" ]; then
  echo "== gradient statistics overhead (MLP, batch 128) =="
  "$BUILD/tests/bench_amp_gradstats" --steps 500 --every 50
fi
