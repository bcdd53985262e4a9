#!/usr/bin/env bash
# tests/bench/dp.sh BUILD_DIR — ./lab bench dp: data parallelism on this machine, one thread per
# rank, one run per model and number of ranks:
#   1. halfgrad: chapter 13's training (lesson_13, section 4) on 1 rank and on 2 ranks under
#      mpirun: the MLP on FashionMNIST (SGD, global batch 128), and chapter 12's GPT on the
#      fortunes corpus (--model gpt, the chapter's default size: AdamW, global batch 16
#      sequences of 64 tokens): time per step, images/s or tokens/s, the share of it spent in
#      communication (blocked in MPI, waiting for the other rank included), and the speed-up
#      of 2 ranks over 1 (goal: at least 1.6 on 2 cores)
#   2. PyTorch: the same model, data, batch and threads under DistributedDataParallel with
#      the gloo backend (tests/bench/torch_ddp.py, Debian's python3-torch; its GPT is the
#      twin of tests/bench/torch_gpt.py)
#   3. side by side: halfgrad's time per step over PyTorch's (goal: at most 1)
# Environment: HG_BENCH_MODELS (default "mlp gpt"), HG_BENCH_LIMIT (MLP training images,
#              default 10000), HG_BENCH_GPT_STEPS (default 100), HG_BENCH_GPT_ARGS (more flags
#              for both GPTs, e.g. "--n-layer 1 --n-embd 32" for a quick check of the script),
#              HG_BENCH_RANKS (default "1 2"), HG_BENCH_BUCKET_MB (halfgrad's bucket size, default 1).
# Timings need an otherwise idle machine: other processes on the cores turn a rank's wait for
# its partner into "communication".
set -uo pipefail

BUILD="${1:?usage: tests/bench/dp.sh BUILD_DIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODELS="${HG_BENCH_MODELS:-mlp gpt}"
LIMIT="${HG_BENCH_LIMIT:-10000}"
GPT_STEPS="${HG_BENCH_GPT_STEPS:-100}"
GPT_ARGS="${HG_BENCH_GPT_ARGS:-}"
RANKS="${HG_BENCH_RANKS:-1 2}"
BUCKET="${HG_BENCH_BUCKET_MB:-1}"
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-openmp
LESSON="$BUILD/lessons/lesson_13"

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "== halfgrad data-parallel benchmark — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "   machine: $(nproc)-core ${cpu_model:-x86-64}, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "   mlp: FashionMNIST ($LIMIT images, 1 epoch), SGD lr 0.05 momentum 0.9, global batch 128"
echo "   gpt: the fortunes corpus, $GPT_STEPS steps of AdamW, chapter 13's default GPT${GPT_ARGS:+ with $GPT_ARGS}"
echo "   1 thread per rank; load average before: $(cut -d' ' -f1-3 /proc/loadavg)   (timings on a busy machine mean little)"
echo
[ -x "$LESSON" ] || { echo "lesson_13 is not built in $BUILD/lessons (an MPI build: ./lab setup, ./lab build)"; exit 1; }
command -v mpirun >/dev/null || { echo "mpirun is missing: ./lab setup installs openmpi-bin"; exit 1; }
[ "$(id -u)" -ne 0 ] || export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# A rank that waits in MPI yields its core instead of spinning (as gloo's ranks sleep): on an
# idle machine with a core per rank it costs nothing, on a shared one spinning steals the core
# the partner rank needs.
export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
have_torch=0
if /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then have_torch=1
else echo "python3-torch (with gloo) is not installed: the PyTorch column is skipped (apt-get install python3-torch)"; fi

field() { sed -n "s/.*[[:space:]]$1=\([^[:space:]]*\).*/\1/p" <<<"$2"; }
declare -A hg_ms hg_ips hg_comm pt_ms pt_ips

