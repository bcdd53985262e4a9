#!/usr/bin/env bash
# tests/gpu/kernel_facts.sh — what the compiler makes of rungs 08 and 09, read on the CPU: no GPU,
# and no disassembler (the toolkit on the build machines ships neither cuobjdump nor nvdisasm).
# Chapters 05 and 14 paste its output.
#
#   tests/gpu/kernel_facts.sh [NVCC [ROOT]]      NVCC: nvcc on the PATH, else /usr/local/cuda's
#
#   1. Rung 08's registers per thread, from ptxas's report, for sm_80 and sm_90 and each
#      format. An SM has 65,536 registers: at 128 or fewer per thread two blocks of 256 threads
#      fit on one SM, at 130 only one (__launch_bounds__(256, 2) in the kernel asks for two).
#   2. Rung 09's instructions in the machine code nvcc makes for each target (-cubin), counted
#      by opcode: the low 12 bits of every 16-byte instruction in the kernels' .text sections.
#        0x23c  HMMA  F16 tensor-core MMA, m16n8k16          named so by nvdisasm (CUDA 11.8)
#        0x23e  F2FP  a conversion; here FP8 -> F16 pairs    named so by nvdisasm (CUDA 11.8)
#        0x27a  QMMA  FP8 tensor-core MMA, m16n8k32          CUDA 11.8's nvdisasm predates it and
#                     names no instruction there; later disassemblers print QMMA.16832.F32.E4M3.E4M3
#      sm_89 must get QMMA and neither HMMA nor F2FP: mma.sync with FP8 operands is one FP8
#      tensor-core instruction. sm_90 must get HMMA and F2FP and no QMMA: Hopper runs the same
#      mma.sync as two F16 MMAs on operands unpacked from FP8 (its FP8 tensor cores are reached
#      only through wgmma, sm_90a). If a later nvcc changes either, this test fails and the
#      chapters' sentences about it must change with it.
# Exit status: 0 when every check holds, 1 otherwise.
set -uo pipefail
NVCC="${1:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
ROOT="${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/hg-kernel-facts.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT
fail=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "OK     $1"; else echo "NOT OK $1"; fail=1; fi
}
R08=cuda/gemm/08_wmma_cp_async_double_buffered.cu
R09=cuda/gemm/09_mma_fp8.cu
# The four compiles run side by side: $TMP/NAME_smXX.cubin, ptxas's report in .report, and a
# .failed file when nvcc fails.
for job in "$R08 80" "$R08 90" "$R09 89" "$R09 90"; do
  read -r src arch <<<"$job"
  base="$TMP/$(basename "$src" .cu)_sm$arch"
  { "$NVCC" -std=c++17 -I"$ROOT" -arch="sm_$arch" -cubin -Xptxas -v -o "$base.cubin" "$ROOT/$src" >"$base.report" 2>&1 ||
      touch "$base.failed"; } &
done
wait
compiled() {  # compiled SOURCE ARCH: ptxas's report on stdout, or NOT OK and status 1
  local base; base="$TMP/$(basename "$1" .cu)_sm$2"
  if [ -e "$base.failed" ]; then echo "NOT OK nvcc failed on $1 for sm_$2:"; cat "$base.report"; return 1; fi
  cat "$base.report"
}
format_of() {  # the mangled kernel name -> the format
  case "$1" in *I6__half*) echo F16 ;; *I13__nv_bfloat16*) echo BF16 ;; *IfEE*) echo TF32 ;; *) echo "?" ;; esac
}

# ---- 1. rung 08's registers ---------------------------------------------------------------------
echo "rung 08 ($R08), registers per thread (ptxas -v):"
for arch in 80 90; do
  report="$(compiled "$R08" "$arch")" || { echo "$report"; fail=1; continue; }
  # "ptxas info : Compiling entry function 'NAME' for 'sm_90'", then
  # "N bytes stack frame, N bytes spill stores, N bytes spill loads", then "Used N registers"
  table="$(awk '/Compiling entry function/ { name = $7 } /spill stores/ { spill = $5 }
                /Used [0-9]+ registers/ { print name, $5, spill }' <<<"$report")"
  [ -n "$table" ] || { echo "NOT OK rung 08 on sm_$arch: no register report from ptxas"; fail=1; continue; }
  line="  sm_$arch "
  while read -r name regs spill; do
    line+="  $(format_of "$name") $regs$([ "$spill" != 0 ] && echo " (spills $spill bytes)")"
  done <<<"$table"
  echo "$line"
  while read -r name regs spill; do
    check "rung 08 $(format_of "$name") on sm_$arch: $regs registers <= 128, two blocks of 256 threads per SM" \
      test "$regs" -le 128
  done <<<"$table"
done

# ---- 2. rung 09's tensor-core instructions per target -------------------------------------------
echo "rung 09 ($R09), instructions by opcode in each kernel's machine code (nvcc -cubin):"
for arch in 89 90; do
  report="$(compiled "$R09" "$arch")" || { echo "$report"; fail=1; continue; }
  cubin="$TMP/09_mma_fp8_sm$arch.cubin"
  # .text sections of the four kernels: "[Nr] name type address offset size ..."
  sections="$(readelf -SW "$cubin" 2>/dev/null | sed -E 's/^ *\[ *[0-9]+\] *//' | awk '$1 ~ /^\.text\..*mma_fp8_kernel/ {print $1, $4, $5}')"
  [ "$(wc -l <<<"$sections")" -eq 4 ] || { echo "NOT OK sm_$arch: expected the four kernels' .text sections, found: $sections"; fail=1; continue; }
  while read -r name offset size; do
    counts="$(od -An -v -tx1 -j $((16#$offset)) -N $((16#$size)) -w16 "$cubin" |
      awk '{ op = substr($2, 2, 1) $1; n[op]++ } END { printf "%d %d %d\n", n["27a"], n["23c"], n["23e"] }')"
    read -r qmma hmma f2fp <<<"$counts"
    pair=$(sed -E 's/.*mma_fp8_kernelI13__nv_fp8_(e[45]m[23])(S3_|13__nv_fp8_(e[45]m[23])).*/\1 \3/' <<<"$name")
    a=${pair%% *} b=${pair#* }; [ -z "$b" ] && b=$a
    pair="$(tr a-z A-Z <<<"$a")·$(tr a-z A-Z <<<"$b")"
    printf '  sm_%s  %-11s  QMMA (FP8 MMA) %2d   HMMA (F16 MMA) %2d   F2FP (FP8 -> F16) %2d\n' "$arch" "$pair" "$qmma" "$hmma" "$f2fp"
    if [ "$arch" = 89 ]; then
      check "sm_89 $pair: FP8 tensor-core MMAs (QMMA), no F16 MMA, no unpacking" test "$qmma" -gt 0 -a "$hmma" -eq 0 -a "$f2fp" -eq 0
    else
      check "sm_90 $pair: F16 tensor-core MMAs on unpacked operands, no FP8 MMA" test "$qmma" -eq 0 -a "$hmma" -gt 0 -a "$f2fp" -gt 0
    fi
  done <<<"$sections"
done
exit $fail
