// framework/cpu/gemm.cpp — a cache-blocked, packed, multithreaded GEMM (the Goto/BLIS scheme).
//
// Sections: 1. the blocking scheme  2. choosing a micro-kernel  3. one thread's rectangle
//           4. splitting C between threads  5. the public entry points (sgemm, f16, bf16, dgemm)
//
// ---- 1. The blocking scheme ----------------------------------------------------------------
//
// C (M,N) += op(A) (M,K) · op(B) (K,N). A naive triple loop streams all of B from memory once
// per row of C: for 1024³ that is 4 GB of traffic for 2 GFLOP, and the CPU waits on memory.
// Blocking reorders the same multiply-adds so that each level of the memory hierarchy holds
// the operand that is reused most from it:
//
//   for jc in 0..N step NC             5th loop   B panel   (KC, NC)  ~ L3   (NC = 4096)
//     for pc in 0..K step KC           4th loop   pack B panel once, reuse it for all of M
//       pack op(B)[pc:pc+KC, jc:jc+NC] -> Bp
//       for ic in 0..M step MC         3rd loop   A block   (MC, KC)  ~ L2   (MC = 144..192)
//         pack op(A)[ic:ic+MC, pc:pc+KC] -> Ap
//         for jr in 0..NC step NR      2nd loop   B sliver  (KC, NR)  ~ L1   (reused MC/MR times)
//           for ir in 0..MC step MR    1st loop   A sliver  (KC, MR)  streamed from L2
//             micro-kernel: C[ir:+MR, jr:+NR] (+)= Ap sliver · Bp sliver   (registers)
//
// Why these sizes (on a core with 48 KB L1, 2 MB L2):
//   KC = 256: a B sliver is 256·16·4 B = 16 KB (AVX2) or 32 KB (AVX-512): it stays in L1
//             while the kernel walks down all MC/MR A slivers. A larger KC also means C is
//             loaded and stored fewer times (once per KC multiply-adds).
//   MC = 144 (AVX2) / 192 (AVX-512): the packed A block is 144–192 KB: well inside L2,
//             leaving room for the B slivers passing through. A multiple of MR.
//   NC = 4096: the packed B panel (up to 4 MB) lives in L2/L3; big enough that the A block
//             is reused across many slivers, small enough not to thrash.
// These are targets: the actual blocks split each dimension into equal pieces of about that
// size (balanced_block), so K = 288 is one block of 288 rather than 256 + a thin 32.
// The micro-kernel's register tile MR×NR (gemm_kernel_*.cpp) is the innermost block.
//
// `bench_sgemm --threads 1` on the 2-core Xeon (Sapphire Rapids) this was written on: at
// n = 256, where everything stays in cache, ~190 GFLOP/s with the AVX-512 kernel, ~113 with
// AVX2, ~31 portable; at n = 1024 and 2048 the AVX-512 kernel stays within about 10% of
// OpenBLAS. Larger products lose some speed to packing and cache misses — the cost of
// blocking, paid so that the kernel can run at speed at all.
//
// Element (i, j) of C still receives exactly the K products op(A)(i,p)·op(B)(p,j) — only the
// order of the additions changes (in KC-sized chunks), so the rounding differs from the naive
// loop by the usual O(K·eps) bound the tests check.
//
// ---- threads ---------------------------------------------------------------------------------
// C is cut into T rectangles (a tm × tn grid, T = tm·tn threads) and each thread runs the
// serial algorithm above on its own rectangle with its own packing buffers: no locks, no
// barriers, no shared writes. The cost is that threads in the same grid column pack the same
// B panel (and those in a row the same A block) — small next to the multiply-adds they save.
#include "framework/cpu/gemm.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <cstdint>
#include <memory>
#include <new>
#include <stdexcept>
#include <vector>

#include "framework/cpu/bf16_units.h"
#include "framework/cpu/gemm_bf16_kernels.h"
#include "framework/cpu/gemm_kernel.h"
#include "framework/cpu/gemm_pack.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

