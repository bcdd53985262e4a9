#!/usr/bin/env bash
# tests/gpu/run.sh — every GPU check of halfgrad in one command, sized for a short GPU window.
#
#   tests/gpu/run.sh            the full run: about 7 minutes of steps (see the budget below)
#   tests/gpu/run.sh --quick    the GPU tests and the GEMM ladder at two sizes: about 2.5 minutes
#   OUT=/some/dir tests/gpu/run.sh   everything lands in /some/dir (the device tool sets OUT)
#
# Binaries: prebuilt for sm_90 by `tests/gpu/bundle.sh` on a CPU machine and shipped in
# .gpu-bundle/ (programs.tar.xz: bin/, lib/, sysroot/, unpacked here; fashion-mnist/): no GPU
# time goes to compiling. When .gpu-bundle/bin
# is missing, or its programs cannot start on this machine (other system libraries), the tree
# is configured and built here instead (against .gpu-bundle/sysroot when there is one), and the
# build's minutes come out of the same budget. tests/gpu/README.md: what to ship, the command,
# the time limit to give it.
#
# Steps, in order of importance; each has a nominal limit, and none may run past the deadline
# (HG_GPU_BUDGET_S seconds after the start: 450 full, 170 quick), so the whole run ends in time
# even if a step hangs; a step that no longer fits is reported as skipped:
#   probe      nvidia-smi, the GPU test harness's own probe                           ~5 s
#   tests      every GPU test binary (kernels and engine vs the CPU, bit-exact cases);
#              a failing binary is run again with CUDA_LAUNCH_BLOCKING=1, so that a
#              kernel fault is reported at the launch that caused it                  120 s
#   test_nccl  chapter 13's NCCL at world size 1 (one GPU, one rank: an Open MPI singleton,
#              no mpirun): every collective, DDP and ZeRO-1 vs one process            30 s
#   ladder     the GEMM ladder, every rung in F32, F16, BF16, TF32 vs cuBLAS, and rung 09
#              in FP8 vs cuBLASLt (--quick: 1000^3 and 4096^3 only)                   150 s (60 s)
#   memcheck   compute-sanitizer --tool memcheck over the GPU test binaries (small
#              shapes: HG_GPU_TEST_SMALL=1); a binary that runs out of time is
#              reported, not failed                                                   100 s
#   chapter02  chapter 02 on the GPU: MLP and SmallCNN, one full epoch each           60 s
#   chapter10  chapter 10: ResNet-50 FP32 vs AMP, one epoch of 10,000 images          100 s
#   chapters   chapters 06, 09, 11 (short runs), 03 and 05 (their GPU sections)       60 s
#   chapter12  chapter 12's GPT, 40 steps in FP32 and in AMP F16                      40 s
#   chapter13  chapter 13's MLP through NCCL at world size 1, with its checks          20 s
# Full: 5 + 120 + 30 + 150 + 100 + 60 + 100 + 60 + 40 + 20 = 685 s of limits against a 450 s deadline: the
# limits are ceilings for a slow case, the deadline is what holds. Plus the machine's start (about
# a minute): give the device tool timeout_s=600 for the full run, 240 for --quick.
#
# Output ($OUT, or build-gpu/out): at most 8 files, none in a subfolder, as the device tool
# brings back (each written as the run goes, so a run stopped from outside still leaves them):
#   summary.txt    one line per step (ok / FAILED / TIMED OUT / skipped) and the lines that
#                  matter: GPU, NOT OK, GOAL, RESULT, memcheck's ERROR SUMMARY
#   tests.log      every GPU test's full output (a failure names the op, the shapes, the first
#                  mismatching index and its values), and the CUDA_LAUNCH_BLOCKING reruns
#   memcheck.log   compute-sanitizer's reports
#   ladder.log     the GEMM table
#   chapters.log   the chapters' output
#   env.txt        nvidia-smi, toolkit, which binaries ran and what they loaded
#   build.log      only when the tree had to be built here
#   runs.tar.gz    the chapters' run folders (run.json, events.jsonl) for the viewer
# memcheck leaves out the CUDA API errors the tests cause on purpose (--report-api-errors no).
# The script's own flow (deadline, reruns, the output files) is tested on the CPU with stub
# programs: tests/gpu/test_run_flow.sh.
# Exit status: 0 when every step ran and passed, 1 otherwise (a step skipped for lack of time
# was not checked, so it does not pass), 77 when there is no GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,50p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (known: --quick)" >&2; exit 2 ;;
  esac
