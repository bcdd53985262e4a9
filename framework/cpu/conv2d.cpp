// framework/cpu/conv2d.cpp — conv2d as im2col + GEMM, image by image (see conv2d.h).
#include "framework/cpu/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "framework/cpu/gemm.h"

namespace hg::cpu {
namespace {

// One name for the two GEMMs, so the loops below are written once for float and double.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  dgemm(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}

// Threads for a batch of N images: at most one per image. With fewer images than threads the
// images run one after another and each GEMM uses all the threads instead.
int image_threads(int64_t N) {
  const int most = omp_in_parallel() ? 1 : omp_get_max_threads();
  return N >= most ? most : 1;
}

template <class T>
void forward_impl(const T* x, const T* w, const T* b, T* y, int64_t N, int64_t F, const ConvGeometry& g) {
  g.check();
  const int64_t P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
#pragma omp parallel num_threads(image_threads(N))
  {
    std::vector<T> cols(size_t(CKK * P));  // (CKK, P): this thread's workspace
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* yn = y + n * F * P;  // (F, P)
      im2col(x + n * image, g, cols.data(), P);
      gemm(false, false, F, P, CKK, w, CKK, cols.data(), P, T(0), yn, P);
      if (b)
        for (int64_t f = 0; f < F; ++f)
          for (int64_t p = 0; p < P; ++p) yn[f * P + p] += b[f];
    }
  }
}

template <class T>
void backward_impl(const T* x, const T* w, const T* dy, T* dx, T* dw, T* db, int64_t N, int64_t F,
                   const ConvGeometry& g) {
  g.check();
  const int64_t P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
  const int threads = image_threads(N);
  // Per-thread partial sums of dW (F, CKK) and db (F), added up in thread order at the end.
  // db sums N·P terms (25 088 for chapter 02's second conv): it is accumulated in double.
  std::vector<std::vector<T>> dw_part(static_cast<size_t>(threads));
  std::vector<std::vector<double>> db_part(static_cast<size_t>(threads));
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    std::vector<T> cols(size_t(CKK * P));  // (CKK, P): im2col(x_n), then dcols
    if (dw) dw_part[size_t(t)].assign(size_t(F * CKK), T(0));
    if (db) db_part[size_t(t)].assign(size_t(F), 0.0);
#pragma omp for schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const T* dyn = dy + n * F * P;  // (F, P)
      if (dw) {  // dW += dy_n · cols_nᵀ
        im2col(x + n * image, g, cols.data(), P);
        gemm(false, true, F, CKK, P, dyn, P, cols.data(), P, T(1), dw_part[size_t(t)].data(), CKK);
      }
      if (db)
        for (int64_t f = 0; f < F; ++f) {
          double s = 0;
          for (int64_t p = 0; p < P; ++p) s += dyn[f * P + p];
          db_part[size_t(t)][size_t(f)] += s;
        }
      if (dx) {  // dcols = Wᵀ · dy_n, then scattered back onto the image
        gemm(true, false, CKK, P, F, w, CKK, dyn, P, T(0), cols.data(), P);
        col2im(cols.data(), g, P, dx + n * image);
      }
    }
  }
  if (dw) {
    std::fill(dw, dw + F * CKK, T(0));
    for (const auto& part : dw_part)
      for (int64_t i = 0; i < F * CKK; ++i) dw[i] += part[size_t(i)];
  }
  if (db)
    for (int64_t f = 0; f < F; ++f) {
      double s = 0;
      for (const auto& part : db_part) s += part[size_t(f)];
      db[f] = T(s);
    }
}

}  // namespace

void conv2d_forward(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t F,
                    const ConvGeometry& g) {
  forward_impl(x, w, b, y, N, F, g);
}
void conv2d_forward(const double* x, const double* w, const double* b, double* y, int64_t N,
                    int64_t F, const ConvGeometry& g) {
  forward_impl(x, w, b, y, N, F, g);
}
void conv2d_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, int64_t N, int64_t F, const ConvGeometry& g) {
  backward_impl(x, w, dy, dx, dw, db, N, F, g);
}
void conv2d_backward(const double* x, const double* w, const double* dy, double* dx, double* dw,
                     double* db, int64_t N, int64_t F, const ConvGeometry& g) {
  backward_impl(x, w, dy, dx, dw, db, N, F, g);
}

}  // namespace hg::cpu
