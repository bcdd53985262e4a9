#include "framework/ops/shape.h"

#include <fmt/format.h>

#include <cstring>

#include "framework/autograd/node.h"
#include "framework/cpu/copy.h"
#include "framework/cuda/copy.h"
#include "framework/ops/check.h"
#include "framework/ops/elementwise.h"

namespace hg {

Tensor reshape(const Tensor& x, const Shape& shape_in) {
  check_defined("reshape", x, "x");
  Shape shape = shape_in;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) op_error("reshape", "only one size may be -1, got " + shape_str(shape_in));
      infer = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      op_error("reshape", "negative size in " + shape_str(shape_in));
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.numel() % known != 0)
      op_error("reshape", fmt::format("cannot infer -1: {} elements of {} do not divide into {}",
                                      x.numel(), shape_str(x.shape()), shape_str(shape_in)));
    shape[infer] = x.numel() / known;
  }
  if (shape_numel(shape) != x.numel())
    op_error("reshape", fmt::format("shape {} holds {} elements, the tensor {} has {}",
                                    shape_str(shape), shape_numel(shape), shape_str(x.shape()),
                                    x.numel()));
  Tensor xc = x.contiguous();
  Tensor y = xc.view_of(shape, contiguous_strides(shape), xc.impl().offset);
  // d(reshape(x))/dx: the same numbers, so the gradient is dy in x's shape.
  Shape x_shape = x.shape();
  return record("reshape", y, {x}, [x_shape](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{reshape(dy, x_shape)};
  });
}

Tensor flatten(const Tensor& x, int64_t start_dim) {
  check_defined("flatten", x, "x");
  if (x.dim() == 0) return reshape(x, {1});
  int64_t s = wrap_dim("flatten", start_dim, x.dim());
  Shape shape(x.shape().begin(), x.shape().begin() + s);
  shape.push_back(-1);
  if (x.numel() == 0) {  // -1 cannot be inferred from 0 elements
    int64_t rest = 1;
    for (int64_t d = s; d < x.dim(); ++d) rest *= x.shape()[d];
    shape.back() = rest;
  }
  return reshape(x, shape);
}

Tensor slice(const Tensor& x, int64_t begin, int64_t end) {
  check_defined("slice", x, "x");
  if (x.dim() == 0) op_error("slice", "cannot slice a 0-dimensional tensor");
  int64_t n = x.shape()[0];
  if (begin < 0 || end > n || begin > end)
    op_error("slice", fmt::format("rows [{}, {}) are out of range for dim 0 of size {} (shape {})",
                                  begin, end, n, shape_str(x.shape())));
  Shape shape = x.shape();
  shape[0] = end - begin;
  Tensor y = x.view_of(shape, x.strides(), x.impl().offset + begin * x.strides()[0]);
  // d(x[begin:end])/dx: dy lands in rows [begin, end) of a zero gradient.
  Shape x_shape = x.shape();
  return record("slice", y, {x}, [x_shape, begin, end](const Tensor& dy, const NeedsGrad&) {
    Tensor dx = Tensor::zeros(x_shape, dy.dtype(), dy.device());
    Tensor dyc = dy.contiguous();
    if (dy.device() == Device::CUDA) {  // copy_ runs on the GPU
      Tensor rows = dx.slice(begin, end);
      copy_(rows, dyc);
      return std::vector<Tensor>{dx};
    }
    std::memcpy(dx.slice(begin, end).raw_data(), dyc.raw_data(), dyc.nbytes());
    return std::vector<Tensor>{dx};
  });
}

Tensor contiguous(const Tensor& x) {
  check_defined("contiguous", x, "x");
  Tensor y;
  switch (x.device()) {
    case Device::CPU:
      y = Tensor::empty(x.shape(), x.dtype());
      cpu::copy_to_contiguous(x.impl(), y.raw_data());
      break;
    case Device::CUDA:
      y = cuda::contiguous(x);  // a gather kernel (cuda/ops/strided.h)
      break;
  }
  // A copy: the gradient passes through unchanged.
  return record("contiguous", y, {x}, [](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{dy};
  });
}

Tensor clone(const Tensor& x) {
  check_defined("clone", x, "x");
  Tensor y;
  switch (x.device()) {
    case Device::CPU:
      y = Tensor::empty(x.shape(), x.dtype());
      cpu::copy_to_contiguous(x.impl(), y.raw_data());
      break;
    case Device::CUDA:
      y = cuda::clone(x);
      break;
  }
  return record("clone", y, {x}, [](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{dy};
  });
}

Tensor expand(const Tensor& x, const Shape& shape) {
  const int64_t nd = static_cast<int64_t>(shape.size()), xd = x.dim();
  if (xd > nd)
    op_error("expand", "cannot expand " + shape_str(x.shape()) + " to fewer dims " + shape_str(shape));
  Shape strides(nd, 0);
  for (int64_t i = 0; i < xd; ++i) {
    int64_t d = nd - xd + i;  // dims align on the right
    if (x.shape()[i] == shape[d]) strides[d] = x.strides()[i];
    else if (x.shape()[i] == 1) strides[d] = 0;
    else op_error("expand", "cannot expand " + shape_str(x.shape()) + " to " + shape_str(shape));
  }
  return x.view_of(shape, strides, x.impl().offset);
}

}  // namespace hg
