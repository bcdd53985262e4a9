#include "framework/amp/master_weights.h"

#include <cmath>
#include <stdexcept>

#include "framework/amp/unscale.h"
#include "framework/autograd/grad_mode.h"
#include "framework/memory/accountant.h"
#include "framework/ops/elementwise.h"

namespace hg::amp {

MasterWeights::MasterWeights(std::vector<Tensor> model_params) : model_(std::move(model_params)) {
  NoGradGuard no_grad;
  // The F32 copy is optimizer state in the ZeRO paper's accounting (2 + 2 + 12 bytes per
  // parameter for mixed-precision Adam: 4 of the 12 are this copy).
  memory::TagScope scope(memory::Tag::OptimizerState);
  for (const Tensor& p : model_) {
    if (!p.defined()) throw std::invalid_argument("MasterWeights: an undefined parameter");
    Tensor m = p.detach().to(DType::F32).clone();  // own storage, exact copy of the value
    m.requires_grad_(true);
    master_.push_back(m);
  }
}

bool MasterWeights::copy_grads_to_master(float inv_scale) {
  NoGradGuard no_grad;
  bool found = false;
  for (size_t i = 0; i < model_.size(); ++i) {
    Tensor g = model_[i].grad();
    if (!g.defined()) continue;
    Tensor g32 = g.detach().to(DType::F32).contiguous().clone();  // (same shape), F32
    master_[i].set_grad(g32);
    if (g32.device() != Device::CPU) {  // on the GPU one kernel does the loop below
      found = unscale_grads_({master_[i]}, inv_scale) || found;
      continue;
    }
    float* d = g32.data<float>();
    for (int64_t k = 0, n = g32.numel(); k < n; ++k) {
      d[k] *= inv_scale;
      if (!std::isfinite(d[k])) found = true;  // after the multiply, as unscale_grads_ checks
    }
  }
  return found;
}

void MasterWeights::copy_master_to_model() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < model_.size(); ++i) {
    Tensor dst = model_[i];
    if (dst.device() != Device::CPU) {  // on the GPU: the cast kernel, the same RNE rounding
      copy_(dst, master_[i]);
      continue;
    }
    const float* src = master_[i].data<float>();
    visit_dtype(dst.dtype(), [&](auto tag) {
      using T = decltype(tag);
      T* d = dst.data<T>();
      for (int64_t k = 0, n = dst.numel(); k < n; ++k) d[k] = store<T>(compute_t<T>(src[k]));
    });
  }
}

void convert_model_(nn::Module& model, DType dtype,
                    const std::function<bool(const std::string&)>& keep_f32) {
  NoGradGuard no_grad;
  for (const auto& named : model.state()) {
    if (keep_f32 && keep_f32(named.name)) continue;
    Tensor t = named.tensor;
    if (t.dtype() == dtype) continue;
    Tensor c = t.detach().to(dtype).contiguous();
    // Re-point the tensor's own implementation at the converted storage: every handle to
    // this tensor (the module's member included) now sees the new dtype.
    TensorImpl& impl = t.impl();
    impl.storage = c.impl().storage;
    impl.offset = c.impl().offset;
    impl.strides = c.impl().strides;
    impl.dtype = dtype;
    impl.grad = nullptr;
    memory::retag(t, memory::Tag::Parameter);
  }
}

}  // namespace hg::amp
