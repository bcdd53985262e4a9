#pragma once
// framework/ops/conv.h — 2-D convolution (cross-correlation, as in every DL framework).
//
// Legend: N batch, C input channels, H W input size, F filters (output channels),
//         KH KW kernel size, OH OW output size, P = OH·OW, CKK = C·KH·KW.
//
//   y[n, f, oh, ow] = b[f] + Σ_{c,kh,kw} w[f, c, kh, kw] · x[n, c, oh·s − p + kh, ow·s − p + kw]
//
//   x (N, C, H, W)   w (F, C, KH, KW)   b (F) or undefined   ->   y (N, F, OH, OW)
//   OH = (H + 2·padding − KH) / stride + 1
//
// How: im2col + GEMM (framework/cpu/im2col.h explains the layout), image by image:
//   forward   Y_n (F, P) = W (F, CKK) · cols_n (CKK, P)
//   backward  dW += dY_n · cols_nᵀ,   dcols_n = Wᵀ · dY_n,   dx_n = col2im(dcols_n)
// The batch is split across threads; each runs its images with a serial GEMM on a column
// buffer that stays in cache.
//
// F16/BF16: x and w are widened to F32 (exact) and the F32 GEMM runs: every product of two
// F16 (or BF16) values is exact in F32 and the sums accumulate in F32 — the same numbers a
// tensor core computes (cpu::gemm_f16), up to the order of the additions. The output is
// rounded once to the input dtype.
#include <cstdint>

#include "framework/tensor/tensor.h"

namespace hg {

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = Tensor(), int64_t stride = 1,
              int64_t padding = 0);

}  // namespace hg
