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
