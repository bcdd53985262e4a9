#!/usr/bin/env bash
# tests/bench/cpu.sh BUILD_DIR — ./lab bench cpu: halfgrad vs its anchors on the CPU, same
# machine, same two threads, one run:
#   1. SGEMM: halfgrad's sgemm vs OpenBLAS (bench_sgemm, 256..2048), each result validated first;
#      then conv2d image by image vs batched (bench_conv)
#   2. one training epoch of chapter 02's MLP and SmallCNN: halfgrad (lesson_02) vs PyTorch
#      (tests/bench/torch_epoch.py, Debian's python3-torch on the OpenMP OpenBLAS)
# Environment: HG_BENCH_THREADS (default 2), HG_BENCH_MODELS (default "mlp smallcnn"),
#              HG_BENCH_SIZES (default 256,512,1024,2048).
set -uo pipefail

BUILD="${1:?usage: tests/bench/cpu.sh BUILD_DIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
THREADS="${HG_BENCH_THREADS:-2}"
MODELS="${HG_BENCH_MODELS:-mlp smallcnn}"
SIZES="${HG_BENCH_SIZES:-256,512,1024,2048}"
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-openmp

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "== halfgrad CPU benchmark — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "   machine: $(nproc)-core ${cpu_model:-x86-64}, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "   threads: $THREADS   load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "   (timings on a shared or busy machine vary; compare the ratios of one run)"
echo

# ---- 1. SGEMM ---------------------------------------------------------------------------
echo "== 1. SGEMM, C = A·B (n×n), FP32"
if [ -x "$BUILD/tests/bench_sgemm" ]; then
  "$BUILD/tests/bench_sgemm" --threads "$THREADS" --sizes "$SIZES" || echo "bench_sgemm failed (exit $?)"
else
  echo "bench_sgemm not built in $BUILD/tests (./lab bench builds it)"
fi
echo

echo "== 1b. conv2d on the CPU: image by image (what halfgrad uses) vs one batched GEMM"
if [ -x "$BUILD/tests/bench_conv" ]; then
  "$BUILD/tests/bench_conv" --threads "$THREADS" || echo "bench_conv failed (exit $?)"
else
  echo "bench_conv not built in $BUILD/tests (./lab bench builds it)"
fi
echo

# ---- 2. one epoch --------------------------------------------------------------------------
echo "== 2. One training epoch on FashionMNIST (SGD lr 0.05 momentum 0.9, batch 128)"
LESSON="$BUILD/lessons/lesson_02"
if [ ! -x "$LESSON" ]; then
  echo "lesson_02 is not built in $BUILD/lessons: skipping the epoch comparison"
  exit 0
fi
have_torch=0
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then have_torch=1
else echo "python3-torch not installed: PyTorch column skipped (apt-get install python3-torch)"; fi
[ -f "$OPENBLAS_DIR/libopenblas.so.0" ] || \
  echo "warning: $OPENBLAS_DIR/libopenblas.so.0 missing (libopenblas0-openmp): PyTorch falls back to a slow BLAS"

# field NAME from a RESULT line
field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$2"; }

rows=()
for model in $MODELS; do
  echo "-- halfgrad: lesson_02 --model $model --epochs 1 --threads $THREADS"
  hg_out=$(OMP_NUM_THREADS="$THREADS" "$LESSON" --model "$model" --epochs 1 --threads "$THREADS" --overwrite 2>&1)
  hg_rc=$?
  hg_line=$(grep '^RESULT' <<<"$hg_out" | tail -n 1)
  [ $hg_rc -eq 0 ] && [ -n "$hg_line" ] || { tail -n 5 <<<"$hg_out"; echo "lesson_02 failed (exit $hg_rc)"; }
  echo "   $hg_line"
  pt_line=""
  if [ $have_torch -eq 1 ]; then
    echo "-- PyTorch: torch_epoch.py --model $model --epochs 1 --threads $THREADS"
    pt_out=$(LD_LIBRARY_PATH="$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS="$THREADS" \
             /usr/bin/python3 "$HERE/torch_epoch.py" --model "$model" --epochs 1 --threads "$THREADS" 2>&1)
    pt_line=$(grep '^RESULT' <<<"$pt_out" | tail -n 1)
    [ -n "$pt_line" ] || { tail -n 5 <<<"$pt_out"; echo "torch_epoch.py failed"; }
    echo "   $pt_line"
  fi
  rows+=("$model|$(field seconds_per_epoch "$hg_line")|$(field test_accuracy "$hg_line")|$(field seconds_per_epoch "$pt_line")|$(field test_accuracy "$pt_line")")
done

echo
printf '%-10s %16s %12s %16s %12s %22s\n' model "halfgrad s/epoch" "test acc" "PyTorch s/epoch" "test acc" "halfgrad time/PyTorch"
for r in "${rows[@]}"; do
  IFS='|' read -r m hs ha ps pa <<<"$r"
  ratio="-"
  if [ -n "$hs" ] && [ -n "$ps" ]; then ratio=$(awk -v a="$hs" -v b="$ps" 'BEGIN { printf "%.2fx", a / b }'); fi
  printf '%-10s %16s %12s %16s %12s %22s\n' "$m" "${hs:--}" "${ha:--}" "${ps:--}" "${pa:--}" "$ratio"
done
echo "(ratio < 1: halfgrad is faster. Goals: MLP < 1, SmallCNN ≤ 1.5)"
