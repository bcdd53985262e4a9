#pragma once
// Module: a piece of a network. It owns
//   - parameters: tensors the optimizer trains (a Linear's weight and bias),
//   - buffers:    tensors that are saved but not trained (BatchNorm's running mean and var),
//   - children:   other modules, each under a name.
// Names are hierarchical, joined with dots, exactly as PyTorch spells them, so a checkpoint,
// a run log or a test fixture can say "layer1.0.conv1.weight" and mean the same tensor here
// and in PyTorch.
//
// How a layer is written (see linear.h):
//   class Linear : public Module {
//     Tensor weight, bias;                 // members, so forward() reads them directly
//     Linear(...) { register_parameter("weight", &weight); ... }
//   };
// The module remembers a pointer to each member (the "slot"). That is why a Module can be
// neither copied nor moved: the slots would point into the old object. Modules are held by
// std::shared_ptr instead.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::nn {

struct NamedTensor {
  std::string name;  // "layer1.0.conv1.weight"
  Tensor tensor;     // shares storage with the module's member: writing it writes the model
};

class Module {
 public:
  Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // The computation. Input and output shapes are documented on each layer.
  virtual Tensor forward(const Tensor& x) = 0;
  Tensor operator()(const Tensor& x) { return forward(x); }

  // One line naming the layer and its sizes, e.g. "Linear(784 -> 512)". Containers
  // print their children under them (str()).
  virtual std::string describe() const = 0;
  std::string str() const;  // the whole tree, one module a line, with parameter counts

  // Every parameter below this module, depth first in registration order (PyTorch's order).
  std::vector<NamedTensor> named_parameters() const;
  std::vector<Tensor> parameters() const;
  std::vector<NamedTensor> named_buffers() const;
  // What a checkpoint stores: parameters, then buffers.
  std::vector<NamedTensor> state() const;
  int64_t num_parameters() const;  // number of trained scalars

  // train() / eval() switch the behaviour of Dropout and BatchNorm, recursively.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Clears the .grad of every parameter (gradients otherwise accumulate across backward()).
  void zero_grad();

  // Converts every parameter and buffer to `dtype` (or moves it to `device`), like PyTorch's
  // model.half() / model.to("cuda"). The module's tensors are replaced by new ones, so build
  // the optimizer AFTER converting: an optimizer made before still holds the old tensors.
  Module& to(DType dtype);
  Module& to(Device device);

  // Copies values from `source` (same names and shapes, e.g. a checkpoint) into this
  // module's tensors, converting the dtype if needed. Throws naming the first mismatch.
  void load_state(const std::vector<NamedTensor>& source);

 protected:
  void register_parameter(const std::string& name, Tensor* slot);
  void register_buffer(const std::string& name, Tensor* slot);
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> child) {
    children_.emplace_back(name, child);
    return child;
  }
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children() const {
    return children_;
  }

 private:
  void collect(const std::string& prefix, bool params, bool buffers,
               std::vector<NamedTensor>& out) const;
  void collect_slots(const std::string& prefix, std::vector<std::pair<std::string, Tensor*>>& out,
                     bool params, bool buffers);
  void str_into(const std::string& name, int depth, std::string& out) const;

  std::vector<std::pair<std::string, Tensor*>> params_;
  std::vector<std::pair<std::string, Tensor*>> buffers_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

using ModulePtr = std::shared_ptr<Module>;

}  // namespace hg::nn
