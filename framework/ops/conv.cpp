#include "framework/ops/conv.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/gemm.h"
#include "framework/cpu/im2col.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

// One name for the F32 and F64 GEMMs so the conv loops below are written once.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  cpu::sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  cpu::dgemm(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

// A scratch buffer of n uninitialised values (std::vector would zero them first: a wasted
// pass over memory the GEMM or im2col overwrites anyway).
template <class T> std::unique_ptr<T[]> scratch(int64_t n) {
  return std::unique_ptr<T[]>(new T[static_cast<size_t>(n)]);
}

struct ConvShape {
  int64_t N, F;
  cpu::ConvGeometry g;
  int64_t P() const { return g.positions(); }
  int64_t CKK() const { return g.patch(); }
};

// cols (CKK, N·P): image n's columns start at column n·P.
template <class T> std::unique_ptr<T[]> batch_im2col(const T* x, const ConvShape& s) {
  const int64_t P = s.P(), NP = s.N * P, img = s.g.C * s.g.H * s.g.W;
  auto cols = scratch<T>(s.CKK() * NP);
#pragma omp parallel for if (s.N > 1)
  for (int64_t n = 0; n < s.N; ++n) cpu::im2col(x + n * img, s.g, cols.get() + n * P, NP);
  return cols;
}

// y (N, F, P) = w (F, CKK) · cols + b
template <class T> void conv_forward(const T* x, const T* w, const T* b, T* y, const ConvShape& s) {
  const int64_t P = s.P(), NP = s.N * P, F = s.F;
  auto cols = batch_im2col(x, s);
  auto out = scratch<T>(F * NP);  // (F, N·P)
  gemm(false, false, F, NP, s.CKK(), w, s.CKK(), cols.get(), NP, T(0), out.get(), NP);
  // (F, N, P) -> (N, F, P), adding the bias on the way
#pragma omp parallel for collapse(2) if (F * NP > (1 << 15))
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t f = 0; f < F; ++f) {
      const T* src = out.get() + f * NP + n * P;
      T* dst = y + (n * F + f) * P;
      const T bias = b ? b[f] : T(0);
      for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + bias;
    }
}

// dx, dw, db from dy (N, F, P). Any of dx/dw/db may be null (not needed).
template <class T>
void conv_backward(const T* x, const T* w, const T* dy, T* dx, T* dw, T* db, const ConvShape& s) {
  const int64_t P = s.P(), NP = s.N * P, F = s.F, CKK = s.CKK();
  // dY as (F, N·P), the layout the GEMMs want
  auto dyp = scratch<T>(F * NP);
#pragma omp parallel for collapse(2) if (F * NP > (1 << 15))
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t p = 0; p < P; ++p) dyp[f * NP + n * P + p] = dy[(n * F + f) * P + p];
  // db[f] = Σ_{n,p} dy[n, f, p]
  if (db)
    for (int64_t f = 0; f < F; ++f) {
      double acc = 0;  // N·P can be 10⁵ terms: accumulate in double
      for (int64_t q = 0; q < NP; ++q) acc += dyp[f * NP + q];
      db[f] = static_cast<T>(acc);
    }
  // dW (F, CKK) = dY (F, N·P) · colsᵀ (N·P, CKK)   — cols recomputed, not saved: less memory
  if (dw) {
    auto cols = batch_im2col(x, s);
    gemm(false, true, F, CKK, NP, dyp.get(), NP, cols.get(), NP, T(0), dw, CKK);
  }
  // dcols (CKK, N·P) = Wᵀ (CKK, F) · dY (F, N·P);  dx = col2im(dcols), image by image
  if (dx) {
    auto dcols = scratch<T>(CKK * NP);
    gemm(true, false, CKK, NP, F, w, CKK, dyp.get(), NP, T(0), dcols.get(), NP);
    const int64_t img = s.g.C * s.g.H * s.g.W;
#pragma omp parallel for if (s.N > 1)
    for (int64_t n = 0; n < s.N; ++n) cpu::col2im(dcols.get() + n * P, s.g, NP, dx + n * img);
  }
}

// The compute dtype: F64 stays F64, everything else runs in F32.
DType work_dtype(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

}  // namespace

