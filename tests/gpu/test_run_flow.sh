#!/usr/bin/env bash
# CPU test of tests/gpu/run.sh's own flow, with stub programs in place of the GPU binaries
# (a fake .gpu-bundle/bin: HG_GPU_BUNDLE). No GPU, no build: seconds. It checks what a GPU run
# relies on and cannot be tried before one:
#   1. --quick, from a packed bundle (programs.tar.xz): the probe, the ladder with --quick,
#      test_nccl, every GPU test, then it stops; a failing test is run again with
#      CUDA_LAUNCH_BLOCKING=1; its NOT OK lines reach summary.txt; exit 1. Its deadline is well
#      under half of the full run's, and the full run's fits the device time of one session
#   2. full: the steps in the order of what they add (the tables the chapters lack first, then
#      the tests, the sanitizer, the other chapters, the ladder's sweep); each chapter
#      invocation with a --run-name of its own; chapter 13's NCCL steps start Open MPI as an
#      isolated singleton (OMPI_MCA_ess_singleton_isolated=1: the GPU machine has no orted);
#      memcheck's absence said once; every output file in one folder, at most 8, none in a
#      subfolder
#   3. a hanging test is cut at the deadline (HG_GPU_BUDGET_S), the steps after it are reported
#      as skipped (not checked: exit 1), and the whole run ends within the budget (plus the
#      kill grace)
#   4. no GPU (the probe exits 77): run.sh exits 77 and says so, and leaves no scratch folder
#   5. a build without MPI (no test_nccl, no lesson_13) on a machine whose compute-sanitizer
#      refuses the device (as under gVisor): "not built" and "sanitizer unsupported here", the
#      steps after memcheck still run, and the run passes (exit 0)
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/hg-run-flow.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
fail=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "OK     $1"; else echo "NOT OK $1"; fail=1; fi
}

