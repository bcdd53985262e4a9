#!/usr/bin/env bash
# tests/bench/dp.sh BUILD_DIR — ./lab bench dp: data parallelism on this machine, one thread per
# rank, one run per model and number of ranks:
#   1. halfgrad: chapter 13's training (lesson_13, section 4) on 1 rank and on 2 ranks under
#      mpirun: the MLP on FashionMNIST (SGD, batch 128 per rank), and chapter 12's GPT on the
#      fortunes corpus (--model gpt, the chapter's default size: AdamW, 16 sequences of 64
#      tokens per rank): time per step, images/s or tokens/s, the share of it spent in
#      communication (blocked in MPI, waiting for the other rank included).
#      Two ways to add a rank, both printed:
#        - the batch per rank kept (the global batch grows with the ranks): how data
#          parallelism is used to train faster, and how its throughput is quoted. The speed-up
#          of 2 ranks over 1 in images/s or tokens/s: goal at least 1.6 on 2 cores.
#        - the global batch kept (each rank gets half): the same optimisation as on one rank,
#          split. No goal: the step's fixed costs (the optimizer over every weight, the
#          allreduce) do not shrink when the batch per rank does (chapter 13's README, "Measured").
#   2. PyTorch: the same model, data, batch and threads under DistributedDataParallel with
#      the gloo backend (tests/bench/torch_ddp.py, Debian's python3-torch; its GPT is the
#      twin of tests/bench/torch_gpt.py)
#   3. side by side: halfgrad's time per step over PyTorch's, row by row (goal: at most 1)
#   4. what the machine allows: N one-rank trainings at once, each pinned to its own core,
#      no communication. N ranks cannot beat the slowest of them, so N x (1-rank step / its
#      step) is the ceiling of the speed-up here, and the share of it reached is the price
#      of the allreduce. (On a VM the cores need not be equally fast: chapter 13's README.)
#      Then the allreduce added: the N-rank runs also time MPI_Allreduce alone on the model's
#      gradient bytes (the program's section 2), and N x 1-rank step / (that step + the
#      allreduce) is what N ranks reach when nothing hides the allreduce — on CPU ranks it is
#      the cores' own work, copies through shared memory and sums, so overlap cannot hide it.
#   5. where the N-rank step went (the fastest N-rank run's RESULT: compute_ms, slowest_ms):
#      each rank's time outside MPI, what the step waits for its slowest rank, and the
#      collectives' own time (chapter 13's README, section 4, "Waiting for the slowest rank").
# Every run is repeated (HG_BENCH_REPEAT, default 3), the rounds one after the other so that
# a slow spell of the machine hits every configuration alike, and the table keeps each
# configuration's fastest run, for both frameworks: on a shared VM the other tenants only
# ever add time (Python's timeit reasons the same way).
# Environment: HG_BENCH_MODELS (default "mlp gpt"), HG_BENCH_LIMIT (MLP training images,
#              default -1: all 60000), HG_BENCH_GPT_STEPS (default 100), HG_BENCH_REPEAT
#              (default 3), HG_BENCH_GPT_ARGS (more flags
#              for both GPTs, e.g. "--n-layer 1 --n-embd 32" for a quick check of the script),
#              HG_BENCH_RANKS (default 2: 1 rank against this many), HG_BENCH_BUCKET_MB (halfgrad's
#              bucket size, default 1).
# Timings need an otherwise idle machine: other processes on the cores turn a rank's wait for
# its partner into "communication".
set -uo pipefail

BUILD="${1:?usage: tests/bench/dp.sh BUILD_DIR}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
MODELS="${HG_BENCH_MODELS:-mlp gpt}"
LIMIT="${HG_BENCH_LIMIT:--1}"
REPEAT="${HG_BENCH_REPEAT:-3}"
GPT_STEPS="${HG_BENCH_GPT_STEPS:-100}"
GPT_ARGS="${HG_BENCH_GPT_ARGS:-}"
RANKS="${HG_BENCH_RANKS:-2}"
BUCKET="${HG_BENCH_BUCKET_MB:-1}"
OPENBLAS_DIR=/usr/lib/x86_64-linux-gnu/openblas-openmp
LESSON="$BUILD/lessons/lesson_13"
# Open MPI's shared-memory transport moves a large message with one copy across processes
# (CMA: process_vm_readv) unless told not to. On this project's VMs that system call costs
# more than copying through shared buffers: the MLP's 2-rank step was 3.08-3.26 ms with it
# and 2.99-3.06 ms without (chapter 13's README, "Measured"). Set
# OMPI_MCA_btl_vader_single_copy_mechanism=cma to time it the other way.
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"

