// The FP8 Linear (framework/fp8/linear.h): forward and both gradients exact on small
// integers (every value and product fits FP8 and F32), delayed scaling moving only in
// training, the fp8_scale run-log event, the FP8 MLP starting from nn::MLP's weights, and
// the outlier channel that per-tensor scaling underflows and block scaling does not.
#include <doctest/doctest.h>

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "framework/autograd/grad_mode.h"
#include "framework/fp8/mlp.h"
#include "framework/nn/models/mlp.h"
#include "framework/ops/ops.h"
#include "framework/tensor/generator.h"

using hg::Tensor;
using namespace hg::fp8;

namespace {

Tensor small_ints(int64_t R, int64_t C, uint64_t seed, int range = 8) {
  std::vector<float> v(size_t(R * C));
  uint64_t s = seed;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = float(int((s >> 33) % uint64_t(2 * range + 1)) - range);
  }
  return Tensor::from_vector(v, {R, C});
}

void check_equal(const Tensor& got, const Tensor& want, const char* what) {
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  REQUIRE(g.size() == w.size());
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) bad += g[i] != w[i];
  INFO(what, ": ", bad, " of ", g.size(), " differ");
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("fp8 linear: forward, dx, dw, db exact on small integers (delayed scaling, first step: scale 1)") {
  for (Recipe r : {Recipe::Delayed}) {
    Tensor x = small_ints(6, 200, 1).requires_grad_(), w = small_ints(5, 200, 2).requires_grad_();
    Tensor b = small_ints(1, 5, 3).reshape({5}).requires_grad_();
    Tensor g = small_ints(6, 5, 4, 2);  // dL/dy: values in [-2, 2], exact in E5M2
    auto s = std::make_shared<LinearScalers>(RecipeConfig{r, true}, "fc");
    Tensor y = fp8_linear(x, w, b, s);
    y.backward(g);
    Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_(), b2 = b.detach().requires_grad_();
    Tensor y2 = hg::linear(x2, w2, b2);
    y2.backward(g);
    check_equal(y, y2, "y");
    check_equal(x.grad(), x2.grad(), "dx");
    check_equal(w.grad(), w2.grad(), "dw");
    check_equal(b.grad(), b2.grad(), "db");
    // the records of this step: amaxes of x, w and dy, the formats of HYBRID
    CHECK(s->x.last().amax == 8.0f);
    CHECK(s->dy.last().amax == 2.0f);
    CHECK(s->dy.last().format == Format::E5M2);
    CHECK(s->w.last().format == Format::E4M3);
    // and the next step's scale: 448 / 8 for x, 57344 / 2 for dy
    CHECK(s->x.last().history_amax == 8.0f);
  }
}

TEST_CASE("fp8 linear: every recipe stays close to F32 on random values") {
  hg::Generator gen(3);
  Tensor x = Tensor::randn({64, 256}, gen), w = Tensor::randn({32, 256}, gen);
  const std::vector<float> want = hg::linear(x, w).to_vector();
  for (Recipe r : {Recipe::Current, Recipe::Delayed, Recipe::Block, Recipe::Mx}) {
    auto s = std::make_shared<LinearScalers>(RecipeConfig{r, true}, "fc");
    if (r == Recipe::Delayed) {  // one step to fill the history, then cast with its scale
      hg::fp8::fp8_linear(x, w, Tensor(), s);
    }
    const std::vector<float> got = fp8_linear(x, w, Tensor(), s).to_vector();
    double num = 0, den = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      num += (got[i] - want[i]) * double(got[i] - want[i]);
      den += double(want[i]) * want[i];
    }
    const double rel = std::sqrt(num / den);
    std::printf("%-8s relative error of y vs F32: %.4f\n", recipe_name(r), rel);
    INFO(recipe_name(r), ": relative error ", rel);
    CHECK(rel < 0.06);  // E4M3 rounds each operand by up to 2^-4
    CHECK(rel > 1e-3);  // and it really is FP8
  }
}

TEST_CASE("fp8 linear: delayed scaling of dy moves after each backward pass") {
  // The backward pass runs with gradient recording off; the gradient's history must still
  // grow, or dy would be cast with scale 1 for ever (and E5M2 flush small gradients).
  auto s = std::make_shared<LinearScalers>(RecipeConfig{Recipe::Delayed, true, 4}, "fc");
  Tensor x = Tensor::full({2, 8}, 1.0), w = Tensor::full({3, 8}, 0.5).requires_grad_();
  for (int step = 0; step < 2; ++step) {
    Tensor y = fp8_linear(x, w, Tensor(), s);
    y.backward(Tensor::full({2, 3}, 0.25));
  }
  CHECK(s->dy.last().history_amax == 0.25f);
  CHECK(s->dy.last().scale == 229376.0f);  // the second step cast with 57344 / 0.25
}

TEST_CASE("fp8 linear: gradients of F32 subnormals train on under every recipe (scale FLT_MAX)") {
  // dy = 2^-149, F32's smallest subnormal: 57344 / 2^-149 is inf in F32, so each recipe's
  // scale for it is FLT_MAX (Transformer Engine's rule) and the backward pass runs.
  hg::Generator gen(5);
  Tensor x = Tensor::randn({4, 128}, gen), w = Tensor::randn({3, 128}, gen);
  for (Recipe r : {Recipe::Current, Recipe::Delayed, Recipe::Block, Recipe::Mx}) {
    INFO(recipe_name(r));
    auto s = std::make_shared<LinearScalers>(RecipeConfig{r, true, 4}, "fc");
    Tensor wr = w.detach().requires_grad_();
    for (int step = 0; step < 2; ++step) {  // delayed: the second step casts with the history's scale
      wr.zero_grad();
      Tensor y = fp8_linear(x, wr, Tensor(), s);
      CHECK_NOTHROW(y.backward(Tensor::full({4, 3}, 0x1p-149)));
    }
    CHECK(s->dy.last().amax == 0x1p-149f);
    if (r == Recipe::Current || r == Recipe::Delayed || r == Recipe::Block) CHECK(s->dy.last().scale == FLT_MAX);
    for (float g : wr.grad().to_vector()) CHECK(std::isfinite(g));
  }
}

