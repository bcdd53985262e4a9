// Chapter 05 — tensor cores: what one computes in F16, BF16 and TF32, the WMMA API, and the
// rungs 05-08.
//
//   ./lab lesson 05              everything this machine can run (the CPU parts need no GPU)
//   ./lab bench gemm             the GPU table: rungs 05-08 in every format validated, then timed, vs cuBLAS
//
// The story, in order:
//   1. one fragment multiply-accumulate, D = A·B + C, emulated on the CPU in each format: the
//      inputs rounded as the format does, exact products, F32 accumulation; compared with the
//      engine's emulation (hg::cpu::gemm_f16, gemm_bf16, and sgemm on TF32-rounded values)
//   2. the three formats side by side: how precise the inputs are, what range they keep, and
//      the hardware's rounding to TF32 (ties away from zero) next to halfgrad's TF32 format
//      (ties to even)
//   3. why accumulate in F32: the same dot product accumulated in F16 loses the small terms
//   4. summation order: exact for small integers in any order; otherwise inside the F32 bound
//   5. rungs 05 -> 06 -> 07 -> 08: the ladder restarts (05 is to tensor cores what 01 was to
//      SIMT), block tiles (06, the counterpart of rung 04), the skew and its bank conflicts
//      (07), the cp.async double-buffer schedule (08), all from cuda/gemm/layout.h
//   6. on a GPU: every rung in every format checked bit for bit against the emulation
//   7. the tensor core in your CPU: AMX's TDPBF16PS and AVX512_BF16's VDPBF16PS, their order
//      of additions and what they flush, each checked bit for bit against its emulation
//      (framework/cpu/bf16_units.h) when this CPU has it
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda/gemm/bank_model.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/validate.h"
#include "framework/cpu/bf16_units.h"
#include "framework/cpu/gemm.h"
#include "framework/cpu/wait_policy.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"
#include "framework/dtype/tf32.h"
#include "framework/train/cli.h"

#if HG_WITH_CUDA
#include "cuda/gemm/ladder.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#endif

using namespace hg::cuda::gemm;

