#!/usr/bin/env bash
# CPU test (no GPU needed): did the build put an FP8 kernel image for sm_89 and sm_90 into
# hg_cuda, without adding sm_89 to every other file? cuda/CMakeLists.txt compiles the FP8
# kernels (cuda/gemm/*fp8*.cu) for 89 and 90 and everything else for HG_CUDA_ARCHS.
#
#   tests/gpu/fp8_images.sh FATBIN_IMAGES LIBHG_CUDA ARCHS      ARCHS: HG_CUDA_ARCHS, comma-separated
#
# It lists the images with cuda/tools/fatbin_images and checks:
#   1. 09_mma_fp8.cu.o has machine code (ELF) for sm_89 and sm_90, and nothing below sm_89;
#   2. an ordinary kernel file (05_wmma.cu.o) has an ELF for every architecture of ARCHS (this
#      also checks fatbin_images against what CMake asked nvcc for), and none for sm_89 unless
#      ARCHS names it;
#   3. where cuobjdump exists (not on every CUDA install), it lists sm_89 and sm_90 for the
#      FP8 file too.
set -uo pipefail
tool="${1:?usage: fp8_images.sh FATBIN_IMAGES LIBHG_CUDA ARCHS}"
lib="${2:?usage: fp8_images.sh FATBIN_IMAGES LIBHG_CUDA ARCHS}"
archs="${3:?usage: fp8_images.sh FATBIN_IMAGES LIBHG_CUDA ARCHS}"
fail=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "OK     $1"; else echo "NOT OK $1"; fail=1; fi
}
has() {  # has MEMBER KIND ARCH: the listing has that line
  grep -Eq "^$1 +$2 +$3\$" <<<"$listing"
}

listing="$("$tool" "$lib")" || { echo "NOT OK $tool $lib failed"; exit 1; }
echo "$listing" | grep -E "^(09_mma_fp8|05_wmma)\.cu\.o "

check "09_mma_fp8.cu.o has an sm_89 ELF" has 09_mma_fp8.cu.o ELF sm_89
check "09_mma_fp8.cu.o has an sm_90 ELF" has 09_mma_fp8.cu.o ELF sm_90
below=$(grep -E "^09_mma_fp8\.cu\.o " <<<"$listing" | awk '$3 ~ /_([0-7][0-9]|8[0-8])$/ {print $3}' | tr '\n' ' ')
check "09_mma_fp8.cu.o has no image below sm_89${below:+ (has: $below)}" test -z "$below"

for a in ${archs//,/ }; do
  n="${a%%[!0-9]*}"  # 90-real -> 90
  [ -n "$n" ] || continue
  check "05_wmma.cu.o has an sm_$n ELF (HG_CUDA_ARCHS $archs)" has 05_wmma.cu.o ELF "sm_$n"
done
if [[ ",$archs," != *",89"* ]]; then
  check "05_wmma.cu.o has no sm_89 ELF (89 is not in HG_CUDA_ARCHS)" bash -c '! grep -Eq "^05_wmma\.cu\.o +ELF +sm_89$" <<<"$0"' "$listing"
fi

if command -v cuobjdump >/dev/null 2>&1; then
  elf="$(cuobjdump --list-elf "$lib" 2>/dev/null | grep 09_mma_fp8)"
  check "cuobjdump --list-elf: 09_mma_fp8 for sm_89" grep -q "sm_89" <<<"$elf"
  check "cuobjdump --list-elf: 09_mma_fp8 for sm_90" grep -q "sm_90" <<<"$elf"
else
  echo "(cuobjdump not found: the check rests on fatbin_images alone)"
fi
exit $fail
