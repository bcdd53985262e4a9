// FP32 master weights: an update below half an F16 ULP of the weight is lost when the
// optimizer steps the F16 weight directly, and kept when it steps an F32 master copy.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "framework/amp/master_weights.h"
#include "framework/optim/sgd.h"

using hg::DType;
using hg::Tensor;

namespace {
Tensor f16_param(std::vector<float> v) {
  Tensor p = Tensor::from_vector(v, {int64_t(v.size())}, DType::F16);
  p.requires_grad_(true);
  return p;
}
}  // namespace

TEST_CASE("2048 + 1 in F16: lost without a master copy, kept with one") {
  // SGD with lr 1 and gradient -1 adds +1 per step. F16 spacing at 2048 is 2, so
  // 2048 + 1 is a tie and rounds to the even neighbour, 2048: every step is lost.
  const int steps = 10;
  Tensor naive = f16_param({2048.0f});
  hg::optim::SGD opt_naive({naive}, {.lr = 1.0});
  for (int i = 0; i < steps; ++i) {
    naive.set_grad(Tensor::from_vector(std::vector<float>{-1.0f}, {1}, DType::F16));
    opt_naive.step();
  }
  CHECK(naive.to_vector()[0] == 2048.0f);

  Tensor model = f16_param({2048.0f});
  hg::amp::MasterWeights mw({model});
  hg::optim::SGD opt({mw.master_params()}, {.lr = 1.0});
  double ref = 2048.0;  // the exact sum, in double
  for (int i = 0; i < steps; ++i) {
    model.set_grad(Tensor::from_vector(std::vector<float>{-1.0f}, {1}, DType::F16));
    CHECK_FALSE(mw.copy_grads_to_master());
    opt.step();
    mw.copy_master_to_model();
    ref += 1.0;
    CHECK(mw.master_params()[0].to_vector()[0] == float(ref));
  }
  CHECK(mw.master_params()[0].to_vector()[0] == 2058.0f);
  CHECK(model.to_vector()[0] == 2058.0f);  // 2058 is representable (even)
  CHECK(model.dtype() == DType::F16);
}

TEST_CASE("many updates of 1e-4 on weights near 1: F16 loses all, master weights keep them") {
  // Half an F16 ULP at 1.0 is 2^-11 ≈ 4.9e-4, so 1e-4 is rounded away each time.
  const int steps = 100;
  const std::vector<float> w0 = {1.0f, 0.75f, -1.5f};
  Tensor naive = f16_param(w0);
  hg::optim::SGD opt_naive({naive}, {.lr = 1e-4});
  Tensor model = f16_param(w0);
  hg::amp::MasterWeights mw({model});
  hg::optim::SGD opt({mw.master_params()}, {.lr = 1e-4});
  for (int i = 0; i < steps; ++i) {
    naive.set_grad(Tensor::from_vector(std::vector<float>{-1.0f, -1.0f, 1.0f}, {3}, DType::F16));
    opt_naive.step();
    model.set_grad(Tensor::from_vector(std::vector<float>{-1.0f, -1.0f, 1.0f}, {3}, DType::F16));
    mw.copy_grads_to_master();
    opt.step();
    mw.copy_master_to_model();
  }
  CHECK(naive.to_vector() == w0);  // nothing moved
  const auto m = mw.master_params()[0].to_vector();
  // Reference: the F32 sum of 100 steps of 1e-4, done here in double; F32 rounding of the
  // running sum costs at most ~100 · 2^-24 relative.
  const std::vector<double> want = {1.01, 0.76, -1.51};
  for (size_t i = 0; i < 3; ++i) {
    INFO("i=" << i << " master " << m[i] << " want " << want[i]);
    CHECK(std::fabs(m[i] - want[i]) <= 1e-5 + 1e-5 * std::fabs(want[i]));
  }
  // The model copy moved too: 1.01 rounds in F16 to 1.0097656 (= 1 + 5·2^-9)
  const auto f = model.to_vector();
  CHECK(f[0] != 1.0f);
  CHECK(std::fabs(f[0] - 1.01) <= std::ldexp(1.0, -11));
}

