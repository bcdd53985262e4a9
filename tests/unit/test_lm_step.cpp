// Gradient accumulation (framework/train/lm_step.h): K micro-batches give the gradients of
// one batch K times larger, with and without a GradScaler, and a step of K micro-batches
// is one inf/NaN check, one optimizer step and one scale update.
//
// The tolerance, and why: the two computations add the same terms in another order. The
// weight gradient of one batch is one GEMM over all B·T token rows; accumulated, it is K
// GEMMs over B·T/K rows each, whose results are then added into .grad. In F64 that
// reordering moves a gradient by ~1e-16 of its size (checked at 1e-12); in F32 by a few
// units of F32's rounding (2^-24 ≈ 6e-8) per addition (checked at 1e-5 of the largest
// gradient of the tensor). A power-of-two loss scale S and a power-of-two K multiply and
// divide exactly, so S·(L_k/K), unscaled, is bit for bit the unscaled sum.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "datasets/text.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/unscale.h"
#include "framework/nn/models/gpt.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/train/lm_step.h"

using namespace hg;

namespace {

data::TextCorpus tiny_corpus() {
  std::string text;
  for (int i = 0; i < 20; ++i) text += "the cat sat on the mat. the dog sat on the log.\n";
  return data::make_text_corpus(text, "tiny corpus", 8);
}

nn::GPTConfig tiny_config(int64_t vocab) {
  nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 16;
  c.block_size = 8;
  c.vocab_size = vocab;
  return c;
}

// The gradients of `model` after one step of `micro` micro-batches of `batch`, as doubles,
// parameter by parameter. `scaler` (when enabled) is unscaled first.
std::vector<std::vector<double>> gradients(nn::GPT& model, const data::TokenBatch& batch, int64_t K,
                                           DType autocast = DType::F32, amp::GradScaler* scaler = nullptr) {
  amp::GradScaler none(amp::ScaleRule{}, /*enabled=*/false);
  amp::GradScaler& s = scaler ? *scaler : none;
  optim::AdamW opt(model.parameters(), optim::AdamOptions{});
  opt.zero_grad();
  train::accumulate_gradients(model, s, train::split_batch(batch, K), autocast);
  if (s.is_enabled()) s.unscale_(opt);
  std::vector<std::vector<double>> out;
  for (const Tensor& p : model.parameters()) out.push_back(p.grad().to_double_vector());
  return out;
}

// max |a − b| / max |a| over each tensor, the worst tensor.
double worst_relative_difference(const std::vector<std::vector<double>>& a, const std::vector<std::vector<double>>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double diff = 0, size = 0;
    for (size_t j = 0; j < a[i].size(); ++j) {
      diff = std::max(diff, std::abs(a[i][j] - b[i][j]));
      size = std::max(size, std::abs(a[i][j]));
    }
    worst = std::max(worst, size > 0 ? diff / size : diff);
  }
  return worst;
}

}  // namespace

TEST_CASE("split_batch: K micro-batches are the batch's rows in order, K must divide B") {
  const data::TextCorpus corpus = tiny_corpus();
  const data::TokenBatch b = data::random_batch(corpus.train, 6, 8, 3, 0);
  const auto parts = train::split_batch(b, 3);
  REQUIRE(parts.size() == 3);
  std::vector<int32_t> x, y;
  for (const auto& p : parts) {
    CHECK(p.B == 2);
    CHECK(p.T == 8);
    x.insert(x.end(), p.x.begin(), p.x.end());
    y.insert(y.end(), p.y.begin(), p.y.end());
  }
  CHECK(x == b.x);
  CHECK(y == b.y);
  CHECK_THROWS_WITH_AS(train::split_batch(b, 4), doctest::Contains("6 sequences per batch do not split into 4"),
                       std::invalid_argument);
  CHECK_THROWS_AS(train::split_batch(b, 0), std::invalid_argument);
}

