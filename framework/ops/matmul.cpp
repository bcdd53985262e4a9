#include "framework/amp/autocast.h"
#include "framework/ops/matmul.h"

#include <fmt/format.h>

#include <stdexcept>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/copy.h"
#include "framework/cpu/gemm.h"
#include "framework/cuda/matmul.h"
#include "framework/ops/check.h"
#include "framework/ops/elementwise.h"
#include "framework/ops/reduce.h"
#include "framework/ops/shape.h"

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
// written into C of dtype dt (raw pointers to the first element of each). The one switch
// from a dtype to a GEMM routine. For F16/BF16 the bias is added to the F32 accumulator, so
// the result is rounded once, at the end.
void gemm(DType dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A,
          const void* B, void* C, const Tensor& bias = Tensor()) {
  const int64_t lda = ta ? M : K, ldb = tb ? K : N;
  switch (dt) {
    case DType::F32:
      cpu::sgemm(ta, tb, M, N, K, 1.0f, static_cast<const float*>(A), lda,
                 static_cast<const float*>(B), ldb, 0.0f, static_cast<float*>(C), N);
      add_bias_rows(static_cast<float*>(C), M, N, bias);
      return;
    case DType::F64:
      cpu::dgemm(ta, tb, M, N, K, 1.0, static_cast<const double*>(A), lda,
                 static_cast<const double*>(B), ldb, 0.0, static_cast<double*>(C), N);
      add_bias_rows(static_cast<double*>(C), M, N, bias);
      return;
    case DType::F16:
    case DType::BF16: {
      // F32 accumulator, then one rounding to the storage dtype. The accumulator is this
      // thread's, kept between calls: a fresh one per matmul cost a page fault per 4 KB.
      thread_local std::vector<float> scratch;
      if (scratch.size() < static_cast<size_t>(M * N)) scratch.resize(static_cast<size_t>(M * N));
      float* acc = scratch.data();
      if (dt == DType::F16)
        cpu::gemm_f16(ta, tb, M, N, K, 1.0f, static_cast<const half*>(A), lda,
                      static_cast<const half*>(B), ldb, 0.0f, acc, N);
      else
        cpu::gemm_bf16(ta, tb, M, N, K, 1.0f, static_cast<const bfloat16*>(A), lda,
                       static_cast<const bfloat16*>(B), ldb, 0.0f, acc, N);
      add_bias_rows(acc, M, N, bias);
      cpu::convert(acc, DType::F32, C, dt, M * N);
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

// op(a) (M, Ka) and op(b) (Kb, N) must agree on K.
void check_inner(const Tensor& a, const Tensor& b, bool ta, bool tb, int64_t M, int64_t Ka,
                 int64_t Kb, int64_t N) {
  if (Ka != Kb)
    op_error("matmul", fmt::format("inner sizes differ: op(a) is ({}, {}) and op(b) is ({}, {}) "
                                   "(a stored {}{}, b stored {}{}); op(a)'s columns must equal "
                                   "op(b)'s rows",
                                   M, Ka, Kb, N, shape_str(a.shape()), ta ? " transposed" : "",
                                   shape_str(b.shape()), tb ? " transposed" : ""));
}

// For each matrix i of the broadcast batch `batch` (row-major order), where the matrix of an
// operand with batch dims `own` starts, in elements. Dims align on the right; a dim of size 1
// (or a missing one) repeats the same matrix, stride 0 — broadcasting without a copy.
std::vector<int64_t> batch_offsets(const Shape& own, const Shape& batch, int64_t matrix_size) {
  const int64_t nb = static_cast<int64_t>(batch.size()), no = static_cast<int64_t>(own.size());
  Shape stride(nb, 0);
  int64_t step = matrix_size;
  for (int64_t d = no - 1; d >= 0; --d) {
    if (own[d] != 1) stride[nb - no + d] = step;
    step *= own[d];
  }
  std::vector<int64_t> offsets(static_cast<size_t>(shape_numel(batch)));
  for (int64_t i = 0; i < static_cast<int64_t>(offsets.size()); ++i) {
    int64_t rem = i, off = 0;
    for (int64_t d = nb - 1; d >= 0; --d) {
      off += (rem % batch[d]) * stride[d];
      rem /= batch[d];
    }
    offsets[i] = off;
  }
  return offsets;
}

// a (…a, M, K) · b (…b, K, N) -> (broadcast(…a, …b), M, N): one GEMM per matrix.
Tensor batched_matmul(const Tensor& a_in, const Tensor& b_in, bool ta, bool tb) {
  const Shape& as = a_in.shape();
  const Shape& bs = b_in.shape();
  const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
  const Shape batch = broadcast_shapes("matmul", a_batch, b_batch);
  const int64_t M = ta ? as.back() : as[as.size() - 2], Ka = ta ? as[as.size() - 2] : as.back();
  const int64_t N = tb ? bs[bs.size() - 2] : bs.back(), Kb = tb ? bs.back() : bs[bs.size() - 2];
  check_inner(a_in, b_in, ta, tb, M, Ka, Kb, N);
  Shape out = batch;
  out.push_back(M);
  out.push_back(N);

  // A batch of matrices times one matrix: the batch folds into the rows of a single GEMM,
  // (…, M, K) -> (…·M, K); autograd flows through the two reshapes.
  if (!ta && b_in.dim() == 2) return reshape(matmul(reshape(a_in, {-1, Ka}), b_in, false, tb), out);

  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  const std::vector<int64_t> a_off = batch_offsets(a_batch, batch, M * Ka);
  const std::vector<int64_t> b_off = batch_offsets(b_batch, batch, Kb * N);
  Tensor c;
  switch (a.device()) {
    case Device::CPU: {
      c = Tensor::empty(out, a.dtype());
      const size_t es = dtype_size(a.dtype());
      const char* pa = static_cast<const char*>(a.raw_data());
      const char* pb = static_cast<const char*>(b.raw_data());
      char* pc = static_cast<char*>(c.raw_data());
      const int64_t count = static_cast<int64_t>(a_off.size());
      // Attention's matrices, (T, D)·(D, T) per head, are too small to split between threads
      // (sgemm would run each on one thread anyway): whole matrices run side by side instead.
      // Large ones keep sgemm's own threads. The bits are the same either way: every element
      // sums its K products in the same order.
      const bool side_by_side = count > 1 && 2.0 * double(M) * double(N) * double(Ka) < 4e6;
#pragma omp parallel for schedule(static) if (side_by_side)
      for (int64_t i = 0; i < count; ++i)
        gemm(a.dtype(), ta, tb, M, N, Ka, pa + a_off[i] * es, pb + b_off[i] * es,
             pc + static_cast<size_t>(i * M * N) * es);
      break;
    }
    case Device::CUDA:
      c = cuda::batched_gemm(ta, tb, M, N, Ka, a, b, a_off, b_off, out);  // one GEMM per matrix
      break;
  }

  // Per matrix, as in the 2-D case below; a broadcast operand's gradient is then summed over
  // the batch dims it was repeated along (sum_to_shape).
  Tensor ad = a.detach(), bd = b.detach();
  const Shape a_shape = as, b_shape = bs;
  return record("matmul", c, {a_in, b_in},
                [ad, bd, ta, tb, a_shape, b_shape](const Tensor& dc, const NeedsGrad& need) {
                  Tensor da, db;
                  if (need[0])
                    da = sum_to_shape(ta ? matmul(bd, dc, tb, true) : matmul(dc, bd, false, !tb), a_shape);
                  if (need[1])
                    db = sum_to_shape(tb ? matmul(dc, ad, true, ta) : matmul(ad, dc, !ta, false), b_shape);
                  return std::vector<Tensor>{da, db};
                });
}

}  // namespace

Tensor matmul(const Tensor& a_arg, const Tensor& b_arg, bool ta, bool tb) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor a_in = amp::autocast_cast(a_arg, "matmul"), b_in = amp::autocast_cast(b_arg, "matmul");
  check_matmul_inputs("matmul", a_in, "a", b_in, "b");
  if (a_in.dim() < 2)
    op_error("matmul", fmt::format("a must have 2 dimensions {}, got shape {}; a batch of matrices is {}",
                                   ta ? "(K, M) (trans_a)" : "(M, K)", shape_str(a_in.shape()),
                                   ta ? "(..., K, M)" : "(..., M, K)"));
  if (b_in.dim() < 2)
    op_error("matmul", fmt::format("b must have 2 dimensions {}, got shape {}; a batch of matrices is {}",
                                   tb ? "(N, K) (trans_b)" : "(K, N)", shape_str(b_in.shape()),
                                   tb ? "(..., N, K)" : "(..., K, N)"));
  if (a_in.dim() > 2 || b_in.dim() > 2) return batched_matmul(a_in, b_in, ta, tb);
  const int64_t M = ta ? a_in.size(1) : a_in.size(0), Ka = ta ? a_in.size(0) : a_in.size(1);
  const int64_t N = tb ? b_in.size(0) : b_in.size(1), Kb = tb ? b_in.size(1) : b_in.size(0);
  check_inner(a_in, b_in, ta, tb, M, Ka, Kb, N);
  Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor c;
  switch (a.device()) {
    case Device::CPU:
      c = Tensor::empty({M, N}, a.dtype());
      gemm(a.dtype(), ta, tb, M, N, Ka, a.raw_data(), b.raw_data(), c.raw_data());
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
      gemm(x.dtype(), false, true, N, out, in, x.raw_data(), w.raw_data(), y.raw_data(), b_in);  // + b in the accumulator
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
