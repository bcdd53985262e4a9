// im2col / col2im over a batch, the axis swaps around the GEMM, and pooling (conv.h). One
// thread per output element; the backward passes gather (each input pixel loops over the
// windows that cover it) rather than scatter with atomics, so results are deterministic.
#include "cuda/ops/conv.h"
#include "cuda/ops/kernel_common.cuh"

#include <cfloat>

namespace hg::cuda {

template <class T>
__global__ void im2col_kernel(const T* x, int64_t N, ConvGeometry g, T* cols) {
  const int64_t NP = N * g.positions(), image = g.C * g.H * g.W;
  HG_GRID_STRIDE(e, g.patch() * NP) {  // e = r·NP + col: consecutive threads, consecutive columns
    const int64_t r = e / NP, col = e % NP;
    int64_t n, c, h, w;
    const bool inside = im2col_batch_source(g, r, col, n, c, h, w);
    store(cols, e, inside ? load(x, n * image + (c * g.H + h) * g.W + w) : 0.0f);
  }
}

template <class T>
__global__ void col2im_kernel(const T* cols, int64_t N, ConvGeometry g, T* x) {
  const int64_t OW = g.out_w(), P = g.positions(), NP = N * P;
  HG_GRID_STRIDE(e, N * g.C * g.H * g.W) {
    const int64_t w = e % g.W, h = (e / g.W) % g.H, c = (e / (g.W * g.H)) % g.C, n = e / (g.W * g.H * g.C);
    int64_t oh0, oh1, ow0, ow1;
    covering_windows(h, g.KH, g.stride_h, g.pad_h, g.out_h(), oh0, oh1);
    covering_windows(w, g.KW, g.stride_w, g.pad_w, OW, ow0, ow1);
    float acc = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t kh = h + g.pad_h - oh * g.stride_h, kw = w + g.pad_w - ow * g.stride_w;  // in [0, K)
        acc += load(cols, ((c * g.KH + kh) * g.KW + kw) * NP + n * P + oh * OW + ow);
      }
    store(x, e, acc);
  }
}

template <class T>
__global__ void swap01_kernel(const T* x, int64_t A, int64_t B, int64_t C, T* y) {
  HG_GRID_STRIDE(j, A * B * C) y[j] = x[swap01_source(j, A, B, C)];
}

template <class T>
__global__ void conv_output_kernel(const float* acc, const float* bias, int64_t N, int64_t F, int64_t P, T* y) {
  HG_GRID_STRIDE(j, N * F * P) {  // y (N, F, P) from acc (F, N, P)
    const int64_t f = (j / P) % F;
    store(y, j, acc[swap01_source(j, N, F, P)] + (bias ? bias[f] : 0.0f));
  }
}

__global__ void max_pool_forward_kernel(const float* x, int64_t N, ConvGeometry g, float* y, int32_t* argmax) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  HG_GRID_STRIDE(e, N * g.C * OH * OW) {
    const int64_t ow = e % OW, oh = (e / OW) % OH, plane = e / (OW * OH);  // plane = n·C + c
    const float* xp = x + plane * g.H * g.W;
    float best = -FLT_MAX;
    int32_t at = -1;
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t h = oh * g.stride_h - g.pad_h + kh, w = ow * g.stride_w - g.pad_w + kw;
        if (h < 0 || h >= g.H || w < 0 || w >= g.W) continue;
        const float v = xp[h * g.W + w];
        if (at < 0 || v > best || isnan(v)) { best = v; at = int32_t(h * g.W + w); }  // first max wins; NaN propagates
        if (isnan(v)) break;
      }
    y[e] = at < 0 ? 0.0f : best;
    argmax[e] = at;
  }
}

__global__ void max_pool_backward_kernel(const float* dy, const int32_t* argmax, int64_t N, ConvGeometry g, float* dx) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  HG_GRID_STRIDE(e, N * g.C * g.H * g.W) {
    const int64_t w = e % g.W, h = (e / g.W) % g.H, plane = e / (g.W * g.H);
    int64_t oh0, oh1, ow0, ow1;
    covering_windows(h, g.KH, g.stride_h, g.pad_h, OH, oh0, oh1);
    covering_windows(w, g.KW, g.stride_w, g.pad_w, OW, ow0, ow1);
    float acc = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        const int64_t o = (plane * OH + oh) * OW + ow;
        if (argmax[o] == h * g.W + w) acc += dy[o];  // dy flows only to the max of each window
      }
    dx[e] = acc;
  }
}

