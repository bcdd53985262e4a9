// GPU tests of the mixed-precision machinery (framework/amp) on CUDA tensors, each against the
// same thing on the CPU:
//   unscale_ / the inf-NaN check   the cuda/ops/amp.h kernels, one flag per list of gradients;
//   max_abs_grad                   the largest finite |g|
//   clip_grad_norm_                the norm and the clipped gradients
//   GradScaler                     a skipped step leaves GPU parameters and momentum bit for bit
//   MasterWeights                  2048 + 1 in F16 on the GPU: lost in the model, kept in F32
//   Autocast                       the dtypes of an MLP's forward pass in an F16 region on the GPU
//   training                       five AMP steps (autocast + GradScaler) of an MLP, GPU vs CPU
//   GradStats                      the histogram of a GPU gradient equals that of its CPU copy
#include "tests/gpu/gpu_test.h"

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/amp/master_weights.h"
#include "framework/amp/unscale.h"
#include "framework/halfgrad.h"
#include "framework/nn/models/mlp.h"
#include "framework/optim/sgd.h"

using hg::Device;
using hg::DType;
using hg::Tensor;

namespace {

// A parameter on `device` holding `values`, with .grad = `grad` (same dtype and device).
Tensor param_with_grad(const std::vector<float>& values, const std::vector<float>& grad, DType dt,
                       Device device) {
  const int64_t n = int64_t(values.size());
  Tensor p = Tensor::from_vector(values, {n}, dt).to(device);
  p.requires_grad_(true);
  p.set_grad(Tensor::from_vector(grad, {n}, dt).to(device));
  return p;
}

hg::optim::SGDOptions sgd(double lr, double momentum = 0.0) {
  hg::optim::SGDOptions o;
  o.lr = lr;
  o.momentum = momentum;
  return o;
}

std::vector<float> ramp(int n, float lo, float hi) {
  auto v = std::vector<float>(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = lo + (hi - lo) * float(i) / float(n - 1);
  return v;
}

void test_unscale(hg::test::Checker& t) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
    const std::string name = hg::dtype_name(dt);
    // Two parameters, 1000 and 3 elements; 1/S = 2^-10 is exact, so GPU and CPU agree bit for bit.
    std::vector<float> g1 = ramp(1000, -60000, 60000), g2 = {1.5f, -2.0f, 0.0f};
    std::vector<Tensor> cpu = {param_with_grad(ramp(1000, -1, 1), g1, dt, Device::CPU),
                               param_with_grad({1, 2, 3}, g2, dt, Device::CPU)};
    std::vector<Tensor> gpu = {param_with_grad(ramp(1000, -1, 1), g1, dt, Device::CUDA),
                               param_with_grad({1, 2, 3}, g2, dt, Device::CUDA)};
    const bool found_cpu = hg::amp::unscale_grads_(cpu, 1.0f / 1024.0f);
    const bool found_gpu = hg::amp::unscale_grads_(gpu, 1.0f / 1024.0f);
    t.expect("unscale_ " + name + ": finite gradients, no inf found", !found_gpu && !found_cpu);
    for (size_t i = 0; i < cpu.size(); ++i)
      t.exact("unscale_ " + name + " grad[" + std::to_string(i) + "]", gpu[i].grad().to_vector(),
              cpu[i].grad().to_vector());
    t.expect("check " + name + ": finite gradients", !hg::amp::grads_have_inf_or_nan(gpu));
    const double mg = hg::amp::max_abs_grad(gpu), mc = hg::amp::max_abs_grad(cpu);
    t.expect("max_abs_grad " + name + ": GPU equals CPU", mg == mc && mc > 0,
             std::to_string(mg) + " vs " + std::to_string(mc));

    // An inf, then a NaN, in the second tensor (the first is finite): the flag shared by the
    // list is set either way, and the check-only pass leaves the values alone.
    for (float bad : {INFINITY, NAN}) {
      std::vector<float> gb = g2;
      gb[1] = bad;
      std::vector<Tensor> g = {param_with_grad(ramp(1000, -1, 1), g1, dt, Device::CUDA),
                               param_with_grad({1, 2, 3}, gb, dt, Device::CUDA)};
      const std::string what = std::string(std::isnan(bad) ? "NaN" : "inf") + " " + name;
      t.expect("check finds " + what, hg::amp::grads_have_inf_or_nan(g));
      t.exact("check leaves " + what + " gradients unchanged", g[0].grad().to_vector(),
              Tensor::from_vector(g1, {1000}, dt).to_vector());
      t.expect("max_abs_grad skips the " + what, hg::amp::max_abs_grad(g) == hg::amp::max_abs_grad(
          {param_with_grad(ramp(1000, -1, 1), g1, dt, Device::CPU)}));
      t.expect("unscale_ finds " + what, hg::amp::unscale_grads_(g, 0.5f));
    }
  }
}

