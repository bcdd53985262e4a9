#!/usr/bin/env bash
# ./lab bench amp — FP32 vs AMP (F16 autocast + GradScaler) vs BF16 autocast: time per epoch
# and the activation bytes of one training step, for MLP and SmallCNN on the CPU, beside
# PyTorch's FP32 and its CPU BF16 autocast (tests/bench/torch_epoch.py: torch.autocast("cpu",
# dtype=torch.bfloat16), oneDNN) on the same model, images, batches of 128 and threads; then
# the cost of gradient statistics. The MLP table also has naive F16 (chapter 06: every tensor
# F16). Each precision of each engine keeps its fastest of R rounds, the runs alternating in
# every round (an MLP epoch takes tenths of a second, at the mercy of whatever else the
# machine does; the accuracy is the same every round: same seed, same batches).
#
# On the CPU F16 is emulated in software (widened to F32), so F16 AMP cannot be faster than
# FP32 there; BF16 runs on the CPU's BF16 unit where it has one (AMX tiles or VDPBF16PS:
# framework/cpu/bf16_units.h), named by bench_peak --amp-goal, which asks the library the
# lessons run on (HG_GEMM_KERNEL included). It prints the F32 <-> F16/BF16 conversion kernel
# the CPU runs (bench_convert) and the goals as PASS / NOT MET:
#   naive F16 <= 2x and F16 AMP <= 1.3x FP32's epoch (MLP)
#   BF16 AMP <= 0.5x FP32's epoch on an AMX CPU (<= 0.8x or 1.0x with AVX512_BF16 only; none
#     without a BF16 unit: bench_peak.cpp says which)
#   halfgrad's BF16 AMP epoch <= 0.8x PyTorch's BF16 autocast epoch
#   halfgrad's BF16 AMP test accuracy within 0.02 of its FP32 accuracy: chapter 11's margin
#     (its exercise counts an accuracy 0.02 above another's as better, no less as a tie)
# On a machine with a GPU it adds the same comparison on the GPU for MLP, SmallCNN and
# ResNet-50, with the speed-up and the peak GPU memory (the goal: AMP at least 2x faster
# than FP32 on ResNet-50).
# Usage: tests/bench/amp.sh BUILD_DIR [--limit-train N] [--gpu-limit-train N]
# Environment: HG_BENCH_THREADS (default 2), HG_BENCH_ROUNDS (default 3).
set -euo pipefail
BUILD="${1:?usage: amp.sh BUILD_DIR [--limit-train N] [--gpu-limit-train N]}"; shift
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LIMIT=10000
GPU_LIMIT=20000
THREADS="${HG_BENCH_THREADS:-2}"
ROUNDS="${HG_BENCH_ROUNDS:-3}"
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-openmp
while [ $# -gt 0 ]; do
  case "$1" in
    --limit-train) LIMIT="$2"; shift 2 ;;
    --gpu-limit-train) GPU_LIMIT="$2"; shift 2 ;;
    *) echo "amp.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
L10="$BUILD/lessons/lesson_10"
L06="$BUILD/lessons/lesson_06"
for prog in "$L10" "$L06" "$BUILD/tests/bench_convert" "$BUILD/tests/bench_peak"; do
  [ -x "$prog" ] || { echo "amp.sh: $prog is missing; run ./lab bench amp (it builds the benchmarks)" >&2; exit 1; }
done
TORCH=yes
/usr/bin/python3 -c 'import torch' 2>/dev/null || TORCH=no
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

# Is there a GPU? The CUDA runtime test exits 77 when there is none (or no CUDA build); any
# other exit means a GPU is there (a failing check of its own is its test's business).
GPU=no
if [ -x "$BUILD/tests/test_cuda_runtime" ]; then
  probe_rc=0
  "$BUILD/tests/test_cuda_runtime" >"$TMP/probe.txt" 2>&1 || probe_rc=$?
  if [ "$probe_rc" -ne 77 ]; then GPU=yes; fi
fi

