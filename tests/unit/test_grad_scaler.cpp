// GradScaler on real parameters and optimizers: the scale sequence, skipped steps that
// leave everything bit-for-bit as it was, the unscale-twice error, clipping after unscale,
// gradient accumulation and the state_dict round trip.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "framework/amp/grad_scaler.h"
#include "framework/amp/unscale.h"
#include "framework/dtype/bfloat16.h"
#include "framework/ops/elementwise.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"

using hg::DType;
using hg::Tensor;
using hg::amp::GradScaler;
using hg::amp::ScaleRule;

namespace {
Tensor param(std::vector<float> v) {
  Tensor p = Tensor::from_vector(v, {int64_t(v.size())});
  p.requires_grad_(true);
  return p;
}
// Sets p.grad to values · scale, as a backward pass of a loss multiplied by `scale` would.
void set_scaled_grad(Tensor& p, std::vector<float> g, float scale) {
  for (auto& x : g) x *= scale;
  p.set_grad(Tensor::from_vector(g, p.shape()));
}
std::vector<uint32_t> bits_of(const Tensor& t) {
  std::vector<float> v = t.to_vector();
  std::vector<uint32_t> b(v.size());
  std::memcpy(b.data(), v.data(), v.size() * 4);
  return b;
}
const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
}  // namespace

TEST_CASE("scripted finite / inf steps give the rule's scale sequence and skip exactly the bad ones") {
  ScaleRule rule;
  rule.init_scale = 1024.0f;
  rule.growth_interval = 2;
  GradScaler scaler(rule);
  Tensor w = param({1.0f, 2.0f});
  hg::optim::SGD opt({w}, {.lr = 0.5});
  // script: F F I F N F F  (I = inf, N = NaN)
  // scale used:        1024 1024 2048 1024 1024  512 512
  // stepped:              y    y    n    y    n    y   y
  // scale after:       1024 2048 1024 1024  512  512 1024
  const char* script = "FFIFNFF";
  const std::vector<float> want_used = {1024, 1024, 2048, 1024, 1024, 512, 512};
  const std::vector<float> want_after = {1024, 2048, 1024, 1024, 512, 512, 1024};
  const std::vector<bool> want_stepped = {true, true, false, true, false, true, true};
  for (int i = 0; script[i]; ++i) {
    const float used = scaler.get_scale();
    CHECK(used == want_used[size_t(i)]);
    const float bad = script[i] == 'I' ? kInf : script[i] == 'N' ? kNaN : 0.25f;
    set_scaled_grad(w, {0.5f, bad}, used);
    const bool stepped = scaler.step(opt);
    scaler.update();
    INFO("step " << i << " script " << script[i]);
    CHECK(stepped == want_stepped[size_t(i)]);
    CHECK(scaler.get_scale() == want_after[size_t(i)]);
    CHECK(scaler.last_found_inf() == !want_stepped[size_t(i)]);
  }
  CHECK(opt.steps_taken() == 5);
}

TEST_CASE("unscale_ divides the gradients by the scale exactly") {
  GradScaler scaler;  // 2^16
  Tensor w = param({0.0f, 0.0f, 0.0f});
  hg::optim::SGD opt({w}, {.lr = 0.1});
  const std::vector<float> g = {1e-6f, -3.5f, 7.0f};
  set_scaled_grad(w, g, scaler.get_scale());
  scaler.unscale_(opt);
  // Multiplying and dividing by a power of two is exact (no overflow, no subnormals here).
  CHECK(w.grad().to_vector() == g);
}

