// One training step of chapter 02's MLP (784 -> 512 -> ReLU -> 256 -> ReLU -> 10, SGD lr 0.05,
// momentum 0.9, initialised from one seed) with its tensors on the GPU, against the same step on
// the CPU, from the same weights on the same batch:
//   FP32     hg::train::train_step, the step chapter 02's loop calls
//   AMP F16  chapter 10's step: an Autocast(F16) region, GradScaler (scale, backward, the
//            unscale-and-check kernels on the gradients, step, update)
// Compared: the loss, and every parameter's update (after - before: a weight of ~0.03 moved by
// ~1e-3 would hide a wrong update inside a tolerance on the weight itself). Both devices
// compute in F32 and differ in the order of their sums; under autocast both round the same
// values to F16, where an order difference of one F32 ulp can move a value by one F16 ulp.
// The GEMMs are the ladder's (rung 04 for F32; rung 07 or 08 for F16), never cuBLAS.
// Then the caching allocator: after the step, what is live on the GPU is exactly the
// parameters, their gradients, the momentum buffers and the batch.
#include "tests/gpu/gpu_test.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/halfgrad.h"
#include "framework/nn/models/models.h"
#include "framework/optim/sgd.h"
#include "framework/train/step.h"

using hg::Device;
using hg::DType;
using hg::Tensor;

namespace {

constexpr int64_t kBatch = 32;

struct Step {
  double loss = 0;
  std::vector<std::string> names;
  std::vector<std::vector<float>> before, after;
};

std::vector<int32_t> labels() {
  std::vector<int32_t> y;
  for (int64_t i = 0; i < kBatch; ++i) y.push_back(int32_t((i * 7) % 10));
  return y;
}

// One step of chapter 02's MLP on `device`; amp: chapter 10's step instead of chapter 02's.
Step one_step(Device device, bool amp, hg::test::Checker* t) {
  hg::Generator init(2);  // the chapter's model, built as its main.cpp builds it
  hg::nn::ModulePtr model = hg::nn::make_model("mlp", init, 1, 10, 28);
  model->to(device);
  hg::optim::SGDOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  hg::optim::SGD opt(model->parameters(), o);
  hg::Generator data(3);
  const Tensor images = Tensor::randn({kBatch, 1, 28, 28}, data).to(device);  // normalised pixels

  Step s;
  for (const auto& [name, p] : model->named_parameters()) {
    s.names.push_back(name);
    s.before.push_back(p.to_vector());
  }
  if (!amp) {
    s.loss = hg::train::train_step(*model, opt, images, labels()).loss;
  } else {
    // 2^10, not 2^16: a gradient within one rounding of 65504 / S would overflow on one device
    // and not on the other, and the two steps would part ways (one skipped).
    hg::amp::ScaleRule rule;
    rule.init_scale = 1024.0f;
    hg::amp::GradScaler scaler(rule);
    opt.zero_grad();
    Tensor loss;
    {
      hg::amp::Autocast ac(DType::F16);
      loss = hg::cross_entropy(model->forward(images), labels());
    }
    scaler.scale(loss).backward();
    if (t != nullptr) t->expect("AMP F16 step on the GPU: the GradScaler steps", scaler.step(opt));
    else scaler.step(opt);
    scaler.update();
    s.loss = loss.item();
  }
  for (const auto& [name, p] : model->named_parameters()) s.after.push_back(p.to_vector());

  if (device == Device::CUDA && !amp && t != nullptr) {
    size_t params = 0;
    for (const Tensor& p : model->parameters()) params += size_t(p.numel()) * sizeof(float);
    const size_t want = 3 * params + size_t(images.numel()) * sizeof(float);
    t->expect("FP32 step: live GPU bytes = parameters, gradients, momentum and the batch",
              hg::cuda::live_bytes() == want,
              std::to_string(hg::cuda::live_bytes()) + " live, want " + std::to_string(want));
  }
  return s;
}

void compare(hg::test::Checker& t, const char* what, bool amp) {
  const Step cpu = one_step(Device::CPU, amp, nullptr);
  const Step gpu = one_step(Device::CUDA, amp, &t);
  // FP32: the sums differ in order only, a few F32 ulps of 32 terms. AMP F16: the activations
  // and their gradients are F16 values, where one F16 ulp (2^-11 relative) of a difference can
  // appear: the loss within 2 F16 ulps, the updates within 8.
  const double loss_rtol = amp ? 1e-3 : 1e-5, update_rtol = amp ? 4e-3 : 1e-4;
  t.close(std::string(what) + ": loss, GPU vs CPU", {float(gpu.loss)}, {float(cpu.loss)}, 0, loss_rtol);
  for (size_t i = 0; i < cpu.names.size(); ++i) {
    std::vector<float> dg(cpu.after[i].size()), dc(dg.size());
    float largest = 0;
    for (size_t k = 0; k < dg.size(); ++k) {
      dg[k] = gpu.after[i][k] - gpu.before[i][k];
      dc[k] = cpu.after[i][k] - cpu.before[i][k];
      largest = std::max(largest, std::fabs(dc[k]));
    }
    t.exact(std::string(what) + ": " + cpu.names[i] + " before the step", gpu.before[i], cpu.before[i]);
    // atol: the same relative error, of the tensor's largest update (an update near zero is a
    // difference of larger terms)
    t.close(std::string(what) + ": " + cpu.names[i] + " update, GPU vs CPU", dg, dc, update_rtol * largest,
            update_rtol);
  }
}

void run(hg::test::Checker& t) {
  compare(t, "MLP FP32 step", /*amp=*/false);
  compare(t, "MLP AMP F16 step", /*amp=*/true);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