namespace hg::cpu {

// ---- 2. Choosing a micro-kernel ---------------------------------------------------------
namespace {

bool cpu_has(GemmKernel k) {
#if defined(__x86_64__)
  switch (k) {
    case GemmKernel::Auto:
    case GemmKernel::Portable: return true;
    case GemmKernel::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case GemmKernel::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2");
    case GemmKernel::Avx512Bf16:
      return cpu_has(GemmKernel::Avx512) && __builtin_cpu_supports("avx512bf16");
    case GemmKernel::Amx: return amx_permission().granted;  // the CPU has it and the OS allows it
  }
  return false;
#else
  return k == GemmKernel::Auto || k == GemmKernel::Portable;
#endif
}

bool is_bf16_unit(GemmKernel k) { return k == GemmKernel::Avx512Bf16 || k == GemmKernel::Amx; }

GemmKernel best_f32_kernel() {
  if (cpu_has(GemmKernel::Avx512)) return GemmKernel::Avx512;
  if (cpu_has(GemmKernel::Avx2)) return GemmKernel::Avx2;
  return GemmKernel::Portable;
}

// VDPBF16PS does 32 multiply-adds per instruction, an FP32 FMA 16. Intel's cores issue it half
// as often as an FMA (a Sapphire Rapids core: 107 against 214 GFLOP/s, ./lab bench peak), so
// there it is no faster than F32 and the tuned F32 kernels on widened operands win (its GEMM
// took 1.7x their time on chapter 02's shapes); AMD's Zen 4 and 5 issue it like an FMA,
// twice the F32 rate. So without AMX, BF16 goes to VDPBF16PS on AMD only.
GemmKernel best_bf16_kernel() {
  if (cpu_has(GemmKernel::Amx)) return GemmKernel::Amx;
#if defined(__x86_64__)
  if (cpu_has(GemmKernel::Avx512Bf16) && __builtin_cpu_is("amd")) return GemmKernel::Avx512Bf16;
#endif
  return best_f32_kernel();
}

// The one piece of global state: the kernel asked for (Auto: the best of each kind). Set by
// set_gemm_kernel (tests and the benchmark); otherwise decided on first use from
// HG_GEMM_KERNEL if set, else Auto.
std::atomic<int> g_choice{-1};

const MicroKernel& micro_kernel_for(GemmKernel k) {
  switch (k) {
    case GemmKernel::Avx512: return avx512_micro_kernel();
    case GemmKernel::Avx2: return avx2_micro_kernel();
    default: return portable_micro_kernel();
  }
}

const char* spelling(GemmKernel k) {  // as HG_GEMM_KERNEL spells it
  switch (k) {
    case GemmKernel::Auto: return "auto";
    case GemmKernel::Portable: return "portable";
    case GemmKernel::Avx2: return "avx2";
    case GemmKernel::Avx512: return "avx512";
    case GemmKernel::Avx512Bf16: return "avx512_bf16";
    case GemmKernel::Amx: return "amx";
  }
  return "?";
}

}  // namespace

bool gemm_kernel_supported(GemmKernel kernel) { return cpu_has(kernel); }

std::string gemm_kernel_unavailable_reason(GemmKernel kernel) {
  if (cpu_has(kernel)) return "";
  if (kernel == GemmKernel::Amx) return amx_permission().reason;
  return std::string("this CPU cannot run the ") + spelling(kernel) + " kernel";
}

void set_gemm_kernel(GemmKernel kernel) {
  if (!cpu_has(kernel))
    throw std::runtime_error("set_gemm_kernel: " + gemm_kernel_unavailable_reason(kernel));
  g_choice = int(kernel);
}

GemmKernel gemm_kernel_from_name(const std::string& name) {
  for (GemmKernel k : {GemmKernel::Auto, GemmKernel::Portable, GemmKernel::Avx2, GemmKernel::Avx512,
                       GemmKernel::Avx512Bf16, GemmKernel::Amx})
    if (name == spelling(k)) return k;
  throw std::runtime_error("gemm kernel '" + name +
                           "': unknown kernel (portable, avx2, avx512, avx512_bf16, amx or auto)");
}

namespace {
// The environment can choose too: HG_GEMM_KERNEL=portable|avx2|avx512|avx512_bf16|amx|auto.
GemmKernel kernel_from_environment() {
  const char* env = std::getenv("HG_GEMM_KERNEL");
  if (!env || !*env) return GemmKernel::Auto;
  GemmKernel k;
  try {
    k = gemm_kernel_from_name(env);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("HG_GEMM_KERNEL: ") + e.what());
  }
  if (!cpu_has(k))
    throw std::runtime_error(std::string("HG_GEMM_KERNEL=") + env + ": " + gemm_kernel_unavailable_reason(k));
  return k;
}

GemmKernel choice() {
  int k = g_choice.load();
  if (k < 0) g_choice = k = int(kernel_from_environment());
  return GemmKernel(k);
}
}  // namespace

