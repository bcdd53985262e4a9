// Chapter 05 — tensor cores: what one computes, the WMMA API, and the rungs 05-07.
//
//   ./lab lesson 05              everything this machine can run (the CPU parts need no GPU)
//   ./lab bench gemm             the GPU table: rungs 05-07 validated, then timed, vs cuBLAS
//
// The story, in order:
//   1. one fragment multiply-accumulate, D = A·B + C on 16 x 16 x 16, emulated on the CPU:
//      F16 operands, exact products, F32 accumulation; compared with hg::cpu::gemm_f16
//   2. why accumulate in F32: the same dot product accumulated in F16 loses the small terms
//   3. summation order: exact for small integers in any order; otherwise inside the F32 bound
//   4. rungs 05 -> 06 -> 07: fragment coordinates, the skew and its bank conflicts, the
//      cp.async double-buffer schedule, all from cuda/gemm/layout.h
//   5. on a GPU: rungs 05-07 checked bit for bit against hg::cpu::gemm_f16 (small integers)
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/gemm/bank_model.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/validate.h"
#include "framework/cpu/gemm.h"
#include "framework/dtype/half.h"
#include "framework/train/cli.h"

#if HG_WITH_CUDA
#include "cuda/gemm/ladder.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#endif

using namespace hg::cuda::gemm;
using Half = hg::half;  // (plain `half` would clash with CUDA's own typedef)