Tensor conv2d(const Tensor& x_in, const Tensor& w_in, const Tensor& b_in, int64_t stride,
              int64_t padding) {
  // ---- entry checks ----
  check_defined("conv2d", x_in, "x");
  check_defined("conv2d", w_in, "weight");
  check_same_device("conv2d", x_in, "x", w_in, "weight");
  check_cpu("conv2d", x_in, "x");
  check_same_dtype("conv2d", x_in, "x", w_in, "weight");
  check_dim("conv2d", x_in, "x", 4, "(N, C, H, W)");
  check_dim("conv2d", w_in, "weight", 4, "(F, C, KH, KW)");
  if (w_in.size(1) != x_in.size(1))
    op_error("conv2d", fmt::format("x has {} channels (shape {}) but weight expects {} "
                                   "(shape {} = (F, C, KH, KW))",
                                   x_in.size(1), shape_str(x_in.shape()), w_in.size(1),
                                   shape_str(w_in.shape())));
  if (stride < 1) op_error("conv2d", fmt::format("stride must be >= 1, got {}", stride));
  if (padding < 0) op_error("conv2d", fmt::format("padding must be >= 0, got {}", padding));
  if (b_in.defined()) {
    check_same_dtype("conv2d", x_in, "x", b_in, "bias");
    if (b_in.shape() != Shape{w_in.size(0)})
      op_error("conv2d", fmt::format("bias must have shape ({}), got {}", w_in.size(0),
                                     shape_str(b_in.shape())));
  }
  ConvShape s;
  s.N = x_in.size(0);
  s.F = w_in.size(0);
  s.g.C = x_in.size(1);
  s.g.H = x_in.size(2);
  s.g.W = x_in.size(3);
  s.g.KH = w_in.size(2);
  s.g.KW = w_in.size(3);
  s.g.stride_h = s.g.stride_w = stride;
  s.g.pad_h = s.g.pad_w = padding;
  if (s.g.H + 2 * padding < s.g.KH || s.g.W + 2 * padding < s.g.KW)
    op_error("conv2d", fmt::format("kernel {}x{} is larger than the padded input {}x{} (x {}, "
                                   "padding {})",
                                   s.g.KH, s.g.KW, s.g.H + 2 * padding, s.g.W + 2 * padding,
                                   shape_str(x_in.shape()), padding));
  const int64_t OH = s.g.out_h(), OW = s.g.out_w();

  // ---- forward, in the work dtype ----
  const DType dt = x_in.dtype(), wt = work_dtype(dt);
  Tensor x = x_in.to(wt).contiguous().detach(), w = w_in.to(wt).contiguous().detach();
  Tensor b = b_in.defined() ? b_in.to(wt).contiguous().detach() : Tensor();
  Tensor y = Tensor::empty({s.N, s.F, OH, OW}, wt);
  visit_dtype(wt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      conv_forward<T>(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, y.data<T>(), s);
  });
  y = y.to(dt).detach();

  // y = w ⋆ x + b:  dx = col2im(Wᵀ·dY),  dw = dY·colsᵀ,  db = Σ_{n,p} dY
  // Saved: the inputs in their own dtype (an F16 activation stays 2 bytes), widened again
  // in the backward.
  Tensor xs = x_in.detach(), ws = w_in.detach();
  return record("conv2d", y, {x_in, w_in, b_in},
                [xs, ws, s, dt, wt](const Tensor& dy_in, const NeedsGrad& need) {
                  Tensor x = xs.to(wt).contiguous(), w = ws.to(wt).contiguous();
                  Tensor dy = dy_in.to(wt).contiguous();
                  Tensor dx = need[0] ? Tensor::empty(x.shape(), wt) : Tensor();
                  Tensor dw = need[1] ? Tensor::empty(w.shape(), wt) : Tensor();
                  Tensor db = need[2] ? Tensor::empty({s.F}, wt) : Tensor();
                  visit_dtype(wt, [&](auto tag) {
                    using T = decltype(tag);
                    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
                      conv_backward<T>(x.data<T>(), w.data<T>(), dy.data<T>(),
                                       need[0] ? dx.data<T>() : nullptr,
                                       need[1] ? dw.data<T>() : nullptr,
                                       need[2] ? db.data<T>() : nullptr, s);
                  });
                  return std::vector<Tensor>{need[0] ? dx.to(dt) : dx, need[1] ? dw.to(dt) : dw,
                                             need[2] ? db.to(dt) : db};
                });
}

}  // namespace hg