cpu_model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1)
echo "== halfgrad data-parallel benchmark — $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "   machine: $(nproc)-core ${cpu_model:-x86-64}, $(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "   mlp: FashionMNIST ($([ "$LIMIT" = -1 ] && echo "all 60000" || echo "$LIMIT") training images, 1 epoch), SGD lr 0.05 momentum 0.9, batch 128 on one rank"
echo "   gpt: the fortunes corpus, $GPT_STEPS steps of AdamW, chapter 13's default GPT${GPT_ARGS:+ with $GPT_ARGS}, batch 16 on one rank"
echo "   each run $REPEAT times (rounds in turn), the fastest kept"
echo "   1 thread per rank; Open MPI single-copy: $OMPI_MCA_btl_vader_single_copy_mechanism; load average before: $(cut -d' ' -f1-3 /proc/loadavg)   (timings on a busy machine mean little)"
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
declare -A hg_ms hg_ips hg_comm hg_compute hg_slowest pt_ms pt_ips alone_ms allreduce_ms grad_mb
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
# faster A B: is time A set and below B (or B not set yet)? The fastest run of each configuration is kept.
faster() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a != "" && (b == "" || a + 0 < b + 0)) }'; }
pct() { awk -v a="$1" 'BEGIN { if (a == "") print "-"; else printf "%.0f%%", 100 * a }'; }
# ceiling N ONE STEP SPEEDUP: N ranks whose every step takes STEP ms, against one rank's ONE ms,
# reach at most N x ONE / STEP; prints that and the share of it SPEEDUP (measured) is.
ceiling() { awk -v n="$1" -v a="$2" -v b="$3" -v s="$4" 'BEGIN { if (a == "" || b + 0 == 0) { print "- -"; exit }
  c = n * a / b; printf "%.2f %s\n", c, (s == "-" ? "-" : sprintf("%.0f%%", 100 * s / c)) }'; }

# The runs of one model: "RANKS:GLOBAL_BATCH" — one rank, then for each N in HG_BENCH_RANKS
# the batch per rank kept (N x B) and the global batch kept (B).
runs_of() { local b=$1; echo "1:$b"; for n in $RANKS; do echo "$n:$((n * b)) $n:$b"; done; }

# side_by_side N BATCH: N one-rank trainings at once, no communication, the i-th pinned to
# core i (taskset): the same work per core as N ranks, without the allreduce. The slowest of
# them bounds what N ranks could reach on this machine (its cores share caches and memory,
# and on a VM they need not be equally fast). Prints the slowest step_ms.
side_by_side() {
  local n=$1 batch=$2 i dir worst=""
  dir=$(mktemp -d)
  for ((i = 0; i < n; i++)); do
    OMP_NUM_THREADS=1 taskset -c "$i" "$LESSON" --threads 1 --check-steps 0 --ring-mb 0.1 --batch-size "$batch" \
      "${hg_args[@]}" --run-name "bench_dp_${model}_alone_core$i" --overwrite >"$dir/core$i" 2>&1 &
  done
  wait
  for ((i = 0; i < n; i++)); do
    ms=$(field step_ms "$(grep '^RESULT' "$dir/core$i" | tail -n 1)")
    echo "   core $i: ${ms:-failed} ms/step" >&2
    [ -n "$ms" ] || { tail -n 4 "$dir/core$i" >&2; worst=""; break; }
    if [ -z "$worst" ] || ! faster "$ms" "$worst"; then worst=$ms; fi
  done
  rm -rf "$dir"
  echo "$worst"
}

