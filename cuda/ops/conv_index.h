#pragma once
// Index math of convolution and pooling on the GPU, shared by kernels and CPU tests.
// The layout is the CPU engine's (framework/cpu/im2col.h), so the two backends exchange
// column matrices and weights without reshuffling:
//
//   cols (CKK, P)    row r = (c·KH + kh)·KW + kw,   column q = oh·OW + ow
//   cols[r][q] = x[c][oh·stride_h − pad_h + kh][ow·stride_w − pad_w + kw]   (0 outside)
#include "cuda/runtime/hd.h"

#include <cstdint>

namespace hg::cuda {

struct ConvGeometry {
  int64_t C = 1, H = 1, W = 1;  // one input image (C, H, W)
  int64_t KH = 1, KW = 1;       // window (kernel) size
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  HG_HD int64_t out_h() const { return (H + 2 * pad_h - KH) / stride_h + 1; }
  HG_HD int64_t out_w() const { return (W + 2 * pad_w - KW) / stride_w + 1; }
  HG_HD int64_t positions() const { return out_h() * out_w(); }  // P
  HG_HD int64_t patch() const { return C * KH * KW; }             // CKK
};

// The input pixel that cols[r][q] copies. Returns false for padding (the entry is 0).
HG_HD bool im2col_source(const ConvGeometry& g, int64_t r, int64_t q, int64_t& c, int64_t& h, int64_t& w) {
  const int64_t kw = r % g.KW, kh = (r / g.KW) % g.KH;
  c = r / (g.KW * g.KH);
  const int64_t ow = q % g.out_w(), oh = q / g.out_w();
  h = oh * g.stride_h - g.pad_h + kh;
  w = ow * g.stride_w - g.pad_w + kw;
  return h >= 0 && h < g.H && w >= 0 && w < g.W;
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