TEST_CASE("master grads are unscaled and an inf is reported") {
  Tensor model = f16_param({1.0f, 2.0f});
  hg::amp::MasterWeights mw({model});
  model.set_grad(Tensor::from_vector(std::vector<float>{1024.0f, -2048.0f}, {2}, DType::F16));
  CHECK_FALSE(mw.copy_grads_to_master(1.0f / 1024.0f));
  CHECK(mw.master_params()[0].grad().to_vector() == std::vector<float>{1.0f, -2.0f});
  CHECK(mw.master_params()[0].grad().dtype() == DType::F32);
  model.set_grad(Tensor::from_vector(std::vector<float>{70000.0f, 1.0f}, {2}, DType::F16));  // 70000 -> inf in F16
  CHECK(mw.copy_grads_to_master(1.0f));
}

#include "framework/amp/autocast.h"
#include "framework/nn/batch_norm.h"
#include "framework/nn/conv2d.h"
#include "framework/nn/sequential.h"
#include "framework/ops/ops.h"

TEST_CASE("convert_model_ keeps batch norm in F32, one master-weights step through both") {
  hg::Generator gen(4);
  auto conv = std::make_shared<hg::nn::Conv2d>(1, 4, 3, gen, 1, 1);
  auto bn = std::make_shared<hg::nn::BatchNorm2d>(4);
  hg::nn::Sequential model({conv, bn});
  // Everything to F16 except the batch norm (child "1"): Apex's keep_batchnorm_fp32.
  hg::amp::convert_model_(model, DType::F16,
                          [](const std::string& name) { return name.rfind("1.", 0) == 0; });
  CHECK(conv->weight.dtype() == DType::F16);  // the module's own members changed dtype
  CHECK(conv->bias.dtype() == DType::F16);
  CHECK(bn->weight.dtype() == DType::F32);
  CHECK(bn->running_mean.dtype() == DType::F32);
  for (const auto& p : model.named_parameters())
    CHECK(p.tensor.dtype() == (p.name.rfind("1.", 0) == 0 ? DType::F32 : DType::F16));

  hg::amp::MasterWeights mw(model.parameters());
  hg::optim::SGD opt(mw.master_params(), {.lr = 0.1});
  const auto w_before = conv->weight.to_vector();
  const auto g_before = bn->weight.to_vector();
  Tensor x = Tensor::full({2, 1, 5, 5}, 0.5);
  for (int64_t i = 0; i < 50; ++i) x.data<float>()[i] = float(i % 7) * 0.25f;
  Tensor loss;
  {
    // Conv in F16; batch norm takes the F16 activation as it arrives, with its F32
    // parameters and F32 statistics inside, and returns F16 (the policy, as PyTorch).
    hg::amp::Autocast ac(DType::F16);
    Tensor y = model(x);
    CHECK(y.dtype() == DType::F16);
    loss = hg::mean(hg::mul(y, y));
  }
  loss.backward();
  CHECK(conv->weight.grad().dtype() == DType::F16);
  CHECK(bn->weight.grad().dtype() == DType::F32);
  CHECK_FALSE(mw.copy_grads_to_master());
  opt.step();
  mw.copy_master_to_model();
  CHECK(conv->weight.dtype() == DType::F16);
  CHECK(bn->weight.dtype() == DType::F32);
  CHECK(conv->weight.to_vector() != w_before);  // both moved
  CHECK(bn->weight.to_vector() != g_before);
  // The F16 model holds its master rounded to F16.
  const auto m = mw.master_params()[0].to_vector(), w = conv->weight.to_vector();
  for (size_t i = 0; i < w.size(); ++i) CHECK(w[i] == float(hg::half(m[i])));
}