GemmKernel gemm_kernel() {
  const GemmKernel k = choice();
  return k == GemmKernel::Auto || is_bf16_unit(k) ? best_f32_kernel() : k;
}

GemmKernel gemm_bf16_kernel() {
  const GemmKernel k = choice();
  return k == GemmKernel::Auto ? best_bf16_kernel() : k;
}

const char* gemm_kernel_name() { return micro_kernel_for(gemm_kernel()).name; }

std::string gemm_bf16_kernel_name() {
  const GemmKernel k = gemm_bf16_kernel();
  if (is_bf16_unit(k)) return spelling(k);
  return std::string(micro_kernel_for(k).name) + " (BF16 widened to F32)";
}

std::string cpu_lowp_sentence() {
  const GemmKernel k = gemm_bf16_kernel();
  if (is_bf16_unit(k))
    return std::string("F16 is storage only (widened to F32: the casts cost time); BF16 matmuls and "
                       "convolutions run on ") + spelling(k) + ", this CPU's BF16 matrix unit (chapter 05)";
  return std::string("F16 and BF16 are emulated in software (widened to F32 on the ") + micro_kernel_for(k).name +
         " kernel): slower than F32, not faster; " +
         (cpu_has(GemmKernel::Amx) || cpu_has(GemmKernel::Avx512Bf16)
              ? "this CPU's BF16 unit is switched off by HG_GEMM_KERNEL (chapter 05)"
              : "this CPU has no BF16 matrix unit (chapter 05)");
}

