// framework/cpu/im2col.cpp — the copy loops behind conv2d (layout documented in im2col.h).
#include "framework/cpu/im2col.h"

#include <omp.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "framework/dtype/bfloat16.h"

namespace hg::cpu {

namespace {

// The range of output columns ow whose input column iw = ow·stride - pad + kw lies inside
// [0, W): outside it the window sits on the zero padding. Computing it once per row turns
// the inner loops into plain branch-free copies (a memcpy when stride is 1).
struct ValidRange {
  int64_t lo, hi;  // ow in [lo, hi) reads x; the rest is padding
};
ValidRange valid_range(int64_t k, int64_t pad, int64_t stride, int64_t in_size, int64_t out_size) {
  // smallest ow with ow·s - pad + k >= 0, and smallest ow with ow·s - pad + k >= in_size
  auto first_at_least = [&](int64_t bound) {
    const int64_t need = bound + pad - k;  // ow·s >= need
    return need <= 0 ? 0 : std::min(out_size, (need + stride - 1) / stride);
  };
  return {first_at_least(0), std::max(first_at_least(0), first_at_least(in_size))};
}

// One row r = (c, kh, kw) of one image's columns: out (P,) from the plane xc (H, W) of
// channel c:  out[oh·OW + ow] = xc[oh·s - pad + kh][ow·s - pad + kw], or 0 in the padding.
template <class T>
void im2col_row(const T* xc, const ConvGeometry& g, int64_t kh, int64_t kw, T* out) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  const ValidRange w = valid_range(kw, g.pad_w, g.stride_w, g.W, OW);
  for (int64_t oh = 0; oh < OH; ++oh, out += OW) {
    const int64_t ih = oh * g.stride_h - g.pad_h + kh;
    if (ih < 0 || ih >= g.H) {
      std::fill(out, out + OW, T(0));
      continue;
    }
    const T* xrow = xc + ih * g.W + (kw - g.pad_w);  // xrow[ow·s] is input column ow·s - pad + kw
    std::fill(out, out + w.lo, T(0));
    if (g.stride_w == 1)
      std::copy(xrow + w.lo, xrow + w.hi, out + w.lo);
    else
      for (int64_t ow = w.lo; ow < w.hi; ++ow) out[ow] = xrow[ow * g.stride_w];
    std::fill(out + w.hi, out + OW, T(0));
  }
}

// Its adjoint: add the row back onto the plane, dxc[ih][iw] += in[oh·OW + ow].
template <class T>
void col2im_row(const T* in, const ConvGeometry& g, int64_t kh, int64_t kw, T* dxc) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  const ValidRange w = valid_range(kw, g.pad_w, g.stride_w, g.W, OW);
  for (int64_t oh = 0; oh < OH; ++oh, in += OW) {
    const int64_t ih = oh * g.stride_h - g.pad_h + kh;
    if (ih < 0 || ih >= g.H) continue;
    T* xrow = dxc + ih * g.W + (kw - g.pad_w);
    for (int64_t ow = w.lo; ow < w.hi; ++ow) xrow[ow * g.stride_w] += in[ow];
  }
}

// Work below this many copied values stays on one thread (a parallel region costs µs).
constexpr int64_t kParallelWork = 32768;

template <class T>
void im2col_impl(const T* x, const ConvGeometry& g, T* cols, int64_t ld) {
  g.check();
  const int64_t rows = g.patch(), P = g.positions();
#pragma omp parallel for schedule(static) if (rows * P > kParallelWork && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = r / (g.KH * g.KW), kh = (r / g.KW) % g.KH, kw = r % g.KW;
    im2col_row(x + c * g.H * g.W, g, kh, kw, cols + r * ld);
  }
}

// Rows of the same channel c add into the same pixels, so the parallel loop runs over
// channels, not rows (no races).
template <class T>
void col2im_impl(const T* cols, const ConvGeometry& g, int64_t ld, T* x) {
  g.check();
#pragma omp parallel for schedule(static) if (g.patch() * g.positions() > kParallelWork && !omp_in_parallel())
  for (int64_t c = 0; c < g.C; ++c) {
    T* xc = x + c * g.H * g.W;
    std::fill(xc, xc + g.H * g.W, T(0));
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) col2im_row(cols + ((c * g.KH + kh) * g.KW + kw) * ld, g, kh, kw, xc);
  }
}

// Batched: each thread owns whole rows of cols (CKK, N·P) and writes each one from start to
// end, image after image — sequential writes, which is what memory is fast at. (Image by
// image, a thread writes CKK short pieces N·P floats apart; bench_conv shows the difference.)
template <class T>
void im2col_batch_impl(const T* x, int64_t N, const ConvGeometry& g, T* cols) {
  g.check();
  const int64_t rows = g.patch(), P = g.positions(), NP = N * P, image = g.C * g.H * g.W;
#pragma omp parallel for schedule(static) if (rows * NP > kParallelWork && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t c = r / (g.KH * g.KW), kh = (r / g.KW) % g.KH, kw = r % g.KW;
    for (int64_t n = 0; n < N; ++n) im2col_row(x + n * image + c * g.H * g.W, g, kh, kw, cols + r * NP + n * P);
  }
}

// Each thread owns whole channels: for every image it reads that channel's KH·KW rows
// of cols, each walked from start to end across the images.
template <class T>
void col2im_batch_impl(const T* cols, int64_t N, const ConvGeometry& g, T* x) {
  g.check();
  const int64_t P = g.positions(), NP = N * P, image = g.C * g.H * g.W;
#pragma omp parallel for schedule(static) if (g.patch() * NP > kParallelWork && !omp_in_parallel())
  for (int64_t c = 0; c < g.C; ++c)
    for (int64_t n = 0; n < N; ++n) {
      T* xc = x + n * image + c * g.H * g.W;
      std::fill(xc, xc + g.H * g.W, T(0));
      for (int64_t kh = 0; kh < g.KH; ++kh)
        for (int64_t kw = 0; kw < g.KW; ++kw)
          col2im_row(cols + ((c * g.KH + kh) * g.KW + kw) * NP + n * P, g, kh, kw, xc);
    }
}

}  // namespace

void im2col(const float* x, const ConvGeometry& g, float* cols, int64_t ld) { im2col_impl(x, g, cols, ld); }
void im2col(const double* x, const ConvGeometry& g, double* cols, int64_t ld) { im2col_impl(x, g, cols, ld); }
void im2col(const hg::bfloat16* x, const ConvGeometry& g, hg::bfloat16* cols, int64_t ld) { im2col_impl(x, g, cols, ld); }
void col2im(const float* cols, const ConvGeometry& g, int64_t ld, float* x) { col2im_impl(cols, g, ld, x); }
void col2im(const double* cols, const ConvGeometry& g, int64_t ld, double* x) { col2im_impl(cols, g, ld, x); }
void im2col_batch(const float* x, int64_t N, const ConvGeometry& g, float* cols) { im2col_batch_impl(x, N, g, cols); }
void im2col_batch(const double* x, int64_t N, const ConvGeometry& g, double* cols) { im2col_batch_impl(x, N, g, cols); }
void col2im_batch(const float* cols, int64_t N, const ConvGeometry& g, float* x) { col2im_batch_impl(cols, N, g, x); }
void col2im_batch(const double* cols, int64_t N, const ConvGeometry& g, double* x) { col2im_batch_impl(cols, N, g, x); }

}  // namespace hg::cpu
