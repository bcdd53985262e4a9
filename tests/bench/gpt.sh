#!/usr/bin/env bash
# tests/bench/gpt.sh BUILD_DIR — ./lab bench gpt: chapter 12's GPT in halfgrad and in PyTorch,
# side by side: the same model and configuration, the same initial weights (bench_gpt writes
# them, PyTorch loads them by name), the same batches in the same order, the same recipe
# (AdamW, warmup + cosine, clipping, FP32), the same threads.
#
# What must agree, and how closely: the first loss to 1e-4 (the same weights and tokens: only
# the order of float32 sums differs), and the loss after N steps to 0.02 (the two runs start
# equal and drift apart by rounding, which AdamW's g/√v turns into full-size steps for
# gradients near zero; 0.02 is far below what a wrong model, recipe or data order moves).
# Then halfgrad's time per step over PyTorch's.
# Environment: HG_BENCH_THREADS (default 2), HG_BENCH_STEPS (default 30), HG_BENCH_GPT_ARGS
#              (extra bench_gpt flags, e.g. "--n-layer 2 --n-embd 64").
set -uo pipefail

BUILD="${1:?usage: tests/bench/gpt.sh BUILD_DIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
THREADS="${HG_BENCH_THREADS:-2}"
STEPS="${HG_BENCH_STEPS:-30}"
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-openmp
BENCH="$BUILD/tests/bench_gpt"
[ -x "$BENCH" ] || { echo "bench_gpt is not built in $BUILD/tests (./lab bench builds it)"; exit 1; }
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "python3-torch is not installed (apt-get install python3-torch)"; exit 1; }
[ -f "$OPENBLAS_DIR/libopenblas.so.0" ] || \
  echo "warning: $OPENBLAS_DIR/libopenblas.so.0 missing (libopenblas0-openmp): PyTorch falls back to a slow BLAS"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "== ./lab bench gpt — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "   machine: $(nproc)-core ${cpu_model:-x86-64}; threads $THREADS; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   chapter 12's default GPT, $STEPS steps, FP32 ${HG_BENCH_GPT_ARGS:-}"
# shellcheck disable=SC2086
OMP_NUM_THREADS="$THREADS" "$BENCH" --out "$dir" --steps "$STEPS" --threads "$THREADS" ${HG_BENCH_GPT_ARGS:-} >"$dir/hg.txt" \
  || { cat "$dir/hg.txt"; echo "bench_gpt failed"; exit 1; }
LD_LIBRARY_PATH="$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS="$THREADS" \
  /usr/bin/python3 "$HERE/torch_gpt.py" "$dir" >"$dir/pt.txt" 2>&1 || { cat "$dir/pt.txt"; echo "torch_gpt.py failed"; exit 1; }

loss() { sed -n "s/^step $2 loss //p" "$1"; }
ms() { sed -n 's/.*ms_per_step=\([0-9.]*\).*/\1/p' "$1"; }
printf '%6s %12s %12s %12s\n' step halfgrad PyTorch difference
for s in 1 2 5 10 20 $STEPS; do
  [ "$s" -le "$STEPS" ] || continue
  a=$(loss "$dir/hg.txt" "$s"); b=$(loss "$dir/pt.txt" "$s")
  printf '%6s %12s %12s %12s\n' "$s" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2e", a - b }')"
done | uniq
hg_ms=$(ms "$dir/hg.txt"); pt_ms=$(ms "$dir/pt.txt")
echo "time per step: halfgrad $hg_ms ms, PyTorch $pt_ms ms ($(grep -o 'torch=[^ ]*' "$dir/pt.txt")): halfgrad/PyTorch = $(awk -v a="$hg_ms" -v b="$pt_ms" 'BEGIN { printf "%.2f", a / b }')"
ok=$(awk -v a1="$(loss "$dir/hg.txt" 1)" -v b1="$(loss "$dir/pt.txt" 1)" \
         -v an="$(loss "$dir/hg.txt" "$STEPS")" -v bn="$(loss "$dir/pt.txt" "$STEPS")" \
         'function abs(x) { return x < 0 ? -x : x } BEGIN { print (abs(a1 - b1) < 1e-4 && abs(an - bn) < 0.02) ? 1 : 0 }')
if [ "$ok" = 1 ]; then echo "losses agree: first step within 1e-4, step $STEPS within 0.02"
else echo "LOSSES DISAGREE (first step must agree within 1e-4, step $STEPS within 0.02)"; exit 1; fi