namespace {

constexpr int F = kWmma;  // 16

// The three input formats as the tensor cores see them: the value a float becomes.
struct TcFormat {
  const char* name;
  int k;                             // K of one fragment: 16 (F16, BF16) or 8 (TF32)
  std::function<float(float)> round;
};
const TcFormat kFormats[] = {
    {"F16", 16, [](float x) { return float(hg::half(x)); }},            // round to nearest, ties to even
    {"BF16", 16, [](float x) { return float(hg::bfloat16(x)); }},       // round to nearest, ties to even
    {"TF32", 8, [](float x) { return hg::round_to_tf32_rna(x); }},      // cvt.rna.tf32.f32: ties AWAY from zero
};

// D (16x16, F32) = A (16xk) · B (kx16) + C (16x16, F32), what one mma_sync does, with the
// products added in k order (the hardware's order inside a fragment is not specified).
// A and B hold the format's values already (rounded).
std::vector<float> fragment_mma(const std::vector<float>& A, const std::vector<float>& B, const std::vector<float>& C,
                                int k) {
  std::vector<float> D(F * F);
  for (int m = 0; m < F; ++m)
    for (int n = 0; n < F; ++n) {
      float acc = C[m * F + n];
      for (int p = 0; p < k; ++p) acc += A[m * k + p] * B[p * F + n];  // exact product, F32 add
      D[m * F + n] = acc;
    }
  return D;
}

std::vector<float> random_values(int n, double lo, double hi, uint64_t seed) {
  SplitMix64 g(seed);
  std::vector<float> v;
  for (int i = 0; i < n; ++i) v.push_back(float(lo + (hi - lo) * g.uniform01()));
  return v;
}

// The engine's emulation of one format: the GEMM the tests compare the GPU with.
std::vector<float> engine_emulation(const TcFormat& f, const std::vector<float>& A, const std::vector<float>& B,
                                    int M, int N, int K) {
  std::vector<float> C(size_t(M) * N, 0.0f);
  if (std::string(f.name) == "F16") {
    std::vector<hg::half> a, b;
    for (float v : A) a.push_back(hg::half(v));
    for (float v : B) b.push_back(hg::half(v));
    hg::cpu::gemm_f16(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, C.data(), N);
  } else if (std::string(f.name) == "BF16") {
    std::vector<hg::bfloat16> a, b;
    for (float v : A) a.push_back(hg::bfloat16(v));
    for (float v : B) b.push_back(hg::bfloat16(v));
    // On the F32 kernels (widened): a CPU's own BF16 unit adds in its own order (section 7).
    hg::cpu::set_gemm_kernel(hg::cpu::gemm_kernel());
    hg::cpu::gemm_bf16(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, C.data(), N);
    hg::cpu::set_gemm_kernel(hg::cpu::GemmKernel::Auto);
  } else {  // TF32 values times TF32 values are exact in F32: an F32 GEMM of the rounded values
    std::vector<float> a, b;
    for (float v : A) a.push_back(hg::round_to_tf32_rna(v));
    for (float v : B) b.push_back(hg::round_to_tf32_rna(v));
    hg::cpu::sgemm(false, false, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, C.data(), N);
  }
  return C;
}

// ---- 1. one fragment, three formats ---------------------------------------------------------------
void one_fragment() {
  fmt::print("\n== 1. one tensor-core fragment: D = A·B + C, F32 accumulate, in each input format ==\n");
  for (const TcFormat& f : kFormats) {
    std::vector<float> A = random_values(F * f.k, -2, 2, 1), B = random_values(f.k * F, -2, 2, 2);
    for (float& v : A) v = f.round(v);
    for (float& v : B) v = f.round(v);
    // Products of two values of these formats are exact in F32: at most 11 x 11 = 22 significant
    // bits (F32 holds 24), and these exponents stay inside F32's range.
    int exact = 0, total = 0;
    for (int m = 0; m < F; ++m)
      for (int p = 0; p < f.k; ++p)
        for (int n = 0; n < F; ++n, ++total)
          exact += double(A[m * f.k + p] * B[p * F + n]) == double(A[m * f.k + p]) * double(B[p * F + n]);
    const std::vector<float> D = fragment_mma(A, B, std::vector<float>(F * F, 0.0f), f.k);
    const std::vector<float> ref = engine_emulation(f, A, B, F, F, f.k);
    int same = 0;
    for (int i = 0; i < F * F; ++i) same += D[i] == ref[i];
    fmt::print("{:<4}  16x16x{:<2}  exact products: {:>4} of {:<4}   vs the engine's emulation: {} of {} entries "
               "bit-identical\n", f.name, f.k, exact, total, same, F * F);
  }
  fmt::print("The engine's emulation: hg::cpu::gemm_f16 and gemm_bf16 (16-bit operands, exact products, F32 sums),\n"
             "and for TF32 hg::cpu::sgemm on the rounded values (exact products, so F32 arithmetic is the\n"
             "tensor core's arithmetic). The GPU tests compare every rung with these.\n");
}

// ---- 2. the formats side by side ------------------------------------------------------------------
void three_formats() {
  fmt::print("\n== 2. F16, BF16, TF32: what the inputs keep ==\n");
  const int M = 64, N = 64, K = 256;
  std::vector<float> A = random_values(M * K, -1, 1, 3), B = random_values(K * N, -1, 1, 4);
  fmt::print("C = A·B, {}x{}x{}, A and B uniform in [-1, 1] (F32), against the F64 product of the F32 values:\n", M,
             N, K);
  for (const TcFormat& f : kFormats) {
    const std::vector<float> C = engine_emulation(f, A, B, M, N, K);
    double worst = 0, scale = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) {
        const EntryRef r = reference_entry(A.data(), B.data(), N, K, m, n);
        worst = std::max(worst, std::fabs(C[m * N + n] - r.value));
        scale = std::max(scale, r.abs_sum);
      }
    fmt::print("  {:<5} max |error| {:.3g}   (input spacing near 1: 2^-{})\n", f.name, worst,
               std::string(f.name) == "BF16" ? 7 : 10);
  }
  fmt::print("Range: 70000 in F16 is {}, in BF16 {}, in TF32 {};  1e-9 in F16 is {}, in BF16 {:.4g}, in TF32 {:.4g}.\n",
             float(hg::half(70000.0f)), float(hg::bfloat16(70000.0f)), hg::round_to_tf32_rna(70000.0f),
             float(hg::half(1e-9f)), float(hg::bfloat16(1e-9f)), hg::round_to_tf32_rna(1e-9f));
  fmt::print("F16 and TF32 keep 10 mantissa bits, BF16 7; BF16 and TF32 keep F32's exponent range, F16 does not.\n");