# table FILE: RESULT lines (lesson_10, lesson_06 for naive F16, torch_epoch.py) as a table;
# times and activation bytes as multiples of the same engine's FP32 row (the first of each
# engine); a field a line lacks prints as "-".
table() {
  grep '^RESULT' "$1" | awk '
    { delete v; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }  # fields of this line only
      e[NR] = v["framework"] == "" ? "halfgrad" : v["framework"]
      p[NR] = v["precision"]; t[NR] = v["seconds_per_epoch"]; a[NR] = v["activation_bytes"]
      acc[NR] = v["test_accuracy"]; g[NR] = v["gpu_peak_bytes"]
      if (!(e[NR] in t0)) { t0[e[NR]] = t[NR]; a0[e[NR]] = a[NR] } }
    END {
      gpu = g[1] >= 0
      printf "  %-9s %-10s %9s %9s %9s %16s %10s %9s", "engine", "precision", "s/epoch", "x FP32", "speed-up", "activation bytes", "x FP32", "test acc"
      if (gpu) printf " %14s", "GPU peak MB"
      printf "\n"
      for (i = 1; i <= NR; i++) {
        printf "  %-9s %-10s %9.2f %9.2f %9.2f", e[i], p[i], t[i], t[i] / t0[e[i]], t0[e[i]] / t[i]
        if (a[i] == "") printf " %16s %10s %9.4f", "-", "-", acc[i]  # chapter 06 and PyTorch do not count them
        else printf " %16d %10.2f %9.4f", a[i], a[i] / a0[e[i]], acc[i]
        if (gpu) printf " %14.1f", g[i] / 1e6
        printf "\n"
      }
    }'
}

# torch_epoch MODEL PRECISION: one PyTorch epoch, on the OpenMP OpenBLAS (DESIGN.md)
torch_epoch() {
  LD_LIBRARY_PATH="$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS="$THREADS" \
    /usr/bin/python3 "$HERE/torch_epoch.py" --model "$1" --precision "$2" --epochs 1 --threads "$THREADS" \
    --limit-train "$LIMIT" --limit-test 1000
}

# goals MODEL FILE: the CPU goal lines of one model's table
goals() {
  grep '^RESULT' "$2" | awk -v model="$1" -v limit="$BF16_LIMIT" -v unit="$BF16_UNIT" -v none="$BF16_NONE" '
    function verdict(ok) { return ok ? "PASS" : "NOT MET" }
    { delete v; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      k = (v["framework"] == "" ? "halfgrad" : v["framework"]) "/" v["precision"]
      t[k] = v["seconds_per_epoch"]; acc[k] = v["test_accuracy"] }
    END {
      if ("halfgrad/fp16_naive" in t) {
        f = t["halfgrad/fp16_naive"] / t["halfgrad/fp32"]; a = t["halfgrad/amp_f16"] / t["halfgrad/fp32"]
        printf "  GOAL naive F16 <= 2x FP32 (CPU, %s): %.2fx %s\n", model, f, verdict(f <= 2)
        printf "  GOAL F16 AMP <= 1.3x FP32 (CPU, %s): %.2fx %s\n", model, a, verdict(a <= 1.3) }
      b = t["halfgrad/amp_bf16"] / t["halfgrad/fp32"]
      if (limit != "") printf "  GOAL BF16 AMP <= %.2fx FP32 (%s, %s): %.2fx %s\n", limit, unit, model, b, verdict(b <= limit + 0)
      else printf "  GOAL BF16 AMP vs FP32 (%s): %.2fx, no goal: %s\n", model, b, none
      if ("pytorch/amp_bf16" in t) {
        r = t["halfgrad/amp_bf16"] / t["pytorch/amp_bf16"]
        printf "  GOAL halfgrad BF16 AMP <= 0.8x PyTorch BF16 autocast (%s): %.2fx %s\n", model, r, verdict(r <= 0.8) }
      else printf "  GOAL halfgrad BF16 AMP <= 0.8x PyTorch BF16 autocast (%s): not measured (no PyTorch)\n", model
      d = acc["halfgrad/amp_bf16"] - acc["halfgrad/fp32"]
      printf "  GOAL BF16 AMP test accuracy within 0.02 of FP32 (%s): %+.4f %s\n", model, d, verdict(d <= 0.02 + 1e-9 && d >= -0.02 - 1e-9) }'
}

"$BUILD/tests/bench_peak" --amp-goal >"$TMP/goal.txt" || { cat "$TMP/goal.txt"; exit 1; }
BF16_UNIT=$(sed -n 's/^BF16 unit: //p' "$TMP/goal.txt")
BF16_LIMIT=$(sed -n 's/^BF16 AMP goal: <= \([0-9.]*\)x.*/\1/p' "$TMP/goal.txt")
BF16_NONE=$(sed -n 's/^BF16 AMP goal: none (\(.*\))$/\1/p' "$TMP/goal.txt")
cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "halfgrad AMP benchmark — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc)-core ${cpu_model:-$(uname -m)}, $THREADS thread$([ "$THREADS" = 1 ] || echo s), load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
case "$BF16_UNIT" in
  amx|avx512_bf16) echo "(on the CPU F16 is emulated in software, so F16 AMP cannot be faster there; BF16 runs on the CPU's BF16 unit: $BF16_UNIT)" ;;
  *) echo "(on this CPU F16 and BF16 are emulated in software — BF16 unit: $BF16_UNIT — so AMP cannot be faster here)" ;;
