#include "framework/tensor/tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <ostream>

#include "cuda/runtime/memory.h"  // device_fill, device_memset_zero (no_cuda.cpp without CUDA)
#include "framework/autograd/backward.h"
#include "framework/cpu/copy.h"
#include "framework/memory/accountant.h"
#include "framework/ops/cast.h"
#include "framework/ops/shape.h"

namespace hg {

// ---- shape helpers --------------------------------------------------------------------

std::string shape_str(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + ")";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int64_t d = static_cast<int64_t>(s.size()) - 1; d >= 0; --d) {
    st[d] = acc;
    acc *= s[d];
  }
  return st;
}

void op_error(const std::string& op, const std::string& message) {
  throw std::invalid_argument(op + ": " + message);
}

// ---- creation -------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) op_error("empty", "negative size in shape " + shape_str(shape));
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  impl->device = device;
  impl->storage = Storage::allocate(shape_numel(shape) * dtype_size(dtype), device);
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  switch (device) {
    case Device::CPU: cpu::fill(t.raw_data(), dtype, t.numel(), value); break;
    case Device::CUDA: {  // one element rounded on the CPU (the same bits), copied on the device
      const Tensor one = full({}, value, dtype);
      cuda::device_fill(t.raw_data(), one.raw_data(), dtype_size(dtype), t.numel());
      break;
    }
  }
  return t;
}
Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  return full(shape, 0.0, dtype, device);
}
Tensor Tensor::ones(const Shape& shape, DType dtype, Device device) {
  return full(shape, 1.0, dtype, device);
}
Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(int64_t n, DType dtype) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i);
  return from_vector(v, {n}, dtype);
}

Tensor Tensor::randn(const Shape& shape, Generator& gen, DType dtype) {
  std::vector<double> v(shape_numel(shape));
  for (double& x : v) x = gen.normal();  // drawn in order: same seed, same tensor
  return from_vector(v, shape, dtype);
}

Tensor Tensor::uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype) {
  std::vector<double> v(shape_numel(shape));
  for (double& x : v) x = gen.uniform(lo, hi);
  return from_vector(v, shape, dtype);
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    op_error("from_vector", fmt::format("{} values do not fill shape {} ({} elements)",
                                        values.size(), shape_str(shape), shape_numel(shape)));
  Tensor t = empty(shape, dtype);
  cpu::convert(values.data(), DType::F32, t.raw_data(), dtype, t.numel());
  return t;
}

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    op_error("from_vector", fmt::format("{} values do not fill shape {} ({} elements)",
                                        values.size(), shape_str(shape), shape_numel(shape)));
  Tensor t = empty(shape, dtype);
  cpu::convert(values.data(), DType::F64, t.raw_data(), dtype, t.numel());
  return t;
}

// ---- what it is -----------------------------------------------------------------------

TensorImpl& Tensor::impl() const {
  if (!impl_) throw std::logic_error("use of an undefined Tensor (default-constructed, or a "
                                     "gradient that was never computed)");
  return *impl_;
}

int64_t Tensor::size(int d) const {
  int64_t nd = dim();
  int64_t dd = d < 0 ? d + nd : d;
  if (dd < 0 || dd >= nd)
    op_error("size", fmt::format("dimension {} out of range for shape {}", d, shape_str(shape())));
  return shape()[dd];
}

bool Tensor::is_contiguous() const {
  const TensorImpl& t = impl();
  int64_t expect = 1;
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 1; d >= 0; --d) {
    if (t.shape[d] != 1 && t.strides[d] != expect) return false;
    expect *= t.shape[d];
  }
  return true;
}

void* Tensor::raw_data() const {
  const TensorImpl& t = impl();
  return static_cast<char*>(t.storage->data) + t.offset * dtype_size(t.dtype);
}

std::vector<double> Tensor::to_double_vector() const {
  Tensor c = detach().to(Device::CPU).contiguous();
  std::vector<double> v(c.numel());
  cpu::convert(c.raw_data(), c.dtype(), v.data(), DType::F64, c.numel());
  return v;
}

std::vector<float> Tensor::to_vector() const {
  Tensor c = detach().to(Device::CPU).contiguous();
  std::vector<float> v(c.numel());
  cpu::convert(c.raw_data(), c.dtype(), v.data(), DType::F32, c.numel());
  return v;
}

double Tensor::item() const {
  if (numel() != 1)
    op_error("item", "needs a tensor with exactly one element, got shape " + shape_str(shape()));
  return to_double_vector()[0];
}

// ---- conversions and views ------------------------------------------------------------