TEST_CASE("fp8 linear: delayed scaling moves in training, not under NoGradGuard") {
  auto s = std::make_shared<LinearScalers>(RecipeConfig{Recipe::Delayed, true, 4}, "fc");
  Tensor x = Tensor::full({2, 8}, 2.0), w = Tensor::full({3, 8}, 0.5);
  {
    hg::NoGradGuard no_grad;
    fp8_linear(x, w, Tensor(), s);
  }
  CHECK(s->x.last().history_amax == 0.0f);  // nothing recorded
  fp8_linear(x, w, Tensor(), s);
  CHECK(s->x.last().history_amax == 2.0f);
  CHECK(s->x.last().scale == 1.0f);    // this step cast with the initial scale ...
  fp8_linear(x, w, Tensor(), s);
  CHECK(s->x.last().scale == 224.0f);  // ... the next one with 448 / 2
}

TEST_CASE("fp8 linear: the fp8_scale event in the run log") {
  const std::string dir = (std::filesystem::temp_directory_path() / "hg_test_fp8_scale_event").string();
  std::filesystem::remove_all(dir);
  auto s = std::make_shared<LinearScalers>(RecipeConfig{Recipe::Current, true}, "fc1");
  fp8_linear(Tensor::full({2, 8}, 4.0), Tensor::full({3, 8}, 0.5), Tensor(), s);
  {
    hg::io::RunLog log(dir, {{"lesson", "test"}});
    log_fp8_scales(log, 7, {s->x.last(), s->w.last()});
  }
  const hg::io::EventLog ev = hg::io::read_events(dir + "/events.jsonl");
  REQUIRE(ev.events.size() == 3);  // two fp8_scale events, then end
  CHECK(ev.unknown_types == 0);
  const auto& e = ev.events[0];
  CHECK(e["type"] == "fp8_scale");
  CHECK(e["step"] == 7);
  CHECK(e["tensor"] == "fc1.x");
  CHECK(e["format"] == "E4M3");
  CHECK(hg::io::event_number(e["amax"]) == 4.0);
  CHECK(hg::io::event_number(e["scale"]) == 112.0);
  CHECK(ev.events[1]["tensor"] == "fc1.w");
  std::filesystem::remove_all(dir);
}

TEST_CASE("fp8 mlp: the same weights as nn::MLP from the same seed, and a training step") {
  hg::Generator g1(5), g2(5);
  hg::nn::MLP ref(g1, 64, 32, 16, 10);
  Fp8Mlp m(g2, RecipeConfig{Recipe::Block, true}, {}, 64, 32, 16, 10);
  const auto a = ref.named_parameters(), b = m.named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].name == b[i].name);
    CHECK(a[i].tensor.to_vector() == b[i].tensor.to_vector());
  }
  hg::Generator gx(6);
  Tensor x = Tensor::randn({16, 64}, gx);
  std::vector<int32_t> labels(16);
  for (int i = 0; i < 16; ++i) labels[size_t(i)] = i % 10;
  Tensor loss = hg::cross_entropy(m(x), labels), loss_ref = hg::cross_entropy(ref(x), labels);
  loss.backward();
  CHECK(std::fabs(loss.item() - loss_ref.item()) < 0.05);
  CHECK(m.fc1->weight.grad().defined());
  CHECK(m.records().size() == 9);  // x, w, dy of three layers
  CHECK(m.records()[2].tensor == "fc1.dy");
  CHECK(m.records()[2].amax > 0);
}

TEST_CASE("fp8 outlier channel: per-tensor scaling underflows most of the tensor, blocks do not") {
  // (64, 1024) activations of size ~1e-3, one channel (column 5) at 1000: the per-tensor
  // scale 448/1000 sends the rest to ~4.5e-4, below half of E4M3's smallest subnormal
  // (2^-10 ≈ 9.8e-4): zero. A 1×128 tile scale only harms the tile holding the outlier.
  hg::Generator gen(1);
  Tensor x = Tensor::uniform({64, 1024}, -1e-3, 1e-3, gen);
  float* p = x.data<float>();
  for (int r = 0; r < 64; ++r) p[r * 1024 + 5] = 1000.0f;
  auto underflow = [&](Tile tile, const std::vector<float>& s) {
    const CastStats st = cast_stats(x, quantize(x, Format::E4M3, tile, s));
    return double(st.underflow) / double(st.nonzero);
  };
  const double per_tensor = underflow(kPerTensor, {current_scale(x, Format::E4M3)});
  const double block = underflow(kTile1x128, block_scales(x, kTile1x128, Format::E4M3));
  const double mx = underflow(kMxBlock32, mx_scales(x, Format::E4M3));
  std::printf("underflow: per tensor %.3f, 1x128 tiles %.3f, MX 32 %.3f\n", per_tensor, block, mx);
  CHECK(per_tensor > 0.5);
  CHECK(block < 0.13);  // at most the 127 neighbours of the outlier in its tile: 127/1024
  CHECK(mx < 0.04);     // 31/1024
}
