#!/usr/bin/env bash
# tests/bench/gpt.sh BUILD_DIR — ./lab bench gpt: chapter 12's GPT in halfgrad and in PyTorch,
# side by side, in FP32 and in BF16 AMP: the same model and configuration, the same initial
# weights (bench_gpt writes them, PyTorch loads them by name), the same batches in the same
# order, the same recipe (AdamW, warmup + cosine, clipping), the same threads. BF16 AMP is each
# engine's own recipe: halfgrad's forward and loss under Autocast(BF16), as chapter 12 does it,
# PyTorch's under torch.autocast("cpu", dtype=torch.bfloat16) (oneDNN); no loss scaling.
#
# What must agree, and how closely (a disagreement stops the script before any time is shown):
#   fp32      the first loss to 1e-4 (the same weights and tokens: only the order of float32
#             sums differs), the loss after N steps to 0.02 (the runs start equal and drift
#             apart by rounding, which AdamW's g/√v turns into full-size steps for gradients
#             near zero; 0.02 is far below what a wrong model, recipe or data order moves).
#   amp_bf16  halfgrad's BF16 loss against PyTorch's: the first to 2^-8 of the loss (BF16
#             keeps 8 significant bits: rounding every matmul input costs each product at most
#             2^-8 of itself, so 2^-8·L is the worst case where every rounding goes the same
#             way; the engines also round in different places, PyTorch's softmax being BF16
#             and halfgrad's F32), the loss after N steps to 0.03 (chapter 12: the rounding of
#             BF16 activations moves the trajectory by hundredths; its FP32, F16 and BF16 runs
#             ended within 0.03 of each other).
# Then the time per step, each configuration's fastest of R rounds (the four runs alternate
# in every round, so a busy moment of the machine does not hit one of them only), the ratios,
# the unit that ran halfgrad's BF16 matmuls (bench_peak --amp-goal) and the goals as PASS /
# NOT MET:
#   halfgrad FP32 step <= 1x PyTorch's FP32 step
#   BF16 AMP step <= 0.5x FP32's on an AMX CPU (<= 0.8x or 1.0x with AVX512_BF16 only; none
#     without a BF16 unit: bench_peak.cpp says which)
#   halfgrad BF16 AMP step <= 0.8x PyTorch's BF16 autocast step
#   halfgrad's BF16 loss after N steps within 0.03 of its FP32 loss (chapter 12's, as above)
# Environment: HG_BENCH_THREADS (default 2), HG_BENCH_STEPS (default 30), HG_BENCH_ROUNDS
#              (default 3), HG_BENCH_GPT_ARGS (extra bench_gpt flags, e.g. "--n-layer 2 --n-embd 64").
set -uo pipefail

BUILD="${1:?usage: tests/bench/gpt.sh BUILD_DIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
THREADS="${HG_BENCH_THREADS:-2}"
STEPS="${HG_BENCH_STEPS:-30}"
ROUNDS="${HG_BENCH_ROUNDS:-3}"
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-openmp
BENCH="$BUILD/tests/bench_gpt"
for prog in "$BENCH" "$BUILD/tests/bench_peak"; do
  [ -x "$prog" ] || { echo "$(basename "$prog") is not built in $BUILD/tests (./lab bench builds it)"; exit 1; }
done
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "python3-torch is not installed (apt-get install python3-torch)"; exit 1; }
[ -f "$OPENBLAS_DIR/libopenblas.so.0" ] || \
  echo "warning: $OPENBLAS_DIR/libopenblas.so.0 missing (libopenblas0-openmp): PyTorch falls back to a slow BLAS"
[ "$STEPS" -ge 3 ] 2>/dev/null || { echo "HG_BENCH_STEPS=$STEPS: at least 3 (the first two steps are not timed)"; exit 2; }

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "== ./lab bench gpt — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "   machine: $(nproc)-core ${cpu_model:-x86-64}; threads $THREADS; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   chapter 12's default GPT${HG_BENCH_GPT_ARGS:+ $HG_BENCH_GPT_ARGS}, $STEPS steps; time: fastest of $ROUNDS rounds"
OMP_NUM_THREADS="$THREADS" "$BUILD/tests/bench_peak" --amp-goal >"$dir/goal.txt" || { cat "$dir/goal.txt"; exit 1; }
sed 's/^/   halfgrad /' "$dir/goal.txt"

# run ENGINE PRECISION ROUND: one run of 30 steps into $dir/ENGINE_PRECISION_ROUND.txt
run() {
  local out="$dir/$1_$2_$3.txt"
  mkdir -p "$dir/$2"
  if [ "$1" = hg ]; then
    # shellcheck disable=SC2086
    OMP_NUM_THREADS="$THREADS" "$BENCH" --out "$dir/$2" --steps "$STEPS" --threads "$THREADS" --precision "$2" \
      ${HG_BENCH_GPT_ARGS:-} >"$out" 2>&1 || { cat "$out"; echo "bench_gpt --precision $2 failed"; exit 1; }
  else
    LD_LIBRARY_PATH="$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS="$THREADS" \
      /usr/bin/python3 "$HERE/torch_gpt.py" "$dir/$2" >"$out" 2>&1 || { cat "$out"; echo "torch_gpt.py ($2) failed"; exit 1; }
  fi
}
for round in $(seq 1 "$ROUNDS"); do
  for p in fp32 amp_bf16; do
    run hg "$p" "$round"   # bench_gpt first: it writes the weights and batches PyTorch reads
    run pt "$p" "$round"
  done