# make_bundle DIR [HANG_TEST]: stubs for every GPU test, gemm_ladder and the lessons.
make_bundle() {
  local dir="$1" hang="${2:-}"
  mkdir -p "$dir/bin" "$dir/lib" "$dir/fashion-mnist"
  for src in "$ROOT"/tests/gpu/test_*.cu "$ROOT"/tests/gpu/test_*.cpp; do
    local t; t=$(basename "${src%.*}")
    printf '#!/bin/sh\necho "GPU: stub"\necho "3 of 3 checks passed"\nexit 0\n' >"$dir/bin/$t"
  done
  # one failing test: NOT OK, and it notices CUDA_LAUNCH_BLOCKING
  cat >"$dir/bin/test_cuda_ops_nn" <<'EOF'
#!/bin/sh
echo "NOT OK conv_output (5,3,7) F16 [bit-exact]   1 of 105 off; first [4] (0, 4) got 1 want 2"
echo "CUDA_LAUNCH_BLOCKING=${CUDA_LAUNCH_BLOCKING:-unset}"
exit 1
EOF
  [ -n "$hang" ] && printf '#!/bin/sh\nexec sleep 1000\n' >"$dir/bin/$hang"
  printf '#!/bin/sh\necho "GPU: stub"\necho "GOAL 4096^3 F16 best rung 08: 61.0%% of cuBLAS (goal >= 60%%): met"\necho "args: $*"\nexit 0\n' \
    >"$dir/bin/gemm_ladder"
  printf '#!/bin/sh\necho "OK     stub nccl, component path ${OMPI_MCA_mca_base_component_path:-unset}, singleton isolated ${OMPI_MCA_ess_singleton_isolated:-unset}"\nexit 0\n' \
    >"$dir/bin/test_nccl"
  mkdir -p "$dir/lib/openmpi3"
  for nn in 02 03 05 06 09 10 11 12 13; do
    printf '#!/bin/sh\necho "RESULT lesson %s $* (singleton isolated ${OMPI_MCA_ess_singleton_isolated:-unset})"\nmkdir -p runs/stub_%s\necho "{}" > runs/stub_%s/run.json\nexit 0\n' \
      "$nn" "$nn" "$nn" >"$dir/bin/lesson_$nn"
  done
  chmod +x "$dir"/bin/*
}
budget_of() { grep -o 'budget [0-9]*s' "$1" | head -n 1 | tr -dc 0-9; }  # the deadline a run announced
# in_order FILE PATTERN...: each pattern's first matching line comes after the previous one's
in_order() {
  local file="$1" last=0 n p; shift
  for p in "$@"; do
    n=$(grep -n -m 1 -E "$p" "$file" | cut -d: -f1)
    [ -n "$n" ] && [ "$n" -gt "$last" ] || { echo "  ('$p' missing or out of order in $(basename "$file"))"; return 1; }
    last=$n
  done
}

# 1. --quick, from a packed bundle (programs.tar.xz, as bundle.sh ships it)
make_bundle "$TMP/b1"
(cd "$TMP/b1" && tar -cJf programs.tar.xz bin lib && rm -rf bin lib)
mkdir -p "$TMP/nccl" && : >"$TMP/nccl/libnccl.so.2"  # where chapter 13's steps find "NCCL"
OUT="$TMP/out1" HG_GPU_BUNDLE="$TMP/b1" HG_GPU_NCCL_DIR="$TMP/nccl" PATH="/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" --quick >"$TMP/quick.log" 2>&1
rc=$?
check "--quick exits 1 when a test failed (got $rc)" test $rc -eq 1
check "--quick: programs.tar.xz was unpacked" test -x "$TMP/b1/bin/test_cuda_runtime"
check "--quick: the failing test ran again with CUDA_LAUNCH_BLOCKING=1" grep -q "CUDA_LAUNCH_BLOCKING=1" "$TMP/out1/tests.log"
check "--quick: its NOT OK line is in summary.txt" grep -q "NOT OK conv_output" "$TMP/out1/summary.txt"
check "--quick: every GPU test ran" test "$(grep -c '^===== .*/test_' "$TMP/out1/tests.log")" -ge "$(ls "$ROOT"/tests/gpu/test_*.cu "$ROOT"/tests/gpu/test_*.cpp | wc -l)"
check "--quick: the ladder ran with --quick" grep -q "args: --quick" "$TMP/out1/ladder.log"
check "--quick: the GOAL line is in summary.txt" grep -q "^GOAL" "$TMP/out1/summary.txt"
check "--quick: no chapter ran" test ! -e "$TMP/out1/chapters.log"
check "--quick: test_nccl ran (NCCL at world size 1)" grep -q "step test_nccl: ok" "$TMP/out1/summary.txt"
check "--quick: the ladder (the chapters' tables) first, then test_nccl, then the tests" \
  in_order "$TMP/out1/summary.txt" "step ladder: " "step test_nccl: " "step test_cuda_runtime: "

# 2. full
OUT="$TMP/out2" HG_GPU_BUNDLE="$TMP/b1" HG_GPU_NCCL_DIR="$TMP/nccl" PATH="/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" >"$TMP/full.log" 2>&1
rc=$?
check "full: exits 1 (the failing test) (got $rc)" test $rc -eq 1
for nn in 02 03 05 06 09 10 11 12 13; do
  check "full: chapter $nn ran" grep -q "RESULT lesson $nn" "$TMP/out2/chapters.log"
done
check "full: chapter 13 on the GPU" grep -q "RESULT lesson 13 --device cuda" "$TMP/out2/chapters.log"
check "full: test_nccl ran with the bundle's Open MPI plugins" \
  grep -q "stub nccl, component path $TMP/b1/lib/openmpi3" "$TMP/out2/tests.log"
check "full: test_nccl starts as an isolated singleton (no orted needed)" \
  grep -q "stub nccl, .*singleton isolated 1" "$TMP/out2/tests.log"
check "full: chapter 13 starts as an isolated singleton (no orted needed)" \
  grep -q "RESULT lesson 13 .*(singleton isolated 1)" "$TMP/out2/chapters.log"
check "full: the steps in the order of what they add" in_order "$TMP/out2/summary.txt" \
  "step ladder: " "step chapter10: " "step test_nccl: " "step chapter13: " "step chapter12-fp32: " \
  "step test_cuda_runtime: " "memcheck" "step chapter02: " "step chapter05: " "step ladder-sweep: "
check "full: the sweep is the ladder without --quick" grep -q "^args: --target-ms" "$TMP/out2/ladder.log"
names=$(grep '^RESULT' "$TMP/out2/chapters.log" | grep -o -- '--run-name [^ ]*' | sort)
check "full: every training chapter has a --run-name, all different" \
  test "$(echo "$names" | wc -l)" -eq 8 -a "$(echo "$names" | uniq | wc -l)" -eq 8
check "full: memcheck's absence is said" grep -q "memcheck: compute-sanitizer not found" "$TMP/out2/summary.txt"
check "full: the run folders come back as runs.tar.gz" test -s "$TMP/out2/runs.tar.gz"
check "full: at most 8 files in the output folder" test "$(ls -A "$TMP/out2" | wc -l)" -le 8
check "full: no subfolders in the output folder" test -z "$(find "$TMP/out2" -mindepth 1 -type d)"

# The deadlines. A GPU window is 15 minutes in all, the machine's start taking one to two of them
# (tests/gpu/README.md): the full run must leave room for a --quick rerun after it, so it stays
# at 7 minutes or less, and --quick stays well under half of it (at most 40%).
full=$(budget_of "$TMP/out2/summary.txt") quick=$(budget_of "$TMP/out1/summary.txt")
check "deadlines: full ${full:-?}s <= 420 s" test "${full:-9999}" -le 420
check "deadlines: --quick ${quick:-?}s <= 40% of full ${full:-?}s" test $(( ${quick:-9999} * 10 )) -le $(( ${full:-0} * 4 ))

# 3. a hanging test and a short deadline
make_bundle "$TMP/b3" test_cuda_ops_elementwise
start=$(date +%s)
OUT="$TMP/out3" HG_GPU_BUNDLE="$TMP/b3" HG_GPU_BUDGET_S=15 PATH="/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" >"$TMP/hang.log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
check "deadline: a hanging test is reported as timed out" grep -q "test_cuda_ops_elementwise: TIMED OUT" "$TMP/out3/summary.txt"
check "deadline: later steps are listed as not checked" grep -q "NOT CHECKED, out of time.*chapter05.*ladder-sweep" "$TMP/out3/summary.txt"
check "deadline: the run ends within its 15 s budget plus the kill grace and the wrap-up (took ${took}s)" test "$took" -le 27
check "deadline: exit 1 (got $rc)" test $rc -eq 1

# 4. no GPU (in a temporary folder of its own: run.sh's scratch folder must be gone after it)
make_bundle "$TMP/b4"
printf '#!/bin/sh\necho "SKIP: no GPU: stub"\nexit 77\n' >"$TMP/b4/bin/test_cuda_runtime"
mkdir "$TMP/tmp4"
TMPDIR="$TMP/tmp4" OUT="$TMP/out4" HG_GPU_BUNDLE="$TMP/b4" PATH="/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" --quick >"$TMP/nogpu.log" 2>&1
rc=$?
check "no GPU: exit 77 (got $rc)" test $rc -eq 77
check "no GPU: says so" grep -q "nothing to check" "$TMP/out4/summary.txt"
check "no GPU: its scratch folder is removed" test -z "$(ls -A "$TMP/tmp4")"

# 5. no MPI in the build, and a compute-sanitizer that refuses the device (gVisor's answer:
#    "Device not supported", then error 999; the program under it fails)
make_bundle "$TMP/b5"
printf '#!/bin/sh\necho "GPU: stub"\necho "3 of 3 checks passed"\nexit 0\n' >"$TMP/b5/bin/test_cuda_ops_nn"
rm "$TMP/b5/bin/test_nccl" "$TMP/b5/bin/lesson_13"
mkdir -p "$TMP/sanitizer"
cat >"$TMP/sanitizer/compute-sanitizer" <<'EOF'
#!/bin/sh
echo "========= COMPUTE-SANITIZER"
echo "========= Error: Device not supported. Please refer to the \"Supported Devices\" section of the sanitizer documentation"
echo "NOT OK cudaMalloc failed: unknown error (999)"
echo "========= ERROR SUMMARY: 1 error"
exit 99
EOF
chmod +x "$TMP/sanitizer/compute-sanitizer"
OUT="$TMP/out5" HG_GPU_BUNDLE="$TMP/b5" PATH="$TMP/sanitizer:/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" >"$TMP/nompi.log" 2>&1
rc=$?
check "no MPI, sanitizer refused: the run passes (got $rc)" test $rc -eq 0
check "no MPI: test_nccl and chapter 13 are said to be not built" grep -q "test_nccl, chapter13: not built" "$TMP/out5/summary.txt"
check "sanitizer refused: said once, as unsupported here" \
  test "$(grep -c "memcheck: sanitizer unsupported here" "$TMP/out5/summary.txt")" -eq 1
check "sanitizer refused: no binary counted as failed under it" bash -c '! grep -q "memcheck test_.*\(ERRORS\|failed\)" "$0"' "$TMP/out5/summary.txt"
check "sanitizer refused: its answer is kept in memcheck.log" grep -q "Device not supported" "$TMP/out5/memcheck.log"
check "sanitizer refused: the run goes on (chapter 02 and the sweep after memcheck)" \
  in_order "$TMP/out5/summary.txt" "memcheck: sanitizer unsupported here" "step chapter02: ok" "step ladder-sweep: ok"

if [ $fail -ne 0 ]; then
  echo "--- summary of the full run:"; cat "$TMP/out2/summary.txt"
  echo "--- summary of the deadline run:"; cat "$TMP/out3/summary.txt"
  echo "--- summary of the run without MPI:"; cat "$TMP/out5/summary.txt"
fi
exit $fail