for model in $MODELS; do
  case "$model" in
    mlp) hg_args=(--limit-train "$LIMIT" --limit-test 1000 --epochs 1)
         pt_args=(--limit-train "$LIMIT"); rate=images_per_s ;;
    gpt) read -r -a extra <<<"$GPT_ARGS"
         hg_args=(--model gpt --steps "$GPT_STEPS" "${extra[@]}")
         pt_args=(--model gpt --steps "$GPT_STEPS" "${extra[@]}"); rate=tokens_per_s ;;
    *) echo "unknown model '$model' in HG_BENCH_MODELS (mlp, gpt)"; exit 2 ;;
  esac
  for n in $RANKS; do
    echo "-- halfgrad: mpirun -np $n lesson_13 --threads 1 --check-steps 0 --bucket-mb $BUCKET ${hg_args[*]}"
    out=$(OMP_NUM_THREADS=1 mpirun -np "$n" --oversubscribe "$LESSON" --threads 1 --check-steps 0 --ring-mb 0.1 \
          --bucket-mb "$BUCKET" "${hg_args[@]}" --run-name "bench_dp_${model}_${n}ranks" --overwrite 2>&1)
    rc=$?
    line=$(grep '^RESULT' <<<"$out" | tail -n 1)
    [ $rc -eq 0 ] && [ -n "$line" ] || { tail -n 8 <<<"$out"; echo "lesson_13 on $n rank(s) failed (exit $rc)"; }
    echo "   $line"
    hg_ms[$model,$n]=$(field step_ms "$line"); hg_ips[$model,$n]=$(field $rate "$line")
    hg_comm[$model,$n]=$(field comm_share "$line")
    if [ $have_torch -eq 1 ]; then
      echo "-- PyTorch DDP (gloo): torch_ddp.py --ranks $n --threads 1 ${pt_args[*]}"
      out=$(LD_LIBRARY_PATH="$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS=1 \
            /usr/bin/python3 "$HERE/torch_ddp.py" --ranks "$n" --threads 1 "${pt_args[@]}" 2>&1)
      line=$(grep '^RESULT' <<<"$out" | tail -n 1)
      [ -n "$line" ] || { tail -n 8 <<<"$out"; echo "torch_ddp.py on $n rank(s) failed"; }
      echo "   $line"
      pt_ms[$model,$n]=$(field step_ms "$line"); pt_ips[$model,$n]=$(field $rate "$line")
    fi
  done
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
pct() { awk -v a="$1" 'BEGIN { if (a == "") print "-"; else printf "%.0f%%", 100 * a }'; }
set -- $RANKS
first=$1; last=${!#}
for model in $MODELS; do
  unit=$([ "$model" = gpt ] && echo tokens/s || echo images/s)
  echo
  echo "$model:"
  printf '%-6s %16s %12s %8s %16s %12s %22s\n' ranks "halfgrad ms/step" "$unit" "in comm" "PyTorch ms/step" "$unit" \
    "halfgrad/PyTorch time"
  for n in $RANKS; do
    printf '%-6s %16s %12s %8s %16s %12s %22s\n' "$n" "${hg_ms[$model,$n]:--}" "${hg_ips[$model,$n]:--}" \
      "$(pct "${hg_comm[$model,$n]:-}")" "${pt_ms[$model,$n]:--}" "${pt_ips[$model,$n]:--}" \
      "$(ratio "${hg_ms[$model,$n]:-}" "${pt_ms[$model,$n]:-}")"
  done
  if [ $# -ge 2 ]; then
    echo "speed-up, $last ranks over $first ($unit): halfgrad $(ratio "${hg_ips[$model,$last]:-}" "${hg_ips[$model,$first]:-}")," \
         "PyTorch $(ratio "${pt_ips[$model,$last]:-}" "${pt_ips[$model,$first]:-}")   (goal for halfgrad: >= 1.6)"
    echo "halfgrad time per step / PyTorch's at $last ranks: $(ratio "${hg_ms[$model,$last]:-}" "${pt_ms[$model,$last]:-}")   (goal: <= 1)"
  fi
done
