// framework/cpu/conv2d.cpp — conv2d as im2col + GEMM, image by image (see conv2d.h).
#include "framework/cpu/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "framework/cpu/gemm.h"
#include "framework/dtype/bfloat16.h"

namespace hg::cpu {
namespace {

// One name for the three GEMMs, so the loops below are written once: T is what the images,
// weights and gradients are stored in, Acc what the products are summed into (and what y,
// dx, dw come out as): float and float, double and double, or bfloat16 and float — BF16
// operands on the CPU's matrix unit when it has one (gemm_bf16), F32 sums.
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  sgemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double beta, double* C, int64_t ldc) {
  dgemm(ta, tb, M, N, K, 1.0, A, lda, B, ldb, beta, C, ldc);
}
void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const bfloat16* A, int64_t lda,
          const bfloat16* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  gemm_bf16(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}

// Threads for a batch of N images: at most one per image. With fewer images than threads the
// images run one after another and each GEMM uses all the threads instead. A tiny conv
// (multiply-adds below 2^18, e.g. in gradient checks) stays on one thread: waking a team
// costs more than the work, and far more on a machine whose cores are busy.
int image_threads(int64_t N, int64_t madds) {
  const int most = omp_in_parallel() ? 1 : omp_get_max_threads();
  return N >= most && madds >= (int64_t{1} << 18) ? most : 1;
}

// Images are handed out dynamically (a thread that was slowed down — by another program, or
// by a bigger share of work — simply takes fewer): each output y_n is computed by one thread
// alone, so which thread does it does not change a bit of the result.
template <class T, class Acc>
void forward_impl(const T* x, const T* w, const Acc* b, Acc* y, int64_t N, int64_t F, const ConvGeometry& g) {
  g.check();
  const int64_t P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
#pragma omp parallel num_threads(image_threads(N, N * F * P * CKK))
  {
    std::vector<T> cols(size_t(CKK * P));  // (CKK, P): this thread's workspace
#pragma omp for schedule(dynamic, 1)
    for (int64_t n = 0; n < N; ++n) {
      Acc* yn = y + n * F * P;  // (F, P)
      im2col(x + n * image, g, cols.data(), P);
      gemm(false, false, F, P, CKK, w, CKK, cols.data(), P, Acc(0), yn, P);
      if (b)
        for (int64_t f = 0; f < F; ++f)
          for (int64_t p = 0; p < P; ++p) yn[f * P + p] += b[f];
    }
  }
}

// dW and db are sums over the images. To keep them bit-identical from run to run however the
// images are shared out, the batch is cut into a fixed number of groups of consecutive
// images; a group is summed by one thread in image order, and the group sums are added in
// group order at the end. (A sum per thread would depend on which thread took which image.)
constexpr int64_t kGradGroups = 16;

template <class T, class Acc>
void backward_impl(const T* x, const T* w, const T* dy, Acc* dx, Acc* dw, Acc* db, int64_t N, int64_t F,
                   const ConvGeometry& g) {
  g.check();
  const int64_t P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
  const int64_t groups = std::min(N, kGradGroups), per_group = (N + groups - 1) / groups;
  // Per-group partial sums of dW (F, CKK) and db (F). db sums N·P terms (25 088 for chapter
  // 02's second conv): it is accumulated in double.
  std::vector<Acc> dw_part(dw ? size_t(groups * F * CKK) : 0);
  std::vector<double> db_part(db ? size_t(groups * F) : 0, 0.0);
#pragma omp parallel num_threads(image_threads(groups, N * F * P * CKK))
  {
    std::vector<T> cols(dw ? size_t(CKK * P) : 0);      // (CKK, P): im2col(x_n)
    std::vector<Acc> dcols(dx ? size_t(CKK * P) : 0);   // (CKK, P): Wᵀ · dy_n
#pragma omp for schedule(dynamic, 1)
    for (int64_t gi = 0; gi < groups; ++gi) {
      Acc* dw_g = dw ? dw_part.data() + gi * F * CKK : nullptr;
      double* db_g = db ? db_part.data() + gi * F : nullptr;
      const int64_t first = gi * per_group, last = std::min(N, first + per_group);
      for (int64_t n = first; n < last; ++n) {
        const T* dyn = dy + n * F * P;  // (F, P)
        if (dw) {  // dW_g += dy_n · cols_nᵀ   (the group's first image overwrites)
          im2col(x + n * image, g, cols.data(), P);
          gemm(false, true, F, CKK, P, dyn, P, cols.data(), P, Acc(n == first ? 0 : 1), dw_g, CKK);
        }
        if (db)
          for (int64_t f = 0; f < F; ++f) {
            double s = 0;
            for (int64_t p = 0; p < P; ++p) s += static_cast<double>(static_cast<Acc>(dyn[f * P + p]));
            db_g[f] += s;
          }
        if (dx) {  // dcols = Wᵀ · dy_n, then scattered back onto the image
          gemm(true, false, CKK, P, F, w, CKK, dyn, P, Acc(0), dcols.data(), P);
          col2im(dcols.data(), g, P, dx + n * image);
        }
      }
    }
  }
  if (dw) {
    std::fill(dw, dw + F * CKK, Acc(0));
    for (int64_t gi = 0; gi < groups; ++gi)
      for (int64_t i = 0; i < F * CKK; ++i) dw[i] += dw_part[size_t(gi * F * CKK + i)];
  }
  if (db)
    for (int64_t f = 0; f < F; ++f) {
      double s = 0;
      for (int64_t gi = 0; gi < groups; ++gi) s += db_part[size_t(gi * F + f)];
      db[f] = Acc(s);
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
void conv2d_forward(const bfloat16* x, const bfloat16* w, const float* b, float* y, int64_t N,
                    int64_t F, const ConvGeometry& g) {
  forward_impl(x, w, b, y, N, F, g);
}
void conv2d_backward(const bfloat16* x, const bfloat16* w, const bfloat16* dy, float* dx,
                     float* dw, float* db, int64_t N, int64_t F, const ConvGeometry& g) {
  backward_impl(x, w, dy, dx, dw, db, N, F, g);
}

}  // namespace hg::cpu