// ---- 3. One thread's rectangle: the five loops -------------------------------------------
namespace {

// A packing buffer: 64-byte aligned (a cache line, a zmm register). One pair per thread,
// kept between calls and grown when a bigger block comes: training calls sgemm thousands of
// times, and fresh multi-megabyte buffers would cost a page fault per 4 KB every call.
// (thread_local: each OpenMP thread owns its buffers, no locking.)
struct PackBuffer {
  float* p = nullptr;
  int64_t capacity = 0;
  float* get(int64_t n) {
    if (n > capacity) {
      ::operator delete[](p, std::align_val_t(64));
      p = new (std::align_val_t(64)) float[size_t(n)];
      capacity = n;
    }
    return p;
  }
  ~PackBuffer() { ::operator delete[](p, std::align_val_t(64)); }
};
thread_local PackBuffer t_pack_a, t_pack_b;

// Split `total` into the fewest blocks of about `target` (at most 25% over it), equal in size
// and a multiple of `unit`: K = 288 is one block of 288, not 256 + 32 (a second pass over C
// for 32 multiply-adds per element).
int64_t balanced_block(int64_t total, int64_t target, int64_t unit) {
  int64_t blocks = std::max<int64_t>(1, (total + target + target / 4 - 1) / (target + target / 4));
  int64_t size = (total + blocks - 1) / blocks;
  return (size + unit - 1) / unit * unit;
}


// C[m0:m1, n0:n1] = alpha · op(A)[m0:m1, :] · op(B)[:, n0:n1] + beta · C[m0:m1, n0:n1].
template <class Load, class T>
void gemm_rectangle(const MicroKernel& uk, const MatrixView<T>& A, const MatrixView<T>& B,
                    int64_t m0, int64_t m1, int64_t n0, int64_t n1, int64_t K, float alpha,
                    float beta, float* C, int64_t ldc) {
  const int MR = uk.mr, NR = uk.nr;
  const int64_t M = m1 - m0, N = n1 - n0;
  const int64_t MC = balanced_block(M, uk.mc, MR), KC = balanced_block(K, uk.kc, 1);
  const int64_t NC = balanced_block(N, uk.nc, NR);
  float* const Ap = t_pack_a.get(MC * KC);  // (MC, KC), packed
  float* const Bp = t_pack_b.get(KC * NC);  // (KC, NC), packed
  alignas(64) float edge[16 * 32];         // an MR×NR tile for the ragged edges of C

  for (int64_t jc = 0; jc < N; jc += NC) {                        // 5th loop
    const int64_t nc = std::min(NC, N - jc);
    for (int64_t pc = 0; pc < K; pc += KC) {                      // 4th loop
      const int64_t kc = std::min(KC, K - pc);
      pack_b<Load>(B, pc, n0 + jc, kc, nc, NR, uk.transpose8, Bp);
      const float beta_here = pc == 0 ? beta : 1.f;  // later K blocks accumulate onto C
      for (int64_t ic = 0; ic < M; ic += MC) {                    // 3rd loop
        const int64_t mc = std::min(MC, M - ic);
        pack_a<Load>(A, m0 + ic, pc, mc, kc, MR, uk.transpose8, Ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {                 // 2nd loop
          const float* b = Bp + jr * kc;
          const int64_t nr = std::min<int64_t>(NR, nc - jr);
          for (int64_t ir = 0; ir < mc; ir += MR) {               // 1st loop
            const float* a = Ap + ir * kc;
            const int64_t mr = std::min<int64_t>(MR, mc - ir);
            float* c = C + (m0 + ic + ir) * ldc + (n0 + jc + jr);
            if (mr == MR && nr == NR) {
              uk.fn(kc, a, b, c, ldc, alpha, beta_here);
            } else {  // ragged edge: full tile into `edge`, then only the valid part into C
              uk.fn(kc, a, b, edge, NR, 1.f, 0.f);
              for (int64_t r = 0; r < mr; ++r)
                for (int64_t j = 0; j < nr; ++j) {
                  const float ab = alpha * edge[r * NR + j];
                  c[r * ldc + j] = beta_here == 0.f ? ab : ab + beta_here * c[r * ldc + j];
                }
            }
          }
        }
      }
    }
  }
}

// ---- 4. Splitting C between threads -----------------------------------------------------

// Small products are not worth waking threads for (a parallel region costs a few µs).
int threads_for(int64_t M, int64_t N, int64_t K) {
  if (omp_in_parallel()) return 1;  // called from inside a parallel loop: stay serial
  const double flops = 2.0 * double(M) * double(N) * double(K);
  const int most = omp_get_max_threads();
  return int(std::max<int64_t>(1, std::min<int64_t>(most, int64_t(flops / 2e6))));
}

// The thread grid tm × tn for an M×N product in MR×NR tiles. First balance: the busiest
// thread's share of tiles, ceil(mt/tm)·ceil(nt/tn), as small as possible (M = 32 with MR = 12
// is 3 tile rows: split in 2 they give one thread twice the work, so split N instead). Then,
// among equally balanced grids, the smallest rectangle perimeter (less duplicated packing).
struct ThreadGrid {
  int tm = 1, tn = 1;
  int64_t mt, nt;  // tiles down and across
};
ThreadGrid thread_grid(int64_t M, int64_t N, int64_t K, int mr, int nr) {
  const int T_ = threads_for(M, N, K);
  ThreadGrid g{1, T_, (M + mr - 1) / mr, (N + nr - 1) / nr};
  int64_t best_work = INT64_MAX;
  double best_perimeter = 1e300;
  for (int f = 1; f <= T_; ++f) {
    if (T_ % f != 0 || f > g.mt || T_ / f > g.nt) continue;
    const int64_t work = ((g.mt + f - 1) / f) * ((g.nt + T_ / f - 1) / (T_ / f));
    const double perimeter = double(g.mt) / f * mr + double(g.nt) / (T_ / f) * nr;
    if (work < best_work || (work == best_work && perimeter < best_perimeter))
      best_work = work, best_perimeter = perimeter, g.tm = f, g.tn = T_ / f;
  }
  if (g.tm > g.mt || g.tn > g.nt) g.tm = g.tn = 1;  // too small to split at all
  return g;
}

// Run rect(m0, m1, n0, n1) for each thread's rectangle of the grid, in parallel. Rectangle
// boundaries fall on whole tiles, so only the last rectangle has ragged edges.
template <class Rect>
void for_each_rectangle(const ThreadGrid& g, int64_t M, int64_t N, int mr, int nr, const Rect& rect) {
#pragma omp parallel num_threads(g.tm * g.tn) if (g.tm * g.tn > 1)
  {
    const int t = omp_get_thread_num(), row = t / g.tn, col = t % g.tn;
    const int64_t m0 = std::min(M, g.mt * row / g.tm * mr), m1 = std::min(M, g.mt * (row + 1) / g.tm * mr);
    const int64_t n0 = std::min(N, g.nt * col / g.tn * nr), n1 = std::min(N, g.nt * (col + 1) / g.tn * nr);
    if (m1 > m0 && n1 > n0) rect(m0, m1, n0, n1);
  }
}

template <class Load, class T>
void gemm_driver(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const T* A,
                 int64_t lda, const T* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.f) {  // nothing to multiply: C = beta·C
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.f ? 0.f : beta * C[i * ldc + j];
    return;
  }
  const MicroKernel& uk = micro_kernel_for(gemm_kernel());
  const MatrixView<T> a{A, lda, ta}, b{B, ldb, tb};
  const ThreadGrid grid = thread_grid(M, N, K, uk.mr, uk.nr);
  for_each_rectangle(grid, M, N, uk.mr, uk.nr, [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
    gemm_rectangle<Load>(uk, a, b, m0, m1, n0, n1, K, alpha, beta, C, ldc);
  });
}

// gemm_bf16 on a matrix unit (gemm_bf16_kernels.h). The kernels accumulate AB straight into
// C; for alpha ≠ 1 or beta ≠ 0 they fill a scratch AB first and bf16_epilogue makes C. AMX
// splits the work between threads itself; VDPBF16PS runs the F32 kernels' thread grid on its
// 8×32 tiles.
void unit_gemm(GemmKernel unit, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
               const uint16_t* A, int64_t lda, const uint16_t* B, int64_t ldb, float beta, float* C,
               int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const bool direct = alpha == 1.f && beta == 0.f;
  std::vector<float> scratch(direct ? 0 : size_t(M * N));
  float* const ab = direct ? C : scratch.data();
  const int64_t ld_ab = direct ? ldc : N;
  const MatrixView<uint16_t> a{A, lda, ta}, b{B, ldb, tb};
  const int mr = 8, nr = 32;  // the VDPBF16PS kernel's tile
  if (K <= 0) {  // an empty sum: +0, as the emulation has it
    for (int64_t i = 0; i < M; ++i) std::fill(ab + i * ld_ab, ab + i * ld_ab + N, 0.f);
  } else if (unit == GemmKernel::Amx) {
    amx_gemm(a, b, M, N, K, ab, ld_ab, threads_for(M, N, K));
  } else {
    for_each_rectangle(thread_grid(M, N, K, mr, nr), M, N, mr, nr,
                       [&](int64_t m0, int64_t m1, int64_t n0, int64_t n1) {
                         avx512bf16_gemm_rectangle(a, b, m0, m1, n0, n1, K, ab, ld_ab);
                       });
  }
  if (direct) return;
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = bf16_epilogue(ab[i * N + j], alpha, beta, C[i * ldc + j]);
}

}  // namespace

