#include "framework/ops/pool.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/conv_geometry.h"
#include "framework/cpu/elementwise.h"
#include "framework/cuda/pool.h"
#include "framework/cuda/reduce.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

struct PoolShape {
  int64_t N, C, H, W, K, S, P, OH, OW;
  int64_t planes() const { return N * C; }
};

PoolShape pool_shape(const char* op, const Tensor& x, int64_t kernel, int64_t stride, int64_t pad) {
  check_defined(op, x, "x");
  check_dim(op, x, "x", 4, "(N, C, H, W)");
  if (stride == -1) stride = kernel;
  if (kernel < 1 || stride < 1 || pad < 0)
    op_error(op, fmt::format("need kernel >= 1, stride >= 1, padding >= 0; got kernel {}, "
                             "stride {}, padding {}", kernel, stride, pad));
  if (pad * 2 > kernel)
    op_error(op, fmt::format("padding {} is more than half the kernel {}", pad, kernel));
  PoolShape s{x.size(0), x.size(1), x.size(2), x.size(3), kernel, stride, pad, 0, 0};
  if (s.H + 2 * pad < kernel || s.W + 2 * pad < kernel)
    op_error(op, fmt::format("kernel {} is larger than the padded input {}x{} (x {})", kernel,
                             s.H + 2 * pad, s.W + 2 * pad, shape_str(x.shape())));
  const ConvGeometry g = ConvGeometry::of(s.C, s.H, s.W, kernel, kernel, stride, pad);  // the window's OH, OW
  s.OH = g.out_h();
  s.OW = g.out_w();
  return s;
}

}  // namespace

Tensor max_pool2d(const Tensor& x_in, int64_t kernel, int64_t stride, int64_t padding) {
  PoolShape s = pool_shape("max_pool2d", x_in, kernel, stride, padding);
  switch (x_in.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA: {
      std::shared_ptr<Storage> argmax;  // on the GPU, kept for the backward
      Tensor y = cuda::max_pool2d(x_in.contiguous(), s.K, s.S, s.P, argmax);
      Shape xs = x_in.shape();
      return record("max_pool2d", y, {x_in}, [argmax, s, xs](const Tensor& dy, const NeedsGrad&) {
        return std::vector<Tensor>{cuda::max_pool2d_backward(dy, *argmax, xs, s.K, s.S, s.P)};
      });
    }
  }
  Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty({s.N, s.C, s.OH, s.OW}, x.dtype());
  // argmax[i] = index within its (H, W) plane of the input that output i came from
  auto argmax = std::make_shared<std::vector<int32_t>>(static_cast<size_t>(y.numel()));
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    int32_t* am = argmax->data();
    // plain locals: the compiler can keep them in registers across the stores below
    const int64_t H = s.H, W = s.W, OH = s.OH, OW = s.OW, K = s.K, S = s.S, P = s.P;
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t plane = 0; plane < s.planes(); ++plane) {
      const T* xp = px + plane * H * W;
      T* yp = py + plane * OH * OW;
      int32_t* ap = am + plane * OH * OW;
      if (K == 2 && S == 2 && P == 0) {
        // The common case (every CNN here): 2x2 windows that tile the image. Straight-line
        // code, the same rule as the general loop below.
        for (int64_t oh = 0; oh < OH; ++oh) {
          const T* r0 = xp + 2 * oh * W;
          const T* r1 = r0 + W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const int64_t i0 = 2 * oh * W + 2 * ow;
            const int64_t idx[4] = {i0, i0 + 1, i0 + W, i0 + W + 1};
            const Cm v[4] = {load(r0[2 * ow]), load(r0[2 * ow + 1]), load(r1[2 * ow]),
                             load(r1[2 * ow + 1])};
            Cm best = v[0];
            int64_t best_i = idx[0];
            for (int k = 1; k < 4; ++k) {
              const bool take = v[k] > best || v[k] != v[k];
              best = take ? v[k] : best;
              best_i = take ? idx[k] : best_i;
            }
            yp[oh * OW + ow] = store<T>(best);
            ap[oh * OW + ow] = static_cast<int32_t>(best_i);
          }
        }
        continue;
      }
      for (int64_t oh = 0; oh < OH; ++oh) {
        // the window clipped to the image (padding never wins: it is −inf)
        const int64_t h0 = std::max<int64_t>(oh * S - P, 0), h1 = std::min(oh * S - P + K, H);
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t w0 = std::max<int64_t>(ow * S - P, 0), w1 = std::min(ow * S - P + K, W);
          Cm best = load(xp[h0 * W + w0]);
          int64_t best_i = h0 * W + w0;
          for (int64_t h = h0; h < h1; ++h)
            for (int64_t w = w0; w < w1; ++w) {
              Cm v = load(xp[h * W + w]);
              // '>' keeps the first maximum (as PyTorch does); a NaN wins, so it propagates.
              // Written as selects, not a branch: which element wins is unpredictable.
              const bool take = v > best || v != v;
              best = take ? v : best;
              best_i = take ? h * W + w : best_i;
            }
          yp[oh * OW + ow] = store<T>(best);
          ap[oh * OW + ow] = static_cast<int32_t>(best_i);
        }
      }
    }
  });
  // ∂y_o/∂x_i = 1 if i is the window's argmax, else 0  =>  dx[argmax[o]] += dy[o]
  Shape xs = x.shape();
  return record("max_pool2d", y, {x_in}, [argmax, s, xs](const Tensor& dy_in, const NeedsGrad&) {
    Tensor dy = dy_in.contiguous();
    Tensor dx = Tensor::zeros(xs, dy.dtype());
    visit_dtype(dy.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* pg = dy.data<T>();
      T* pd = dx.data<T>();
      const int32_t* am = argmax->data();
      const int64_t per_plane = s.OH * s.OW;
#pragma omp parallel for if (dy.numel() > cpu::kParallelMin)
      for (int64_t plane = 0; plane < s.planes(); ++plane) {
        T* dp = pd + plane * s.H * s.W;
        for (int64_t o = plane * per_plane; o < (plane + 1) * per_plane; ++o)
          dp[am[o]] = store<T>(load(dp[am[o]]) + load(pg[o]));  // windows may overlap
      }
    });
    return std::vector<Tensor>{dx};
  });
}

