#include "framework/amp/autocast.h"
#include "framework/ops/conv.h"

#include <fmt/format.h>

#include <memory>
#include <type_traits>
#include <vector>

#include "framework/autograd/node.h"
#include "framework/cpu/conv2d.h"
#include "framework/cuda/conv.h"
#include "framework/dtype/bfloat16.h"
#include "framework/ops/check.h"

namespace hg {

namespace {

struct ConvShape {
  int64_t N, F;
  ConvGeometry g;
};

// The compute dtype: F64 stays F64, everything else sums in F32.
DType work_dtype(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }
// The dtype the GEMMs read: BF16 as itself (gemm_bf16: the CPU's BF16 matrix unit when it
// has one), F16 widened to F32 (the CPU has no F16 unit of tensor-core numerics), the rest as
// the compute dtype. Both are "exact products, F32 sums".
DType operand_dtype(DType t) { return t == DType::BF16 ? DType::BF16 : work_dtype(t); }

// y (N, F, P) = w (F, CKK) · im2col(x_n) + b, image by image: framework/cpu/conv2d.h.
// x, w in the operand dtype; b, y in the work dtype.
void conv_forward(const Tensor& x, const Tensor& w, const Tensor& b, Tensor& y, const ConvShape& s) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, bfloat16>)
      cpu::conv2d_forward(x.data<T>(), w.data<T>(), b.defined() ? b.data<Acc>() : nullptr, y.data<Acc>(),
                          s.N, s.F, s.g);
  });
}

// dx, dw, db (work dtype) from dy (N, F, P) (operand dtype). An undefined dx/dw/db is not needed.
void conv_backward(const Tensor& x, const Tensor& w, const Tensor& dy, Tensor& dx, Tensor& dw,
                   Tensor& db, const ConvShape& s) {
  visit_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, bfloat16>)
      cpu::conv2d_backward(x.data<T>(), w.data<T>(), dy.data<T>(), dx.defined() ? dx.data<Acc>() : nullptr,
                           dw.defined() ? dw.data<Acc>() : nullptr, db.defined() ? db.data<Acc>() : nullptr,
                           s.N, s.F, s.g);
  });
}

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

  // ---- forward: operands in the operand dtype, sums and y in the work dtype ----
  const DType dt = x_in.dtype(), wt = work_dtype(dt), ot = operand_dtype(dt);
  Tensor x = x_in.to(ot).contiguous().detach(), w = w_in.to(ot).contiguous().detach();
  Tensor b = b_in.defined() ? b_in.to(wt).contiguous().detach() : Tensor();
  Tensor y = Tensor::empty({s.N, s.F, OH, OW}, wt);
  conv_forward(x, w, b, y, s);
  y = y.to(dt).detach();

  // y = w ⋆ x + b:  dx = col2im(Wᵀ·dY),  dw = dY·colsᵀ,  db = Σ_{n,p} dY
  // Saved: the inputs in their own dtype (an F16 activation stays 2 bytes), in the operand
  // dtype again in the backward.
  Tensor xs = x_in.detach(), ws = w_in.detach();
  return record("conv2d", y, {x_in, w_in, b_in},
                [xs, ws, s, dt, wt, ot](const Tensor& dy_in, const NeedsGrad& need) {
                  Tensor x = xs.to(ot).contiguous(), w = ws.to(ot).contiguous();
                  Tensor dy = dy_in.to(ot).contiguous();
                  Tensor dx = need[0] ? Tensor::empty(x.shape(), wt) : Tensor();
                  Tensor dw = need[1] ? Tensor::empty(w.shape(), wt) : Tensor();
                  Tensor db = need[2] ? Tensor::empty({s.F}, wt) : Tensor();
                  conv_backward(x, w, dy, dx, dw, db, s);
                  return std::vector<Tensor>{need[0] ? dx.to(dt) : dx, need[1] ? dw.to(dt) : dw,
                                             need[2] ? db.to(dt) : db};
                });
}

}  // namespace hg
