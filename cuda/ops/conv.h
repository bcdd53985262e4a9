#pragma once
// Convolution helpers and pooling on device buffers.
//
// conv2d on the GPU is the CPU engine's recipe (framework/cpu/im2col.h) with GPU kernels:
//   forward   cols = im2col(x) ; Y (F, P) = W (F, CKK) · cols (CKK, P)      (one GEMM per image)
//   backward  dW += dY · colsᵀ ; dcols = Wᵀ · dY ; dx = col2im(dcols)
// Pooling (PyTorch semantics): windows KH x KW, stride, zero padding; max pooling ignores
// padded positions; average pooling divides by KH·KW including padded positions
// (count_include_pad = true, PyTorch's default).
#include "cuda/ops/conv_index.h"
#include "cuda/ops/dtype.h"

namespace hg::cuda {

// x: one image (C, H, W); cols: (CKK, P) with row stride ld_cols >= P. Overwrites the block.
void im2col(Dtype dt, const void* x, const ConvGeometry& g, void* cols, int64_t ld_cols);
// The adjoint: x (C, H, W) is OVERWRITTEN with the sum of the column entries copied from each pixel.
void col2im(Dtype dt, const void* cols, const ConvGeometry& g, int64_t ld_cols, void* x);

// x (N, C, H, W) -> y (N, C, OH, OW); argmax (N, C, OH, OW) = h·W + w of the max (−1: all padding).
void max_pool2d_forward(const float* x, int64_t N, const ConvGeometry& g, float* y, int32_t* argmax);
void max_pool2d_backward(const float* dy, const int32_t* argmax, int64_t N, const ConvGeometry& g, float* dx);
void avg_pool2d_forward(const float* x, int64_t N, const ConvGeometry& g, float* y);
void avg_pool2d_backward(const float* dy, int64_t N, const ConvGeometry& g, float* dx);
// (g.C is the channel count; KH, KW, stride and pad describe the window. For global average
// pooling use reduce.h: sum_dim over (N·C, H·W, 1) with scale 1/(H·W).)

}  // namespace hg::cuda
