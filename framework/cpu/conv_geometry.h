#pragma once
// framework/cpu/conv_geometry.h — the shape of one convolution (or pooling) window over one
// image, shared by the CPU recipe (im2col.h, conv2d.h) and the GPU kernels (cuda/ops/conv.h).
//
// Legend: C channels, H W input size, KH KW window size, OH OW output size,
//         P = OH·OW output positions, CKK = C·KH·KW (one column of im2col).
//
//   OH = (H + 2·pad_h − KH) / stride_h + 1        OW = (W + 2·pad_w − KW) / stride_w + 1
//
// Plain C++: the members marked HG_HD (cuda/runtime/hd.h) are __host__ __device__ under nvcc,
// so a kernel takes this same struct by value; under g++ they are ordinary inline functions.
#include <cstdint>

#include "cuda/runtime/hd.h"

namespace hg {

struct ConvGeometry {
  int64_t C = 1, H = 1, W = 1;         // one input image (C, H, W)
  int64_t KH = 1, KW = 1;              // window (kernel) size
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;        // zero padding on each side
  HG_HD int64_t out_h() const { return (H + 2 * pad_h - KH) / stride_h + 1; }
  HG_HD int64_t out_w() const { return (W + 2 * pad_w - KW) / stride_w + 1; }
  HG_HD int64_t positions() const { return out_h() * out_w(); }  // P
  HG_HD int64_t patch() const { return C * KH * KW; }             // CKK
  void check() const;  // throws std::invalid_argument naming the bad field (host only)

  // The same stride and padding along both axes (every op of the engine): images (C, H, W),
  // a KH x KW window.
  static ConvGeometry of(int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t stride, int64_t pad) {
    ConvGeometry g;
    g.C = C, g.H = H, g.W = W, g.KH = KH, g.KW = KW;
    g.stride_h = g.stride_w = stride;
    g.pad_h = g.pad_w = pad;
    return g;
  }
};

}  // namespace hg
