// GPU test of the framework's GEMM entry (cuda/gemm/matmul.h) and of cuda/ops/transpose:
// every transpose combination, both backends (ladder, cuBLAS), F32 and F16 -> F32, on odd
// sizes, with small-integer inputs so the result must equal the CPU's bit for bit.
#include "tests/gpu/typed_buffer.h"

#include "cuda/gemm/matmul.h"
#include "cuda/gemm/validate.h"
#include "cuda/ops/transpose.h"

#include <string>

using namespace hg::cuda;
using hg::test::Typed;

namespace {

void run(hg::test::Checker& t) {
  // transpose, every dtype, a shape that divides no tile
  for (Dtype dt : hg::test::kAllDtypes) {
    const int64_t rows = 45, cols = 70;
    const auto x = hg::test::round_to(dt, hg::test::uniform(rows * cols, -1, 1, 1));
    Typed dx(dt, x), dy(dt, rows * cols);
    transpose(dt, dx.ptr(), rows, cols, dy.ptr());
    std::vector<float> want(rows * cols);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) want[c * rows + r] = x[r * cols + c];
    t.exact(std::string("transpose (45,70) ") + dtype_label(dt), dy.to_host(), want);
  }

  const int M = 67, N = 130, K = 45;
  std::vector<float> A(M * K), B(K * N);  // logical op(A) (M,K) and op(B) (K,N)
  gemm::fill_small_integers(A, 3);
  gemm::fill_small_integers(B, 4);
  std::vector<float> ref(M * N);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) ref[m * N + n] = float(gemm::reference_entry(A.data(), B.data(), N, K, m, n).value);
  std::vector<float> At(K * M), Bt(N * K);  // the same matrices stored transposed
  for (int m = 0; m < M; ++m)
    for (int k = 0; k < K; ++k) At[k * M + m] = A[m * K + k];
  for (int k = 0; k < K; ++k)
    for (int n = 0; n < N; ++n) Bt[n * K + k] = B[k * N + n];

  for (GemmBackend backend : {GemmBackend::Ladder, GemmBackend::Cublas}) {
    set_gemm_backend(backend);
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        const std::string what = std::string(gemm_backend_name(backend)) + " C = " + (ta ? "Aᵀ" : "A") + "·" +
                                 (tb ? "Bᵀ" : "B") + " 67x130x45";
        for (Dtype dt : {Dtype::F32, Dtype::F16}) {
          Typed a(dt, ta ? At : A), b(dt, tb ? Bt : B), c(Dtype::F32, M * N);
          if (dt == Dtype::F32)
            matmul_f32(ta, tb, M, N, K, static_cast<const float*>(a.ptr()), static_cast<const float*>(b.ptr()),
                       static_cast<float*>(c.ptr()));
          else
            matmul_f16(ta, tb, M, N, K, static_cast<const __half*>(a.ptr()), static_cast<const __half*>(b.ptr()),
                       static_cast<float*>(c.ptr()));
          t.exact(what + " " + dtype_label(dt), c.to_host(), ref);
        }
      }
  }
  set_gemm_backend(GemmBackend::Ladder);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
