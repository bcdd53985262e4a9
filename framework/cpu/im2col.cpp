// framework/cpu/im2col.cpp — the copy loops behind conv2d (layout documented in im2col.h).
#include "framework/cpu/im2col.h"

#include <stdexcept>
#include <string>

namespace hg::cpu {

void ConvGeometry::check() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("conv geometry: " + what);
  };
  need(C > 0 && H > 0 && W > 0, "input (C, H, W) must be positive");
  need(KH > 0 && KW > 0, "kernel size must be positive");
  need(stride_h > 0 && stride_w > 0, "stride must be positive");
  need(pad_h >= 0 && pad_w >= 0, "padding must be >= 0");
  need(H + 2 * pad_h >= KH && W + 2 * pad_w >= KW,
       "kernel " + std::to_string(KH) + "x" + std::to_string(KW) + " is larger than the padded input " +
           std::to_string(H + 2 * pad_h) + "x" + std::to_string(W + 2 * pad_w));
}

namespace {

// One row r = (c, kh, kw) of cols: for each output (oh, ow) the input pixel
// (oh·s - pad + kh, ow·s - pad + kw) of channel c, or 0 in the padding.
template <class T>
void im2col_impl(const T* x, const ConvGeometry& g, T* cols, int64_t ld) {
  g.check();
  const int64_t OH = g.out_h(), OW = g.out_w(), rows = g.patch();
#pragma omp parallel for schedule(static) if (rows * OH * OW > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = r / (g.KH * g.KW), kh = (r / g.KW) % g.KH, kw = r % g.KW;
    const T* xc = x + c * g.H * g.W;
    T* out = cols + r * ld;
    for (int64_t oh = 0; oh < OH; ++oh) {
      const int64_t ih = oh * g.stride_h - g.pad_h + kh;
      T* o = out + oh * OW;
      if (ih < 0 || ih >= g.H) {
        for (int64_t ow = 0; ow < OW; ++ow) o[ow] = T(0);
        continue;
      }
      const T* xrow = xc + ih * g.W;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const int64_t iw = ow * g.stride_w - g.pad_w + kw;
        o[ow] = (iw >= 0 && iw < g.W) ? xrow[iw] : T(0);
      }
    }
  }
}

// The adjoint: scatter-add each column entry back to its pixel. Rows of the same channel c
// write the same pixels, so the parallel loop runs over channels, not rows (no races).
template <class T>
void col2im_impl(const T* cols, const ConvGeometry& g, int64_t ld, T* x) {
  g.check();
  const int64_t OH = g.out_h(), OW = g.out_w();
#pragma omp parallel for schedule(static) if (g.patch() * OH * OW > 32768)
  for (int64_t c = 0; c < g.C; ++c) {
    T* xc = x + c * g.H * g.W;
    for (int64_t i = 0; i < g.H * g.W; ++i) xc[i] = T(0);
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const T* in = cols + ((c * g.KH + kh) * g.KW + kw) * ld;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const int64_t ih = oh * g.stride_h - g.pad_h + kh;
          if (ih < 0 || ih >= g.H) continue;
          T* xrow = xc + ih * g.W;
          const T* row = in + oh * OW;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t iw = ow * g.stride_w - g.pad_w + kw;
            if (iw >= 0 && iw < g.W) xrow[iw] += row[ow];
          }
        }
      }
  }
}

}  // namespace

void im2col(const float* x, const ConvGeometry& g, float* cols, int64_t ld) { im2col_impl(x, g, cols, ld); }
void im2col(const double* x, const ConvGeometry& g, double* cols, int64_t ld) { im2col_impl(x, g, cols, ld); }
void col2im(const float* cols, const ConvGeometry& g, int64_t ld, float* x) { col2im_impl(cols, g, ld, x); }
void col2im(const double* cols, const ConvGeometry& g, int64_t ld, double* x) { col2im_impl(cols, g, ld, x); }

}  // namespace hg::cpu