  fmt::print("\nRounding to TF32 on a tie: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.\n");
  for (float x : {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -(1.0f + 0x1p-11f), 2049.0f}) {
    fmt::print("  {:>14.10g}: halfgrad's TF32 format (ties to even) {:>14.10g}   the GPU (ties away) {:>14.10g}\n", x,
               hg::round_to_tf32(x), hg::round_to_tf32_rna(x));
  }
  fmt::print("Before a TF32 multiply the GPU rounds with cvt.rna.tf32.f32 (wmma::__float_to_tf32): ties away\n"
             "from zero. The emulation does the same (hg::round_to_tf32_rna), so it matches the hardware bit for\n"
             "bit; halfgrad's TF32 format (chapter 04, the viewer) rounds ties to even like every other format.\n");
}

// ---- 3. F32 accumulation ----------------------------------------------------------------------------
void why_f32_accumulation() {
  fmt::print("\n== 3. why the accumulator is F32 ==\n");
  // One row of A times one column of B: 2048·1 followed by fifteen 1·1 products.
  std::vector<hg::half> a(F, hg::half(1.0f)), b(F, hg::half(1.0f));
  b[0] = hg::half(2048.0f);
  hg::half acc16(0.0f);
  float acc32 = 0.0f;
  for (int k = 0; k < F; ++k) {
    acc16 = hg::half(float(acc16) + float(a[k]) * float(b[k]));  // round to F16 after every add
    acc32 += float(a[k]) * float(b[k]);
  }
  fmt::print("2048 + 1 + 1 + ... (15 ones): F16 accumulator {}, F32 accumulator {}, exact 2063\n", float(acc16), acc32);
  fmt::print("Above 2048 the F16 spacing is 2, so each +1 is a tie that rounds back to even: all 15 are lost.\n"
             "Tensor cores keep the sum in F32 (24 bits), which is why F16 inputs are usable for training.\n");
}

// ---- 4. summation order --------------------------------------------------------------------------
void summation_order() {
  fmt::print("\n== 4. summation order: where the CPU emulation and the GPU can differ ==\n");
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
    ra[k] = float(hg::half(ra[k]));
    rb[k] = float(hg::half(rb[k]));
  }
  orders(ra, rb, f, p, e, s);
  fmt::print("random F16 values in [-1, 1], K = {}:\n  k-order {:.9g}  tree order {:.9g}  exact {:.9g}\n", K, f, p, e);
  fmt::print("  errors {:.3g} and {:.3g}; worst-case F32 bound gamma_K * sum|ab| = {:.3g}\n", std::fabs(f - e),
             std::fabs(p - e), f32_dot_error_bound(K, s));
  fmt::print("The hardware adds the products of a fragment in an order (and, measured on V100/T4/A100, with an\n"
             "internal rounding) that NVIDIA does not specify. So the CPU emulation matches a tensor core bit for\n"
             "bit when every partial sum is exact, and within the F32 bound otherwise; the tests check both.\n");
}

// ---- 5. the rungs -----------------------------------------------------------------------------------
// Worst bank-conflict degree of every fragment load of one step of rungs 06-08, for element size E
// (2: ldmatrix; 4: the TF32 model of bank_model.h) and leading dimensions a_ld, b_ld in elements.
template <int E>
int worst_fragment_load(int a_ld, int b_ld) {
  using R = WmmaTiles<E>;
  int worst = 0;
  for (int w = 0; w < R::kWarps; ++w)
    for (int kk = 0; kk < R::BK; kk += R::FK) {
      for (int i = 0; i < R::FM; ++i) {
        const int row = wmma_fragment(w, i, 0).row;
        if (E == 2) worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(row, kk, a_ld), 16));
        else
          for (const auto& load : tf32_fragment_a_loads(row, kk, a_ld)) worst = std::max(worst, bank_conflict_ways(load, 4));
      }
      for (int j = 0; j < R::FN; ++j) {
        const int col = wmma_fragment(w, 0, j).col;
        if (E == 2) worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(kk, col, b_ld), 16));
        else
          for (const auto& load : tf32_fragment_b_loads(kk, col, b_ld)) worst = std::max(worst, bank_conflict_ways(load, 4));
      }
    }
  return worst;
}

