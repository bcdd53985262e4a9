#pragma once
// FP32 master weights (NVIDIA Apex "O2"): the model computes in F16, the optimizer updates
// an F32 copy of every parameter, and the F16 model is refreshed from it after each step.
//
// Why: an update lr·g smaller than half an F16 ULP of the weight is rounded away
// (2048 + 1 = 2048). Many small updates add up in F32 (where the ULP is 2^13 times finer)
// and eventually move the F16 copy.
//
//   hg::amp::MasterWeights mw(model.parameters());           // model already .to(F16)
//   hg::optim::SGD opt(mw.master_params(), {...});            // the optimizer owns the F32
//   loss.backward();                                          // F16 grads on the model
//   if (!mw.copy_grads_to_master(1.0f / S)) opt.step();       // F32 grads, unscaled
//   mw.copy_master_to_model();                                // round F32 -> F16
//
// Parameters the model keeps in F32 (batch norm's gamma and beta, Apex's
// keep_batchnorm_fp32) get an F32 master too; copying back is then exact.
#include <functional>
#include <string>
#include <vector>

#include "framework/nn/module.h"
#include "framework/tensor/tensor.h"

namespace hg::amp {

class MasterWeights {
 public:
  // Makes an F32 leaf tensor (requires_grad) holding the value of each model parameter.
  explicit MasterWeights(std::vector<Tensor> model_params);

  // The F32 copies, in the order of the model parameters: give these to the optimizer.
  const std::vector<Tensor>& master_params() const { return master_; }
  const std::vector<Tensor>& model_params() const { return model_; }

  // master.grad <- F32(model.grad) · inv_scale, for every model parameter with a .grad.
  // Returns true when any master gradient, after the multiply, is inf or NaN (then the
  // caller skips the step).
  bool copy_grads_to_master(float inv_scale = 1.0f);

  // model <- master rounded to the model's dtype (round to nearest even).
  void copy_master_to_model();

 private:
  std::vector<Tensor> model_, master_;
};

// Converts the parameters and buffers of `model` to `dtype` in place, except those whose
// name `keep_f32` accepts (e.g. batch norm: [](auto& n) { return n.find("bn") != npos; }).
// The module's own tensors change dtype (their handles stay valid); their .grad is dropped.
// Build the optimizer or MasterWeights after calling this.
void convert_model_(nn::Module& model, DType dtype,
                    const std::function<bool(const std::string& name)>& keep_f32 = nullptr);

}  // namespace hg::amp
