// When the operating system refuses AMX's tile state, gemm_bf16 falls back to the next unit,
// says why, and never executes a tile instruction (which would kill the process with SIGILL).
//
// The refusal is real, not pretended: a seccomp filter makes this process's
// arch_prctl(ARCH_REQ_XCOMP_PERM, ...) fail with EPERM, as a kernel older than 5.16 or a
// sandbox would, before halfgrad asks for the first time (the answer is kept per process, so
// this file holds one test case alone). Exits 77 on a CPU without AMX: nothing to refuse.
#include <doctest/doctest.h>

#if defined(__x86_64__) && defined(__linux__)
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"

using hg::cpu::GemmKernel;

TEST_CASE("AMX refused by the operating system: gemm_bf16 falls back and says why") {
#if defined(__x86_64__) && defined(__linux__)
  if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) {
    std::printf("SKIP: this CPU has no AMX-BF16, so there is no tile permission to refuse\n");
    std::exit(77);
  }
  // arch_prctl(0x1023 = ARCH_REQ_XCOMP_PERM, ...) -> EPERM; every other system call allowed.
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_arch_prctl, 0, 3),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x1023, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog program = {sizeof filter / sizeof filter[0], filter};
  REQUIRE(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0);
  REQUIRE(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0);

  CHECK_FALSE(hg::cpu::gemm_kernel_supported(GemmKernel::Amx));
  const std::string why = hg::cpu::gemm_kernel_unavailable_reason(GemmKernel::Amx);
  MESSAGE("why: " << why);
  CHECK(why.find("the operating system refused the tile state") != std::string::npos);
  CHECK(why.find("Operation not permitted") != std::string::npos);
  CHECK_THROWS_WITH(hg::cpu::set_gemm_kernel(GemmKernel::Amx), doctest::Contains("refused the tile state"));

  // Auto falls back to the F32 kernels with BF16 widened (on an Intel CPU, which every AMX CPU
  // is, VDPBF16PS is no faster than F32: gemm.cpp) and computes with them: bit for bit sgemm
  // on the widened operands.
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  CHECK(hg::cpu::gemm_bf16_kernel() == hg::cpu::gemm_kernel());
  CHECK(hg::cpu::gemm_bf16_kernel_name().find("(BF16 widened to F32)") != std::string::npos);
  const int64_t M = 33, N = 40, K = 70;
  std::vector<hg::bfloat16> A(M * K), B(K * N);
  for (size_t i = 0; i < A.size(); ++i) A[i] = hg::bfloat16(float(int(i % 7) - 3) / 4);
  for (size_t i = 0; i < B.size(); ++i) B[i] = hg::bfloat16(float(int(i % 5) - 2) / 2);
  std::vector<float> Aw(A.begin(), A.end()), Bw(B.begin(), B.end());
  std::vector<float> got(M * N), want(M * N);
  hg::cpu::gemm_bf16(false, false, M, N, K, 1.f, A.data(), K, B.data(), N, 0.f, got.data(), N);
  hg::cpu::sgemm(false, false, M, N, K, 1.f, Aw.data(), K, Bw.data(), N, 0.f, want.data(), N);
  CHECK(got == want);
#else
  std::printf("SKIP: AMX and its permission exist on x86-64 Linux only\n");
  std::exit(77);
#endif
}