void rungs() {
  fmt::print("\n== 5. rungs 05 -> 06 -> 07 -> 08 ==\n");
  fmt::print("rung 05 starts over, as rung 01 did: one warp per 16 x 16 tile of C, fragments loaded straight from\n"
             "         global memory, no reuse; block (bx, by) -> C tile at (row, col) = ({}, {}) for (3, 2)\n",
             rung05_tile(3, 2).row, rung05_tile(3, 2).col);
  using R = WmmaTiles<2>;
  fmt::print("rung 06 is rung 04's idea on tensor cores: a block of {} warps computes a {} x {} tile from tiles\n"
             "         staged in shared memory (BK = 64 bytes of a row: {} halves or {} floats); warp w owns a\n"
             "         {} x {} sub-tile of {} x {} fragments:\n", R::kWarps, R::BM, R::BN, WmmaTiles<2>::BK,
             WmmaTiles<4>::BK, R::WM, R::WN, R::FM, R::FN);
  for (int w = 0; w < R::kWarps; ++w) {
    const Coord c = wmma_fragment(w, 0, 0);
    fmt::print("  warp {}: rows {:>3}..{:>3}, columns {:>3}..{:>3}\n", w, c.row, c.row + R::WM - 1, c.col, c.col + R::WN - 1);
  }
  fmt::print("rung 07 pads every row of the shared tiles (the skew). Bank conflicts of the fragment loads, worst over\n"
             "every load of a step (F16/BF16: ldmatrix, 8 lanes x 16 bytes per phase; TF32: the mma.m16n8k8 model):\n");
  fmt::print("  {:<24} {:>16} {:>16}\n", "rows padded by", "F16, BF16", "TF32");
  fmt::print("  {:<24} {:>16} {:>16}\n", "nothing (rung 06)",
             fmt::format("{}-way", worst_fragment_load<2>(Rung06<2>::A_LD, Rung06<2>::B_LD)),
             fmt::format("{}-way", worst_fragment_load<4>(Rung06<4>::A_LD, Rung06<4>::B_LD)));
  fmt::print("  {:<24} {:>16} {:>16}\n", "A 16 bytes, B 8 el. (07)",
             fmt::format("{}-way", worst_fragment_load<2>(Rung07<2>::A_LD, Rung07<2>::B_LD)),
             fmt::format("{}-way", worst_fragment_load<4>(Rung07<4>::A_LD, Rung07<4>::B_LD)));
  fmt::print("  {:<24} {:>16} {:>16}\n", "A and B by 32 bytes",
             fmt::format("{}-way", worst_fragment_load<2>(32 + 16, 128 + 16)),
             fmt::format("{}-way", worst_fragment_load<4>(16 + 8, 128 + 8)));
  fmt::print("  row strides of rung 07: A {} bytes (5 bank groups: odd), B {} bytes (halves: 17 groups) or {} bytes\n"
             "  (floats: 4 consecutive rows start 8 banks apart)\n", Rung07<2>::A_LD * 2, Rung07<2>::B_LD * 2,
             Rung07<4>::B_LD * 4);
  fmt::print("rung 08: rung 07's tiles, two buffers, cp.async. Schedule for K = 128 halves (4 steps of 32):\n");
  const int steps = 128 / R::BK;
  fmt::print("  before the loop: start copying step 0 into buffer 0\n");
  for (int kt = 0; kt < steps; ++kt)
    fmt::print("  iteration {}: {}; wait for step {}; compute on buffer {}\n", kt,
               kt + 1 < steps ? fmt::format("start copying step {} into buffer {}", kt + 1, (kt + 1) % 2) : std::string("nothing to prefetch"),
               kt, kt % 2);
}

// ---- 6. on a GPU -----------------------------------------------------------------------------------
#if HG_WITH_CUDA
// Runs every tensor-core rung for storage type T on small integers and compares with the emulation.
template <class T>
void check_rungs_on_gpu(const TcFormat& f, const std::vector<float>& Af, const std::vector<float>& Bf, int M, int N,
                        int K, const std::vector<T>& a, const std::vector<T>& b) {
  const std::vector<float> ref = engine_emulation(f, Af, Bf, M, N, K);
  std::vector<float> C(size_t(M) * N);
  void* dA = hg::cuda::device_malloc(a.size() * sizeof(T));
  void* dB = hg::cuda::device_malloc(b.size() * sizeof(T));
  auto* dC = static_cast<float*>(hg::cuda::device_malloc(C.size() * 4));
  hg::cuda::copy_host_to_device(dA, a.data(), a.size() * sizeof(T));
  hg::cuda::copy_host_to_device(dB, b.data(), b.size() * sizeof(T));
  for (const RungTC<T>& r : kRungsTC<T>) {
    r.run(M, N, K, static_cast<const T*>(dA), static_cast<const T*>(dB), dC);
    hg::cuda::copy_device_to_host(C.data(), dC, C.size() * 4);
    int bad = 0;
    for (size_t i = 0; i < C.size(); ++i) bad += C[i] != ref[i];
    fmt::print("  rung {} {:<30} {:<4} {}x{}x{} small integers vs the emulation: {}\n", r.id, r.name, f.name, M, N, K,
               bad == 0 ? "bit-exact" : fmt::format("{} entries differ", bad));
  }
  hg::cuda::device_free(dA);
  hg::cuda::device_free(dB);
  hg::cuda::device_free(dC);
}
#endif

