#pragma once
// Index math of convolution and pooling on the GPU, shared by kernels and CPU tests.
// The layout of one image's columns is the CPU engine's (framework/cpu/im2col.h):
//
//   cols (CKK, P)    row r = (c·KH + kh)·KW + kw,   column q = oh·OW + ow
//   cols[r][q] = x[c][oh·stride_h − pad_h + kh][ow·stride_w − pad_w + kw]   (0 outside)
//
// On the GPU the columns of a whole batch sit side by side, so that one GEMM computes the
// convolution of every image (one launch instead of one per image: a ResNet-50 step would
// otherwise be ~20,000 small GEMMs, and the GPU would wait on launches, not on arithmetic):
//
//   cols (CKK, N·P)  column n·P + q is column q of image n
//   Y' (F, N·P) = W (F, CKK) · cols          Y' is y (N, F, P) with its first two axes swapped
//   dW (F, CKK) = dY' · colsᵀ,   dcols (CKK, N·P) = Wᵀ · dY',   dY' = dy (N, F, P) swapped
#include "cuda/runtime/hd.h"
#include "framework/cpu/conv_geometry.h"  // ConvGeometry: the CPU's struct, HG_HD members

#include <cstdint>

namespace hg::cuda {

// The input pixel that cols[r][q] copies. Returns false for padding (the entry is 0).
HG_HD bool im2col_source(const ConvGeometry& g, int64_t r, int64_t q, int64_t& c, int64_t& h, int64_t& w) {
  const int64_t kw = r % g.KW, kh = (r / g.KW) % g.KH;
  c = r / (g.KW * g.KH);
  const int64_t ow = q % g.out_w(), oh = q / g.out_w();
  h = oh * g.stride_h - g.pad_h + kh;
  w = ow * g.stride_w - g.pad_w + kw;
  return h >= 0 && h < g.H && w >= 0 && w < g.W;
}

// The same over a batch: column `col` of cols (CKK, N·P) belongs to image n = col / P.
HG_HD bool im2col_batch_source(const ConvGeometry& g, int64_t r, int64_t col, int64_t& n, int64_t& c, int64_t& h,
                               int64_t& w) {
  n = col / g.positions();
  return im2col_source(g, r, col % g.positions(), c, h, w);
}

// Element j of y (A, B, C) that is x (B, A, C) with its first two axes swapped: the offset in x
// it copies. (The map is its own inverse: swapping back uses it with A and B exchanged.)
//   y (F, N, P) = dy (N, F, P) swapped:   y[f][n][p] = dy[n][f][p]
HG_HD int64_t swap01_source(int64_t j, int64_t A, int64_t B, int64_t C) {
  const int64_t c = j % C, b = (j / C) % B, a = j / (B * C);
  return (b * A + a) * C + c;
}

// How many images one GEMM takes: as many as keep the column matrix, and the GEMM's output
// (F, n·P), within `max_elements` (2^24 by default: 32 MB of F16 columns; every layer of the
// chapters' ResNet-50 and SmallCNN at batch 256 on 28 x 28 images fits in one), at least one.
constexpr int64_t kConvMaxGemmElements = int64_t(1) << 24;
inline int64_t conv_images_per_gemm(int64_t CKK, int64_t F, int64_t P, int64_t N,
                                    int64_t max_elements = kConvMaxGemmElements) {
  const int64_t per_image = (CKK > F ? CKK : F) * P;
  const int64_t n = per_image > 0 ? max_elements / per_image : N;
  return n < 1 ? 1 : (n > N ? N : n);
}

// The range of output rows oh whose window covers input row h along one axis:
// oh·stride − pad ≤ h ≤ oh·stride − pad + K − 1, clipped to [0, OH). Used by col2im and the
// pooling backward, which *gather* (each input pixel sums its windows: no atomics).
HG_HD void covering_windows(int64_t h, int64_t K, int64_t stride, int64_t pad, int64_t out, int64_t& first, int64_t& last) {
  const int64_t hp = h + pad;                       // position in the padded input
  first = hp < K ? 0 : (hp - K) / stride + 1;       // smallest oh with oh·stride + K − 1 ≥ hp
  last = hp / stride;                               // largest oh with oh·stride ≤ hp
  if (last > out - 1) last = out - 1;
}

}  // namespace hg::cuda