done
BUNDLE="${HG_GPU_BUNDLE:-$ROOT/.gpu-bundle}"  # (tests/gpu/test_run_flow.sh points it at stubs)
BUILD="${HG_GPU_BUILD_DIR:-$ROOT/build-gpu}"
OUTDIR="${OUT:-$BUILD/out}"
BUDGET="${HG_GPU_BUDGET_S:-$([ $QUICK -eq 1 ] && echo 170 || echo 450)}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hg-gpu-run.XXXXXX")"  # run folders and scratch
mkdir -p "$OUTDIR"
SUMMARY="$OUTDIR/summary.txt"
: >"$SUMMARY"
status=0
SECONDS=0  # bash counts the seconds since this line: the clock of the deadline (no process per look)

log() { printf '[run.sh %4ds] %s\n' "$SECONDS" "$*" | tee -a "$SUMMARY"; }
note() { tee -a "$SUMMARY"; }  # lines worth keeping in the summary

NOT_CHECKED=()  # steps that no longer fit before the deadline, listed once at the end

# run_limited LOG LIMIT COMMAND...: run with a time limit (cut to the time left), append the
# output to LOG; returns the command's status (124: timed out; 125: no time left).
run_limited() {
  local logf="$1" limit="$2"; shift 2
  local room=$(( BUDGET - SECONDS ))
  [ "$room" -lt "$limit" ] && limit=$room
  [ "$limit" -lt 5 ] && return 125
  echo "===== $* (limit ${limit}s)" >>"$logf"
  timeout --kill-after=5 "$limit" "$@" >>"$logf" 2>&1
}

# step NAME LOG LIMIT COMMAND...: one step of the summary.
step() {
  local name="$1" logf="$2" limit="$3"; shift 3
  local t0=$SECONDS
  run_limited "$logf" "$limit" "$@"
  local rc=$?
  local took=$(( SECONDS - t0 ))
  case $rc in
    0) log "step $name: ok (${took}s)" ;;
    125) NOT_CHECKED+=("$name"); status=1 ;;
    124|137) log "step $name: TIMED OUT after ${took}s"; status=1 ;;
    *) log "step $name: FAILED (exit $rc, ${took}s), see $(basename "$logf")"; status=1 ;;
  esac
  return $rc
}