void on_gpu() {
  fmt::print("\n== 6. on the GPU ==\n");
#if HG_WITH_CUDA
  if (!hg::cuda::available()) {
    fmt::print("{}: this part needs a GPU.\n", hg::cuda::no_gpu_reason());
    return;
  }
  const hg::cuda::DeviceInfo info = hg::cuda::device_info(0);
  fmt::print("GPU: {}\n", hg::cuda::describe(info));
  const int M = 300, N = 257, K = 129;
  std::vector<float> Af(size_t(M) * K), Bf(size_t(K) * N);
  fill_small_integers(Af, 5);
  fill_small_integers(Bf, 6);
  // hg::half and __half share their bits, as do hg::bfloat16 and __nv_bfloat16.
  std::vector<__half> a16, b16;
  std::vector<__nv_bfloat16> a_bf, b_bf;
  for (float v : Af) { a16.push_back(__float2half_rn(v)); a_bf.push_back(__float2bfloat16_rn(v)); }
  for (float v : Bf) { b16.push_back(__float2half_rn(v)); b_bf.push_back(__float2bfloat16_rn(v)); }
  check_rungs_on_gpu(kFormats[0], Af, Bf, M, N, K, a16, b16);
  if (info.major >= 8) {
    check_rungs_on_gpu(kFormats[1], Af, Bf, M, N, K, a_bf, b_bf);
    check_rungs_on_gpu(kFormats[2], Af, Bf, M, N, K, Af, Bf);
  } else {
    fmt::print("  BF16 and TF32 tensor cores need sm_80 or newer; this GPU is sm_{}{}.\n", info.major, info.minor);
  }
  fmt::print("Timings: ./lab bench gemm (validates every rung again, then prints GFLOP/s and % of cuBLAS).\n");
#else
  fmt::print("this build has no CUDA (nvcc not found or HG_CUDA=OFF): the GPU part is skipped.\n");
#endif
}


