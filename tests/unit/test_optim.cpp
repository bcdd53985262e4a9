// Optimizers: the update rules against values worked out by hand, and against PyTorch
// (tests/reference/nn/optimizers.json: SGD, Adam, AdamW for three steps on fixed gradients).
#include <doctest/doctest.h>

#include <cmath>
#include <memory>

#include "framework/optim/adam.h"
#include "framework/optim/lr_schedule.h"
#include "framework/optim/sgd.h"
#include "tests/reference/nn/fixture.h"

using namespace hg;

namespace {

Tensor param(const std::vector<float>& v, DType dtype = DType::F32) {
  Tensor p = Tensor::from_vector(v, {static_cast<int64_t>(v.size())}, dtype);
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<float>& g) {
  p.set_grad(Tensor::from_vector(g, {static_cast<int64_t>(g.size())}, p.dtype()));
}

optim::SGDOptions sgd_options(double lr, double momentum = 0, double weight_decay = 0,
                              bool nesterov = false) {
  optim::SGDOptions o;
  o.lr = lr;
  o.momentum = momentum;
  o.weight_decay = weight_decay;
  o.nesterov = nesterov;
  return o;
}

optim::AdamOptions adam_options(double lr, double weight_decay = 0, double beta1 = 0.9,
                                double beta2 = 0.999, double eps = 1e-8) {
  optim::AdamOptions o;
  o.lr = lr;
  o.weight_decay = weight_decay;
  o.beta1 = beta1;
  o.beta2 = beta2;
  o.eps = eps;
  return o;
}

}  // namespace

TEST_CASE("SGD by hand: weight decay, momentum (the first step copies the gradient)") {
  Tensor p = param({1.0f, -2.0f});
  optim::SGD opt({p}, sgd_options(0.1, 0.5, 0.1));
  // step 1: g = ∇ + 0.1·p = (0.5 + 0.1, 1 − 0.2) = (0.6, 0.8); buf = g; p −= 0.1·g
  set_grad(p, {0.5f, 1.0f});
  opt.step();
  std::vector<float> v = p.to_vector();
  CHECK(v[0] == doctest::Approx(1.0 - 0.06).epsilon(1e-6));
  CHECK(v[1] == doctest::Approx(-2.0 - 0.08).epsilon(1e-6));
  // step 2: g = (0.5 + 0.1·0.94, 1 + 0.1·(−2.08)) = (0.594, 0.792)
  //         buf = 0.5·(0.6, 0.8) + g = (0.894, 1.192);  p −= 0.1·buf
  opt.step();
  v = p.to_vector();
  CHECK(v[0] == doctest::Approx(0.94 - 0.0894).epsilon(1e-6));
  CHECK(v[1] == doctest::Approx(-2.08 - 0.1192).epsilon(1e-6));
  CHECK(opt.steps_taken() == 2);
}

TEST_CASE("SGD nesterov by hand") {
  Tensor p = param({1.0f});
  optim::SGD opt({p}, sgd_options(0.1, 0.9, 0.0, true));
  set_grad(p, {1.0f});
  opt.step();  // buf = 1; g = 1 + 0.9·1 = 1.9; p = 1 − 0.19
  CHECK(p.to_vector()[0] == doctest::Approx(0.81).epsilon(1e-6));
  opt.step();  // buf = 0.9 + 1 = 1.9; g = 1 + 0.9·1.9 = 2.71; p = 0.81 − 0.271
  CHECK(p.to_vector()[0] == doctest::Approx(0.539).epsilon(1e-6));
}

TEST_CASE("Adam by hand: the first step moves each weight by lr·sign(g)") {
  // t = 1: m = 0.1·g, v = 0.001·g², m̂ = g, v̂ = g², so the update is lr·g/(|g| + eps).
  Tensor p = param({0.5f, 0.5f, 0.5f});
  optim::Adam opt({p}, adam_options(0.01));
  set_grad(p, {3.0f, -0.002f, 0.0f});
  opt.step();
  std::vector<float> v = p.to_vector();
  CHECK(v[0] == doctest::Approx(0.49).epsilon(1e-6));
  CHECK(v[1] == doctest::Approx(0.51).epsilon(1e-5));
  CHECK(v[2] == 0.5f);  // g = 0: m = 0, no move
}

TEST_CASE("AdamW decays the weight outside the gradient, Adam inside it") {
  // With ∇ = 0: Adam's gradient is wd·p, so its first step moves p by lr·sign(p);
  // AdamW multiplies p by (1 − lr·wd) and its moments stay 0.
  Tensor a = param({2.0f}), b = param({2.0f});
  optim::Adam adam({a}, adam_options(0.1, 0.5));
  optim::AdamW adamw({b}, adam_options(0.1, 0.5));
  set_grad(a, {0.0f});
  set_grad(b, {0.0f});
  adam.step();
  adamw.step();
  CHECK(a.to_vector()[0] == doctest::Approx(1.9).epsilon(1e-6));
  CHECK(b.to_vector()[0] == doctest::Approx(2.0 * (1 - 0.05)).epsilon(1e-6));
}

