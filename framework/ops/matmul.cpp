#include "framework/amp/autocast.h"
#include "framework/ops/matmul.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/copy.h"
#include "framework/cpu/gemm.h"
#include "framework/cuda/matmul.h"
#include "framework/ops/check.h"
#include "framework/ops/reduce.h"

namespace hg {

namespace {

// y[m, :] += bias for every row m of an (M, N) row-major buffer (bias undefined: nothing).
template <class Acc> void add_bias_rows(Acc* y, int64_t M, int64_t N, const Tensor& bias) {
  if (!bias.defined()) return;
  std::vector<double> b = bias.to_double_vector();
#pragma omp parallel for if (M * N > (1 << 15))
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) y[m * N + n] += static_cast<Acc>(b[n]);
}

// C (M, N) = op(A) · op(B) (+ bias on every row) for contiguous row-major A, B of dtype dt,
// written into C of dtype dt. The one switch from a dtype to a GEMM routine. For F16/BF16
// the bias is added to the F32 accumulator, so the result is rounded once, at the end.
void gemm(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A,
          const Tensor& B, Tensor& C, const Tensor& bias = Tensor()) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  switch (dt) {
    case DType::F32:
      cpu::sgemm(ta, tb, M, N, K, 1.0f, A.data<float>(), lda, B.data<float>(), ldb, 0.0f,
                 C.data<float>(), N);
      add_bias_rows(C.data<float>(), M, N, bias);
      return;
    case DType::F64:
      cpu::dgemm(ta, tb, M, N, K, 1.0, A.data<double>(), lda, B.data<double>(), ldb, 0.0,
                 C.data<double>(), N);
      add_bias_rows(C.data<double>(), M, N, bias);
      return;
    case DType::F16:
    case DType::BF16: {
      // F32 accumulator, then one rounding to the storage dtype
      std::unique_ptr<float[]> acc(new float[static_cast<size_t>(M * N)]);
      if (dt == DType::F16)
        cpu::gemm_f16(ta, tb, M, N, K, 1.0f, A.data<half>(), lda, B.data<half>(), ldb, 0.0f,
                      acc.get(), N);
      else
        cpu::gemm_bf16(ta, tb, M, N, K, 1.0f, A.data<bfloat16>(), lda, B.data<bfloat16>(), ldb,
                       0.0f, acc.get(), N);
      add_bias_rows(acc.get(), M, N, bias);
      cpu::convert(acc.get(), DType::F32, C.raw_data(), dt, M * N);
      return;
    }
  }
}

void check_matmul_inputs(const char* op, const Tensor& a, const char* an, const Tensor& b,
                         const char* bn) {
  check_defined(op, a, an);
  check_defined(op, b, bn);
  check_same_device(op, a, an, b, bn);
  check_same_dtype(op, a, an, b, bn);
}

}  // namespace