// ---- 7. the tensor core in your CPU ------------------------------------------------------------------
// The CPU's own BF16 units (framework/cpu/bf16_units.h): BF16 in, exact products, F32 sums,
// like a tensor core — but in an order of their own, and flushing what falls below 2^-126.
void cpu_tensor_cores() {
  fmt::print("\n== 7. the tensor core in your CPU: AMX and AVX512_BF16 ==\n");
  using hg::cpu::GemmKernel;
  const GemmKernel units[] = {GemmKernel::Amx, GemmKernel::Avx512Bf16};
  for (GemmKernel u : units) {
    const std::string why = hg::cpu::gemm_kernel_unavailable_reason(u);
    fmt::print("{:<12} {}\n", u == GemmKernel::Amx ? "AMX-BF16:" : "AVX512_BF16:",
               why.empty() ? (u == GemmKernel::Amx ? "yes, TDPBF16PS on 16x16 F32 tiles (the OS granted the tile state)"
                                                   : "yes, VDPBF16PS on 16 F32 lanes")
                           : "no: " + why + " (the emulation below stands in)");
  }
  fmt::print("gemm_bf16 here, and so every BF16 matmul and convolution of the engine: {}\n",
             hg::cpu::gemm_bf16_kernel_name());

  // The order of the additions: 1 + 2^-24 + 2^-24 (each 2^-24 is half an ULP of 1).
  const hg::bfloat16 one(1.0f), tiny(0x1p-24f), zero(0.0f);
  const std::vector<hg::bfloat16> a{one, zero, zero, tiny, zero, tiny}, b(6, one);
  auto sum = [&](GemmKernel u, bool hardware) {
    float c = 0;
    if (hardware) {
      hg::cpu::set_gemm_kernel(u);
      hg::cpu::gemm_bf16(false, false, 1, 1, 6, 1.0f, a.data(), 6, b.data(), 1, 0.0f, &c, 1);
      hg::cpu::set_gemm_kernel(GemmKernel::Auto);
    } else {
      hg::cpu::gemm_bf16_emulated(u, false, false, 1, 1, 6, 1.0f, a.data(), 6, b.data(), 1, 0.0f, &c, 1);
    }
    return c;
  };
  fmt::print("\nOrder: a = (1, 0, 0, 2^-24, 0, 2^-24), b = ones; each 2^-24 is half an ULP of 1, a tie:\n");
  for (GemmKernel u : units) {
    const bool here = hg::cpu::gemm_kernel_supported(u);
    fmt::print("  {:<12} emulation {:.9g}{}\n", u == GemmKernel::Amx ? "AMX" : "VDPBF16PS", sum(u, false),
               here ? fmt::format("   this CPU {:.9g}", sum(u, true)) : std::string());
  }
  fmt::print("VDPBF16PS adds one product at a time into its lane (the odd one of a pair first): each 2^-24\n"
             "rounds back to 1. AMX adds the even and the odd products of 32 in two chains from zero, then\n"
             "their sum into C: 2^-24 + 2^-24 = 2^-23 first, and 1 + 2^-23 is exact.\n");

  // What the units flush: 2^-126 - 3*2^-152 (a tiny result) and 2^-133 (a BF16 subnormal).
  const float tiny_ieee = std::fmaf(0x1p-126f, -3 * 0x1p-26f, 0x1p-126f);
  fmt::print("\nFlush: 2^-126 - 3*2^-152 is {:.9g} in IEEE F32 (the F32 path) and {:.9g} on the units;\n"
             "the BF16 subnormal 2^-133 times 2^100 is {:.9g} in IEEE F32 and {:.9g} on the units.\n",
             tiny_ieee, hg::cpu::unit_fma(0x1p-126f, 0x1p-126f, -3 * 0x1p-26f), 0x1p-133 * 0x1p100,
             hg::cpu::unit_fma(0.0f, hg::bf16_bits_to_float(0x0001), 0x1p100f));

  // A whole GEMM on each unit this CPU has, against its emulation and against the F32 path.
  const int M = 64, N = 64, K = 256;
  std::vector<hg::bfloat16> A, B;
  for (float v : random_values(M * K, -1, 1, 7)) A.push_back(hg::bfloat16(v));
  for (float v : random_values(K * N, -1, 1, 8)) B.push_back(hg::bfloat16(v));
  std::vector<float> f32_path(size_t(M) * N);
  hg::cpu::set_gemm_kernel(hg::cpu::gemm_kernel());
  hg::cpu::gemm_bf16(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, f32_path.data(), N);
  fmt::print("\nC = A·B, {}x{}x{}, BF16 values in [-1, 1]:\n", M, N, K);
  for (GemmKernel u : units) {
    const char* name = u == GemmKernel::Amx ? "AMX" : "VDPBF16PS";
    if (!hg::cpu::gemm_kernel_supported(u)) {
      fmt::print("  {:<10} not on this CPU\n", name);
      continue;
    }
    std::vector<float> hw(f32_path.size()), emu(f32_path.size());
    hg::cpu::set_gemm_kernel(u);
    hg::cpu::gemm_bf16(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, hw.data(), N);
    hg::cpu::gemm_bf16_emulated(u, false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, emu.data(), N);
    int same = 0, differ = 0;
    double worst = 0;
    for (size_t i = 0; i < hw.size(); ++i) {
      same += std::memcmp(&hw[i], &emu[i], 4) == 0;
      differ += hw[i] != f32_path[i];
      worst = std::max(worst, std::fabs(double(hw[i]) - f32_path[i]));
    }
    fmt::print("  {:<10} vs its emulation: {} of {} bit-identical;  vs the F32 path: {} differ, by at most {:.3g}\n",
               name, same, M * N, differ, worst);
  }
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  fmt::print("Same products, another order of F32 additions: the units agree with their emulations bit for bit\n"
             "and with the F32 path to rounding. Their speed: ./lab bench peak and ./lab bench cpu_gemm.\n");
}

}  // namespace

int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  CLI::App app{"Chapter 05: tensor cores — F16, BF16 and TF32 numerics, WMMA, the rungs 05-08"};
  HG_PARSE_FLAGS(app, argc, argv);  // no flags but --help: anything else is one line, exit code 2
  one_fragment();
  three_formats();
  why_f32_accumulation();
  summation_order();
  rungs();
  on_gpu();
  cpu_tensor_cores();
  return 0;
}
