#pragma once
// framework/cuda/conv.h — conv2d on GPU tensors (the CPU side: framework/cpu/conv2d.h), the
// same recipe over the whole batch, one GEMM per convolution (cuda/ops/conv.h):
//   forward   cols (CKK, N·P) = im2col(x);  Y' (F, N·P) = W · cols;  y = swap(Y') + b
//   backward  dY' = swap(dy);  dW = dY' · colsᵀ;  dcols = Wᵀ · dY';  dx = col2im(dcols);  db = Σ dY
// The columns and the GEMM operands keep x's dtype (F16 and BF16 on the tensor cores, F32 on
// the SIMT rung or TF32); the GEMM accumulates in F32, and each result is rounded once to x's
// dtype. A very large batch is split into a few GEMMs of many images (conv_images_per_gemm).
#include <vector>

#include "framework/cpu/conv_geometry.h"
#include "framework/tensor/tensor.h"

namespace hg::cuda {

// x (N, C, H, W), w (F, C, KH, KW), b (F) or undefined, g the geometry of one image.
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const ConvGeometry& g);
// dx, dw, db in x's dtype; each undefined when not needed.
std::vector<Tensor> conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy, const ConvGeometry& g,
                                    bool need_dx, bool need_dw, bool need_db);

}  // namespace hg::cuda
