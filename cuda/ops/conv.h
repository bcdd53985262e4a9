#pragma once
// Convolution helpers and pooling on device buffers.
//
// conv2d on the GPU is the CPU engine's recipe (framework/cpu/im2col.h) over a whole batch
// (conv_index.h): one GEMM per convolution, not one per image:
//   forward   cols (CKK, N·P) = im2col(x);  Y' (F, N·P) = W · cols;  y (N, F, P) = swap(Y') + b
//   backward  dY' = swap(dy);  dW = dY' · colsᵀ;  dcols = Wᵀ · dY';  dx = col2im(dcols)
// (conv_images_per_gemm splits a very large batch into a few GEMMs of many images each.)
// Pooling (PyTorch semantics): windows KH x KW, stride, zero padding; max pooling ignores
// padded positions; average pooling divides by KH·KW including padded positions
// (count_include_pad = true, PyTorch's default).
#include "cuda/ops/conv_index.h"
#include "cuda/ops/dtype.h"

namespace hg::cuda {

// x: N images (N, C, H, W); cols: (CKK, N·P), overwritten.
void launch_im2col(DType dt, const void* x, int64_t N, const ConvGeometry& g, void* cols);
// The adjoint: x (N, C, H, W) is OVERWRITTEN with the sum of the column entries copied from each pixel.
void launch_col2im(DType dt, const void* cols, int64_t N, const ConvGeometry& g, void* x);
// y (A, B, C) = x (B, A, C) with the first two axes swapped (dy (N, F, P) -> dY' (F, N, P)).
void launch_swap01(DType dt, const void* x, int64_t A, int64_t B, int64_t C, void* y);
// y (N, F, P), dtype dt = acc (F, N, P) swapped, + bias[f] when bias is not null; F32 math,
// one rounding to dt. The end of the forward: the GEMM's F32 result becomes the output.
void launch_conv_output(const float* acc, const float* bias, int64_t N, int64_t F, int64_t P, DType dt, void* y);

// x (N, C, H, W) -> y (N, C, OH, OW); argmax (N, C, OH, OW) = h·W + w of the max (−1: all padding).
void launch_max_pool2d_forward(const float* x, int64_t N, const ConvGeometry& g, float* y, int32_t* argmax);
void launch_max_pool2d_backward(const float* dy, const int32_t* argmax, int64_t N, const ConvGeometry& g, float* dx);
void launch_avg_pool2d_forward(const float* x, int64_t N, const ConvGeometry& g, float* y);
void launch_avg_pool2d_backward(const float* dy, int64_t N, const ConvGeometry& g, float* dx);
// (g.C is the channel count; KH, KW, stride and pad describe the window. For global average
// pooling use reduce.h: sum_dim over (N·C, H·W, 1) with scale 1/(H·W).)

}  // namespace hg::cuda
