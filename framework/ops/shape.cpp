#include "framework/ops/shape.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <utility>

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
  check_defined("expand", x, "x");
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
  Tensor y = x.view_of(shape, strides, x.impl().offset);
  // Each element of x was read by every position of the repeated dims: its gradient is the
  // sum of theirs.
  Shape x_shape = x.shape();
  return record("expand", y, {x}, [x_shape](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{sum_to_shape(dy, x_shape)};
  });
}

// ---- transpose, permute: the same numbers read in another order ------------------------

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  check_defined("permute", x, "x");
  const int64_t nd = x.dim();
  if (static_cast<int64_t>(dims.size()) != nd)
    op_error("permute", fmt::format("needs one entry per dim: x has shape {}, got {} entries",
                                    shape_str(x.shape()), dims.size()));
  Shape shape(nd), strides(nd);
  std::vector<int64_t> inverse(nd, -1);  // inverse[dims[i]] = i: where each dim of x went
  for (int64_t i = 0; i < nd; ++i) {
    const int64_t d = wrap_dim("permute", dims[i], nd);
    if (inverse[d] >= 0)
      op_error("permute", fmt::format("dim {} appears twice in {}", d, shape_str(dims)));
    inverse[d] = i;
    shape[i] = x.shape()[d];
    strides[i] = x.strides()[d];
  }
  Tensor y = x.view_of(shape, strides, x.impl().offset);
  // y[..i..] = x[..dims[i]..]: the gradient goes back through the inverse permutation,
  // also a view (no copy).
  return record("permute", y, {x}, [inverse](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{permute(dy, inverse)};
  });
}

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  check_defined("transpose", x, "x");
  std::vector<int64_t> dims(static_cast<size_t>(x.dim()));
  for (int64_t d = 0; d < x.dim(); ++d) dims[d] = d;
  std::swap(dims[wrap_dim("transpose", dim0, x.dim())], dims[wrap_dim("transpose", dim1, x.dim())]);
  return permute(x, dims);  // a swap is its own inverse; permute records the graph
}

// ---- narrow, split: a window along one dim ----------------------------------------------

namespace {

// dx (x_shape) = 0 except positions [start, start + length) of `dim`, which get dy.
// Viewed as (outer, n, inner) the window of each outer index is one contiguous run.
Tensor narrow_backward(const Tensor& dy_in, const Shape& x_shape, int64_t dim, int64_t start) {
  Tensor dy = dy_in.contiguous();
  Tensor dx = Tensor::zeros(x_shape, dy.dtype(), dy.device());
  switch (dy.device()) {
    case Device::CPU: break;  // the runs below
    case Device::CUDA: {
      // the window of dx that the forward's view was, written with dy (a scatter kernel)
      Tensor window = dx.view_of(dy.shape(), dx.strides(), dx.impl().offset + start * dx.strides()[dim]);
      cuda::copy_into_view(window, dy);
      return dx;
    }
  }
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= x_shape[d];
  for (size_t d = dim + 1; d < x_shape.size(); ++d) inner *= x_shape[d];
  const int64_t n = x_shape[dim], length = dy.shape()[dim];
  const size_t run = static_cast<size_t>(length * inner) * dtype_size(dy.dtype());
  const char* src = static_cast<const char*>(dy.raw_data());
  char* dst = static_cast<char*>(dx.raw_data());
  const size_t es = dtype_size(dy.dtype());
#pragma omp parallel for if (dy.numel() > (1 << 15))
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>((o * n + start) * inner) * es, src + o * run, run);
  return dx;
}

}  // namespace

Tensor narrow(const Tensor& x, int64_t dim_in, int64_t start, int64_t length) {
  check_defined("narrow", x, "x");
  if (x.dim() == 0) op_error("narrow", "cannot narrow a 0-dimensional tensor");
  const int64_t dim = wrap_dim("narrow", dim_in, x.dim()), n = x.shape()[dim];
  if (start < 0 || length < 0 || start + length > n)
    op_error("narrow", fmt::format("[{}, {}) is out of range for dim {} of size {} (shape {})",
                                   start, start + length, dim, n, shape_str(x.shape())));
  // a view on either device; the backward writes dy into a window of zeros on dy's device
  Shape shape = x.shape();
  shape[dim] = length;
  Tensor y = x.view_of(shape, x.strides(), x.impl().offset + start * x.strides()[dim]);
  // d(x[.., start:start+length, ..])/dx: dy lands in that window of a zero gradient.
  Shape x_shape = x.shape();
  return record("narrow", y, {x}, [x_shape, dim, start](const Tensor& dy, const NeedsGrad&) {
    return std::vector<Tensor>{narrow_backward(dy, x_shape, dim, start)};
  });
}

std::vector<Tensor> split(const Tensor& x, int64_t size, int64_t dim_in) {
  check_defined("split", x, "x");
  if (x.dim() == 0) op_error("split", "cannot split a 0-dimensional tensor");
  const int64_t dim = wrap_dim("split", dim_in, x.dim()), n = x.shape()[dim];
  if (size <= 0) op_error("split", fmt::format("size must be positive, got {}", size));
  std::vector<Tensor> pieces;
  for (int64_t start = 0; start < n; start += size)
    pieces.push_back(narrow(x, dim, start, std::min(size, n - start)));
  return pieces;
}

}  // namespace hg
