#include "framework/train/step.h"

#include <algorithm>

#include "framework/amp/autocast.h"
#include "framework/autograd/grad_mode.h"
#include "framework/ops/ops.h"

namespace hg::train {

std::vector<int32_t> argmax_classes(const Tensor& logits) {
  const std::vector<float> v = logits.to_vector();  // (N, K) row-major
  const int64_t n = logits.size(0), k = logits.size(1);
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    const float* row = v.data() + r * k;
    out[r] = static_cast<int32_t>(std::max_element(row, row + k) - row);  // first max on ties
  }
  return out;
}

StepResult train_step(nn::Module& model, optim::Optimizer& opt, const Tensor& images,
                      const std::vector<int32_t>& labels) {
  opt.zero_grad();
  Tensor logits = model.forward(images);          // (B, K)
  Tensor loss = cross_entropy(logits, labels);    // ()
  loss.backward();                                // .grad of every parameter
  opt.step();                                     // p ← p − lr · update
  StepResult r;
  r.loss = loss.item();
  const std::vector<int32_t> pred = argmax_classes(logits.detach());
  for (size_t i = 0; i < labels.size(); ++i) r.correct += pred[i] == labels[i];
  return r;
}

std::vector<int32_t> predict(nn::Module& model, const data::ImageDataset& ds, const PredictOptions& how) {
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  std::vector<int32_t> out;
  out.reserve(static_cast<size_t>(ds.n));
  const int64_t per = ds.image_size();
  for (int64_t begin = 0; begin < ds.n; begin += how.batch_size) {
    const int64_t b = std::min(how.batch_size, ds.n - begin);
    std::vector<float> pixels(ds.images.begin() + begin * per, ds.images.begin() + (begin + b) * per);
    Tensor x = Tensor::from_vector(pixels, {b, ds.channels, ds.height, ds.width}, how.input_dtype);  // (B, C, H, W)
    if (how.device != Device::CPU) x = x.to(how.device);
    amp::Autocast region(how.autocast_dtype, how.autocast);  // enabled = false: no region
    if (how.input_scale != 1.0) x = mul(x, how.input_scale);  // (×1 would change no bit)
    const std::vector<int32_t> pred = argmax_classes(model.forward(x).to(Device::CPU));
    out.insert(out.end(), pred.begin(), pred.end());
  }
  model.train(was_training);
  return out;
}

std::vector<int32_t> predict(nn::Module& model, const data::ImageDataset& ds, int64_t batch_size,
                             Device device) {
  PredictOptions how;
  how.batch_size = batch_size;
  how.device = device;
  return predict(model, ds, how);
}

}  // namespace hg::train