Tensor matmul(const Tensor& a_arg, const Tensor& b_arg, bool ta, bool tb) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor a_in = amp::autocast_cast(a_arg, "matmul"), b_in = amp::autocast_cast(b_arg, "matmul");
  check_matmul_inputs("matmul", a_in, "a", b_in, "b");
  check_dim("matmul", a_in, "a", 2, ta ? "(K, M) (trans_a)" : "(M, K)");
  check_dim("matmul", b_in, "b", 2, tb ? "(N, K) (trans_b)" : "(K, N)");
  const int64_t M = ta ? a_in.size(1) : a_in.size(0), Ka = ta ? a_in.size(0) : a_in.size(1);
  const int64_t N = tb ? b_in.size(0) : b_in.size(1), Kb = tb ? b_in.size(1) : b_in.size(0);
  if (Ka != Kb)
    op_error("matmul", fmt::format("inner sizes differ: op(a) is ({}, {}) and op(b) is ({}, {}) "
                                   "(a stored {}{}, b stored {}{}); op(a)'s columns must equal "
                                   "op(b)'s rows",
                                   M, Ka, Kb, N, shape_str(a_in.shape()), ta ? " transposed" : "",
                                   shape_str(b_in.shape()), tb ? " transposed" : ""));
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor c;
  switch (a.device()) {
    case Device::CPU:
      c = Tensor::empty({M, N}, a.dtype());
      gemm(a.dtype(), ta, tb, M, N, Ka, a, b, c);
      break;
    case Device::CUDA:
      c = cuda::gemm(ta, tb, M, N, Ka, a, b);  // the ladder's best rung (or cuBLAS: --gemm cublas)
      break;
  }

  // C = op(A)·op(B):  dop(A) = dC·op(B)ᵀ,  dop(B) = op(A)ᵀ·dC, and a stored-transposed
  // operand gets the transpose of that:
  //   dA = dC·op(B)ᵀ  = matmul(dC, B, false, !tb)     (trans_a: dA = op(B)·dCᵀ = matmul(B, dC, tb, true))
  //   dB = op(A)ᵀ·dC  = matmul(A, dC, !ta, false)     (trans_b: dB = dCᵀ·op(A) = matmul(dC, A, true, ta))
  Tensor ad = a.detach(), bd = b.detach();
  return record("matmul", c, {a_in, b_in}, [ad, bd, ta, tb](const Tensor& dc, const NeedsGrad& need) {
    Tensor da, db;
    if (need[0]) da = ta ? matmul(bd, dc, tb, true) : matmul(dc, bd, false, !tb);
    if (need[1]) db = tb ? matmul(dc, ad, true, ta) : matmul(ad, dc, !ta, false);
    return std::vector<Tensor>{da, db};
  });
}

Tensor linear(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x_in = amp::autocast_cast(x_arg, "linear"), w_in = amp::autocast_cast(w_arg, "linear"),
               b_in = amp::autocast_cast(b_arg, "linear");
  check_matmul_inputs("linear", x_in, "x", w_in, "weight");
  check_dim("linear", x_in, "x", 2, "(N, in_features)");
  check_dim("linear", w_in, "weight", 2, "(out_features, in_features)");
  const int64_t N = x_in.size(0), in = x_in.size(1), out = w_in.size(0);
  if (w_in.size(1) != in)
    op_error("linear", fmt::format("x has {} features (shape {}) but weight expects {} "
                                   "(shape {} = (out_features, in_features))",
                                   in, shape_str(x_in.shape()), w_in.size(1),
                                   shape_str(w_in.shape())));
  if (b_in.defined()) {
    check_same_dtype("linear", x_in, "x", b_in, "bias");
    check_same_device("linear", x_in, "x", b_in, "bias");
    if (b_in.shape() != Shape{out})
      op_error("linear", fmt::format("bias must have shape ({}), got {}", out,
                                     shape_str(b_in.shape())));
  }
  Tensor x = x_in.contiguous(), w = w_in.contiguous();
  // y (N, out) = x (N, in) · wᵀ (in, out)
  Tensor y;
  switch (x.device()) {
    case Device::CPU:
      y = Tensor::empty({N, out}, x.dtype());
      gemm(x.dtype(), false, true, N, out, in, x, w, y, b_in);  // + b in the accumulator
      break;
    case Device::CUDA:
      y = cuda::gemm(false, true, N, out, in, x, w, b_in);  // + b in the F32 accumulator
      break;
  }

  // y = x·wᵀ + b:   dx = dy·w   (N, in)
  //                 dw = dyᵀ·x  (out, in)   — why: y_no = Σ_i x_ni w_oi, so ∂y_no/∂w_oi = x_ni
  //                 db = Σ_n dy (out)
  Tensor xd = x.detach(), wd = w.detach();
  return record("linear", y, {x_in, w_in, b_in}, [xd, wd](const Tensor& dy, const NeedsGrad& need) {
    Tensor dx, dw, db;
    if (need[0]) dx = matmul(dy, wd, false, false);
    if (need[1]) dw = matmul(dy, xd, true, false);
    if (need[2]) db = sum(dy, 0);
    return std::vector<Tensor>{dx, dw, db};
  });
}

}  // namespace hg