// ---- 5. Entry points ----------------------------------------------------------------------

void sgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
           int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver<LoadF32>(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// hg::half and hg::bfloat16 are structs holding one uint16_t (framework/dtype): the packing
// reads the bits and widens them to FP32.
static_assert(sizeof(hg::half) == 2 && sizeof(hg::bfloat16) == 2, "16-bit storage types");
void gemm_f16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const hg::half* A,
              int64_t lda, const hg::half* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_driver<LoadF16>(ta, tb, M, N, K, alpha, reinterpret_cast<const uint16_t*>(A), lda,
                       reinterpret_cast<const uint16_t*>(B), ldb, beta, C, ldc);
}

// On a matrix unit when the CPU has one (and HG_GEMM_KERNEL does not force an F32 kernel).
void gemm_bf16(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
               const hg::bfloat16* A, int64_t lda, const hg::bfloat16* B, int64_t ldb, float beta,
               float* C, int64_t ldc) {
  const GemmKernel k = gemm_bf16_kernel();
  if (is_bf16_unit(k)) {
    unit_gemm(k, ta, tb, M, N, K, alpha, reinterpret_cast<const uint16_t*>(A), lda,
              reinterpret_cast<const uint16_t*>(B), ldb, beta, C, ldc);
    return;
  }
  gemm_driver<LoadBF16>(ta, tb, M, N, K, alpha, reinterpret_cast<const uint16_t*>(A), lda,
                        reinterpret_cast<const uint16_t*>(B), ldb, beta, C, ldc);
}

// FP64 for gradient checks: the i-k-j loop order (rows of op(B) and of C are walked
// contiguously when B is not transposed), parallel over rows of C. Simple, not tuned.
void dgemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const double* A,
           int64_t lda, const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
#pragma omp parallel for schedule(static) if (M * N * K > 100000 && !omp_in_parallel())
  for (int64_t i = 0; i < M; ++i) {
    double* c = C + i * ldc;
    for (int64_t j = 0; j < N; ++j) c[j] = beta == 0.0 ? 0.0 : beta * c[j];
    for (int64_t p = 0; p < K; ++p) {
      const double a = alpha * (ta ? A[p * lda + i] : A[i * lda + p]);
      if (tb)
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[j * ldb + p];
      else
        for (int64_t j = 0; j < N; ++j) c[j] += a * B[p * ldb + j];
    }
  }
}

}  // namespace hg::cpu