void test_clip(hg::test::Checker& t) {
  for (DType dt : {DType::F32, DType::F16}) {
    const std::string name = hg::dtype_name(dt);
    std::vector<float> g1 = ramp(500, -3, 3), g2 = {4.0f, -4.0f};
    std::vector<Tensor> cpu = {param_with_grad(ramp(500, 0, 1), g1, dt, Device::CPU),
                               param_with_grad({0, 0}, g2, dt, Device::CPU)};
    std::vector<Tensor> gpu = {param_with_grad(ramp(500, 0, 1), g1, dt, Device::CUDA),
                               param_with_grad({0, 0}, g2, dt, Device::CUDA)};
    const double nc = hg::amp::clip_grad_norm_(cpu, 1.0), ng = hg::amp::clip_grad_norm_(gpu, 1.0);
    t.close("clip_grad_norm_ " + name + " norm", {float(ng)}, {float(nc)}, 0, 1e-5);
    for (size_t i = 0; i < cpu.size(); ++i)
      t.close("clip_grad_norm_ " + name + " grad[" + std::to_string(i) + "]", gpu[i].grad().to_vector(),
              cpu[i].grad().to_vector(), 1e-6, dt == DType::F16 ? 1e-3 : 1e-5);
  }
}

void test_scaler_skip(hg::test::Checker& t) {
  // SGD with momentum on the GPU: one good step (to fill the momentum), then a step whose
  // gradient holds an inf. The second must change neither the weights nor the momentum:
  // a third good step then lands exactly where a run without the bad step lands.
  auto run = [](bool with_bad_step) {
    Tensor p = param_with_grad(ramp(64, -1, 1), ramp(64, 0.5f, 2), DType::F32, Device::CUDA);
    hg::optim::SGD opt({p}, sgd(0.1, 0.9));
    hg::amp::ScaleRule rule;
    rule.init_scale = 8.0f;
    hg::amp::GradScaler scaler(rule);
    std::vector<float> before_bad, after_bad;
    std::vector<bool> stepped;
    auto step_with = [&](std::vector<float> g) {
      for (float& v : g) v *= scaler.get_scale();  // as a backward of the scaled loss gives them
      p.set_grad(Tensor::from_vector(g, {64}).to(Device::CUDA));
      stepped.push_back(scaler.step(opt));
      scaler.update();
    };
    step_with(ramp(64, 0.5f, 2));
    if (with_bad_step) {
      std::vector<float> g = ramp(64, 0.5f, 2);
      g[7] = INFINITY;
      before_bad = p.to_vector();
      step_with(g);
      after_bad = p.to_vector();
    }
    step_with(ramp(64, -2, 1));
    return std::make_tuple(p.to_vector(), stepped, before_bad, after_bad, scaler.get_scale());
  };
  auto [with_bad, stepped, before, after, scale] = run(true);
  auto [without_bad, stepped2, b2, a2, scale2] = run(false);
  t.expect("GradScaler on the GPU: the inf step is skipped",
           stepped.size() == 3 && stepped[0] && !stepped[1] && stepped[2]);
  t.exact("skipped step leaves GPU weights bit for bit", after, before);
  t.exact("momentum untouched: same weights as a run without the bad step", with_bad, without_bad);
  t.expect("scale halved by the skipped step", scale == 4.0f && scale2 == 8.0f,
           "scale " + std::to_string(scale) + ", without the bad step " + std::to_string(scale2));
}

void test_master_weights(hg::test::Checker& t) {
  // SGD, lr 1, gradient -1: +1 per step. F16 spacing at 2048 is 2; 2048 + 1 ties to 2048.
  Tensor model = Tensor::from_vector(std::vector<float>{2048.0f, 0.5f}, {2}, DType::F16).to(Device::CUDA);
  model.requires_grad_(true);
  hg::amp::MasterWeights mw({model});
  hg::optim::SGD opt(mw.master_params(), sgd(1.0));
  t.expect("master copy is F32 on the GPU", mw.master_params()[0].dtype() == DType::F32 &&
                                                 mw.master_params()[0].device() == Device::CUDA);
  std::vector<float> model_after_1, master_after_1;
  for (int s = 0; s < 2; ++s) {
    // The model's gradient carries a scale of 4: copy_grads_to_master divides it out.
    model.set_grad(Tensor::from_vector(std::vector<float>{-4.0f, 0.0f}, {2}, DType::F16).to(Device::CUDA));
    const bool found = mw.copy_grads_to_master(0.25f);
    opt.step();
    mw.copy_master_to_model();
    if (s == 0) {
      t.expect("master weights: finite gradients", !found);
      model_after_1 = model.to_vector();
      master_after_1 = mw.master_params()[0].to_vector();
    }
  }
  t.exact("after one step the F16 model still holds 2048", model_after_1, {2048.0f, 0.5f});
  t.exact("after one step the F32 master holds 2049", master_after_1, {2049.0f, 0.5f});
  t.exact("after two steps both hold 2050", model.to_vector(), {2050.0f, 0.5f});
  model.set_grad(Tensor::from_vector(std::vector<float>{NAN, 1.0f}, {2}, DType::F16).to(Device::CUDA));
  t.expect("master weights: a NaN gradient is reported", mw.copy_grads_to_master(1.0f));
}

