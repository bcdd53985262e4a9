#!/usr/bin/env bash
# tests/gpu/run.sh — every GPU check of halfgrad in one command, sized for a short GPU window.
#
#   tests/gpu/run.sh            the full run: at most 400 s of steps (the budget below)
#   tests/gpu/run.sh --quick    the chapters' GEMM tables, test_nccl and the GPU tests: at most 150 s
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
# A GPU window is 15 minutes of device time in all, the machine's start (one to two minutes)
# included, and a rerun after a fix must still fit. So the full run has a deadline of 400 s and
# --quick one of 150 s (HG_GPU_BUDGET_S overrides): no step may run past it, even one that hangs,
# and a step that no longer fits is reported as not checked. The steps run in the order of what
# they add, the tables the chapters still lack first, so that what a short window cuts is what
# matters least. Each has a ceiling; the ceilings of the full run add up to its deadline:
#   probe        nvidia-smi, the GPU test harness's own probe                     (30 s, ~5 s)
#   ladder       the GEMM ladder at 1000^3 (edges) and 4096^3: chapter 03's, 05's and 14's
#                tables and the GOAL lines (every rung in F32, F16, BF16, TF32; rung 09 in
#                FP8 vs cuBLASLt)                                                   60 s
#   chapter10    chapter 10's table: ResNet-50 FP32 vs AMP, one epoch of 10,000 images   60 s
#   test_nccl    chapter 13's NCCL at world size 1 (one GPU, one rank: an isolated Open MPI
#                singleton, no mpirun, no orted): every collective, DDP and ZeRO-1    15 s
#   chapter13    chapter 13's MLP through NCCL at world size 1, with its checks        15 s
#   chapter12    chapter 12's GPT, 40 steps in FP32 and in AMP F16                  2 x 15 s
#   tests        every GPU test binary (kernels and engine vs the CPU, bit-exact cases); a
#                failing binary is run again with CUDA_LAUNCH_BLOCKING=1, so that a kernel
#                fault is reported at the launch that caused it                    70 s
#   memcheck     compute-sanitizer --tool memcheck over the GPU test binaries (small
#                shapes: HG_GPU_TEST_SMALL=1); a binary that runs out of time is reported,
#                not failed; a sanitizer that refuses the device (it does under gVisor)
#                is reported once as unsupported here, and the run goes on           30 s
#   chapter02    chapter 02 on the GPU: MLP and SmallCNN, one full epoch each        30 s
#   chapters     chapters 06, 09, 11 (short runs), 03 and 05 (their GPU sections)  5 x 8 s
#   ladder-sweep the GEMM ladder at every size (square 256..8192, transformer shapes) 50 s
# Full: 60 + 60 + 15 + 15 + 30 + 70 + 30 + 30 + 40 + 50 = 400 s. --quick: probe, ladder,
# test_nccl, tests: 60 + 15 + 70 = 145 s of its 150. Give the device tool timeout_s=480 for the
# full run and 210 for --quick (the deadline, the kill grace, unpacking and the wrap-up): with
# the machine's start, the full run and a --quick rerun take about 12 of the 15 minutes. None of
# these times has been measured on a GPU yet: they are ceilings, the deadline is what holds.
#
# Output ($OUT, or build-gpu/out): at most 8 files, none in a subfolder, as the device tool
# brings back (each written as the run goes, so a run stopped from outside still leaves them):
#   summary.txt    one line per step (ok / FAILED / TIMED OUT / not built / not checked) and the
#                  lines that matter: GPU, NOT OK, GOAL, NOTE, RESULT, memcheck's ERROR SUMMARY
#   tests.log      every GPU test's full output (a failure names the op, the shapes, the first
#                  mismatching index and its values), and the CUDA_LAUNCH_BLOCKING reruns
#   memcheck.log   compute-sanitizer's reports
#   ladder.log     the GEMM tables
#   chapters.log   the chapters' output
#   env.txt        nvidia-smi, toolkit, which binaries ran and what they loaded
#   build.log      only when the tree had to be built here
#   runs.tar.gz    the chapters' run folders (run.json, events.jsonl) for the viewer
# memcheck leaves out the CUDA API errors the tests cause on purpose (--report-api-errors no).
# The script's own flow (order, deadlines, reruns, what is not built or not supported, the
# output files) is tested on the CPU with stub programs: tests/gpu/test_run_flow.sh.
# Exit status: 0 when every step that was built ran and passed (a build without MPI has no
# test_nccl and lesson_13: "not built", not a failure; nor is a sanitizer that refuses the
# device), 1 otherwise (a step skipped for lack of time was not checked, so it does not pass),
# 77 when there is no GPU.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
QUICK=0
for arg in "$@"; do
  case "$arg" in
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,65p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown argument '$arg' (known: --quick)" >&2; exit 2 ;;
  esac