TEST_CASE("a skipped step leaves parameters and optimizer state bit-for-bit unchanged") {
  for (const char* which : {"sgd", "adam"}) {
    INFO(which);
    Tensor w = param({0.1f, -0.2f, 0.3f});
    Tensor b = param({0.05f});
    std::unique_ptr<hg::optim::Optimizer> opt;
    if (std::string(which) == "sgd")
      opt = std::make_unique<hg::optim::SGD>(std::vector<Tensor>{w, b},
                                             hg::optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    else
      opt = std::make_unique<hg::optim::Adam>(std::vector<Tensor>{w, b},
                                              hg::optim::AdamOptions{.lr = 0.01});
    GradScaler scaler;
    // One good step so that the optimizer has state (momentum, Adam moments, step count).
    set_scaled_grad(w, {0.3f, 0.2f, -0.1f}, scaler.get_scale());
    set_scaled_grad(b, {0.7f}, scaler.get_scale());
    REQUIRE(scaler.step(*opt));
    scaler.update();
    const auto w_before = bits_of(w), b_before = bits_of(b);
    const auto state_before = opt->state_dict();
    // Now one parameter's gradient overflows.
    set_scaled_grad(w, {0.3f, kInf, -0.1f}, scaler.get_scale());
    set_scaled_grad(b, {0.7f}, scaler.get_scale());
    CHECK_FALSE(scaler.step(*opt));
    scaler.update();
    CHECK(bits_of(w) == w_before);
    CHECK(bits_of(b) == b_before);
    const auto state_after = opt->state_dict();
    CHECK(state_after.meta == state_before.meta);
    REQUIRE(state_after.tensors.size() == state_before.tensors.size());
    for (size_t i = 0; i < state_before.tensors.size(); ++i) {
      INFO(state_before.tensors[i].name);
      CHECK(bits_of(state_after.tensors[i].tensor) == bits_of(state_before.tensors[i].tensor));
    }
    CHECK(opt->steps_taken() == 1);
    CHECK(scaler.get_scale() == 32768.0f);
  }
}

TEST_CASE("unscale_ twice before update() is an error that says why") {
  GradScaler scaler;
  Tensor w = param({1.0f});
  hg::optim::SGD opt({w}, {.lr = 0.1});
  set_scaled_grad(w, {1.0f}, scaler.get_scale());
  scaler.unscale_(opt);
  CHECK_THROWS_WITH_AS(scaler.unscale_(opt), doctest::Contains("already called"), std::logic_error);
  CHECK(scaler.step(opt));  // step after an explicit unscale_ does not unscale again
  CHECK(w.to_vector()[0] == doctest::Approx(1.0f - 0.1f));
  CHECK_THROWS_WITH_AS(scaler.step(opt), doctest::Contains("already called"), std::logic_error);
  scaler.update();
  // After update() the next step may unscale again.
  set_scaled_grad(w, {1.0f}, scaler.get_scale());
  CHECK_NOTHROW(scaler.unscale_(opt));
}

TEST_CASE("clipping after unscale_ sees the true gradient norm") {
  GradScaler scaler;
  Tensor w = param({0.0f, 0.0f});
  Tensor b = param({0.0f});
  hg::optim::SGD opt({w, b}, {.lr = 1.0});
  const std::vector<float> gw = {3.0f, 0.0f}, gb = {4.0f};  // ‖g‖ = 5
  set_scaled_grad(w, gw, scaler.get_scale());
  set_scaled_grad(b, gb, scaler.get_scale());
  scaler.unscale_(opt);
  const double norm = hg::amp::clip_grad_norm_(opt.params(), 1.0);
  CHECK(norm == doctest::Approx(5.0));
  // Clipped to norm 1: g · 1/(5 + 1e-6)
  CHECK(w.grad().to_vector()[0] == doctest::Approx(3.0 / (5.0 + 1e-6)).epsilon(1e-6));
  CHECK(b.grad().to_vector()[0] == doctest::Approx(4.0 / (5.0 + 1e-6)).epsilon(1e-6));
  CHECK(scaler.step(opt));
  scaler.update();
  CHECK(w.to_vector()[0] == doctest::Approx(-0.6).epsilon(1e-5));
  // Without unscaling first the norm would be 5 · 2^16: the clip would flatten everything.
  set_scaled_grad(w, gw, scaler.get_scale());
  set_scaled_grad(b, gb, scaler.get_scale());
  CHECK(hg::amp::clip_grad_norm_(opt.params(), 1.0) == doctest::Approx(5.0 * 65536.0));
}

TEST_CASE("gradient accumulation: backward on 4 scaled micro-batches, one check, one update") {
  ScaleRule rule;
  rule.growth_interval = 1;  // so the single update is visible as one doubling
  GradScaler scaler(rule);
  Tensor w = param({1.0f, -1.0f});
  hg::optim::SGD opt({w}, {.lr = 0.1});
  opt.zero_grad();
  std::vector<double> want = {0.0, 0.0};
  for (int micro = 0; micro < 4; ++micro) {
    // loss_k = Σ_i x_ki · w_i  ->  dloss/dw = x_k
    const std::vector<float> x = {float(micro + 1), float(2 * micro)};
    Tensor y = hg::mul(w, Tensor::from_vector(x, {2}));  // (2)
    scaler.scale(y).backward(Tensor::ones({2}));
    want[0] += x[0];
    want[1] += x[1];
  }
  CHECK(scaler.checks() == 0);
  CHECK(scaler.step(opt));
  scaler.update();
  CHECK(scaler.checks() == 1);
  CHECK(scaler.get_scale() == 131072.0f);  // one update, not four
  const auto g = w.grad().to_vector();
  CHECK(g[0] == doctest::Approx(want[0]));  // unscaled: 1+2+3+4 = 10
  CHECK(g[1] == doctest::Approx(want[1]));  // 0+2+4+6 = 12
}

TEST_CASE("state_dict round trip continues the same sequence") {
  ScaleRule rule;
  rule.growth_interval = 3;
  rule.max_scale = 1e6f;
  GradScaler a(rule);
  Tensor w = param({1.0f});
  hg::optim::SGD opt({w}, {.lr = 0.0});
  auto one_step = [&](GradScaler& s, bool bad) {
    set_scaled_grad(w, {bad ? kInf : 1.0f}, s.get_scale());
    s.step(opt);
    s.update();
  };
  one_step(a, false);
  one_step(a, true);
  one_step(a, false);
  const auto saved = a.state_dict();
  GradScaler b;  // default rule; loading replaces it
  b.load_state_dict(nlohmann::json::parse(saved.dump()));  // through text, as a checkpoint
  CHECK(b.get_scale() == a.get_scale());
  CHECK(b.growth_tracker() == a.growth_tracker());
  CHECK(b.rule().growth_interval == 3);
  CHECK(b.rule().max_scale == 1e6f);
  for (bool bad : {false, false, true, false, false, false}) {
    one_step(a, bad);
    one_step(b, bad);
    CHECK(a.get_scale() == b.get_scale());
    CHECK(a.growth_tracker() == b.growth_tracker());
  }
  nlohmann::json broken = saved;
  broken.erase("growth_tracker");
  CHECK_THROWS_WITH_AS(b.load_state_dict(broken), doctest::Contains("growth_tracker"),
                       std::invalid_argument);
}

TEST_CASE("a disabled scaler is a pass-through") {
  GradScaler scaler(ScaleRule{}, /*enabled=*/false);
  Tensor w = param({1.0f});
  hg::optim::SGD opt({w}, {.lr = 0.5});
  Tensor loss = hg::mul(w, 3.0);
  CHECK(scaler.scale(loss).same(loss));
  w.set_grad(Tensor::from_vector(std::vector<float>{2.0f}, {1}));
  CHECK(scaler.step(opt));
  scaler.update();
  CHECK(w.to_vector()[0] == doctest::Approx(0.0f));
}

TEST_CASE("max_abs_grad: the largest finite |g| over every parameter, inf and NaN ignored") {
  Tensor a = param({1, 2, 3}), b = param({0, 0}), c = param({5});
  set_scaled_grad(a, {0.5f, -7.25f, 2.0f}, 1.0f);
  set_scaled_grad(b, {kInf, -3.0f}, 1.0f);
  // c has no gradient: skipped
  CHECK(hg::amp::max_abs_grad({a, b, c}) == 7.25);
  set_scaled_grad(b, {kNaN, -9.5f}, 1.0f);
  CHECK(hg::amp::max_abs_grad({a, b, c}) == 9.5);
  CHECK(hg::amp::max_abs_grad({c}) == 0.0);
}

TEST_CASE("max_abs_grad: F16 and BF16 gradients, the largest finite values, -0 and subnormals") {
  // The maximum is taken over the bits of |g| (finite floats order as their bits): the
  // largest finite F32 wins over inf, -0 counts as 0, a subnormal is above 0.
  Tensor w = Tensor::from_vector(std::vector<float>(3000, 0.0f), {3000});
  std::vector<float> g(3000, -0.0f);
  g[2999] = 0x1p-149f;  // the smallest subnormal, at the end of a long gradient
  w.set_grad(Tensor::from_vector(g, {3000}));
  CHECK(hg::amp::max_abs_grad({w}) == 0x1p-149);
  g[17] = -3.4028235e38f;  // the largest finite F32
  g[18] = -kInf;
  w.set_grad(Tensor::from_vector(g, {3000}));
  CHECK(hg::amp::max_abs_grad({w}) == double(3.4028235e38f));

  Tensor h = Tensor::from_vector(std::vector<float>{0, 0, 0, 0}, {4}).to(DType::F16);
  h.set_grad(Tensor::from_vector(std::vector<float>{-65504.0f, kInf, kNaN, 1.0f}, {4}).to(DType::F16));
  Tensor b = Tensor::from_vector(std::vector<float>{0, 0}, {2}).to(DType::BF16);
  b.set_grad(Tensor::from_vector(std::vector<float>{-1e30f, kNaN}, {2}).to(DType::BF16));
  CHECK(hg::amp::max_abs_grad({h}) == 65504.0);
  CHECK(hg::amp::max_abs_grad({h, b}) == double(float(hg::bfloat16(1e30f))));
}

TEST_CASE("a scale that backs off without end never turns a zero gradient into NaN weights") {
  // A diverging run: every step overflows and the scale halves each time. Below 2^-128 the
  // reciprocal 1/S is inf in F32, and a gradient that is 0 (S·g underflowed) became
  // 0 · inf = NaN when unscaled, after the inf/NaN check had passed it (the check looked at
  // the values before the multiply): the optimizer wrote NaN into the weights. Now the scale
  // stops at min_scale = 2^-126 (1/S = 2^126 is finite) and the check looks at the values
  // the optimizer will use.
  ScaleRule rule;
  rule.init_scale = std::ldexp(1.0f, -100);
  GradScaler scaler(rule);
  Tensor w = param({1.0f, 2.0f});
  hg::optim::SGD opt({w}, {.lr = 0.1});
  for (int i = 0; i < 40; ++i) {
    w.set_grad(Tensor::from_vector(std::vector<float>{kInf, 0.0f}, {2}));
    CHECK_FALSE(scaler.step(opt));
    scaler.update();
  }
  CHECK(scaler.get_scale() == std::numeric_limits<float>::min());  // 2^-126, not 2^-140
  // A finite step at that scale: one gradient underflowed to 0, one is a subnormal.
  w.set_grad(Tensor::from_vector(std::vector<float>{0.0f, 1e-40f}, {2}));
  CHECK(scaler.step(opt));
  scaler.update();
  const auto v = w.to_vector();
  INFO("weights " << v[0] << " " << v[1]);
  CHECK(std::isfinite(v[0]));
  CHECK(std::isfinite(v[1]));
  CHECK(v[0] == 1.0f);
}

TEST_CASE("unscale_grads_ checks the unscaled values: 0 · inf and an overflowing product are found") {
  Tensor w = param({0.0f, 0.0f});
  w.set_grad(Tensor::from_vector(std::vector<float>{0.0f, 1.0f}, {2}));
  CHECK(hg::amp::unscale_grads_({w}, kInf));  // 0 · inf = NaN
  Tensor v = param({0.0f});
  v.set_grad(Tensor::from_vector(std::vector<float>{3e38f}, {1}));
  CHECK(hg::amp::unscale_grads_({v}, 4.0f));  // 1.2e39 overflows F32: inf
  CHECK(std::isinf(v.grad().to_vector()[0]));
  Tensor u = param({0.0f});
  u.set_grad(Tensor::from_vector(std::vector<float>{3e38f}, {1}));
  CHECK_FALSE(hg::amp::unscale_grads_({u}, 0.5f));  // finite in, finite out
}

TEST_CASE("StaticScaler refuses a scale whose reciprocal overflows F32") {
  CHECK_THROWS_WITH_AS(hg::amp::StaticScaler(1e-39f), doctest::Contains("2^-126"), std::invalid_argument);
  CHECK_NOTHROW(hg::amp::StaticScaler(std::numeric_limits<float>::min()));
}

TEST_CASE("unscale_ refuses F16 gradients, as PyTorch does, and says why and what to do instead") {
  // Why: the F16 gradient holds S·g. Dividing it by S in F16 puts every value below
  // 2^-24 · S back where it was before scaling: S = 65536 turns 2^-10 into 2^-26, below
  // F16's smallest subnormal 2^-24, so it becomes 0, the very underflow the scale prevented.
  GradScaler scaler;
  Tensor w = Tensor::from_vector(std::vector<float>{1.0f}, {1}, DType::F16);
  w.requires_grad_(true);
  w.set_grad(Tensor::from_vector(std::vector<float>{std::ldexp(1.0f, -10)}, {1}, DType::F16));
  hg::optim::SGD opt({w}, {.lr = 0.1});
  for (const char* words : {"Attempting to unscale FP16 gradients.", "2^-24", "master", "chapter 07"}) {
    CAPTURE(words);
    CHECK_THROWS_WITH_AS(scaler.unscale_(opt), doctest::Contains(words), std::invalid_argument);
  }
  CHECK_THROWS_WITH_AS(scaler.step(opt), doctest::Contains("FP16"), std::invalid_argument);
  // Nothing was touched: the gradient is still 2^-10, the weight still 1.
  CHECK(w.grad().to_vector()[0] == std::ldexp(1.0f, -10));
  CHECK(w.to_vector()[0] == 1.0f);

  // BF16 gradients are allowed, as in PyTorch: BF16 has F32's exponent range.
  GradScaler bf_scaler;
  Tensor b = Tensor::from_vector(std::vector<float>{1.0f}, {1}, DType::BF16);
  b.requires_grad_(true);
  b.set_grad(Tensor::from_vector(std::vector<float>{std::ldexp(1.0f, -10)}, {1}, DType::BF16));
  hg::optim::SGD bf_opt({b}, {.lr = 0.1});
  CHECK_NOTHROW(bf_scaler.unscale_(bf_opt));
  CHECK(b.grad().to_vector()[0] == std::ldexp(1.0f, -26));
}

TEST_CASE("state_dict carries the bounds and factors, old state dicts still load, bad ones are refused") {
  ScaleRule rule;
  rule.init_scale = 8.0f;
  rule.growth_factor = 1.1;
  rule.min_scale = 0.25f;
  rule.max_scale = 1024.0f;
  GradScaler a(rule);
  const nlohmann::json saved = nlohmann::json::parse(a.state_dict().dump());  // through text
  GradScaler b;
  b.load_state_dict(saved);
  CHECK(b.rule().min_scale == 0.25f);
  CHECK(b.rule().max_scale == 1024.0f);
  CHECK(b.rule().growth_factor == 1.1);  // the double, not 1.1f

  // Written before the bounds existed: no fields, or the old "no bound" values 0 and "inf".
  const ScaleRule defaults;
  nlohmann::json old = saved;
  old.erase("min_scale");
  old.erase("max_scale");
  GradScaler c;
  c.load_state_dict(old);
  CHECK(c.rule().min_scale == defaults.min_scale);
  CHECK(c.rule().max_scale == defaults.max_scale);
  CHECK(c.get_scale() == 8.0f);
  old["min_scale"] = 0.0;
  old["max_scale"] = "inf";
  c.load_state_dict(old);
  CHECK(c.rule().min_scale == defaults.min_scale);
  CHECK(std::isinf(c.rule().max_scale));

  auto refused = [&](nlohmann::json s, const char* field) {
    GradScaler d;
    CHECK_THROWS_WITH_AS(d.load_state_dict(s), doctest::Contains(field), std::invalid_argument);
    CHECK(d.get_scale() == 65536.0f);  // unchanged
  };
  nlohmann::json bad = saved;
  bad["min_scale"] = -1.0;
  refused(bad, "min_scale");
  bad = saved;
  bad["min_scale"] = 2048.0;  // above max_scale 1024
  refused(bad, "min_scale");
  bad = saved;
  bad["scale"] = 1e-40;  // outside [min_scale, max_scale]
  refused(bad, "scale");
  bad = saved;
  bad["scale"] = 4096.0;
  refused(bad, "scale");
}