done
for p in fp32 amp_bf16; do echo "   PyTorch $(grep -m1 -E '^(fp32|autocast)' "$dir/pt_${p}_1.txt")"; done
echo

loss() { sed -n "s/^step $2 loss //p" "$dir/$1_1.txt"; }   # loss ENGINE_PRECISION STEP (round 1)
diff_of() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2e", a - b }'; }
printf '%6s %14s %14s %10s %14s %14s %10s %12s\n' step "halfgrad fp32" "PyTorch fp32" difference \
  "halfgrad bf16" "PyTorch bf16" difference "bf16 - fp32"
for s in 1 2 5 10 20 "$STEPS"; do
  [ "$s" -le "$STEPS" ] || continue
  a=$(loss hg_fp32 "$s"); b=$(loss pt_fp32 "$s"); c=$(loss hg_amp_bf16 "$s"); d=$(loss pt_amp_bf16 "$s")
  printf '%6s %14s %14s %10s %14s %14s %10s %12s\n' "$s" "$a" "$b" "$(diff_of "$a" "$b")" "$c" "$d" \
    "$(diff_of "$c" "$d")" "$(diff_of "$c" "$a")"
done | uniq
echo "(bf16 - fp32: halfgrad's BF16 loss minus its FP32 loss)"

# agree A B TOLERANCE: |A - B| <= TOLERANCE
agree() { awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; }
first_tol=$(awk -v l="$(loss hg_fp32 1)" 'BEGIN { printf "%.4f", l / 256 }')  # 2^-8 of the first loss
ok=1
agree "$(loss hg_fp32 1)" "$(loss pt_fp32 1)" 1e-4 && agree "$(loss hg_fp32 "$STEPS")" "$(loss pt_fp32 "$STEPS")" 0.02 || ok=0
if [ $ok = 1 ]; then echo "losses agree, fp32: first step within 1e-4, step $STEPS within 0.02"
else echo "LOSSES DISAGREE, fp32 (first step must agree within 1e-4, step $STEPS within 0.02)"; exit 1; fi
agree "$(loss hg_amp_bf16 1)" "$(loss pt_amp_bf16 1)" "$first_tol" && \
  agree "$(loss hg_amp_bf16 "$STEPS")" "$(loss pt_amp_bf16 "$STEPS")" 0.03 || ok=0
if [ $ok = 1 ]; then echo "losses agree, amp_bf16: first step within $first_tol (2^-8 of the loss), step $STEPS within 0.03"
else echo "LOSSES DISAGREE, amp_bf16 (first step must agree within $first_tol, 2^-8 of the loss, step $STEPS within 0.03)"; exit 1; fi
echo

# the fastest ms_per_step of ENGINE_PRECISION over the rounds
ms() { cat "$dir/$1"_*.txt | sed -n 's/^RESULT.*ms_per_step=\([0-9.]*\).*/\1/p' | sort -g | head -n 1; }
hg32=$(ms hg_fp32); hgbf=$(ms hg_amp_bf16); pt32=$(ms pt_fp32); ptbf=$(ms pt_amp_bf16)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "time per step, ms (fastest of $ROUNDS rounds; steps 3..$STEPS):"
printf '  %-18s %10s %10s %12s\n' engine fp32 amp_bf16 "bf16 / fp32"
printf '  %-18s %10s %10s %12s\n' halfgrad "$hg32" "$hgbf" "$(ratio "$hgbf" "$hg32")"
printf '  %-18s %10s %10s %12s\n' "PyTorch $(grep -o 'torch=[^ ]*' "$dir/pt_fp32_1.txt" | cut -d= -f2)" "$pt32" "$ptbf" "$(ratio "$ptbf" "$pt32")"
printf '  %-18s %10s %10s\n' "halfgrad / PyTorch" "$(ratio "$hg32" "$pt32")" "$(ratio "$hgbf" "$ptbf")"
echo

# goal LABEL VALUE LIMIT: "GOAL LABEL: VALUEx PASS" when VALUE <= LIMIT
goal() { awk -v v="$2" -v l="$3" -v s="$1" 'BEGIN { printf "GOAL %s: %.2fx %s\n", s, v, v <= l ? "PASS" : "NOT MET" }'; }
goal "halfgrad FP32 step <= 1.0x PyTorch's FP32 step" "$(ratio "$hg32" "$pt32")" 1.0
limit=$(sed -n "s/^BF16 AMP goal: <= \([0-9.]*\)x.*/\1/p" "$dir/goal.txt")
if [ -n "$limit" ]; then goal "BF16 AMP step <= ${limit}x FP32's ($(sed -n 's/^BF16 unit: //p' "$dir/goal.txt"))" "$(ratio "$hgbf" "$hg32")" "$limit"
else echo "GOAL BF16 AMP step vs FP32's: $(sed -n 's/^BF16 AMP goal: //p' "$dir/goal.txt")"; fi
goal "halfgrad BF16 AMP step <= 0.8x PyTorch's BF16 autocast step" "$(ratio "$hgbf" "$ptbf")" 0.8
awk -v a="$(loss hg_amp_bf16 "$STEPS")" -v b="$(loss hg_fp32 "$STEPS")" -v n="$STEPS" 'BEGIN {
  d = a - b; e = d < 0 ? -d : d
  printf "GOAL BF16 AMP loss at step %d within 0.03 of FP32'"'"'s (chapter 12): %+.4f %s\n", n, d, e <= 0.03 ? "PASS" : "NOT MET" }'
