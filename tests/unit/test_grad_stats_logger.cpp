// GradStatsLogger on parameters: histograms of each .grad, and the measured fraction of
// updates the optimizer lost to rounding (weight unchanged although its gradient was not 0),
// and the format the gradient values were held in.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "framework/amp/grad_stats_logger.h"
#include "framework/optim/sgd.h"

using hg::DType;
using hg::Tensor;

namespace {
Tensor param(std::vector<float> v, DType d) {
  Tensor p = Tensor::from_vector(v, {int64_t(v.size())}, d);
  p.requires_grad_(true);
  return p;
}
}  // namespace

TEST_CASE("lost updates are measured on F16 weights and absent on F32 weights") {
  for (DType d : {DType::F16, DType::F32}) {
    INFO(std::string(hg::dtype_name(d)));
    // 2048 - 1·(-1) = 2049: a tie in F16 (spacing 2) that rounds back to 2048  -> lost
    // 1.0  - 1·(-0.5) = 1.5: representable                                      -> moved
    // 3.0 with gradient 0: nothing asked to move                                -> not counted
    Tensor w = param({2048.0f, 1.0f, 3.0f}, d);
    Tensor b = param({0.5f}, d);
    std::vector<hg::nn::NamedTensor> named = {{"w", w}, {"b", b}};
    hg::optim::SGD opt({w, b}, {.lr = 1.0});
    w.set_grad(Tensor::from_vector(std::vector<float>{-1.0f, -0.5f, 0.0f}, {3}, d));
    b.set_grad(Tensor::from_vector(std::vector<float>{0.25f}, {1}, d));
    hg::amp::GradStatsLogger stats(50);
    CHECK(stats.due(0));
    CHECK_FALSE(stats.due(49));
    CHECK(stats.due(100));
    stats.capture(100, named, 1.0);
    opt.step();
    auto hs = stats.finish(named, /*stepped=*/true);
    REQUIRE(hs.size() == 2);
    CHECK(hs[0].param == "w");
    CHECK(hs[0].total == 3);
    CHECK(hs[0].zeros == 1);
    CHECK(hs[0].counts[size_t(0 - hs[0].exp_min)] == 1);   // |-1| -> bin 0
    CHECK(hs[0].counts[size_t(-1 - hs[0].exp_min)] == 1);  // |-0.5| -> bin -1
    CHECK(hs[0].lost_update_fraction == doctest::Approx(d == DType::F16 ? 0.5 : 0.0));
    CHECK(hs[1].lost_update_fraction == 0.0);
    auto ev = hs[0].to_event(100);
    CHECK(ev["lost_update_fraction"] == doctest::Approx(d == DType::F16 ? 0.5 : 0.0));
  }
}

TEST_CASE("a skipped step reports no lost-update fraction") {
  Tensor w = param({1.0f}, DType::F32);
  std::vector<hg::nn::NamedTensor> named = {{"w", w}};
  w.set_grad(Tensor::from_vector(std::vector<float>{1.0f}, {1}));
  hg::amp::GradStatsLogger stats(1);
  stats.capture(0, named, 8.0);
  auto hs = stats.finish(named, /*stepped=*/false);
  REQUIRE(hs.size() == 1);
  CHECK(hs[0].scale == 8.0);
  CHECK(hs[0].lost_update_fraction < 0.0);
  CHECK_FALSE(hs[0].to_event(0).contains("lost_update_fraction"));
}

TEST_CASE("a histogram records the format its gradient values were held in") {
  // 2^-30 underflows F16: the F16 gradient holds a 0 where F32 and BF16 keep the value. The
  // event says which format was counted, so a reader knows an F16 underflow sits in `zeros`.
  const std::vector<float> g = {1.0f, std::ldexp(1.0f, -30)};
  struct Case { DType dtype; const char* name; int64_t zeros, underflow; };
  for (const Case c : {Case{DType::F16, "f16", 1, 0}, Case{DType::BF16, "bf16", 0, 1},
                       Case{DType::F32, "f32", 0, 1}}) {
    INFO(c.name);
    Tensor w = param({0.0f, 0.0f}, c.dtype);
    w.set_grad(Tensor::from_vector(g, {2}, c.dtype));
    const auto hs = hg::amp::grad_histograms({{"w", w}}, 1.0);
    REQUIRE(hs.size() == 1);
    CHECK(hs[0].dtype == c.name);
    CHECK(hs[0].zeros == c.zeros);
    CHECK(hs[0].fp16_underflow == c.underflow);
    CHECK(hs[0].to_event(0)["dtype"] == c.name);
  }
  // Values added by hand come with no format: the event leaves the field out.
  hg::amp::GradHistogram by_hand("w", 1.0);
  by_hand.add(g.data(), int64_t(g.size()));
  CHECK_FALSE(by_hand.to_event(0).contains("dtype"));
}