esac
sed 's/^/halfgrad /' "$TMP/goal.txt"
if [ "$GPU" = yes ]; then echo "GPU: $(grep -m1 '^GPU' "$TMP/probe.txt" || echo 'found')"
else echo "GPU: none found ($(head -n 1 "$TMP/probe.txt" 2>/dev/null || echo 'no CUDA build')), GPU rows not measured"; fi
# Which F32 <-> F16/BF16 kernel every F16/BF16 op on the CPU converts with (after checking
# each kernel against the reference conversions).
"$BUILD/tests/bench_convert" --which
[ "$TORCH" = yes ] || echo "python3-torch is not installed: PyTorch rows skipped (apt-get install python3-torch)"
echo "(x FP32 and speed-up: against the same engine's FP32 row. PyTorch starts from its own initial"
echo " weights and shuffles with its own generator: compare its accuracy with its own FP32 row)"
echo
for model in mlp smallcnn; do
  echo "== $model: one epoch of $LIMIT images, batch 128, $THREADS thread$([ "$THREADS" = 1 ] || echo s); each row the fastest of $ROUNDS rounds =="
  : >"$TMP/${model}_rounds.txt"
  for round in $(seq 1 "$ROUNDS"); do
    OMP_NUM_THREADS="$THREADS" "$L10" --model "$model" --epochs 1 --limit-train "$LIMIT" --limit-test 1000 \
           --runs fp32,amp_f16,amp_bf16 --run-name "bench_amp_$model" --overwrite --stats-every 0 --threads "$THREADS" \
           >"$TMP/10.txt" 2>&1 || { cat "$TMP/10.txt"; exit 1; }
    grep -h '^RESULT' "$TMP/10.txt" >>"$TMP/${model}_rounds.txt"
    if [ "$model" = mlp ]; then  # naive F16 (every tensor and the SGD step in F16, chapter 06)
      OMP_NUM_THREADS="$THREADS" "$L06" --epochs 1 --limit-train "$LIMIT" --limit-test 1000 --only fp16 --stats-every 0 \
             --threads "$THREADS" --run-name bench_amp_mlp_06 --overwrite >"$TMP/06.txt" 2>&1 || { cat "$TMP/06.txt"; exit 1; }
      grep -h '^RESULT' "$TMP/06.txt" >>"$TMP/${model}_rounds.txt"
    fi
    if [ "$TORCH" = yes ]; then
      for p in fp32 amp_bf16; do
        torch_epoch "$model" "$p" >"$TMP/pt_$p.txt" 2>&1 || { cat "$TMP/pt_$p.txt"; echo "torch_epoch.py failed"; exit 1; }
        grep -h '^RESULT' "$TMP/pt_$p.txt" >>"$TMP/${model}_rounds.txt"
      done
    fi
  done
  if [ "$TORCH" = yes ]; then grep -h -E '^(fp32|autocast)' "$TMP/pt_fp32.txt" "$TMP/pt_amp_bf16.txt" | sed 's/^/  PyTorch /'; fi
  awk '{ delete v; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
         p = (v["framework"] == "" ? "halfgrad" : v["framework"]) "/" v["precision"]; t = v["seconds_per_epoch"] + 0
         if (!(p in best) || t < best[p]) { best[p] = t; line[p] = $0 } }
       END { n = split("halfgrad/fp32 halfgrad/fp16_naive halfgrad/amp_f16 halfgrad/amp_bf16 pytorch/fp32 pytorch/amp_bf16", order, " ")
             for (i = 1; i <= n; i++) if (order[i] in line) print line[order[i]] }' \
    "$TMP/${model}_rounds.txt" >"$TMP/${model}_best.txt"
  table "$TMP/${model}_best.txt"
  grep '^RESULT' "$TMP/${model}_best.txt" | awk '
    { delete v; for (i = 2; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
      t[(v["framework"] == "" ? "halfgrad" : v["framework"]) "/" v["precision"]] = v["seconds_per_epoch"] }
    END { if ("pytorch/fp32" in t)
            printf "  halfgrad time / PyTorch time: fp32 %.2fx, amp_bf16 %.2fx\n",
                   t["halfgrad/fp32"] / t["pytorch/fp32"], t["halfgrad/amp_bf16"] / t["pytorch/amp_bf16"] }'
  goals "$model" "$TMP/${model}_best.txt"
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
