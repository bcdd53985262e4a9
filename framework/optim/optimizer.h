#pragma once
// Optimizer: updates parameters from their .grad, in place.
//
//   opt.zero_grad();      // clear the gradients of the last step
//   loss.backward();      // fill .grad
//   opt.step();           // p -= lr · (update rule of SGD / Adam / AdamW)
//
// The optimizer holds handles to the parameter tensors (sharing their storage), so step()
// writes the model's own numbers. It also keeps per-parameter state (a momentum buffer,
// Adam's moments) that a checkpoint must save for a resumed run to continue exactly.
//
// A loss scaler (framework/amp) works through this interface: it reads and unscales
// params()[i].grad(), and calls step() only when every gradient is finite — a skipped step
// changes neither the parameters nor the state.
//
// Arithmetic: parameters and gradients may be F32, F16, BF16 or F64. Each element is
// loaded into its compute type (float; double for F64), updated, and rounded back to the
// parameter's dtype. The state is kept in the compute type (F32, or F64 for F64
// parameters) whatever the parameter's dtype, on the parameter's device.
//
// Devices: on the CPU the update is the loop in sgd.cpp / adam.cpp; parameters on the GPU
// go through the GPU layer (framework/cuda/optim.h) to the fused kernels of cuda/ops/optim.h,
// which implement the same formulas.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/nn/module.h"
#include "framework/tensor/tensor.h"

namespace hg::optim {

// Everything a checkpoint needs to rebuild the optimizer: hyperparameters and counters as
// JSON, the state tensors named "<parameter index>.<what>", as in PyTorch's state_dict
// ("3.momentum_buffer", "0.exp_avg_sq").
struct OptimizerState {
  nlohmann::json meta;
  std::vector<nn::NamedTensor> tensors;
};

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, double lr);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual void step() = 0;       // one update of every parameter that has a .grad
  virtual std::string name() const = 0;  // "sgd", "adam", "adamw"
  void zero_grad();              // fills every .grad with zeros

  double lr() const { return lr_; }
  void set_lr(double lr) { lr_ = lr; }  // what an LR schedule calls (lr_schedule.h)
  const std::vector<Tensor>& params() const { return params_; }
  int64_t steps_taken() const { return steps_; }

  // Subclasses with counters beyond the state tensors (Adam's per-parameter step) add them
  // to meta and read them back.
  virtual OptimizerState state_dict() const;
  // Throws with a reason when the state is for another optimizer or other parameters, and
  // then changes nothing.
  virtual void load_state_dict(const OptimizerState& state);

 protected:
  virtual nlohmann::json hyperparameters() const = 0;
  // The state tensor `key` of parameter i, created (zeros, compute dtype) on first use.
  // `created` tells the caller it is new (SGD's momentum starts as a copy of the gradient).
  Tensor& state_for(size_t i, const std::string& key, bool* created = nullptr);

  std::vector<Tensor> params_;
  double lr_;
  int64_t steps_ = 0;  // calls of step() (a parameter without a .grad may have had fewer updates)
  std::vector<std::map<std::string, Tensor>> state_;  // per parameter: name -> tensor
};

// The dtype the optimizer computes (and keeps its state) in for a parameter of dtype `t`.
inline DType compute_dtype(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

// Checks every parameter is a contiguous leaf on a device the optimizer can update; `who`
// names the optimizer in the error.
void check_params(const std::vector<Tensor>& params, const std::string& who);

}  // namespace hg::optim
