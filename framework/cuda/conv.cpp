// framework/cuda/conv.cpp — conv2d on GPU tensors (conv.h).
#include "framework/cuda/conv.h"

#include <algorithm>

#include "cuda/ops/conv.h"
#include "cuda/ops/elementwise.h"
#include "cuda/ops/reduce.h"
#include "framework/cuda/common.h"
#include "framework/cuda/copy.h"

namespace hg::cuda {

namespace {
// The address of element `elements` of t (the first image of a slice of the batch).
const char* bytes_at(const Tensor& t, int64_t elements) {
  return static_cast<const char*>(t.raw_data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}
char* bytes_at(Tensor& t, int64_t elements) {
  return static_cast<char*>(t.raw_data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}
}  // namespace

Tensor conv2d_forward(const Tensor& x, const Tensor& w_in, const Tensor& b, const ConvGeometry& g) {
  need_gpu_contiguous("conv2d", x, "x");
  need_gpu_contiguous("conv2d", w_in, "weight");
  Tensor w = cast(w_in, x.dtype());
  const DType kt = kernel_dtype("conv2d", x);
  const int64_t N = x.size(0), F = w.size(0);
  const int64_t P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
  const int64_t nb = conv_images_per_gemm(CKK, F, P, N);
  Tensor y = gpu_empty({N, F, g.out_h(), g.out_w()}, x.dtype());
  Tensor b32 = b.defined() ? as_f32(b.detach().contiguous()) : Tensor();
  Tensor cols = gpu_empty({CKK, nb * P}, x.dtype());
  Tensor acc = gpu_empty({F, nb * P}, DType::F32);  // Y' of nb images
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    const int64_t n = std::min(nb, N - n0);
    launch_im2col(kt, bytes_at(x, n0 * image), n, g, cols.raw_data());
    gemm_f32_out(kt, false, false, F, n * P, CKK, w.raw_data(), cols.raw_data(), f32_data(acc));
    launch_conv_output(f32_data(acc), b32.defined() ? f32_data(b32) : nullptr, n, F, P, kt,
                       bytes_at(y, n0 * F * P));
  }
  return y;
}

std::vector<Tensor> conv2d_backward(const Tensor& x, const Tensor& w_in, const Tensor& dy_in, const ConvGeometry& g,
                                    bool need_dx, bool need_dw, bool need_db) {
  const DType dt = x.dtype();
  Tensor w = cast(w_in, dt);
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("conv2d backward", dy, "dy");
  dy = cast(dy, dt);
  const DType kt = kernel_dtype("conv2d", x);
  const int64_t N = x.size(0), F = w.size(0);
  const int64_t P = g.positions(), CKK = g.patch(), image = g.C * g.H * g.W;
  const int64_t nb = conv_images_per_gemm(CKK, F, P, N);

  Tensor dx = need_dx ? gpu_empty(x.shape(), DType::F32) : Tensor();          // F32, rounded once at the end
  Tensor dw = need_dw ? gpu_empty(w.shape(), DType::F32) : Tensor();
  Tensor part = need_dw && nb < N ? gpu_empty({F, CKK}, DType::F32) : Tensor();  // dW of one GEMM
  Tensor dyF = gpu_empty({F, nb * P}, dt);                                      // dY' of nb images
  Tensor cols = need_dw ? gpu_empty({CKK, nb * P}, dt) : Tensor();
  Tensor dcols = need_dx ? gpu_empty({CKK, nb * P}, DType::F32) : Tensor();
  for (int64_t n0 = 0; n0 < N; n0 += nb) {
    const int64_t n = std::min(nb, N - n0);
    launch_swap01(kt, bytes_at(dy, n0 * F * P), F, n, P, dyF.raw_data());  // (n, F, P) -> (F, n, P)
    if (need_dw) {
      launch_im2col(kt, bytes_at(x, n0 * image), n, g, cols.raw_data());
      Tensor& into = n0 == 0 ? dw : part;
      gemm_f32_out(kt, false, true, F, CKK, n * P, dyF.raw_data(), cols.raw_data(), f32_data(into));
      if (n0 > 0) launch_axpy(DType::F32, dw.raw_data(), part.raw_data(), 1.0f, part.numel());
    }
    if (need_dx) {
      gemm_f32_out(kt, true, false, CKK, n * P, F, w.raw_data(), dyF.raw_data(), f32_data(dcols));
      launch_col2im(DType::F32, dcols.raw_data(), n, g, bytes_at(dx, n0 * image));
    }
  }
  Tensor db;
  if (need_db) {  // Σ over p within each (n, f), then over n
    Tensor dy32 = as_f32(dy);
    Tensor per_image = gpu_empty({N, F}, DType::F32);
    launch_sum_dim(DType::F32, dy32.raw_data(), N * F, P, 1, per_image.raw_data());
    db = gpu_empty({F}, DType::F32);
    launch_sum_dim(DType::F32, per_image.raw_data(), 1, N, F, db.raw_data());
  }
  return {round_back(dx, dt), round_back(dw, dt), round_back(db, dt)};
}

}  // namespace hg::cuda