finish() {
  [ ${#NOT_CHECKED[@]} -gt 0 ] && log "NOT CHECKED, out of time (budget ${BUDGET}s): ${NOT_CHECKED[*]}"
  cd "$ROOT" || true
  rm -rf "$WORK"
  log "done$([ $QUICK -eq 1 ] && echo ' (quick)'): $([ $status -eq 0 ] && echo 'every step passed' || echo 'SOME STEPS FAILED OR WERE NOT CHECKED')"
  exit $status
}

log "halfgrad GPU checks ($([ $QUICK -eq 1 ] && echo quick || echo full)), $(date -u '+%Y-%m-%d %H:%M UTC'), budget ${BUDGET}s, $(nproc) cores"
{
  echo "== nvidia-smi"; nvidia-smi 2>&1 || echo "nvidia-smi not found"
  echo "== nvcc"; nvcc --version 2>&1 || echo "nvcc not found"
  echo "== compute-sanitizer"; command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>&1
  echo "== os"; cat /etc/os-release 2>/dev/null | head -3; ldd --version 2>&1 | head -1
} >"$OUTDIR/env.txt" 2>&1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/GPU: /' | note

# ---- the binaries: prebuilt (bundle) or built here ---------------------------------------------
CUDA_LIB="$(dirname "$(command -v nvcc 2>/dev/null || echo /usr/local/cuda/bin/nvcc)")/../lib64"
export LD_LIBRARY_PATH="$BUNDLE/lib:$CUDA_LIB:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
BIN=""
if [ -f "$BUNDLE/programs.tar.xz" ] && [ ! -d "$BUNDLE/bin" ]; then  # bundle.sh packs them (xz)
  tar -C "$BUNDLE" -xJf "$BUNDLE/programs.tar.xz" 2>>"$OUTDIR/env.txt" ||
    python3 -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" \
      "$BUNDLE/programs.tar.xz" "$BUNDLE" 2>>"$OUTDIR/env.txt" ||
    log "cannot unpack .gpu-bundle/programs.tar.xz (see env.txt)"
fi
if [ -x "$BUNDLE/bin/test_cuda_runtime" ]; then
  "$BUNDLE/bin/test_cuda_runtime" >"$WORK/probe.log" 2>&1
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 77 ] || [ $rc -eq 1 ]; then
    BIN="$BUNDLE/bin"
    log "using the prebuilt binaries in .gpu-bundle/bin ($(cat "$BUNDLE/bin/BUILT" 2>/dev/null))"
  else
    log "the prebuilt binaries cannot start here (exit $rc): building instead"
    head -n 5 "$WORK/probe.log" | note
  fi
fi
if [ -z "$BIN" ]; then
  gen=(); command -v ninja >/dev/null && [ ! -f "$BUILD/Makefile" ] && gen=(-G Ninja)
  bundle=()
  [ -d "$BUNDLE/sysroot/usr" ] && bundle=(-DCMAKE_PREFIX_PATH="$BUNDLE/sysroot/usr")
  step configure "$OUTDIR/build.log" 120 cmake -S "$ROOT" -B "$BUILD" "${gen[@]+"${gen[@]}"}" \
    "${bundle[@]+"${bundle[@]}"}" -DHG_VIEWER=OFF -DHG_CUDA=ON -DHG_CUDA_ARCHS=90 || exit 1
  targets=(gemm_ladder lesson_02 lesson_03 lesson_05 lesson_06 lesson_09 lesson_10 lesson_11 lesson_12)
  for src in "$ROOT"/tests/gpu/test_*.cu "$ROOT"/tests/gpu/test_*.cpp; do [ -e "$src" ] && targets+=("$(basename "${src%.*}")"); done
  step build "$OUTDIR/build.log" 400 cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" || exit 1
  BIN="$WORK/bin"
  mkdir -p "$BIN"
  for t in "${targets[@]}"; do
    f=$(find "$BUILD" -maxdepth 3 -type f -name "$t" -perm -u+x | head -n 1)
    [ -n "$f" ] && ln -sf "$f" "$BIN/$t"
  done
fi
export HG_DATA="${HG_DATA:-$BUNDLE/fashion-mnist}"
{ echo "== binaries: $BIN"; ls -l "$BIN"; echo "== ldd test_cuda_runtime"; ldd "$BIN/test_cuda_runtime"; } >>"$OUTDIR/env.txt" 2>&1

# No GPU visible: say so once and stop (a skipped run never counts as passed).
"$BIN/test_cuda_runtime" >"$WORK/probe.log" 2>&1
if [ $? -eq 77 ]; then
  log "$(head -n 1 "$WORK/probe.log") — nothing to check"
  exit 77
fi

# ---- the GPU tests ------------------------------------------------------------------------------
# Small ones first: if time runs short, the most tests have run.
GPU_TESTS=()
for t in test_cuda_runtime test_cuda_ops_elementwise test_cuda_ops_nn test_cuda_matmul test_cuda_resume \
         test_cuda_amp test_cuda_engine test_gemm_ladder; do
  [ -f "$ROOT/tests/gpu/$t.cu" ] || [ -f "$ROOT/tests/gpu/$t.cpp" ] && GPU_TESTS+=("$t")
done
# Any newer test, after the known ones (.cu when it has kernels of its own, .cpp otherwise).
for src in "$ROOT"/tests/gpu/test_*.cu "$ROOT"/tests/gpu/test_*.cpp; do
  [ -e "$src" ] || continue
  t=$(basename "${src%.*}")
  [[ " ${GPU_TESTS[*]} " == *" $t "* ]] || GPU_TESTS+=("$t")
done
TESTS_LOG="$OUTDIR/tests.log"
: >"$TESTS_LOG"
tests_started=$SECONDS
for t in "${GPU_TESTS[@]}"; do
  [ -x "$BIN/$t" ] || { log "test $t: MISSING from $BIN"; status=1; continue; }
  left_for_tests=$(( 120 - (SECONDS - tests_started) ))
  [ $left_for_tests -lt 10 ] && left_for_tests=10
  step "$t" "$TESTS_LOG" "$left_for_tests" "$BIN/$t"
  rc=$?
  { [ $rc -eq 0 ] || [ $rc -eq 125 ]; } && continue
  # A kernel fault surfaces at the next synchronising call, under the wrong file and line:
  # run the binary again with every launch synchronous, so the report names the launch.
  step "$t (CUDA_LAUNCH_BLOCKING=1)" "$TESTS_LOG" 60 env CUDA_LAUNCH_BLOCKING=1 "$BIN/$t"
done
grep -hE '^(NOT OK|         mismatch)|checks passed|^SKIP' "$TESTS_LOG" | head -n 60 | note

# ---- NCCL at world size 1 (chapter 13) ----------------------------------------------------------
# One GPU, one rank, in one process that Open MPI starts as a singleton (no mpirun). The GPU
# machine has no Open MPI and NCCL is too large to ship: the bundle brings Open MPI's libraries
# and plugins (lib/, lib/openmpi3: bundle.sh); NCCL is the machine's own (its toolkit's, or its
# Python's nvidia-nccl package). World size 1 checks the NCCL calls, the device switch and the
# GPU paths of DDP and ZeRO-1, not two GPUs exchanging data. nccl_env runs a command with both.
nccl_env=(false)  # until NCCL is found: chapter 13's steps then fail instead of running without it
if [ -x "$BIN/test_nccl" ] && [ -x "$BIN/lesson_13" ]; then
  nccl_dir=""
  for d in ${HG_GPU_NCCL_DIR:-} "$CUDA_LIB" /usr/local/cuda/lib /usr/local/cuda/lib64 \
           $(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null); do
    [ -e "$d/libnccl.so.2" ] && { nccl_dir="$d"; break; }
  done
  if [ -z "$nccl_dir" ]; then
    log "NCCL: no libnccl.so.2 on this machine (looked in the toolkit and python3's nvidia.nccl): chapter 13's steps fail"
  else
    nccl_env=(env LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl_dir")
    [ -d "$BUNDLE/lib/openmpi3" ] && nccl_env+=(OMPI_MCA_mca_base_component_path="$BUNDLE/lib/openmpi3")
    { echo "== NCCL for chapter 13: $nccl_dir/libnccl.so.2"; echo "== ldd test_nccl"
      "${nccl_env[@]}" ldd "$BIN/test_nccl"; } >>"$OUTDIR/env.txt" 2>&1
  fi
  step test_nccl "$TESTS_LOG" 30 "${nccl_env[@]}" "$BIN/test_nccl"
  sed -n '/test_nccl/,$p' "$TESTS_LOG" | grep -E '^(NOT OK|SKIP)' | head -n 20 | note
else
  log "test_nccl: not checked, the binaries have no test_nccl and lesson_13 (a build without MPI or NCCL)"
  status=1
fi

# ---- the GEMM ladder ----------------------------------------------------------------------------
if [ $QUICK -eq 1 ]; then
  step ladder "$OUTDIR/ladder.log" 60 "$BIN/gemm_ladder" --quick --target-ms 50
else
  step ladder "$OUTDIR/ladder.log" 150 "$BIN/gemm_ladder" --target-ms 50
fi
grep -E '^(GPU|GOAL|NOTE)|FAILED|validated' "$OUTDIR/ladder.log" | note

[ $QUICK -eq 1 ] && finish

# ---- compute-sanitizer memcheck -----------------------------------------------------------------
SANITIZER="$(command -v compute-sanitizer || echo "$(dirname "$CUDA_LIB")/bin/compute-sanitizer")"
MEMCHECK_LOG="$OUTDIR/memcheck.log"
: >"$MEMCHECK_LOG"
if [ -x "$SANITIZER" ]; then
  mc_started=$SECONDS
  for t in "${GPU_TESTS[@]}"; do
    room=$(( 100 - (SECONDS - mc_started) ))
    [ $room -lt 10 ] && { log "memcheck $t: skipped, memcheck's 100 s are spent"; continue; }
    run_limited "$MEMCHECK_LOG" "$room" env HG_GPU_TEST_SMALL=1 "$SANITIZER" --tool memcheck --leak-check no \
      --report-api-errors no \
      --error-exitcode 99 "$BIN/$t"
    rc=$?
    case $rc in
      0) log "memcheck $t: clean" ;;
      99) log "memcheck $t: ERRORS, see memcheck.log"; status=1 ;;
      124|137) log "memcheck $t: ran out of time (${room}s), not a finding" ;;
      125) NOT_CHECKED+=("memcheck:$t"); status=1 ;;
      *) log "memcheck $t: the test failed under the sanitizer (exit $rc), see memcheck.log"; status=1 ;;
    esac
  done
  grep -E 'ERROR SUMMARY|Invalid|out of bounds' "$MEMCHECK_LOG" | sort | uniq -c | head -n 20 | note
