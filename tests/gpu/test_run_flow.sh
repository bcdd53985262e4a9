#!/usr/bin/env bash
# CPU test of tests/gpu/run.sh's own flow, with stub programs in place of the GPU binaries
# (a fake .gpu-bundle/bin: HG_GPU_BUNDLE). No GPU, no build: seconds. It checks what a GPU run
# relies on and cannot be tried before one:
#   1. --quick, from a packed bundle (programs.tar.xz): the probe, every GPU test, test_nccl
#      with the bundle's Open MPI plugins, the ladder with --quick, then it stops; a failing test
#      is run again with CUDA_LAUNCH_BLOCKING=1; its NOT OK lines reach summary.txt; exit 1
#   2. full: the chapters, each invocation with a --run-name of its own; memcheck's absence said
#      once; every output file in one folder, at most 8, none in a subfolder
#   3. a hanging test is cut at the deadline (HG_GPU_BUDGET_S), the steps after it are reported
#      as skipped (not checked: exit 1), and the whole run ends within the budget (plus the
#      kill grace)
#   4. no GPU (the probe exits 77): run.sh exits 77 and says so
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
  printf '#!/bin/sh\necho "OK     stub nccl, component path ${OMPI_MCA_mca_base_component_path:-unset}"\nexit 0\n' \
    >"$dir/bin/test_nccl"
  mkdir -p "$dir/lib/openmpi3"
  for nn in 02 03 05 06 09 10 11 12 13; do
    printf '#!/bin/sh\necho "RESULT lesson %s $*"\nmkdir -p runs/stub_%s\necho "{}" > runs/stub_%s/run.json\nexit 0\n' \
      "$nn" "$nn" "$nn" >"$dir/bin/lesson_$nn"
  done
  chmod +x "$dir"/bin/*
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
names=$(grep '^RESULT' "$TMP/out2/chapters.log" | grep -o -- '--run-name [^ ]*' | sort)
check "full: every training chapter has a --run-name, all different" \
  test "$(echo "$names" | wc -l)" -eq 8 -a "$(echo "$names" | uniq | wc -l)" -eq 8
check "full: memcheck's absence is said" grep -q "memcheck: compute-sanitizer not found" "$TMP/out2/summary.txt"
check "full: the run folders come back as runs.tar.gz" test -s "$TMP/out2/runs.tar.gz"
check "full: at most 8 files in the output folder" test "$(ls -A "$TMP/out2" | wc -l)" -le 8
check "full: no subfolders in the output folder" test -z "$(find "$TMP/out2" -mindepth 1 -type d)"

# 3. a hanging test and a short deadline
make_bundle "$TMP/b3" test_cuda_ops_elementwise
start=$(date +%s)
OUT="$TMP/out3" HG_GPU_BUNDLE="$TMP/b3" HG_GPU_BUDGET_S=15 PATH="/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" >"$TMP/hang.log" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
check "deadline: a hanging test is reported as timed out" grep -q "test_cuda_ops_elementwise: TIMED OUT" "$TMP/out3/summary.txt"
check "deadline: later steps are listed as not checked" grep -q "NOT CHECKED, out of time.*chapter05" "$TMP/out3/summary.txt"
check "deadline: the run ends within its 15 s budget plus the kill grace and the wrap-up (took ${took}s)" test "$took" -le 27
check "deadline: exit 1 (got $rc)" test $rc -eq 1

# 4. no GPU
make_bundle "$TMP/b4"
printf '#!/bin/sh\necho "SKIP: no GPU: stub"\nexit 77\n' >"$TMP/b4/bin/test_cuda_runtime"
OUT="$TMP/out4" HG_GPU_BUNDLE="$TMP/b4" PATH="/usr/bin:/bin" "$ROOT/tests/gpu/run.sh" --quick >"$TMP/nogpu.log" 2>&1
rc=$?
check "no GPU: exit 77 (got $rc)" test $rc -eq 77
check "no GPU: says so" grep -q "nothing to check" "$TMP/out4/summary.txt"

if [ $fail -ne 0 ]; then
  echo "--- summary of the full run:"; cat "$TMP/out2/summary.txt"
  echo "--- summary of the deadline run:"; cat "$TMP/out3/summary.txt"
fi
exit $fail