__global__ void avg_pool_forward_kernel(const float* x, int64_t N, ConvGeometry g, float* y) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  HG_GRID_STRIDE(e, N * g.C * OH * OW) {
    const int64_t ow = e % OW, oh = (e / OW) % OH, plane = e / (OW * OH);
    const float* xp = x + plane * g.H * g.W;
    float acc = 0.0f;
    for (int64_t kh = 0; kh < g.KH; ++kh)
      for (int64_t kw = 0; kw < g.KW; ++kw) {
        const int64_t h = oh * g.stride_h - g.pad_h + kh, w = ow * g.stride_w - g.pad_w + kw;
        if (h >= 0 && h < g.H && w >= 0 && w < g.W) acc += xp[h * g.W + w];
      }
    y[e] = acc / float(g.KH * g.KW);
  }
}

__global__ void avg_pool_backward_kernel(const float* dy, int64_t N, ConvGeometry g, float* dx) {
  const int64_t OH = g.out_h(), OW = g.out_w();
  HG_GRID_STRIDE(e, N * g.C * g.H * g.W) {
    const int64_t w = e % g.W, h = (e / g.W) % g.H, plane = e / (g.W * g.H);
    int64_t oh0, oh1, ow0, ow1;
    covering_windows(h, g.KH, g.stride_h, g.pad_h, OH, oh0, oh1);
    covering_windows(w, g.KW, g.stride_w, g.pad_w, OW, ow0, ow1);
    float acc = 0.0f;
    for (int64_t oh = oh0; oh <= oh1; ++oh)
      for (int64_t ow = ow0; ow <= ow1; ++ow) {
        acc += dy[(plane * OH + oh) * OW + ow];
      }
    dx[e] = acc / float(g.KH * g.KW);
  }
}

void launch_im2col(DType dt, const void* x, int64_t N, const ConvGeometry& g, void* cols) {
  const int64_t n = g.patch() * N * g.positions();
  if (n <= 0) return;
  HG_DISPATCH(dt, T, im2col_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), N, g, static_cast<T*>(cols)));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_col2im(DType dt, const void* cols, int64_t N, const ConvGeometry& g, void* x) {
  const int64_t n = N * g.C * g.H * g.W;
  if (n <= 0) return;
  HG_DISPATCH(dt, T, col2im_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(cols), N, g, static_cast<T*>(x)));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_swap01(DType dt, const void* x, int64_t A, int64_t B, int64_t C, void* y) {
  const int64_t n = A * B * C;
  if (n <= 0) return;
  HG_DISPATCH(dt, T, swap01_kernel<T><<<launch_1d(n), kThreads>>>(static_cast<const T*>(x), A, B, C, static_cast<T*>(y)));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_conv_output(const float* acc, const float* bias, int64_t N, int64_t F, int64_t P, DType dt, void* y) {
  const int64_t n = N * F * P;
  if (n <= 0) return;
  HG_DISPATCH(dt, T, conv_output_kernel<T><<<launch_1d(n), kThreads>>>(acc, bias, N, F, P, static_cast<T*>(y)));
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_max_pool2d_forward(const float* x, int64_t N, const ConvGeometry& g, float* y, int32_t* argmax) {
  const int64_t n = N * g.C * g.positions();
  if (n <= 0) return;
  max_pool_forward_kernel<<<launch_1d(n), kThreads>>>(x, N, g, y, argmax);
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_max_pool2d_backward(const float* dy, const int32_t* argmax, int64_t N, const ConvGeometry& g, float* dx) {
  const int64_t n = N * g.C * g.H * g.W;
  if (n <= 0) return;
  max_pool_backward_kernel<<<launch_1d(n), kThreads>>>(dy, argmax, N, g, dx);
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_avg_pool2d_forward(const float* x, int64_t N, const ConvGeometry& g, float* y) {
  const int64_t n = N * g.C * g.positions();
  if (n <= 0) return;
  avg_pool_forward_kernel<<<launch_1d(n), kThreads>>>(x, N, g, y);
  HG_CUDA_CHECK(cudaGetLastError());
}

void launch_avg_pool2d_backward(const float* dy, int64_t N, const ConvGeometry& g, float* dx) {
  const int64_t n = N * g.C * g.H * g.W;
  if (n <= 0) return;
  avg_pool_backward_kernel<<<launch_1d(n), kThreads>>>(dy, N, g, dx);
  HG_CUDA_CHECK(cudaGetLastError());
}

}  // namespace hg::cuda
