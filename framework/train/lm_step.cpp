#include "framework/train/lm_step.h"

#include <new>
#include <stdexcept>
#include <string>

#include "framework/amp/autocast.h"
#include "framework/amp/unscale.h"
#include "framework/autograd/backward.h"
#include "framework/ops/ops.h"

namespace hg::train {

std::vector<data::TokenBatch> split_batch(const data::TokenBatch& batch, int64_t K) {
  if (K < 1 || batch.B % K != 0)
    throw std::invalid_argument("gradient accumulation: " + std::to_string(batch.B) + " sequences per batch do not split into " +
                                std::to_string(K) + " equal micro-batches");
  const int64_t b = batch.B / K, T = batch.T;
  std::vector<data::TokenBatch> out(static_cast<size_t>(K));
  for (int64_t k = 0; k < K; ++k) {
    data::TokenBatch& m = out[size_t(k)];
    m.B = b;
    m.T = T;
    m.x.assign(batch.x.begin() + k * b * T, batch.x.begin() + (k + 1) * b * T);
    m.y.assign(batch.y.begin() + k * b * T, batch.y.begin() + (k + 1) * b * T);
    if (!batch.starts.empty()) m.starts.assign(batch.starts.begin() + k * b, batch.starts.begin() + (k + 1) * b);
  }
  return out;
}

double accumulate_gradients(nn::GPT& model, const amp::GradScaler& scaler,
                            const std::vector<data::TokenBatch>& micro, DType autocast) {
  if (micro.empty()) throw std::invalid_argument("accumulate_gradients: no micro-batch");
  const double K = double(micro.size());
  double loss_sum = 0;
  for (const data::TokenBatch& m : micro) {
    if (m.B != micro[0].B || m.T != micro[0].T)
      throw std::invalid_argument("accumulate_gradients: micro-batches of different sizes would weigh their tokens unequally");
    try {
      Tensor loss;
      {
        amp::Autocast ac(autocast == DType::F32 ? DType::F16 : autocast, /*enabled=*/autocast != DType::F32);
        loss = nn::GPT::loss(model.forward(m.x, m.B, m.T), m.y);  // () F32: the mean over B/K·T tokens
      }
      loss_sum += loss.item();
      // L_k / K: the batch's loss is the mean of the micro-batch means
      scaler.scale(K == 1 ? loss : div(loss, K)).backward();
    } catch (const std::bad_alloc&) {  // the activations did not fit: say how much they need
      throw std::runtime_error("GPT (" + model.config.str() + "): out of memory in the forward or backward pass: " +
                               nn::gpt_memory_needs(model.config, m.B));
    }
  }
  return loss_sum / K;
}

LmStep lm_step(nn::GPT& model, optim::Optimizer& opt, amp::GradScaler& scaler, const data::TokenBatch& batch,
               int64_t K, DType autocast, double grad_clip) {
  LmStep s;
  opt.zero_grad();
  s.loss = accumulate_gradients(model, scaler, split_batch(batch, K), autocast);
  scaler.unscale_(opt);  // clipping must see the true gradients
  if (grad_clip > 0) s.grad_norm = amp::clip_grad_norm_(opt.params(), grad_clip);
  s.scale = scaler.get_scale();
  s.stepped = scaler.step(opt);  // one check, one step ...
  scaler.update();               // ... and one scale update per batch of K micro-batches
  return s;
}

}  // namespace hg::train