Tensor avg_pool2d(const Tensor& x_in, int64_t kernel, int64_t stride, int64_t padding) {
  PoolShape s = pool_shape("avg_pool2d", x_in, kernel, stride, padding);
  switch (x_in.device()) {
    case Device::CPU: break;  // the loops below
    case Device::CUDA: {
      Tensor y = cuda::avg_pool2d(x_in.contiguous(), s.K, s.S, s.P);
      Shape xs = x_in.shape();
      return record("avg_pool2d", y, {x_in}, [s, xs](const Tensor& dy, const NeedsGrad&) {
        return std::vector<Tensor>{cuda::avg_pool2d_backward(dy, xs, s.K, s.S, s.P)};
      });
    }
  }
  Tensor x = x_in.contiguous();
  Tensor y = Tensor::empty({s.N, s.C, s.OH, s.OW}, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const Cm inv = Cm(1) / static_cast<Cm>(s.K * s.K);
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t plane = 0; plane < s.planes(); ++plane) {
      const T* xp = px + plane * s.H * s.W;
      for (int64_t oh = 0; oh < s.OH; ++oh)
        for (int64_t ow = 0; ow < s.OW; ++ow) {
          Cm acc = 0;
          for (int64_t kh = 0; kh < s.K; ++kh) {
            int64_t h = oh * s.S - s.P + kh;
            if (h < 0 || h >= s.H) continue;
            for (int64_t kw = 0; kw < s.K; ++kw) {
              int64_t w = ow * s.S - s.P + kw;
              if (w >= 0 && w < s.W) acc += load(xp[h * s.W + w]);
            }
          }
          py[(plane * s.OH + oh) * s.OW + ow] = store<T>(acc * inv);
        }
    }
  });
  // ∂y_o/∂x_i = 1/K² for every i in o's window  =>  dx_i = Σ_{o ∋ i} dy_o / K²
  Shape xs = x.shape();
  return record("avg_pool2d", y, {x_in}, [s, xs](const Tensor& dy_in, const NeedsGrad&) {
    Tensor dy = dy_in.contiguous();
    Tensor dx = Tensor::empty(xs, dy.dtype());
    visit_dtype(dy.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using Cm = compute_t<T>;
      const T* pg = dy.data<T>();
      T* pd = dx.data<T>();
      const Cm inv = Cm(1) / static_cast<Cm>(s.K * s.K);
#pragma omp parallel for if (dx.numel() > cpu::kParallelMin)
      for (int64_t plane = 0; plane < s.planes(); ++plane) {
        std::vector<Cm> acc(static_cast<size_t>(s.H * s.W), Cm(0));
        const T* gp = pg + plane * s.OH * s.OW;
        for (int64_t oh = 0; oh < s.OH; ++oh)
          for (int64_t ow = 0; ow < s.OW; ++ow) {
            Cm g = load(gp[oh * s.OW + ow]) * inv;
            for (int64_t kh = 0; kh < s.K; ++kh) {
              int64_t h = oh * s.S - s.P + kh;
              if (h < 0 || h >= s.H) continue;
              for (int64_t kw = 0; kw < s.K; ++kw) {
                int64_t w = ow * s.S - s.P + kw;
                if (w >= 0 && w < s.W) acc[h * s.W + w] += g;
              }
            }
          }
        T* dp = pd + plane * s.H * s.W;
        for (int64_t i = 0; i < s.H * s.W; ++i) dp[i] = store<T>(acc[i]);
      }
    });
    return std::vector<Tensor>{dx};
  });
}