else
  log "memcheck: compute-sanitizer not found"
fi

# ---- the chapters on the GPU --------------------------------------------------------------------
# Each invocation gets its own --run-name (and runs in a scratch folder), so a rule that refuses
# to overwrite an existing run folder never stops one.
CH_LOG="$OUTDIR/chapters.log"
: >"$CH_LOG"
cd "$WORK" || exit 1
stamp=$(date +%s)
step chapter02 "$CH_LOG" 60 "$BIN/lesson_02" --device cuda --model mlp,smallcnn --epochs 1 --run-name "gpu02_$stamp"
step chapter10 "$CH_LOG" 100 "$BIN/lesson_10" --device cuda --model resnet50 --epochs 1 --limit-train 10000 \
  --limit-test 2000 --lr 0.01 --runs fp32,amp_f16 --run-name "gpu10_$stamp" --stats-every 0
for nn in 06 09 11; do
  step "chapter$nn" "$CH_LOG" 20 "$BIN/lesson_$nn" --device cuda --limit-train 5000 --limit-test 1000 --epochs 1 \
    --run-name "gpu${nn}_$stamp"
done
step chapter03 "$CH_LOG" 10 "$BIN/lesson_03"
step chapter05 "$CH_LOG" 10 "$BIN/lesson_05"
# Chapter 12's GPT on text. The GPU machine has no fortunes package: the chapter's own README
# is the corpus (any UTF-8 text will do).
for prec in fp32 amp_f16; do
  step "chapter12-$prec" "$CH_LOG" 20 "$BIN/lesson_12" --device cuda --precision "$prec" \
    --data "$ROOT/lessons/12_memory_and_scale/README.md" --steps 40 --warmup 5 --eval-every 20 --eval-batches 2 \
    --sample-chars 80 --run-name "gpu12_${prec}_$stamp"
done
[ -x "$BIN/lesson_13" ] && step chapter13 "$CH_LOG" 20 "${nccl_env[@]}" "$BIN/lesson_13" --device cuda \
  --limit-train 5000 --limit-test 1000 --check-steps 4 --run-name "gpu13_$stamp"
grep -E '^RESULT|vs fp32|GPU memory|bit-exact|bit-identical|differ|NOT OK|Error|error' "$CH_LOG" | head -n 50 | note
[ -d "$WORK/runs" ] && tar -C "$WORK" -czf "$OUTDIR/runs.tar.gz" runs

finish
