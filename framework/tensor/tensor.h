#pragma once
// framework/tensor/tensor.h — the n-dimensional array everything in halfgrad computes on.
//
// A Tensor is a cheap *handle* (a shared_ptr) to a TensorImpl: copying a Tensor copies the
// handle, not the numbers, exactly like a PyTorch tensor in Python. Two handles to the same
// tensor see the same data, the same .grad and the same requires_grad flag.
//
// A TensorImpl is a view of a Storage:
//
//   storage   one shared block of memory (framework/tensor/storage.h)
//   offset    where this view starts, in elements
//   shape     sizes per dimension, e.g. (N, C, H, W); () for a scalar (0-dim, numel 1)
//   strides   elements to step per dimension; row-major contiguous: stride[d] = Π shape[d+1..]
//   dtype     F32, F16, BF16, F64          device   CPU or CUDA
//
// plus what autograd needs: requires_grad, the accumulated .grad, and grad_fn — the node of
// the op that produced this tensor (framework/autograd/node.h). Leaves (parameters, inputs)
// have no grad_fn.
//
// Class-id targets for cross_entropy are a std::vector<int32_t> (one id per row) or, as a
// convenience, an (N) float tensor holding integer ids; see framework/ops/loss.h.
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "framework/tensor/device.h"
#include "framework/tensor/dtype.h"
#include "framework/tensor/generator.h"
#include "framework/tensor/storage.h"

namespace hg {

using Shape = std::vector<int64_t>;

struct Node;  // framework/autograd/node.h

std::string shape_str(const Shape& s);      // "(2, 3)"
int64_t shape_numel(const Shape& s);        // product of sizes (1 for ())
Shape contiguous_strides(const Shape& s);   // row-major strides

struct TensorImpl {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;
  Shape shape, strides;
  DType dtype = DType::F32;
  Device device = Device::CPU;
  // autograd
  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient, same shape and dtype
  std::shared_ptr<Node> grad_fn;     // the op that made this tensor (null for leaves)
  std::string name;                  // optional, for graph printing ("w1", "loss")
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- creation ---------------------------------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::F32, Device device = Device::CPU);
  static Tensor zeros(const Shape& shape, DType dtype = DType::F32, Device device = Device::CPU);
  static Tensor ones(const Shape& shape, DType dtype = DType::F32, Device device = Device::CPU);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::F32,
                     Device device = Device::CPU);
  static Tensor scalar(double value, DType dtype = DType::F32);  // shape ()
  static Tensor arange(int64_t n, DType dtype = DType::F32);     // 0, 1, ..., n-1
  static Tensor randn(const Shape& shape, Generator& gen, DType dtype = DType::F32);
  static Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen,
                        DType dtype = DType::F32);
  // Values are rounded to `dtype` (round-to-nearest-even for F16/BF16).
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape,
                            DType dtype = DType::F32);
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                            DType dtype = DType::F64);

  // ---- what it is -------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  int64_t size(int d) const;  // d may be negative (-1 = last)
  int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  Device device() const { return impl().device; }
  bool is_contiguous() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype()); }

  // ---- the numbers ------------------------------------------------------------------
  // Typed pointer to the first element. Requires CPU, contiguous, and T matching dtype()
  // (float F32, double F64, hg::half F16, hg::bfloat16 BF16); throws otherwise.
  template <class T> T* data();
  template <class T> const T* data() const;
  void* raw_data() const;  // untyped pointer to the first element (any device)
  double item() const;     // the one value of a numel-1 tensor, as a double
  std::vector<float> to_vector() const;          // every value, converted, row-major
  std::vector<double> to_double_vector() const;

  // ---- conversions and views (all record autograd) ----------------------------------
  Tensor to(DType dtype) const;    // cast; its gradient is cast back to this dtype
  Tensor to(Device device) const;  // copy to CPU or CUDA memory
  Tensor contiguous() const;       // this if already contiguous, else a row-major copy
  Tensor clone() const;            // a copy with its own storage
  Tensor reshape(const Shape& shape) const;  // one size may be -1; a view when contiguous
  Tensor slice(int64_t begin, int64_t end) const;  // rows [begin, end) of dim 0: a view

  // ---- autograd ---------------------------------------------------------------------
  bool requires_grad() const { return impl().requires_grad; }
  Tensor& requires_grad_(bool on = true);
  bool is_leaf() const { return impl().grad_fn == nullptr; }
  const std::shared_ptr<Node>& grad_fn() const { return impl().grad_fn; }
  Tensor grad() const { return Tensor(impl().grad); }  // undefined when none yet
  void set_grad(const Tensor& g);
  // Fill .grad with zeros (keeps the buffer); gradients otherwise accumulate across
  // backward() calls, which is how gradient accumulation over micro-batches works.
  void zero_grad();
  // Backpropagate from this tensor: with no argument it must hold one element (a loss) and
  // the seed is 1; otherwise `grad_output` has this tensor's shape (the upstream gradient).
  void backward() const;
  void backward(const Tensor& grad_output) const;
  Tensor detach() const;  // same storage, no graph, requires_grad false

  const std::string& name() const { return impl().name; }
  Tensor& set_name(const std::string& name);

  // ---- printing ---------------------------------------------------------------------
  // "tensor(shape=(2, 3), dtype=F32, device=cpu)\n[[1.0000, ...]]", long dims abbreviated.
  std::string str() const;

  // ---- plumbing ---------------------------------------------------------------------
  TensorImpl& impl() const;  // throws on an undefined tensor
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  // A new view of the same storage (no autograd): the building block of reshape/slice.
  Tensor view_of(const Shape& shape, const Shape& strides, int64_t offset) const;
  bool same(const Tensor& other) const { return impl_ == other.impl_; }

 private:
  std::shared_ptr<TensorImpl> impl_;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Throws std::invalid_argument with a message that starts with the op's name.
[[noreturn]] void op_error(const std::string& op, const std::string& message);

template <class T> T* Tensor::data() {
  TensorImpl& t = impl();
  if (t.dtype != dtype_of<T>::value)
    op_error("data", std::string("tensor holds ") + dtype_name(t.dtype) + ", asked for " +
                         dtype_name(dtype_of<T>::value));
  if (t.device != Device::CPU) op_error("data", "tensor is on the GPU; call .to(Device::CPU) first");
  if (!is_contiguous()) op_error("data", "tensor is not contiguous; call .contiguous() first");
  return static_cast<T*>(t.storage->data) + t.offset;
}
template <class T> const T* Tensor::data() const { return const_cast<Tensor*>(this)->data<T>(); }

}  // namespace hg
