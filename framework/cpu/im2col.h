#pragma once
// framework/cpu/im2col.h — turn a convolution into one matrix multiplication.
//
// Legend: N batch, C input channels, H W input size, KH KW kernel size, OH OW output size,
//         F output channels (filters), P = OH·OW output positions, CKK = C·KH·KW.
//
//   OH = (H + 2·pad_h - KH) / stride_h + 1        OW = (W + 2·pad_w - KW) / stride_w + 1
//   (ConvGeometry, conv_geometry.h: one struct for the CPU and the GPU)
//
// im2col copies, for every output position, the C·KH·KW input values its filter window
// covers into one column. Padding positions read as 0. The column matrix is
//
//   cols (CKK, P)    row r = (c·KH + kh)·KW + kw,   column q = oh·OW + ow
//   cols[r][q] = x[c][oh·stride_h - pad_h + kh][ow·stride_w - pad_w + kw]   (0 outside)
//
// The row order (c, kh, kw) is the memory order of a weight (F, C, KH, KW), so the weight
// *is* a (F, CKK) matrix with no copy, and conv2d for one image is one GEMM:
//
//   forward   Y  (F, P)   = W (F, CKK) · cols (CKK, P)            y is (F, OH, OW) = (F, P)
//   backward  dW (F, CKK) += dY (F, P) · colsᵀ                     sgemm(false, true, ...)
//             dcols (CKK, P) = Wᵀ · dY                             sgemm(true, false, ...)
//             dx (C, H, W) = col2im(dcols)
//
// col2im is the adjoint (transpose) of im2col: every column entry is added back to the input
// pixel it was copied from, so overlapping windows sum. As linear maps,
//   <im2col(x), y> = <x, col2im(y)>   for all x, y.
//
// Batched layout: `ld_cols` is the row stride of cols. With ld_cols = N·P and image n's
// columns starting at cols + n·P, the whole batch becomes one (CKK, N·P) matrix and the
// forward one large GEMM: Y (F, N·P) = W · cols — better for small images, whose
// per-image GEMMs are too small to run fast. (Y is then (F, N, P); permute to (N, F, P).)
#include <cstdint>

#include "framework/cpu/conv_geometry.h"

namespace hg {
struct bfloat16;  // framework/dtype/bfloat16.h
}  // namespace hg

namespace hg::cpu {

// x: one image (C, H, W), contiguous.  cols: (CKK, P) with row stride ld_cols ≥ P.
// Overwrites the CKK×P block. OpenMP-parallel over rows.
void im2col(const float* x, const ConvGeometry& g, float* cols, int64_t ld_cols);
void im2col(const double* x, const ConvGeometry& g, double* cols, int64_t ld_cols);
void im2col(const hg::bfloat16* x, const ConvGeometry& g, hg::bfloat16* cols, int64_t ld_cols);

// cols: (CKK, P) with row stride ld_cols.  x: one image (C, H, W), OVERWRITTEN with the sum
// of every column entry that came from each pixel (0 for pixels no window touches).
void col2im(const float* cols, const ConvGeometry& g, int64_t ld_cols, float* x);
void col2im(const double* cols, const ConvGeometry& g, int64_t ld_cols, double* x);

// The whole batch at once, in the batched layout: x (N, C, H, W) -> cols (CKK, N·P), image
// n's columns at n·P. Same values as N calls of im2col(x_n, g, cols + n·P, N·P), but each
// thread writes whole rows of cols sequentially, which is faster (im2col.cpp says why).
// (conv2d.h explains why conv2d itself works image by image instead.)
void im2col_batch(const float* x, int64_t N, const ConvGeometry& g, float* cols);
void im2col_batch(const double* x, int64_t N, const ConvGeometry& g, double* cols);
// And back: dx (N, C, H, W), overwritten, = col2im of every image's block of cols (CKK, N·P).
void col2im_batch(const float* cols, int64_t N, const ConvGeometry& g, float* x);
void col2im_batch(const double* cols, int64_t N, const ConvGeometry& g, double* x);

}  // namespace hg::cpu