namespace {

constexpr int F = kWmma;  // 16

// D (16x16, F32) = A (16x16, F16) · B (16x16, F16) + C (16x16, F32), what one mma_sync does,
// with the products added in k order (the hardware's order inside a fragment is not specified).
std::vector<float> fragment_mma(const std::vector<Half>& A, const std::vector<Half>& B, const std::vector<float>& C) {
  std::vector<float> D(F * F);
  for (int m = 0; m < F; ++m)
    for (int n = 0; n < F; ++n) {
      float acc = C[m * F + n];
      for (int k = 0; k < F; ++k) acc += float(A[m * F + k]) * float(B[k * F + n]);  // exact product, F32 add
      D[m * F + n] = acc;
    }
  return D;
}

std::vector<Half> random_halves(int n, double lo, double hi, uint64_t seed) {
  SplitMix64 g(seed);
  std::vector<Half> v;
  for (int i = 0; i < n; ++i) v.push_back(Half(float(lo + (hi - lo) * g.uniform01())));
  return v;
}

// ---- 1. one fragment ---------------------------------------------------------------------------
void one_fragment() {
  fmt::print("\n== 1. one tensor-core fragment: D = A·B + C, 16 x 16 x 16, F16 in, F32 accumulate ==\n");
  const std::vector<Half> A = random_halves(F * F, -2, 2, 1), B = random_halves(F * F, -2, 2, 2);
  // Products of two F16 numbers are exact in F32: 11-bit x 11-bit significands make at most
  // 22 bits (F32 holds 24), and the exponents (-24 .. 15 each) stay inside F32's range.
  int exact = 0, total = 0;
  for (int m = 0; m < F; ++m)
    for (int k = 0; k < F; ++k)
      for (int n = 0; n < F; ++n, ++total)
        exact += double(float(A[m * F + k]) * float(B[k * F + n])) == double(float(A[m * F + k])) * double(float(B[k * F + n]));
  fmt::print("F16 x F16 products formed in F32: {} of {} exact (the F64 product equals the F32 one)\n", exact, total);

  const std::vector<float> zero(F * F, 0.0f);
  const std::vector<float> D = fragment_mma(A, B, zero);
  std::vector<float> ref(F * F, 0.0f);
  hg::cpu::gemm_f16(false, false, F, F, F, 1.0f, A.data(), F, B.data(), F, 0.0f, ref.data(), F);
  int same = 0;
  double worst = 0;
  for (int i = 0; i < F * F; ++i) {
    same += D[i] == ref[i];
    worst = std::max(worst, std::fabs(double(D[i]) - ref[i]));
  }
  fmt::print("fragment emulation vs hg::cpu::gemm_f16 on the same operands: {} of {} entries bit-identical, "
             "max |diff| {:.3g}\n", same, F * F, worst);
  fmt::print("D[0][0..3] = {:.9g} {:.9g} {:.9g} {:.9g}\n", D[0], D[1], D[2], D[3]);
}

// ---- 2. F32 accumulation -----------------------------------------------------------------------
void why_f32_accumulation() {
  fmt::print("\n== 2. why the accumulator is F32 ==\n");
  // One row of A times one column of B: 2048·1 followed by fifteen 1·1 products.
  std::vector<Half> a(F, Half(1.0f)), b(F, Half(1.0f));
  b[0] = Half(2048.0f);
  Half acc16(0.0f);
  float acc32 = 0.0f;
  for (int k = 0; k < F; ++k) {
    acc16 = Half(float(acc16) + float(a[k]) * float(b[k]));  // round to F16 after every add
    acc32 += float(a[k]) * float(b[k]);
  }
  fmt::print("2048 + 1 + 1 + ... (15 ones): F16 accumulator {}, F32 accumulator {}, exact 2063\n", float(acc16), acc32);
  fmt::print("Above 2048 the F16 spacing is 2, so each +1 is a tie that rounds back to even: all 15 are lost.\n"
             "Tensor cores keep the sum in F32 (24 bits), which is why F16 inputs are usable for training.\n");
}

// ---- 3. summation order --------------------------------------------------------------------------
void summation_order() {
  fmt::print("\n== 3. summation order: where the CPU emulation and the GPU can differ ==\n");
  const int K = 4096;
  std::vector<float> a(K), b(K);
  fill_small_integers(a, 7);
  fill_small_integers(b, 8);
  auto orders = [&](const std::vector<float>& x, const std::vector<float>& y, float& forward, float& pairwise, double& exact,
                    double& abs_sum) {
    forward = 0;
    exact = 0;
    abs_sum = 0;
    for (int k = 0; k < K; ++k) {
      forward += x[k] * y[k];
      exact += double(x[k]) * y[k];
      abs_sum += std::fabs(double(x[k]) * y[k]);
    }
    std::vector<float> p(K);
    for (int k = 0; k < K; ++k) p[k] = x[k] * y[k];
    for (int w = 1; w < K; w *= 2)  // pairwise (tree) order, like a GPU reduction
      for (int k = 0; k + w < K; k += 2 * w) p[k] += p[k + w];
    pairwise = p[0];
  };
  float f, p;
  double e, s;
  orders(a, b, f, p, e, s);
  fmt::print("small integers in [-2, 2], K = {}: k-order {}  tree order {}  exact {}  -> {}\n", K, f, p, e,
             (f == p && double(f) == e) ? "identical" : "DIFFERENT");
  std::vector<float> ra(K), rb(K);
  fill_uniform(ra, 9);
  fill_uniform(rb, 10);
  for (int k = 0; k < K; ++k) {  // make them F16 values, as the tensor core sees them
    ra[k] = float(Half(ra[k]));
    rb[k] = float(Half(rb[k]));
  }
  orders(ra, rb, f, p, e, s);
  fmt::print("random F16 values in [-1, 1], K = {}:\n  k-order {:.9g}  tree order {:.9g}  exact {:.9g}\n", K, f, p, e);
  fmt::print("  errors {:.3g} and {:.3g}; worst-case F32 bound gamma_K * sum|ab| = {:.3g}\n", std::fabs(f - e),
             std::fabs(p - e), f32_dot_error_bound(K, s));
  fmt::print("The hardware adds the products of a fragment in an order (and, measured on V100/T4/A100, with an\n"
             "internal rounding) that NVIDIA does not specify. So the CPU emulation matches a tensor core bit for\n"
             "bit when every partial sum is exact, and within the F32 bound otherwise; the tests check both.\n");
}

// ---- 4. the rungs -----------------------------------------------------------------------------------
void rungs() {
  fmt::print("\n== 4. rungs 05 -> 06 -> 07 ==\n");
  fmt::print("rung 05: one warp per 16 x 16 tile of C, fragments loaded straight from global memory;\n"
             "         block (bx, by) -> C tile at (row, col) = ({}, {}) for (3, 2)\n", rung05_tile(3, 2).row, rung05_tile(3, 2).col);
  using R = Rung06;
  fmt::print("rung 06: a block of {} warps computes a {} x {} tile, BK = {}; warp w owns a {} x {} sub-tile of "
             "{} x {} fragments:\n", R::kWarps, R::BM, R::BN, R::BK, R::WM, R::WN, R::FM, R::FN);
  for (int w = 0; w < R::kWarps; ++w) {
    const Coord c = rung06_fragment(w, 0, 0);
    fmt::print("  warp {}: rows {:>3}..{:>3}, columns {:>3}..{:>3}\n", w, c.row, c.row + R::WM - 1, c.col, c.col + R::WN - 1);
  }
  fmt::print("shared memory: A tile 128 x (32 + SKEW) halves, B tile 32 x (128 + SKEW); bank conflicts of the\n"
             "fragment loads (ldmatrix: 8 lanes x 16 bytes per phase), worst over every load of the kernel:\n");
  for (int skew : {0, 8, 16}) {
    int worst = 0;
    for (int w = 0; w < R::kWarps; ++w)
      for (int kk = 0; kk < R::BK; kk += F) {
        for (int i = 0; i < R::FM; ++i)
          worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(rung06_fragment(w, i, 0).row, kk, R::BK + skew), 16));
        for (int j = 0; j < R::FN; ++j)
          worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(kk, rung06_fragment(w, 0, j).col, R::BN + skew), 16));
      }
    fmt::print("  SKEW = {:>2} halves: row strides {:>3} and {:>3} bytes -> {}-way{}\n", skew, (R::BK + skew) * 2,
               (R::BN + skew) * 2, worst, skew == R::SKEW ? "   <- the kernel's choice" : "");
  }
  fmt::print("rung 07: the same tiles, two buffers, cp.async. Schedule for K = 128 (4 steps of 32):\n");
  const int steps = 128 / R::BK;
  fmt::print("  before the loop: start copying step 0 into buffer 0\n");
  for (int kt = 0; kt < steps; ++kt)
    fmt::print("  iteration {}: {}; wait for step {}; compute on buffer {}\n", kt,
               kt + 1 < steps ? fmt::format("start copying step {} into buffer {}", kt + 1, (kt + 1) % 2) : std::string("nothing to prefetch"),
               kt, kt % 2);
}

