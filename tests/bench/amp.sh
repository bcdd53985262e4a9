#!/usr/bin/env bash
# ./lab bench amp — FP32 vs AMP (F16 autocast + GradScaler) vs BF16 autocast: time per epoch
# and the activation bytes of one training step, for MLP and SmallCNN on the CPU, and the
# cost of gradient statistics. The MLP table also has naive F16 (chapter 06: every tensor F16),
# keeps each precision's fastest of 3 rounds, and checks the CPU goals: naive F16 <= 2x and
# AMP <= 1.3x FP32's epoch time. It names the
# F32 <-> F16/BF16 conversion kernel the CPU runs (tests/bench/bench_convert.cpp). On a machine with a GPU it adds the same comparison on the
# GPU for MLP, SmallCNN and ResNet-50, with the speed-up and the peak GPU memory (the goal:
# AMP at least 2x faster than FP32 on ResNet-50).
# Usage: tests/bench/amp.sh BUILD_DIR [--limit-train N] [--gpu-limit-train N]
set -euo pipefail
BUILD="${1:?usage: amp.sh BUILD_DIR [--limit-train N] [--gpu-limit-train N]}"; shift
LIMIT=10000
GPU_LIMIT=20000
while [ $# -gt 0 ]; do
  case "$1" in
    --limit-train) LIMIT="$2"; shift 2 ;;
    --gpu-limit-train) GPU_LIMIT="$2"; shift 2 ;;
    *) echo "amp.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
L10="$BUILD/lessons/lesson_10"
L06="$BUILD/lessons/lesson_06"
for prog in "$L10" "$L06" "$BUILD/tests/bench_convert"; do
  [ -x "$prog" ] || { echo "amp.sh: $prog is missing; run ./lab bench amp (it builds the benchmarks)" >&2; exit 1; }
done
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

# Is there a GPU? The CUDA runtime test exits 77 when there is none (or no CUDA build); any
# other exit means a GPU is there (a failing check of its own is its test's business).
GPU=no
if [ -x "$BUILD/tests/test_cuda_runtime" ]; then
  probe_rc=0
  "$BUILD/tests/test_cuda_runtime" >"$TMP/probe.txt" 2>&1 || probe_rc=$?
  if [ "$probe_rc" -ne 77 ]; then GPU=yes; fi
fi

# table FILE: RESULT lines (lesson_10, and lesson_06 for naive F16) as a table, ratios against
# the first row; a field a line lacks prints as "-".
table() {
  grep '^RESULT' "$1" | awk '
    { delete v; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }  # fields of this line only
      p[NR] = v["precision"]; t[NR] = v["seconds_per_epoch"]; a[NR] = v["activation_bytes"]
      acc[NR] = v["test_accuracy"]; g[NR] = v["gpu_peak_bytes"] }
    END {
      gpu = g[1] >= 0
      printf "  %-10s %9s %9s %9s %16s %10s %9s", "precision", "s/epoch", "x FP32", "speed-up", "activation bytes", "x FP32", "test acc"
      if (gpu) printf " %14s", "GPU peak MB"
      printf "\n"
      for (i = 1; i <= NR; i++) {
        printf "  %-10s %9.2f %9.2f %9.2f", p[i], t[i], t[i] / t[1], t[1] / t[i]
        if (a[i] == "") printf " %16s %10s %9.4f", "-", "-", acc[i]  # chapter 06 does not count them
        else printf " %16d %10.2f %9.4f", a[i], a[i] / a[1], acc[i]
        if (gpu) printf " %14.1f", g[i] / 1e6
        printf "\n"
      }
    }'
}

