#include "framework/amp/autocast.h"
#include "framework/ops/conv.h"

#include <fmt/format.h>

#include <memory>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/conv2d.h"
#include "framework/cuda/conv.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

struct ConvShape {
  int64_t N, F;
  ConvGeometry g;
};

// y (N, F, P) = w (F, CKK) · im2col(x_n) + b, image by image: framework/cpu/conv2d.h.
template <class T> void conv_forward(const T* x, const T* w, const T* b, T* y, const ConvShape& s) {
  cpu::conv2d_forward(x, w, b, y, s.N, s.F, s.g);
}

// dx, dw, db from dy (N, F, P). Any of dx/dw/db may be null (not needed).
template <class T>
void conv_backward(const T* x, const T* w, const T* dy, T* dx, T* dw, T* db, const ConvShape& s) {
  cpu::conv2d_backward(x, w, dy, dx, dw, db, s.N, s.F, s.g);
}

// The compute dtype: F64 stays F64, everything else runs in F32.
DType work_dtype(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

}  // namespace

Tensor conv2d(const Tensor& x_arg, const Tensor& w_arg, const Tensor& b_arg, int64_t stride,
              int64_t padding) {
  // autocast (framework/amp): cast at entry per the policy table; a no-op outside a region
  const Tensor x_in = amp::autocast_cast(x_arg, "conv2d"), w_in = amp::autocast_cast(w_arg, "conv2d"),
               b_in = amp::autocast_cast(b_arg, "conv2d");
  // ---- entry checks ----
  check_defined("conv2d", x_in, "x");
  check_defined("conv2d", w_in, "weight");
  check_same_device("conv2d", x_in, "x", w_in, "weight");
  check_same_dtype("conv2d", x_in, "x", w_in, "weight");
  check_dim("conv2d", x_in, "x", 4, "(N, C, H, W)");
  check_dim("conv2d", w_in, "weight", 4, "(F, C, KH, KW)");
  if (w_in.size(1) != x_in.size(1))
    op_error("conv2d", fmt::format("x has {} channels (shape {}) but weight expects {} "
                                   "(shape {} = (F, C, KH, KW))",
                                   x_in.size(1), shape_str(x_in.shape()), w_in.size(1),
                                   shape_str(w_in.shape())));
  if (stride < 1) op_error("conv2d", fmt::format("stride must be >= 1, got {}", stride));
  if (padding < 0) op_error("conv2d", fmt::format("padding must be >= 0, got {}", padding));
  if (b_in.defined()) {
    check_same_dtype("conv2d", x_in, "x", b_in, "bias");
    check_same_device("conv2d", x_in, "x", b_in, "bias");
    if (b_in.shape() != Shape{w_in.size(0)})
      op_error("conv2d", fmt::format("bias must have shape ({}), got {}", w_in.size(0),
                                     shape_str(b_in.shape())));
  }
  ConvShape s;
  s.N = x_in.size(0);
  s.F = w_in.size(0);
  s.g.C = x_in.size(1);
  s.g.H = x_in.size(2);
  s.g.W = x_in.size(3);
  s.g.KH = w_in.size(2);
  s.g.KW = w_in.size(3);
  s.g.stride_h = s.g.stride_w = stride;
  s.g.pad_h = s.g.pad_w = padding;
  if (s.g.H + 2 * padding < s.g.KH || s.g.W + 2 * padding < s.g.KW)
    op_error("conv2d", fmt::format("kernel {}x{} is larger than the padded input {}x{} (x {}, "
                                   "padding {})",
                                   s.g.KH, s.g.KW, s.g.H + 2 * padding, s.g.W + 2 * padding,
                                   shape_str(x_in.shape()), padding));
  const int64_t OH = s.g.out_h(), OW = s.g.out_w();
  switch (x_in.device()) {
    case Device::CPU: break;  // the CPU recipe below
    case Device::CUDA: {
      // the same recipe with GPU kernels: im2col of the whole batch + the ladder's GEMM
      const ConvGeometry g = s.g;
      Tensor xs = x_in.detach().contiguous(), ws = w_in.detach().contiguous();
      Tensor y = cuda::conv2d_forward(xs, ws, b_in.defined() ? b_in.detach() : Tensor(), g);
      return record("conv2d", y, {x_in, w_in, b_in}, [xs, ws, g](const Tensor& dy, const NeedsGrad& need) {
        return cuda::conv2d_backward(xs, ws, dy, g, need[0], need[1], need[2]);
      });
    }
  }

  // ---- forward, in the work dtype ----
  const DType dt = x_in.dtype(), wt = work_dtype(dt);
  Tensor x = x_in.to(wt).contiguous().detach(), w = w_in.to(wt).contiguous().detach();
  Tensor b = b_in.defined() ? b_in.to(wt).contiguous().detach() : Tensor();
  Tensor y = Tensor::empty({s.N, s.F, OH, OW}, wt);
  visit_dtype(wt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
      conv_forward<T>(x.data<T>(), w.data<T>(), b.defined() ? b.data<T>() : nullptr, y.data<T>(), s);
  });
  y = y.to(dt).detach();

  // y = w ⋆ x + b:  dx = col2im(Wᵀ·dY),  dw = dY·colsᵀ,  db = Σ_{n,p} dY
  // Saved: the inputs in their own dtype (an F16 activation stays 2 bytes), widened again
  // in the backward.
  Tensor xs = x_in.detach(), ws = w_in.detach();
  return record("conv2d", y, {x_in, w_in, b_in},
                [xs, ws, s, dt, wt](const Tensor& dy_in, const NeedsGrad& need) {
                  Tensor x = xs.to(wt).contiguous(), w = ws.to(wt).contiguous();
                  Tensor dy = dy_in.to(wt).contiguous();
                  Tensor dx = need[0] ? Tensor::empty(x.shape(), wt) : Tensor();
                  Tensor dw = need[1] ? Tensor::empty(w.shape(), wt) : Tensor();
                  Tensor db = need[2] ? Tensor::empty({s.F}, wt) : Tensor();
                  visit_dtype(wt, [&](auto tag) {
                    using T = decltype(tag);
                    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
                      conv_backward<T>(x.data<T>(), w.data<T>(), dy.data<T>(),
                                       need[0] ? dx.data<T>() : nullptr,
                                       need[1] ? dw.data<T>() : nullptr,
                                       need[2] ? db.data<T>() : nullptr, s);
                  });
                  return std::vector<Tensor>{need[0] ? dx.to(dt) : dx, need[1] ? dw.to(dt) : dw,
                                             need[2] ? db.to(dt) : db};
                });
}

}  // namespace hg
