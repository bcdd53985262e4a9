// Adam and AdamW count steps per parameter, as PyTorch does (state['step']): a parameter's
// count grows only on the steps where it has a gradient, and its bias corrections use its
// own count. Checked by hand, against PyTorch (tests/reference/nn/adam_param_steps.json,
// written by make_adam_param_steps.py), and through a checkpoint file.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "framework/nn/module.h"
#include "framework/optim/adam.h"
#include "framework/train/checkpoint.h"
#include "tests/reference/nn/fixture.h"

using namespace hg;

namespace {

Tensor param(const std::vector<float>& v) {
  Tensor p = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<float>& g) {
  p.set_grad(Tensor::from_vector(g, {static_cast<int64_t>(g.size())}));
}

optim::AdamOptions lr(double v) {
  optim::AdamOptions o;
  o.lr = v;
  return o;
}

// A module that is just two parameters (handles to the caller's tensors), for the
// checkpoint round trip.
struct TwoParams : nn::Module {
  Tensor p0, p1;
  TwoParams(Tensor a, Tensor b) : p0(a), p1(b) {
    register_parameter("p0", &p0);
    register_parameter("p1", &p1);
  }
  Tensor forward(const Tensor& x) override { return x; }
  std::string describe() const override { return "TwoParams"; }
};

std::string temp_path(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hg_test_param_steps_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

}  // namespace

// Two parameters, lr 1e-2; p1 has no gradient on steps 1 and 2 and gets g = 0.5 on step 3.
// With its own count p1 is on its FIRST step, t = 1:
//   m = (1 − β1)·g = 0.05,  v = (1 − β2)·g² = 0.00025
//   m̂ = m / (1 − 0.9¹) = 0.5,  v̂ = v / (1 − 0.999¹) = 0.25
//   p1 −= lr · m̂ / (√v̂ + eps) = 0.01 · 0.5 / (0.5 + 1e-8) = 0.0099999998   -> p1 = 0.99
// With one global count (t = 3) the same moments would be corrected by 1 − 0.9³ = 0.271 and
// 1 − 0.999³ = 0.002997001:
//   m̂ = 0.05 / 0.271 = 0.184502,  √v̂ = √(0.00025 / 0.002997001) = 0.288819
//   p1 −= 0.01 · 0.184502 / 0.288819 = 0.0063881                            -> p1 = 0.993612
// PyTorch 1.13 moves p1 by 0.0100 (the fixture below has the same case with random numbers).
TEST_CASE("Adam: a parameter whose first gradient comes at step 3 is bias-corrected with t = 1") {
  for (bool decoupled : {false, true}) {
    CAPTURE(decoupled);
    Tensor p0 = param({0.0f}), p1 = param({1.0f});
    optim::Adam opt({p0, p1}, lr(1e-2), decoupled);
    set_grad(p0, {1.0f});
    opt.step();  // p1.grad is undefined: p1 is not touched and its count stays 0
    opt.step();
    CHECK(p1.to_vector()[0] == 1.0f);
    CHECK(opt.param_step(0) == 2);
    CHECK(opt.param_step(1) == 0);
    set_grad(p1, {0.5f});
    opt.step();
    CHECK(opt.param_step(0) == 3);
    CHECK(opt.param_step(1) == 1);
    CHECK(opt.steps_taken() == 3);
    const double moved = 1.0 - p1.to_vector()[0];
    INFO("p1 moved by " << moved << " (PyTorch: 0.0100; a global t = 3 gives 0.0064)");
    CHECK(moved == doctest::Approx(0.0099999998).epsilon(1e-6));
    // p0 had a gradient on all three steps: a constant g = 1 moves it by lr each step.
    CHECK(p0.to_vector()[0] == doctest::Approx(-0.03).epsilon(1e-6));
  }
}

TEST_CASE("Adam, Adam with weight decay and AdamW equal PyTorch when a parameter starts late") {
  const auto fx = testing::read_nn_fixture("adam_param_steps.json");
  for (const auto& [name, c] : fx.at("cases").items()) {
    CAPTURE(name);
    Tensor a = testing::fixture_tensor(fx.at("p0")).clone(), b = testing::fixture_tensor(fx.at("p1")).clone();
    a.requires_grad_(true);
    b.requires_grad_(true);
    const auto& h = c.at("hyper");
    optim::AdamOptions o;
    o.lr = h.at("lr");
    o.beta1 = h.at("betas")[0];
    o.beta2 = h.at("betas")[1];
    o.eps = h.at("eps");
    o.weight_decay = h.at("weight_decay");
    optim::Adam opt({a, b}, o, /*decoupled_weight_decay=*/name == "adamw");
    for (size_t s = 0; s < c.at("after").size(); ++s) {
      a.set_grad(testing::fixture_tensor(fx.at("grads0")[s]));
      const auto& g1 = fx.at("grads1")[s];
      b.set_grad(g1.is_null() ? Tensor() : testing::fixture_tensor(g1));  // no gradient: untouched
      opt.step();
      const std::string at = name + " step " + std::to_string(s + 1);
      testing::check_close(at + " p0", a, testing::fixture_tensor(c.at("after")[s][0]), 1e-6, 1e-5);
      testing::check_close(at + " p1", b, testing::fixture_tensor(c.at("after")[s][1]), 1e-6, 1e-5);
      CHECK(opt.param_step(0) == c.at("param_steps")[s][0].get<int64_t>());  // PyTorch's state['step']
      CHECK(opt.param_step(1) == c.at("param_steps")[s][1].get<int64_t>());
    }
  }
}

TEST_CASE("the per-parameter counts travel in a checkpoint file: a resumed run corrects p1 with t = 1") {
  Tensor p0 = param({0.0f}), p1 = param({1.0f});
  TwoParams model(p0, p1);
  optim::Adam opt(model.parameters(), lr(1e-2));
  set_grad(p0, {1.0f});
  opt.step();
  opt.step();
  const std::string path = temp_path("adam.ckpt");
  train::save_training_checkpoint(path, model, &opt, train::TrainingState{});

  // A fresh process: new tensors, a new optimizer, everything from the file.
  Tensor q0 = param({7.0f}), q1 = param({7.0f});
  TwoParams resumed(q0, q1);
  optim::Adam opt2(resumed.parameters(), lr(1e-2));
  train::load_training_checkpoint(path, resumed, &opt2);
  CHECK(q1.to_vector()[0] == 1.0f);
  CHECK(opt2.param_step(0) == 2);
  CHECK(opt2.param_step(1) == 0);
  set_grad(q0, {1.0f});
  set_grad(q1, {0.5f});
  opt2.step();
  CHECK(1.0 - q1.to_vector()[0] == doctest::Approx(0.0099999998).epsilon(1e-6));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

// Checkpoints written before the per-parameter count existed hold only the global count
// ("steps"). Loading one gives every parameter that has Adam moments (it had a gradient)
// t = steps, and a parameter without moments (it never had one) t = 0. When every parameter
// had a gradient on every step, which is how halfgrad's chapters train, that is exactly the
// count PyTorch would hold, so the resumed run continues bit for bit.
TEST_CASE("an optimizer state with only the global step count still loads") {
  Tensor a = param({1.0f, 2.0f}), b = param({-1.0f});
  optim::Adam first({a, b}, lr(1e-2));
  for (int s = 0; s < 3; ++s) {
    set_grad(a, {0.3f, -0.1f});
    set_grad(b, {0.2f});
    first.step();
  }
  optim::OptimizerState old = first.state_dict();
  old.meta.erase("param_steps");
  REQUIRE(old.meta.at("steps") == 3);

  Tensor a2 = param(a.to_vector()), b2 = param(b.to_vector());
  optim::Adam second({a2, b2}, lr(1e-2));
  second.load_state_dict(old);
  CHECK(second.param_step(0) == 3);
  CHECK(second.param_step(1) == 3);
  for (Tensor* p : {&a, &a2}) set_grad(*p, {0.3f, -0.1f});
  for (Tensor* p : {&b, &b2}) set_grad(*p, {0.2f});
  first.step();
  second.step();
  CHECK(a2.to_vector() == a.to_vector());
  CHECK(b2.to_vector() == b.to_vector());

  // A parameter that never had a gradient has no moments in the old state: its count is 0,
  // so its first step is a first step (lr · sign(g)).
  Tensor c = param({0.0f}), d = param({1.0f});
  optim::Adam late({c, d}, lr(1e-2));
  set_grad(c, {1.0f});
  late.step();
  late.step();
  optim::OptimizerState old_late = late.state_dict();
  old_late.meta.erase("param_steps");
  Tensor c2 = param(c.to_vector()), d2 = param(d.to_vector());
  optim::Adam resumed({c2, d2}, lr(1e-2));
  resumed.load_state_dict(old_late);
  CHECK(resumed.param_step(0) == 2);
  CHECK(resumed.param_step(1) == 0);
  set_grad(c2, {1.0f});
  set_grad(d2, {0.5f});
  resumed.step();
  CHECK(1.0 - d2.to_vector()[0] == doctest::Approx(0.0099999998).epsilon(1e-6));
}

TEST_CASE("a bad per-parameter count is refused with the field named, and nothing changes") {
  Tensor a = param({1.0f}), b = param({2.0f});
  optim::Adam opt({a, b}, lr(1e-2));
  set_grad(a, {1.0f});
  set_grad(b, {1.0f});
  opt.step();
  const optim::OptimizerState good = opt.state_dict();
  for (const nlohmann::json& bad : {nlohmann::json::array({1}), nlohmann::json::array({1, -1}),
                                    nlohmann::json("1, 1"), nlohmann::json::array({1, 2.5})}) {
    CAPTURE(bad.dump());
    optim::OptimizerState s = good;
    s.meta["param_steps"] = bad;
    Tensor x = param({1.0f}), y = param({2.0f});
    optim::Adam fresh({x, y}, lr(1e-2));
    CHECK_THROWS_WITH_AS(fresh.load_state_dict(s), doctest::Contains("param_steps"), std::runtime_error);
    CHECK(fresh.steps_taken() == 0);
    CHECK(fresh.param_step(0) == 0);
  }
}
