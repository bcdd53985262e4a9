// GPU test of the framework's GEMM entry (cuda/gemm/matmul.h) and of cuda/ops/transpose:
// every transpose combination, both backends (ladder, cuBLAS), for every dispatch path —
// F32, F32 with TF32 allowed, F16 and BF16 -> F32 — on odd sizes, against the CPU emulation
// of the path's numerics: bit-exact on small-integer inputs, within the summation bounds on
// random ones. Then a C taller than one launch's grid (row slabs), and the TF32 switch.
// On a simulated GPU (tests/gpu/gpusim.sh) cuBLAS and the row slabs are left out.
#include "tests/gpu/typed_buffer.h"

#include "cuda/gemm/matmul.h"
#include "cuda/gemm/validate.h"
#include "cuda/ops/transpose.h"
#include "framework/cpu/gemm.h"
#include "framework/dtype/tf32.h"

#include <cmath>
#include <string>

using namespace hg::cuda;
using hg::test::Typed;

namespace {

struct Path {
  const char* name;
  DType dt;     // storage of A and B
  bool tf32;    // F32 with TF32 allowed
};
const Path kPaths[] = {{"F32", DType::F32, false}, {"F32+TF32", DType::F32, true},
                       {"F16", DType::F16, false}, {"BF16", DType::BF16, false}};

// The value a path's multiplier sees: the stored value, rounded to TF32 (ties away) for TF32.
float operand(const Path& p, float x) {
  const float stored = hg::test::round_to(p.dt, x);
  return p.tf32 ? hg::round_to_tf32_rna(stored) : stored;
}

void matmul(const Path& p, bool ta, bool tb, int M, int N, int K, Typed& a, Typed& b, Typed& c) {
  set_allow_tf32(p.tf32);
  float* C = static_cast<float*>(c.ptr());
  switch (p.dt) {
    case DType::F32: launch_matmul_f32(ta, tb, M, N, K, static_cast<const float*>(a.ptr()), static_cast<const float*>(b.ptr()), C); break;
    case DType::F16: launch_matmul_f16(ta, tb, M, N, K, static_cast<const __half*>(a.ptr()), static_cast<const __half*>(b.ptr()), C); break;
    case DType::BF16:
      launch_matmul_bf16(ta, tb, M, N, K, static_cast<const __nv_bfloat16*>(a.ptr()), static_cast<const __nv_bfloat16*>(b.ptr()), C);
      break;
  }
  set_allow_tf32(false);
}

void test_transpose(hg::test::Checker& t) {
  for (DType dt : hg::test::kAllDtypes) {  // every dtype, a shape that divides no tile
    const int64_t rows = 45, cols = 70;
    const auto x = hg::test::round_to(dt, hg::test::uniform(rows * cols, -1, 1, 1));
    Typed dx(dt, x), dy(dt, rows * cols);
    launch_transpose(dt, dx.ptr(), rows, cols, dy.ptr());
    std::vector<float> want(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) want[c * rows + r] = x[r * cols + c];
    t.exact(std::string("transpose (45,70) ") + dtype_name(dt), dy.to_host(), want, rows);
  }
}

void test_paths(hg::test::Checker& t, bool sm80) {
  const int M = 67, N = 130, K = 45;
  for (int input = 0; input < 2; ++input) {
    const bool ints = input == 0;
    std::vector<float> A(M * K), B(K * N);  // logical op(A) (M,K) and op(B) (K,N)
    if (ints) { gemm::fill_small_integers(A, 3); gemm::fill_small_integers(B, 4); }
    else      { gemm::fill_uniform(A, 5);        gemm::fill_uniform(B, 6); }
    std::vector<float> At(K * M), Bt(N * K);  // the same matrices stored transposed
    for (int m = 0; m < M; ++m)
      for (int k = 0; k < K; ++k) At[k * M + m] = A[m * K + k];
    for (int k = 0; k < K; ++k)
      for (int n = 0; n < N; ++n) Bt[n * K + k] = B[k * N + n];

    for (const Path& p : kPaths) {
      // The CPU emulation: the operands as the path sees them, exact products, F32 sums.
      std::vector<float> Ao(A.size()), Bo(B.size()), emu(M * N), bound(M * N);
      for (size_t i = 0; i < A.size(); ++i) Ao[i] = operand(p, A[i]);
      for (size_t i = 0; i < B.size(); ++i) Bo[i] = operand(p, B[i]);
      hg::cpu::sgemm(false, false, M, N, K, 1.0f, Ao.data(), K, Bo.data(), N, 0.0f, emu.data(), N);
      for (int m = 0; m < M; ++m)
        for (int n = 0; n < N; ++n) {
          const gemm::EntryRef e = gemm::reference_entry(Ao.data(), Bo.data(), N, K, m, n);
          bound[m * N + n] = float(gemm::tensor_core_dot_error_bound(K, e.abs_sum) +
                                   gemm::f32_dot_error_bound(K, e.abs_sum) + 2 * std::fabs(e.value) * 0x1p-24);
        }
      const bool tensor_core_path = p.dt != DType::F32 || p.tf32;
      if (tensor_core_path && p.dt != DType::F16 && !sm80) {
        // no BF16/TF32 tensor cores: the fallback (F32) must still give the exact answer
        if (!ints) continue;
      }
      for (GemmBackend backend : {GemmBackend::Ladder, GemmBackend::Cublas}) {
        if (backend == GemmBackend::Cublas && hg::test::simulated()) continue;  // not simulated
        set_gemm_backend(backend);
        for (int ta = 0; ta < 2; ++ta)
          for (int tb = 0; tb < 2; ++tb) {
            const std::string what = std::string(gemm_backend_name(backend)) + " " + p.name + " C = " +
                                     (ta ? "Aᵀ" : "A") + "·" + (tb ? "Bᵀ" : "B") + " 67x130x45 " +
                                     (ints ? "small-int" : "random");
            Typed a(p.dt, ta ? At : A), b(p.dt, tb ? Bt : B), c(DType::F32, M * N);
            matmul(p, ta, tb, M, N, K, a, b, c);
            if (ints) t.exact(what, c.to_host(), emu, N);
            else if (backend == GemmBackend::Cublas && p.tf32) continue;  // cuBLAS rounds to TF32 its own way
            else t.within(what + " [vs emulation]", c.to_host(), emu, bound, N);
          }
      }
      set_gemm_backend(GemmBackend::Ladder);
    }
  }
}

// TF32 is a switch: off, an F32 matmul of values that TF32 cannot hold is true F32; on, the
// same product is that of the TF32-rounded values.
void test_tf32_switch(hg::test::Checker& t, bool sm80) {
  const int M = 16, N = 16, K = 16;
  std::vector<float> A(M * K, 1.0f + 0x1p-20f), I(K * N, 0.0f);  // 1 + 2^-20: not a TF32 value
  for (int k = 0; k < K; ++k) I[k * N + k] = 1.0f;
  Typed a(DType::F32, A), b(DType::F32, I), c(DType::F32, M * N);
  const Path f32{"F32", DType::F32, false}, tf32{"F32+TF32", DType::F32, true};
  matmul(f32, false, false, M, N, K, a, b, c);
  t.exact("TF32 off: A·I keeps 1 + 2^-20", c.to_host(), std::vector<float>(M * N, 1.0f + 0x1p-20f), N);
  matmul(tf32, false, false, M, N, K, a, b, c);
  t.exact(std::string("TF32 on: A·I gives ") + (sm80 ? "1 (rounded to 10 bits)" : "1 + 2^-20 (no TF32 below sm_80)"),
          c.to_host(), std::vector<float>(M * N, sm80 ? 1.0f : 1.0f + 0x1p-20f), N);
  t.expect("TF32 is off by default and after the switch is cleared", !allow_tf32());
}

// A C taller than one launch's grid (8,388,480 rows of 128-row tiles): computed in row slabs.
void test_row_slabs(hg::test::Checker& t) {
  const int M = 8388480 + 200, N = 8, K = 8;
  std::vector<float> A(size_t(M) * K), B(K * N);
  gemm::fill_small_integers(A, 7);
  gemm::fill_small_integers(B, 8);
  Typed a(DType::F32, A), b(DType::F32, B), c(DType::F32, size_t(M) * N);
  launch_matmul_f32(false, false, M, N, K, static_cast<const float*>(a.ptr()), static_cast<const float*>(b.ptr()),
             static_cast<float*>(c.ptr()));
  const std::vector<float> got = c.to_host();
  std::vector<float> got_rows, want_rows;
  for (int m : {0, 1, 8388479, 8388480, 8388481, M - 1})
    for (int n = 0; n < N; ++n) {
      got_rows.push_back(got[size_t(m) * N + n]);
      want_rows.push_back(float(gemm::reference_entry(A.data(), B.data(), N, K, m, n).value));
    }
  t.exact("F32 8388680x8x8: rows around the slab boundary", got_rows, want_rows, N);
}

void run(hg::test::Checker& t) {
  const bool sm80 = device_info(0).major >= 8;
  test_transpose(t);
  test_paths(t, sm80);
  test_tf32_switch(t, sm80);
  // (not under memcheck nor on a simulated GPU: 67 M rows)
  if (!hg::test::small_run() && !hg::test::simulated()) test_row_slabs(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