Tensor global_avg_pool2d(const Tensor& x_in) {
  check_defined("global_avg_pool2d", x_in, "x");
  check_dim("global_avg_pool2d", x_in, "x", 4, "(N, C, H, W)");
  Tensor x = x_in.contiguous();
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  if (HW == 0) op_error("global_avg_pool2d", "empty spatial size in " + shape_str(x.shape()));
  switch (x.device()) {
    case Device::CPU: break;  // the loop below
    case Device::CUDA: {
      // a mean over the last dim of x seen as (N, C, H·W): the reduction kernels
      Tensor y = cuda::sum_dim("global_avg_pool2d", x.detach().reshape({N, C, HW}), 2, false, 1.0 / HW);
      Shape xs = x.shape();
      return record("global_avg_pool2d", y, {x_in}, [xs, N, C, HW](const Tensor& dy, const NeedsGrad&) {
        return std::vector<Tensor>{cuda::sum_backward(dy, {N, C, HW}, 2, 1.0 / HW).reshape(xs)};
      });
    }
  }
  Tensor y = Tensor::empty({N, C}, x.dtype());
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Cm = compute_t<T>;
    const T* px = x.data<T>();
    T* py = y.data<T>();
#pragma omp parallel for if (x.numel() > cpu::kParallelMin)
    for (int64_t plane = 0; plane < N * C; ++plane) {
      Cm acc = 0;
      for (int64_t i = 0; i < HW; ++i) acc += load(px[plane * HW + i]);
      py[plane] = store<T>(acc / static_cast<Cm>(HW));
    }
  });
  // ∂y_nc/∂x_nchw = 1/(H·W)  =>  dx = dy / (H·W), the same for every pixel of the plane
  Shape xs = x.shape();
  return record("global_avg_pool2d", y, {x_in}, [xs, HW](const Tensor& dy_in, const NeedsGrad&) {
    Tensor dy = dy_in.contiguous();
    Tensor dx = Tensor::empty(xs, dy.dtype());
    visit_dtype(dy.dtype(), [&](auto tag) {
      using T = decltype(tag);
      using Cm = compute_t<T>;
      const T* pg = dy.data<T>();
      T* pd = dx.data<T>();
      const int64_t planes = dy.numel();
#pragma omp parallel for if (dx.numel() > cpu::kParallelMin)
      for (int64_t plane = 0; plane < planes; ++plane) {
        T v = store<T>(load(pg[plane]) / static_cast<Cm>(HW));
        for (int64_t i = 0; i < HW; ++i) pd[plane * HW + i] = v;
      }
    });
    return std::vector<Tensor>{dx};
  });
}

}  // namespace hg