echo "halfgrad AMP benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -m)"
echo "(on the CPU F16/BF16 are emulated in software, so AMP cannot be faster there)"
if [ "$GPU" = yes ]; then echo "GPU: $(grep -m1 '^GPU' "$TMP/probe.txt" || echo 'found')"
else echo "GPU: none found ($(head -n 1 "$TMP/probe.txt" 2>/dev/null || echo 'no CUDA build')), GPU rows not measured"; fi
# Which F32 <-> F16/BF16 kernel every F16/BF16 op on the CPU converts with (after checking
# each kernel against the reference conversions).
"$BUILD/tests/bench_convert" --which
echo
for model in mlp smallcnn; do
  echo "== $model: one epoch of $LIMIT images, batch 128 =="
  if [ "$model" = mlp ]; then
    # An MLP epoch takes a few tenths of a second, so one run is at the mercy of whatever else
    # the machine does: three rounds, the precisions alternating, and each precision's
    # fastest epoch (the accuracy is the same every round: same seed, same batches). Naive
    # F16 (every tensor and the SGD step in F16, chapter 06) goes after FP32.
    : >"$TMP/mlp_rounds.txt"
    for round in 1 2 3; do
      "$L10" --model mlp --epochs 1 --limit-train "$LIMIT" --limit-test 1000 \
             --runs fp32,amp_f16,amp_bf16 --run-name bench_amp_mlp --overwrite --stats-every 0 \
             >"$TMP/mlp.txt" 2>&1 || { cat "$TMP/mlp.txt"; exit 1; }
      "$L06" --epochs 1 --limit-train "$LIMIT" --limit-test 1000 --only fp16 --stats-every 0 \
             --run-name bench_amp_mlp_06 --overwrite >"$TMP/06.txt" 2>&1 || { cat "$TMP/06.txt"; exit 1; }
      grep -h '^RESULT' "$TMP/mlp.txt" "$TMP/06.txt" >>"$TMP/mlp_rounds.txt"
    done
    awk '{ delete v; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
           p = v["precision"]; t = v["seconds_per_epoch"] + 0
           if (!(p in best) || t < best[p]) { best[p] = t; line[p] = $0 } }
         END { n = split("fp32 fp16_naive amp_f16 amp_bf16", order, " ")
               for (i = 1; i <= n; i++) if (order[i] in line) print line[order[i]] }' \
      "$TMP/mlp_rounds.txt" >"$TMP/mlp_all.txt"
    echo "  (fastest of 3 rounds)"
    table "$TMP/mlp_all.txt"
    grep '^RESULT' "$TMP/mlp_all.txt" | awk '
      { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } t[v["precision"]] = v["seconds_per_epoch"] }
      END { f = t["fp16_naive"] / t["fp32"]; a = t["amp_f16"] / t["fp32"]
            printf "  GOAL naive F16 <= 2x FP32 (CPU, MLP): %.2fx %s\n", f, f <= 2 ? "MET" : "NOT MET"
            printf "  GOAL AMP <= 1.3x FP32 (CPU, MLP): %.2fx %s\n", a, a <= 1.3 ? "MET" : "NOT MET" }'
  else
    "$L10" --model "$model" --epochs 1 --limit-train "$LIMIT" --limit-test 1000 \
           --runs fp32,amp_f16,amp_bf16 --run-name "bench_amp_$model" --overwrite --stats-every 0 \
           >"$TMP/$model.txt" 2>&1 || { cat "$TMP/$model.txt"; exit 1; }
    table "$TMP/$model.txt"
  fi
  echo
done
if [ "$GPU" = yes ]; then
  for model in mlp smallcnn resnet50; do
    echo "== GPU, $model: one epoch of $GPU_LIMIT images, batch 128 (--device cuda) =="
    "$L10" --device cuda --model "$model" --epochs 1 --limit-train "$GPU_LIMIT" --limit-test 2000 \
           --runs fp32,amp_f16,amp_bf16 --run-name "bench_amp_gpu_$model" --overwrite --stats-every 0 \
           >"$TMP/gpu_$model.txt" 2>&1 || { cat "$TMP/gpu_$model.txt"; exit 1; }
    table "$TMP/gpu_$model.txt"
    echo
  done
  grep '^RESULT' "$TMP/gpu_resnet50.txt" | awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } t[v["precision"]] = v["seconds_per_epoch"] }
    END { s = t["fp32"] / t["amp_f16"]
          printf "GOAL AMP >= 2x faster than FP32 on ResNet-50 (GPU): %.2fx %s\n", s, s >= 2 ? "MET" : "NOT MET" }'
  # Twice the batch in the same memory? AMP at batch 256 against FP32 at 128 (the run above).
  "$L10" --device cuda --model resnet50 --epochs 1 --limit-train "$GPU_LIMIT" --limit-test 2000 \
         --batch-size 256 --runs amp_f16 --run-name bench_amp_gpu_resnet50_b256 --overwrite --stats-every 0 \
         >"$TMP/gpu_resnet50_b256.txt" 2>&1 || { cat "$TMP/gpu_resnet50_b256.txt"; exit 1; }
  cat "$TMP/gpu_resnet50.txt" "$TMP/gpu_resnet50_b256.txt" | grep '^RESULT' | awk '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } m[v["precision"] "@" v["batch"]] = v["gpu_peak_bytes"] }
    END { r = m["amp_f16@256"] / m["fp32@128"]
          printf "ResNet-50 peak GPU memory: AMP at batch 256 %.1f MB, FP32 at batch 128 %.1f MB (x%.2f)\n",
                 m["amp_f16@256"] / 1e6, m["fp32@128"] / 1e6, r }'
  echo
fi
if [ -x "$BUILD/tests/bench_amp_gradstats" ]; then
  echo "== gradient statistics overhead (MLP, batch 128) =="
  "$BUILD/tests/bench_amp_gradstats" --steps 500 --every 50
fi