hg::nn::ModulePtr small_mlp(uint64_t seed) {
  hg::Generator g(seed);
  return std::make_shared<hg::nn::MLP>(g, 784, 64, 32, 10);
}

std::vector<int32_t> labels(int64_t n) {
  std::vector<int32_t> y;
  for (int64_t i = 0; i < n; ++i) y.push_back(int32_t((i * 3) % 10));
  return y;
}

void test_autocast(hg::test::Checker& t) {
  auto cpu = small_mlp(3), gpu = small_mlp(3);
  gpu->to(Device::CUDA);
  hg::Generator gx(4);
  Tensor x = Tensor::randn({16, 1, 28, 28}, gx);
  Tensor lc, lg, yc, yg;
  {
    hg::amp::Autocast ac(DType::F16);
    yc = cpu->forward(x);
    yg = gpu->forward(x.to(Device::CUDA));
    lc = hg::cross_entropy(yc, labels(16));
    lg = hg::cross_entropy(yg, labels(16));
  }
  t.expect("autocast F16 on the GPU: logits F16 on the GPU",
           yg.dtype() == DType::F16 && yg.device() == Device::CUDA, hg::dtype_name(yg.dtype()));
  t.expect("autocast F16 on the GPU: the loss is F32", lg.dtype() == DType::F32, hg::dtype_name(lg.dtype()));
  t.expect("autocast F16 on the GPU: the weights stay F32",
           gpu->parameters()[0].dtype() == DType::F32);
  t.close("autocast F16 logits, GPU vs CPU", yg.to_vector(), yc.to_vector(), 2e-3, 4e-3);
  t.close("autocast F16 loss, GPU vs CPU", lg.to_vector(), lc.to_vector(), 1e-3, 1e-3);
}

void test_amp_training(hg::test::Checker& t) {
  // Five steps of the chapter 10 loop on each device, same weights and batches.
  auto train = [](Device device) {
    auto model = small_mlp(9);
    model->to(device);
    hg::optim::SGD opt(model->parameters(), sgd(0.05, 0.9));
    // 2^10, not PyTorch's 2^16: a step that overflows on one device and not on the other
    // (a gradient within one rounding of 65504 / S) would make the runs part ways.
    hg::amp::ScaleRule rule;
    rule.init_scale = 1024.0f;
    hg::amp::GradScaler scaler(rule);
    hg::Generator gx(10);
    std::vector<float> losses;
    for (int s = 0; s < 5; ++s) {
      Tensor x = Tensor::randn({32, 1, 28, 28}, gx).to(device);
      opt.zero_grad();
      Tensor loss;
      {
        hg::amp::Autocast ac(DType::F16);
        loss = hg::cross_entropy(model->forward(x), labels(32));
      }
      scaler.scale(loss).backward();
      scaler.step(opt);
      scaler.update();
      losses.push_back(float(loss.item()));
    }
    return std::make_pair(losses, model->parameters()[0].to_vector());
  };
  auto [loss_c, w_c] = train(Device::CPU);
  auto [loss_g, w_g] = train(Device::CUDA);
  t.close("AMP training: 5 losses, GPU vs CPU", loss_g, loss_c, 2e-3, 2e-3);
  t.close("AMP training: first weight after 5 steps", w_g, w_c, 1e-4, 1e-2);
}

void test_grad_stats(hg::test::Checker& t) {
  // Values across FP16's whole range and beyond: zeros, underflow, subnormal, overflow, inf.
  std::vector<float> g = ramp(4096, -1, 1);
  const float specials[] = {0.0f, 1e-9f, 3e-6f, 1e5f, -7e4f, INFINITY, NAN, 6e-8f};
  for (size_t i = 0; i < 8; ++i) g[i * 500] = specials[i];
  Tensor pc = param_with_grad(std::vector<float>(4096, 0.0f), g, DType::F32, Device::CPU);
  Tensor pg = param_with_grad(std::vector<float>(4096, 0.0f), g, DType::F32, Device::CUDA);
  const auto hc = hg::amp::grad_histograms({{"w", pc}}, 1.0), hgpu = hg::amp::grad_histograms({{"w", pg}}, 1.0);
  t.expect("grad_histograms of a GPU gradient equal the CPU's",
           hc.size() == 1 && hgpu.size() == 1 && hc[0].to_event(0) == hgpu[0].to_event(0));
}

void run(hg::test::Checker& t) {
  test_unscale(t);
  test_clip(t);
  test_scaler_skip(t);
  test_master_weights(t);
  test_autocast(t);
  test_amp_training(t);
  test_grad_stats(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