// ---- 5. on a GPU -----------------------------------------------------------------------------------
void on_gpu() {
  fmt::print("\n== 5. on the GPU ==\n");
#if HG_WITH_CUDA
  if (!hg::cuda::available()) {
    fmt::print("{}: this part needs a GPU.\n", hg::cuda::no_gpu_reason());
    return;
  }
  fmt::print("GPU: {}\n", hg::cuda::describe(hg::cuda::device_info(0)));
  const int M = 300, N = 257, K = 129;
  std::vector<float> Af(size_t(M) * K), Bf(size_t(K) * N);
  fill_small_integers(Af, 5);
  fill_small_integers(Bf, 6);
  std::vector<Half> A, B;
  for (float v : Af) A.push_back(Half(v));
  for (float v : Bf) B.push_back(Half(v));
  std::vector<float> ref(size_t(M) * N), C(size_t(M) * N);
  hg::cpu::gemm_f16(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, ref.data(), N);
  void* dA = hg::cuda::device_malloc(A.size() * 2);
  void* dB = hg::cuda::device_malloc(B.size() * 2);
  auto* dC = static_cast<float*>(hg::cuda::device_malloc(C.size() * 4));
  hg::cuda::copy_host_to_device(dA, A.data(), A.size() * 2);  // hg::half and __half share the bits
  hg::cuda::copy_host_to_device(dB, B.data(), B.size() * 2);
  for (const RungF16& r : kRungsF16) {
    r.run(M, N, K, static_cast<const __half*>(dA), static_cast<const __half*>(dB), dC);
    hg::cuda::copy_device_to_host(C.data(), dC, C.size() * 4);
    int bad = 0;
    for (size_t i = 0; i < C.size(); ++i) bad += C[i] != ref[i];
    fmt::print("  rung {} {:<30} {}x{}x{} small integers vs hg::cpu::gemm_f16: {}\n", r.id, r.name, M, N, K,
               bad == 0 ? "bit-exact" : fmt::format("{} entries differ", bad));
  }
  hg::cuda::device_free(dA);
  hg::cuda::device_free(dB);
  hg::cuda::device_free(dC);
  fmt::print("Timings: ./lab bench gemm (validates every rung again, then prints GFLOP/s and % of cuBLAS).\n");
#else
  fmt::print("this build has no CUDA (nvcc not found or HG_CUDA=OFF): the GPU part is skipped.\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 05: tensor cores — fragment numerics, WMMA, the rungs 05-07"};
  HG_PARSE_FLAGS(app, argc, argv);  // no flags but --help: anything else is one line, exit code 2
  one_fragment();
  why_f32_accumulation();
  summation_order();
  rungs();
  on_gpu();
  return 0;
}