TEST_CASE("SGD, Adam and AdamW equal PyTorch's over three steps") {
  const auto fx = testing::read_nn_fixture("optimizers.json");
  const Tensor p0 = testing::fixture_tensor(fx.at("p0"));
  for (const auto& [name, c] : fx.at("cases").items()) {
    CAPTURE(name);
    Tensor p = p0.clone();
    p.requires_grad_(true);
    const auto& h = c.at("hyper");
    std::unique_ptr<optim::Optimizer> opt;
    if (name.rfind("sgd", 0) == 0) {
      opt = std::make_unique<optim::SGD>(std::vector<Tensor>{p},
          sgd_options(h.at("lr"), h.value("momentum", 0.0), h.value("weight_decay", 0.0)));
    } else {
      const auto o = adam_options(h.at("lr"), h.at("weight_decay"), h.at("betas")[0],
                                  h.at("betas")[1], h.at("eps"));
      if (name == "adam") opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, o);
      else opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, o);
    }
    CHECK(opt->name() == (name.rfind("sgd", 0) == 0 ? std::string("sgd") : name));
    for (size_t s = 0; s < 3; ++s) {
      p.set_grad(testing::fixture_tensor(fx.at("grads")[s]));
      opt->step();
      testing::check_close(name + " step " + std::to_string(s + 1), p,
                           testing::fixture_tensor(c.at("after")[s]), 1e-6, 1e-5);
    }
  }
}

TEST_CASE("optimizer state round trip: a copy continues bit for bit like the original") {
  Tensor a = param({1.0f, 2.0f, 3.0f});
  optim::Adam first({a}, adam_options(0.01, 0.1));
  set_grad(a, {0.3f, -0.1f, 0.2f});
  first.step();
  first.step();
  // b takes a's values and the optimizer's state, then both take the same third step.
  Tensor b = param(a.to_vector());
  optim::Adam second({b}, adam_options(0.01, 0.1));
  second.load_state_dict(first.state_dict());
  CHECK(second.steps_taken() == 2);
  set_grad(b, {0.3f, -0.1f, 0.2f});
  first.step();
  second.step();
  CHECK(a.to_vector() == b.to_vector());

  optim::SGD sgd({b}, sgd_options(0.1));
  CHECK_THROWS_WITH_AS(sgd.load_state_dict(first.state_dict()),
                       doctest::Contains("is for 'adam'"), std::runtime_error);
}

TEST_CASE("a parameter without a gradient is left alone") {
  Tensor a = param({1.0f}), b = param({5.0f});
  optim::SGD opt({a, b}, sgd_options(0.1, 0.9));
  set_grad(a, {1.0f});
  opt.step();
  CHECK(b.to_vector()[0] == 5.0f);
  CHECK(a.to_vector()[0] == doctest::Approx(0.9).epsilon(1e-6));
}

TEST_CASE("F16 parameters: computed in F32, rounded to F16 on store") {
  // 1 − 0.1·1 = 0.9 rounds to the nearest F16, 0.89990234375 (= 1843 · 2^-11).
  Tensor p = param({1.0f}, DType::F16);
  optim::SGD opt({p}, sgd_options(0.1));
  set_grad(p, {1.0f});
  opt.step();
  CHECK(p.dtype() == DType::F16);
  CHECK(p.to_vector()[0] == 0.89990234375f);
  // An update below half an F16 ULP is lost: at 1024 the ULP is 1, and 1024 − 0.1 rounds
  // back to 1024 (chapter 06's "lost update").
  Tensor q = param({1024.0f}, DType::F16);
  optim::SGD opt2({q}, sgd_options(0.1));
  set_grad(q, {1.0f});
  opt2.step();
  CHECK(q.to_vector()[0] == 1024.0f);
}

TEST_CASE("LR schedules") {
  const auto st = optim::LRSchedule::step(0.1, 2, 0.5);
  CHECK(st.lr_at(0) == 0.1);
  CHECK(st.lr_at(1) == 0.1);
  CHECK(st.lr_at(2) == doctest::Approx(0.05));
  CHECK(st.lr_at(5) == doctest::Approx(0.025));
  const auto cs = optim::LRSchedule::cosine(0.1, 10, 0.001);
  CHECK(cs.lr_at(0) == doctest::Approx(0.1));
  CHECK(cs.lr_at(5) == doctest::Approx(0.001 + 0.099 * 0.5));
  CHECK(cs.lr_at(10) == doctest::Approx(0.001));
  CHECK(cs.lr_at(20) == doctest::Approx(0.001));  // stays at the floor after T
  const auto wu = optim::LRSchedule::cosine(0.1, 10, 0.0, 4);
  CHECK(wu.lr_at(0) == doctest::Approx(0.025));
  CHECK(wu.lr_at(3) == doctest::Approx(0.1));
  CHECK(wu.lr_at(4) == doctest::Approx(0.1));
  CHECK_THROWS_AS(optim::LRSchedule::parse_kind("linear"), std::invalid_argument);
}
