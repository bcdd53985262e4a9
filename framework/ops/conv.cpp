#include "framework/ops/conv.h"

#include <fmt/format.h>

#include <omp.h>

#include <algorithm>
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

// Work is split over images: each thread takes a fixed, contiguous share of the batch
// (schedule(static)), unfolds one image at a time into its own (CKK, P) column buffer —
// small enough to stay in cache — and runs a single-threaded GEMM on it (cpu::sgemm stays
// serial when called inside a parallel loop). No (CKK, N·P) buffer for the whole batch.

// y (N, F, P):  y_n (F, P) = w (F, CKK) · cols_n (CKK, P) + b
template <class T> void conv_forward(const T* x, const T* w, const T* b, T* y, const ConvShape& s) {
  const int64_t P = s.P(), F = s.F, CKK = s.CKK(), img = s.g.C * s.g.H * s.g.W;
#pragma omp parallel if (s.N > 1)
  {
    auto cols = scratch<T>(CKK * P);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      T* yn = y + n * F * P;
      cpu::im2col(x + n * img, s.g, cols.get(), P);
      gemm(false, false, F, P, CKK, w, CKK, cols.get(), P, T(0), yn, P);
      if (b)
        for (int64_t f = 0; f < F; ++f)
          for (int64_t p = 0; p < P; ++p) yn[f * P + p] += b[f];
    }
  }
}

// dx, dw, db from dy (N, F, P). Any of dx/dw/db may be null (not needed).
//   dw (F, CKK) = Σ_n dy_n (F, P) · cols_nᵀ (P, CKK)     cols recomputed: less memory saved
//   dcols_n (CKK, P) = wᵀ (CKK, F) · dy_n (F, P);   dx_n = col2im(dcols_n)
//   db[f] = Σ_{n,p} dy[n, f, p]
template <class T>
void conv_backward(const T* x, const T* w, const T* dy, T* dx, T* dw, T* db, const ConvShape& s) {
  const int64_t P = s.P(), F = s.F, CKK = s.CKK(), img = s.g.C * s.g.H * s.g.W;
  if (db)
    for (int64_t f = 0; f < F; ++f) {
      double acc = 0;  // N·P can be 10⁵ terms: accumulate in double
      for (int64_t n = 0; n < s.N; ++n)
        for (int64_t p = 0; p < P; ++p) acc += dy[(n * F + f) * P + p];
      db[f] = static_cast<T>(acc);
    }
  if (!dw && !dx) return;
  // One partial dw per thread, summed in thread order afterwards: the same bits every run
  // (a shared accumulator would add in whatever order the threads arrive).
  const int threads = s.N > 1 ? omp_get_max_threads() : 1;
  std::vector<std::unique_ptr<T[]>> partial(threads);
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int t = omp_get_thread_num();
    auto cols = scratch<T>(CKK * P);
    T* dw_t = nullptr;
    if (dw) {
      partial[t] = scratch<T>(F * CKK);
      dw_t = partial[t].get();
      std::fill(dw_t, dw_t + F * CKK, T(0));
    }
#pragma omp for schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      const T* dyn = dy + n * F * P;
      if (dw) {
        cpu::im2col(x + n * img, s.g, cols.get(), P);
        gemm(false, true, F, CKK, P, dyn, P, cols.get(), P, T(1), dw_t, CKK);
      }
      if (dx) {
        gemm(true, false, CKK, P, F, w, CKK, dyn, P, T(0), cols.get(), P);  // cols := dcols_n
        cpu::col2im(cols.get(), s.g, P, dx + n * img);
      }
    }
  }
  if (dw) {
    std::fill(dw, dw + F * CKK, T(0));
    for (int t = 0; t < threads; ++t)
      if (partial[t])
        for (int64_t i = 0; i < F * CKK; ++i) dw[i] += partial[t][i];
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