TEST_CASE("gradient accumulation: 4 micro-batches of 2 give the gradients of one batch of 8 (F64 and F32)") {
  const data::TextCorpus corpus = tiny_corpus();
  const data::TokenBatch batch = data::random_batch(corpus.train, 8, 8, 11, 0);
  for (DType dt : {DType::F64, DType::F32}) {
    Generator gen(5);
    nn::GPT model(tiny_config(corpus.vocab_size()), gen);
    if (dt != DType::F32) model.to(dt);
    const auto whole = gradients(model, batch, 1);
    const auto accumulated = gradients(model, batch, 4);
    const double rel = worst_relative_difference(whole, accumulated);
    INFO(std::string(dtype_name(dt)) << ": worst relative difference " << rel);
    CHECK(rel < (dt == DType::F64 ? 1e-12 : 1e-5));
    // and it is a real gradient, not zeros on both sides
    CHECK(std::abs(whole[0][0]) + std::abs(whole[0][1]) > 0);
    // one micro-batch alone is not the batch's gradient: the test would see a lost 1/K
    const auto first = gradients(model, train::split_batch(batch, 4)[0], 1);
    CHECK(worst_relative_difference(whole, first) > 1e-2);
  }
}

TEST_CASE("gradient accumulation under a GradScaler: bit for bit the unscaled sum, one check, one step, one update") {
  const data::TextCorpus corpus = tiny_corpus();
  const data::TokenBatch batch = data::random_batch(corpus.train, 8, 8, 11, 0);
  Generator gen(5);
  nn::GPT model(tiny_config(corpus.vocab_size()), gen);
  const auto plain = gradients(model, batch, 4);  // F32, no scaler
  amp::GradScaler scaler;                         // S = 2^16, a power of two
  const auto scaled = gradients(model, batch, 4, DType::F32, &scaler);
  CHECK(plain == scaled);  // exact: S and 1/S are powers of two, and so is K

  // A step of 4 micro-batches: one check, one optimizer step, one scale update.
  amp::ScaleRule rule;
  rule.growth_interval = 1;  // so the one good step doubles S
  amp::GradScaler s(rule);
  optim::AdamW opt(model.parameters(), optim::AdamOptions{});
  opt.zero_grad();
  train::accumulate_gradients(model, s, train::split_batch(batch, 4), DType::F16);
  CHECK(s.checks() == 0);  // nothing is checked while micro-batches are still adding up
  CHECK(s.step(opt));
  s.update();
  CHECK(s.checks() == 1);
  CHECK(opt.steps_taken() == 1);
  CHECK(s.get_scale() == 2.0f * 65536.0f);
}

TEST_CASE("gradient accumulation under F16 autocast: the scaled, accumulated gradients match one batch's") {
  const data::TextCorpus corpus = tiny_corpus();
  const data::TokenBatch batch = data::random_batch(corpus.train, 8, 8, 11, 0);
  Generator gen(5);
  nn::GPT model(tiny_config(corpus.vocab_size()), gen);
  amp::GradScaler s1, s4;
  const auto whole = gradients(model, batch, 1, DType::F16, &s1);
  const auto accumulated = gradients(model, batch, 4, DType::F16, &s4);
  const double rel = worst_relative_difference(whole, accumulated);
  INFO("worst relative difference " << rel);
  // F16 activations round to 2^-11; the two orders of summation round them differently, the
  // F32 accumulation of the products does not: a few F16 roundings of the largest gradient.
  CHECK(rel < 1e-2);
}

TEST_CASE("gradient accumulation under a GradScaler: an overflow in one micro-batch skips the whole step") {
  const data::TextCorpus corpus = tiny_corpus();
  const data::TokenBatch batch = data::random_batch(corpus.train, 8, 8, 11, 0);
  Generator gen(5);
  nn::GPT model(tiny_config(corpus.vocab_size()), gen);
  amp::ScaleRule rule;
  rule.init_scale = 1e30f;  // S·gradients overflow F16 (and F32's sums of them)
  amp::GradScaler s(rule);
  optim::AdamW opt(model.parameters(), optim::AdamOptions{});
  const std::vector<double> before = model.parameters()[0].to_double_vector();
  opt.zero_grad();
  train::accumulate_gradients(model, s, train::split_batch(batch, 4), DType::F16);
  CHECK_FALSE(s.step(opt));
  s.update();
  CHECK(s.checks() == 1);
  CHECK(opt.steps_taken() == 0);
  CHECK(s.get_scale() == 0.5f * 1e30f);
  CHECK(model.parameters()[0].to_double_vector() == before);
}