Tensor Tensor::to(DType dtype) const { return cast(*this, dtype); }
Tensor Tensor::to(Device device) const { return to_device(*this, device); }
Tensor Tensor::contiguous() const { return is_contiguous() ? *this : hg::contiguous(*this); }
Tensor Tensor::clone() const { return hg::clone(*this); }
Tensor Tensor::reshape(const Shape& shape) const { return hg::reshape(*this, shape); }
Tensor Tensor::slice(int64_t begin, int64_t end) const { return hg::slice(*this, begin, end); }

Tensor Tensor::view_of(const Shape& shape, const Shape& strides, int64_t offset) const {
  auto v = std::make_shared<TensorImpl>();
  v->storage = impl().storage;
  v->offset = offset;
  v->shape = shape;
  v->strides = strides;
  v->dtype = impl().dtype;
  v->device = impl().device;
  return Tensor(std::move(v));
}

Tensor Tensor::detach() const { return view_of(shape(), strides(), impl().offset); }

// ---- autograd -------------------------------------------------------------------------

Tensor& Tensor::requires_grad_(bool on) {
  if (on && !is_leaf())
    op_error("requires_grad_", "only leaf tensors (made directly, not by an op) can be marked; "
                               "use .detach().requires_grad_() for a new leaf");
  impl().requires_grad = on;
  return *this;
}

void Tensor::set_grad(const Tensor& g) {
  if (!g.defined()) {
    impl().grad.reset();
    return;
  }
  if (g.shape() != shape())
    op_error("set_grad", "gradient shape " + shape_str(g.shape()) + " differs from tensor shape " +
                             shape_str(shape()));
  if (g.dtype() != dtype())
    op_error("set_grad", std::string("gradient dtype ") + dtype_name(g.dtype()) +
                             " differs from tensor dtype " + dtype_name(dtype()));
  impl().grad = g.impl_ptr();
  memory::retag(g, memory::Tag::Gradient);
}

void Tensor::zero_grad() {
  TensorImpl& t = impl();
  if (!t.grad) return;
  Tensor g(t.grad);
  if (!g.is_contiguous()) {  // a view: a fresh buffer instead
    t.grad = Tensor::zeros(t.shape, t.dtype, t.device).impl_ptr();
    memory::retag(Tensor(t.grad), memory::Tag::Gradient);
    return;
  }
  switch (g.device()) {  // in place; all-zero bits are +0 in every format
    case Device::CPU: cpu::fill(g.raw_data(), g.dtype(), g.numel(), 0.0); break;
    case Device::CUDA: cuda::device_memset_zero(g.raw_data(), g.nbytes()); break;
  }
}

void Tensor::backward() const {
  if (numel() != 1)
    op_error("backward", "backward() with no argument needs a single-element tensor (a loss), "
                         "got shape " + shape_str(shape()) + "; pass the upstream gradient instead");
  run_backward(*this, Tensor::ones(shape(), dtype(), device()));
}

void Tensor::backward(const Tensor& grad_output) const { run_backward(*this, grad_output); }

Tensor& Tensor::set_name(const std::string& name) {
  impl().name = name;
  return *this;
}

// ---- printing -------------------------------------------------------------------------

namespace {

constexpr int64_t kEdge = 3;  // dims longer than 2*kEdge show their first and last kEdge

struct Printer {
  const std::vector<double>& v;
  const Shape& shape;
  const Shape strides;
  bool sci = false;
  std::string out;

  Printer(const std::vector<double>& values, const Shape& s)
      : v(values), shape(s), strides(contiguous_strides(s)) {
    double mx = 0, mn = INFINITY;
    for (double x : v)
      if (std::isfinite(x) && x != 0) {
        mx = std::max(mx, std::fabs(x));
        mn = std::min(mn, std::fabs(x));
      }
    sci = mx >= 1e5 || (mx > 0 && mn < 1e-4);
  }
  std::string number(double x) const {
    return sci ? fmt::format("{:.4e}", x) : fmt::format("{:.4f}", x);
  }
  void walk(size_t d, int64_t base, int indent) {
    if (d == shape.size()) {
      out += number(v[base]);
      return;
    }
    int64_t n = shape[d];
    out += "[";
    for (int64_t i = 0; i < n; ++i) {
      if (n > 2 * kEdge && i == kEdge) {
        out += d + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' ');
        i = n - kEdge;
      }
      walk(d + 1, base + i * strides[d], indent + 1);
      if (i + 1 < n) out += d + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' ');
    }
    out += "]";
  }
};

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::string head = fmt::format("tensor(shape={}, dtype={}, device={}{})", shape_str(shape()),
                                 dtype_name(dtype()), device_name(device()),
                                 requires_grad() ? ", requires_grad" : "");
  std::vector<double> values = to_double_vector();
  Printer p(values, shape());
  p.walk(0, 0, 0);
  return head + "\n" + p.out;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace hg