done
BUNDLE="${HG_GPU_BUNDLE:-$ROOT/.gpu-bundle}"  # (tests/gpu/test_run_flow.sh points it at stubs)
BUILD="${HG_GPU_BUILD_DIR:-$ROOT/build-gpu}"
OUTDIR="${OUT:-$BUILD/out}"
BUDGET="${HG_GPU_BUDGET_S:-$([ $QUICK -eq 1 ] && echo 150 || echo 400)}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hg-gpu-run.XXXXXX")"  # run folders and scratch
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUTDIR"
SUMMARY="$OUTDIR/summary.txt"
: >"$SUMMARY"
status=0
SECONDS=0  # bash counts the seconds since this line: the clock of the deadline (no process per look)

log() { printf '[run.sh %4ds] %s\n' "$SECONDS" "$*" | tee -a "$SUMMARY"; }
note() { tee -a "$SUMMARY"; }  # lines worth keeping in the summary

NOT_CHECKED=()  # steps that no longer fit before the deadline, listed once at the end
NOT_BUILT=()    # steps whose programs this build does not have (no MPI: chapter 13's)

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
  [ -d "$WORK/runs" ] && tar -C "$WORK" -czf "$OUTDIR/runs.tar.gz" runs
  local built=""
  [ ${#NOT_BUILT[@]} -gt 0 ] && built=" (not built, so not checked: ${NOT_BUILT[*]})"
  log "done$([ $QUICK -eq 1 ] && echo ' (quick)'): $([ $status -eq 0 ] && echo "every step passed$built" || echo 'SOME STEPS FAILED OR WERE NOT CHECKED')"
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
# The probe: test_cuda_runtime, which exits 77 without a GPU. A hung driver must not hold the
# window: 30 s at most.
probe() { timeout --kill-after=5 30 "$1" >"$WORK/probe.log" 2>&1; }
if [ -x "$BUNDLE/bin/test_cuda_runtime" ]; then
  probe "$BUNDLE/bin/test_cuda_runtime"
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
  # Chapter 13's programs exist only in a build with MPI and NCCL (a GPU machine without Open
  # MPI has neither: its steps then say "not built").
  grep -q "NCCL .*: yes" "$OUTDIR/build.log" && targets+=(test_nccl lesson_13)
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
probe "$BIN/test_cuda_runtime"
if [ $? -eq 77 ]; then
  log "$(head -n 1 "$WORK/probe.log") — nothing to check"
  exit 77
fi

# The GPU tests, small ones first: if time runs short, the most tests have run. Any newer test
# comes after the known ones (.cu when it has kernels of its own, .cpp otherwise).
GPU_TESTS=()
for t in test_cuda_runtime test_cuda_ops_elementwise test_cuda_ops_nn test_cuda_matmul test_cuda_resume \
         test_cuda_amp test_cuda_engine test_gemm_ladder; do
  [ -f "$ROOT/tests/gpu/$t.cu" ] || [ -f "$ROOT/tests/gpu/$t.cpp" ] && GPU_TESTS+=("$t")
done
for src in "$ROOT"/tests/gpu/test_*.cu "$ROOT"/tests/gpu/test_*.cpp; do
  [ -e "$src" ] || continue
  t=$(basename "${src%.*}")
  [[ " ${GPU_TESTS[*]} " == *" $t "* ]] || GPU_TESTS+=("$t")
done
TESTS_LOG="$OUTDIR/tests.log"
CH_LOG="$OUTDIR/chapters.log"
: >"$TESTS_LOG"
[ $QUICK -eq 1 ] || : >"$CH_LOG"
stamp=$(date +%s)  # each chapter invocation gets a --run-name of its own (see below)

# ---- 1. the GEMM ladder at 4096^3: chapters 03, 05 and 14 show these tables ---------------------
step ladder "$OUTDIR/ladder.log" 60 "$BIN/gemm_ladder" --quick --target-ms 50
grep -E '^(GPU|GOAL|NOTE)|FAILED|validated' "$OUTDIR/ladder.log" | note

# ---- 2. chapter 10's table: ResNet-50, FP32 vs AMP --------------------------------------------
# The chapters run in a scratch folder, each invocation with its own --run-name, so a rule that
# refuses to overwrite an existing run folder never stops one.
cd "$WORK" || exit 1
if [ $QUICK -eq 0 ]; then
  step chapter10 "$CH_LOG" 60 "$BIN/lesson_10" --device cuda --model resnet50 --epochs 1 --limit-train 10000 \
    --limit-test 2000 --lr 0.01 --runs fp32,amp_f16 --run-name "gpu10_$stamp" --stats-every 0
fi

# ---- 3. chapter 13 on the GPU: NCCL at world size 1 --------------------------------------------
# One GPU, one rank, in one process that Open MPI starts as a singleton (no mpirun). The GPU
# machine has no Open MPI: the bundle brings its libraries and plugins (lib/, lib/openmpi3:
# bundle.sh), not its programs. A singleton of Open MPI 4.1 starts the `orted` daemon from
# MPI_Init unless it is told to stay alone: OMPI_MCA_ess_singleton_isolated=1 (without it, and
# without orted, MPI_Init fails). NCCL is the machine's own (its toolkit's, or its Python's
# nvidia-nccl package). World size 1 checks the NCCL calls, the device switch and the GPU paths
# of DDP and ZeRO-1, not two GPUs exchanging data. nccl_env runs a command with all of it.
nccl_env=(false)  # until NCCL is found: chapter 13's steps then fail instead of running without it
if [ -x "$BIN/test_nccl" ] || [ -x "$BIN/lesson_13" ]; then
  nccl_dir=""
  for d in ${HG_GPU_NCCL_DIR:-} "$CUDA_LIB" /usr/local/cuda/lib /usr/local/cuda/lib64 \
           $(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib"))' 2>/dev/null); do
    [ -e "$d/libnccl.so.2" ] && { nccl_dir="$d"; break; }
  done
  if [ -z "$nccl_dir" ]; then
    log "NCCL: no libnccl.so.2 on this machine (looked in the toolkit and python3's nvidia.nccl): chapter 13's steps fail"
  else
    nccl_env=(env LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$nccl_dir" OMPI_MCA_ess_singleton_isolated=1)
    [ -d "$BUNDLE/lib/openmpi3" ] && nccl_env+=(OMPI_MCA_mca_base_component_path="$BUNDLE/lib/openmpi3")
    { echo "== NCCL for chapter 13: $nccl_dir/libnccl.so.2"; echo "== ldd test_nccl"
      "${nccl_env[@]}" ldd "$BIN/test_nccl"; } >>"$OUTDIR/env.txt" 2>&1
  fi
fi
for program in test_nccl lesson_13; do [ -x "$BIN/$program" ] || NOT_BUILT+=("${program/lesson_13/chapter13}"); done
if [ ${#NOT_BUILT[@]} -gt 0 ]; then
  names=$(printf '%s, ' "${NOT_BUILT[@]}")
  log "${names%, }: not built (a build without MPI or NCCL): chapter 13's GPU checks do not run"
fi
if [ -x "$BIN/test_nccl" ]; then
  step test_nccl "$TESTS_LOG" 15 "${nccl_env[@]}" "$BIN/test_nccl"  # (its NOT OK lines: with the tests' below)
fi
if [ $QUICK -eq 0 ] && [ -x "$BIN/lesson_13" ]; then
  step chapter13 "$CH_LOG" 15 "${nccl_env[@]}" "$BIN/lesson_13" --device cuda \
    --limit-train 5000 --limit-test 1000 --check-steps 4 --run-name "gpu13_$stamp"
fi

# ---- 4. chapter 12's GPT on the GPU -------------------------------------------------------------
# The GPU machine has no fortunes package: the chapter's own README is the corpus (any UTF-8
# text will do).
if [ $QUICK -eq 0 ]; then
  for prec in fp32 amp_f16; do
    step "chapter12-$prec" "$CH_LOG" 15 "$BIN/lesson_12" --device cuda --precision "$prec" \
      --text "$ROOT/lessons/12_memory_and_scale/README.md" --steps 40 --warmup 5 --eval-every 20 --eval-batches 2 \
      --sample-chars 80 --run-name "gpu12_${prec}_$stamp"
  done
fi

# ---- 5. the GPU tests ---------------------------------------------------------------------------
tests_started=$SECONDS
for t in "${GPU_TESTS[@]}"; do
  [ -x "$BIN/$t" ] || { log "test $t: MISSING from $BIN"; status=1; continue; }
  left_for_tests=$(( 70 - (SECONDS - tests_started) ))
  [ $left_for_tests -lt 10 ] && left_for_tests=10
  step "$t" "$TESTS_LOG" "$left_for_tests" "$BIN/$t"
  rc=$?
  { [ $rc -eq 0 ] || [ $rc -eq 125 ]; } && continue
  # A kernel fault surfaces at the next synchronising call, under the wrong file and line:
  # run the binary again with every launch synchronous, so the report names the launch.
  step "$t (CUDA_LAUNCH_BLOCKING=1)" "$TESTS_LOG" 30 env CUDA_LAUNCH_BLOCKING=1 "$BIN/$t"
done
grep -hE '^(NOT OK|         mismatch)|checks passed|^SKIP' "$TESTS_LOG" | head -n 60 | note

[ $QUICK -eq 1 ] && finish

# ---- 6. compute-sanitizer memcheck --------------------------------------------------------------
# Under gVisor the sanitizer refuses the device ("Device not supported", then error 999 at the
# first allocation): the binary then fails under it through no fault of its own. That is said
# once, as what it is, and the run goes on; on a runtime where the sanitizer works (Firecracker)
# its findings count.
SANITIZER="$(command -v compute-sanitizer || echo "$(dirname "$CUDA_LIB")/bin/compute-sanitizer")"
MEMCHECK_LOG="$OUTDIR/memcheck.log"
: >"$MEMCHECK_LOG"
if [ -x "$SANITIZER" ]; then
  mc_started=$SECONDS
  for t in "${GPU_TESTS[@]}"; do
    [ -x "$BIN/$t" ] || continue
    room=$(( 30 - (SECONDS - mc_started) ))
    [ $room -lt 10 ] && { log "memcheck $t: skipped, memcheck's 30 s are spent"; continue; }
    : >"$WORK/memcheck.one"
    run_limited "$WORK/memcheck.one" "$room" env HG_GPU_TEST_SMALL=1 "$SANITIZER" --tool memcheck --leak-check no \
      --report-api-errors no \
      --error-exitcode 99 "$BIN/$t"
    rc=$?
    cat "$WORK/memcheck.one" >>"$MEMCHECK_LOG"
    if grep -qi "device not supported" "$WORK/memcheck.one"; then
      log "memcheck: sanitizer unsupported here ($(grep -i -m 1 "device not supported" "$WORK/memcheck.one" |
        sed 's/^=* *//' | cut -c1-100)): no binary checked, see memcheck.log"
      break
    fi
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

# ---- 7. the other chapters on the GPU -----------------------------------------------------------
step chapter02 "$CH_LOG" 30 "$BIN/lesson_02" --device cuda --model mlp,smallcnn --epochs 1 --run-name "gpu02_$stamp"
for nn in 06 09 11; do
  step "chapter$nn" "$CH_LOG" 8 "$BIN/lesson_$nn" --device cuda --limit-train 5000 --limit-test 1000 --epochs 1 \
    --run-name "gpu${nn}_$stamp"
done
step chapter03 "$CH_LOG" 8 "$BIN/lesson_03"
step chapter05 "$CH_LOG" 8 "$BIN/lesson_05"
grep -E '^RESULT|vs fp32|GPU memory|bit-exact|bit-identical|differ|NOT OK|Error|error' "$CH_LOG" | head -n 50 | note

# ---- 8. the GEMM ladder at every size (docs/measurements, not a chapter's table) -----------------
step ladder-sweep "$OUTDIR/ladder.log" 50 "$BIN/gemm_ladder" --target-ms 20
sed -n '/^===== .*gemm_ladder --target-ms/,$p' "$OUTDIR/ladder.log" | grep -E 'FAILED' | note

finish