for model in $MODELS; do
  case "$model" in
    mlp) B=128; hg_args=(--limit-train "$LIMIT" --limit-test 1000 --epochs 1)
         pt_args=(--limit-train "$LIMIT"); rate=images_per_s ;;
    gpt) B=16; read -r -a extra <<<"$GPT_ARGS"
         hg_args=(--model gpt --steps "$GPT_STEPS" "${extra[@]}")
         pt_args=(--model gpt --steps "$GPT_STEPS" "${extra[@]}"); rate=tokens_per_s ;;
    *) echo "unknown model '$model' in HG_BENCH_MODELS (mlp, gpt)"; exit 2 ;;
  esac
  for round in $(seq 1 "$REPEAT"); do
    for run in $(runs_of $B); do
      n=${run%%:*}; batch=${run#*:}
      echo "-- [$round/$REPEAT] halfgrad: mpirun -np $n lesson_13 --threads 1 --check-steps 0 --ring-mb ${grad_mb[$model]:-0.1} --bucket-mb $BUCKET --batch-size $batch ${hg_args[*]}"
      # Section 2 of the program times MPI_Allreduce on --ring-mb MiB before training: once the
      # 1-rank run has printed the model's size (section 5: Psi parameters, 4 bytes each), the
      # N-rank runs time the allreduce of exactly the gradient bytes a step sends.
      out=$(OMP_NUM_THREADS=1 mpirun -np "$n" --oversubscribe "$LESSON" --threads 1 --check-steps 0 \
            --ring-mb "${grad_mb[$model]:-0.1}" \
            --bucket-mb "$BUCKET" --batch-size "$batch" "${hg_args[@]}" --run-name "bench_dp_${model}_${n}ranks_b${batch}" \
            --overwrite 2>&1)
      rc=$?
      line=$(grep '^RESULT' <<<"$out" | tail -n 1)
      [ $rc -eq 0 ] && [ -n "$line" ] || { tail -n 8 <<<"$out"; echo "lesson_13 on $n rank(s) failed (exit $rc)"; }
      echo "   $line"
      psi=$(sed -n 's/.*(Psi = \([0-9]*\),.*/\1/p' <<<"$out" | head -n 1)
      [ -n "${grad_mb[$model]:-}" ] || [ -z "$psi" ] || grad_mb[$model]=$(awk -v p="$psi" 'BEGIN { printf "%.4f", 4 * p / 1048576 }')
      ar=$(sed -n 's/.*MPI_Allreduce \([0-9.]*\) ms.*/\1/p' <<<"$out" | head -n 1)
      if [ "$n" -gt 1 ] && [ -n "${grad_mb[$model]:-}" ] && faster "$ar" "${allreduce_ms[$model,$n]:-}"; then
        allreduce_ms[$model,$n]=$ar
      fi
      ms=$(field step_ms "$line")
      if faster "$ms" "${hg_ms[$model,$run]:-}"; then
        hg_ms[$model,$run]=$ms; hg_ips[$model,$run]=$(field $rate "$line"); hg_comm[$model,$run]=$(field comm_share "$line")
        hg_compute[$model,$run]=$(field compute_ms "$line"); hg_slowest[$model,$run]=$(field slowest_ms "$line")
      fi
      if [ $have_torch -eq 1 ]; then
        echo "-- [$round/$REPEAT] PyTorch DDP (gloo): torch_ddp.py --ranks $n --threads 1 --batch-size $batch ${pt_args[*]}"
        out=$(LD_LIBRARY_PATH="$OPENBLAS_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" OMP_NUM_THREADS=1 \
              /usr/bin/python3 "$HERE/torch_ddp.py" --ranks "$n" --threads 1 --batch-size "$batch" "${pt_args[@]}" 2>&1)
        line=$(grep '^RESULT' <<<"$out" | tail -n 1)
        [ -n "$line" ] || { tail -n 8 <<<"$out"; echo "torch_ddp.py on $n rank(s) failed"; }
        echo "   $line"
        ms=$(field step_ms "$line")
        if faster "$ms" "${pt_ms[$model,$run]:-}"; then pt_ms[$model,$run]=$ms; pt_ips[$model,$run]=$(field $rate "$line"); fi
      fi
    done
    for n in $RANKS; do
      [ "$n" -le "$(nproc)" ] && command -v taskset >/dev/null || continue
      echo "-- [$round/$REPEAT] halfgrad alone on each of cores 0..$((n - 1)) at once (no communication), batch $B each"
      ms=$(side_by_side "$n" "$B")
      if faster "$ms" "${alone_ms[$model,$n]:-}"; then alone_ms[$model,$n]=$ms; fi
    done
  done
done

for model in $MODELS; do
  B=$([ "$model" = gpt ] && echo 16 || echo 128)
  unit=$([ "$model" = gpt ] && echo tokens/s || echo images/s)
  echo
  echo "$model:"
  printf '%-6s %10s %7s %16s %12s %8s %16s %12s %22s\n' ranks "batch/rank" global "halfgrad ms/step" "$unit" "in comm" \
    "PyTorch ms/step" "$unit" "halfgrad/PyTorch time"
  for run in $(runs_of $B); do
    n=${run%%:*}; batch=${run#*:}
    printf '%-6s %10s %7s %16s %12s %8s %16s %12s %22s\n' "$n" "$((batch / n))" "$batch" "${hg_ms[$model,$run]:--}" \
      "${hg_ips[$model,$run]:--}" "$(pct "${hg_comm[$model,$run]:-}")" "${pt_ms[$model,$run]:--}" \
      "${pt_ips[$model,$run]:--}" "$(ratio "${hg_ms[$model,$run]:-}" "${pt_ms[$model,$run]:-}")"
  done
  for n in $RANKS; do
    weak="$n:$((n * B))" strong="$n:$B"
    echo "speed-up of $n ranks over 1 ($unit), batch per rank kept: halfgrad $(ratio "${hg_ips[$model,$weak]:-}" "${hg_ips[$model,1:$B]:-}")," \
         "PyTorch $(ratio "${pt_ips[$model,$weak]:-}" "${pt_ips[$model,1:$B]:-}")   (goal for halfgrad: >= 1.6)"
    if [ -n "${alone_ms[$model,$n]:-}" ]; then
      speedup=$(ratio "${hg_ips[$model,$weak]:-}" "${hg_ips[$model,1:$B]:-}")
      # N ranks with free communication would run at the pace of the slowest core alone:
      # N x (1-rank step / that step). The share of it reached is what the allreduce costs.
      read -r limit reached < <(ceiling "$n" "${hg_ms[$model,1:$B]:-}" "${alone_ms[$model,$n]}" "$speedup")
      echo "  without communication: $n one-rank runs side by side (cores 0..$((n - 1))), the slowest at" \
           "${alone_ms[$model,$n]} ms/step: at most ${limit}x here; halfgrad's $n ranks reach $reached of that"
      if [ -n "${allreduce_ms[$model,$n]:-}" ]; then
        # On CPU ranks the allreduce is the cores' own work (copies through shared memory and
        # the sums): added to that step, it gives what N ranks reach if nothing hides it.
        step=$(awk -v b="${alone_ms[$model,$n]}" -v r="${allreduce_ms[$model,$n]}" 'BEGIN { print b + r }')
        read -r limit reached < <(ceiling "$n" "${hg_ms[$model,1:$B]:-}" "$step" "$speedup")
        echo "  with the allreduce added: its ${grad_mb[$model]} MiB of gradients through MPI_Allreduce alone take" \
             "${allreduce_ms[$model,$n]} ms (section 2, best of 20): at most ${limit}x; halfgrad's $n ranks reach $reached of that"
      fi
    fi
    if [ -n "${hg_slowest[$model,$weak]:-}" ]; then
      # Where the N-rank step went (lesson_13 section 4): each rank's time outside MPI, what the
      # step waits for the slowest rank at each synchronisation, and the collectives' own time.
      awk -v n="$n" -v step="${hg_ms[$model,$weak]}" -v c="${hg_compute[$model,$weak]}" \
          -v s="${hg_slowest[$model,$weak]}" -v one="${hg_ms[$model,1:$B]:-?}" -v side="${alone_ms[$model,$n]:-?}" 'BEGIN {
        printf "  inside halfgrad'"'"'s %d-rank step of %.3f ms: %.3f ms computing on each rank (one rank: %s ms, side by" \
               " side: %s), %.3f ms waiting for the slowest rank, %.3f ms in the collectives themselves\n",
               n, step, c, one, side, s - c, step - s }'
    fi
    echo "speed-up of $n ranks over 1 ($unit), global batch kept: halfgrad $(ratio "${hg_ips[$model,$strong]:-}" "${hg_ips[$model,1:$B]:-}")," \
         "PyTorch $(ratio "${pt_ips[$model,$strong]:-}" "${pt_ips[$model,1:$B]:-}")   (no goal: fixed costs, chapter 13 README, \"Measured\")"
  done
  echo "halfgrad time per step / PyTorch's: worst row $(for run in $(runs_of $B); do ratio "${hg_ms[$model,$run]:-}" "${pt_ms[$model,$run]:-}"; echo; done | sort -g | tail -n 1)   (goal: <= 1)"
done
