// The GPT with its projections in FP8 (GPTConfig::fp8, framework/nn/models/gpt.h): the same
// initial weights as the plain GPT from the same seed, an Fp8Linear that takes (B, T, C),
// logits close to the F32 model's within FP8's rounding, a gradient for every parameter,
// a loss that falls under each recipe, and an fp8_scale record for x, w and dy of every
// projection with the HYBRID formats.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "datasets/text.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/autograd/grad_mode.h"
#include "framework/nn/models/gpt.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/train/lm_step.h"

using namespace hg;
using fp8::Recipe;

namespace {

const Recipe kRecipes[] = {Recipe::Current, Recipe::Delayed, Recipe::Block, Recipe::Mx};

data::TextCorpus tiny_corpus() {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sat on the mat. the dog sat on the log.\n";
  return data::make_text_corpus(text, "tiny corpus", 16);
}

nn::GPTConfig tiny_config(int64_t vocab, std::optional<fp8::RecipeConfig> recipe) {
  nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 32;
  c.block_size = 16;
  c.vocab_size = vocab;
  c.fp8 = recipe;
  return c;
}

// sqrt(Σ (a − b)²) / sqrt(Σ b²)
double relative_rms(const Tensor& got, const Tensor& want) {
  const std::vector<double> a = got.to_double_vector(), b = want.to_double_vector();
  REQUIRE(a.size() == b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("fp8 gpt: the same initial weights as the plain GPT from the same seed, projections named by path") {
  const data::TextCorpus corpus = tiny_corpus();
  for (Recipe r : kRecipes) {
    Generator g1(7), g2(7);
    nn::GPT plain(tiny_config(corpus.vocab_size(), std::nullopt), g1);
    nn::GPT f8(tiny_config(corpus.vocab_size(), fp8::RecipeConfig{r, true}), g2);
    const auto a = plain.named_parameters(), b = f8.named_parameters();
    REQUIRE(a.size() == b.size());
    int differ = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].name == b[i].name);
      differ += a[i].tensor.to_vector() != b[i].tensor.to_vector();
    }
    INFO(fp8::recipe_name(r), ": ", differ, " of ", a.size(), " parameters differ");
    CHECK(differ == 0);
    // and the generators are where they were: what is drawn next (dropout) is the same too
    CHECK(g1.uniform() == g2.uniform());
    const auto& block1 = dynamic_cast<const nn::Block&>((*f8.transformer->h)[1]);
    auto c_fc = std::dynamic_pointer_cast<fp8::Fp8Linear>(block1.mlp->c_fc);
    REQUIRE(c_fc != nullptr);
    CHECK(c_fc->scalers->x.last().tensor == "h.1.mlp.c_fc.x");
    const auto& plain1 = dynamic_cast<const nn::Block&>((*plain.transformer->h)[1]);
    CHECK(std::dynamic_pointer_cast<fp8::Fp8Linear>(plain1.mlp->c_fc) == nullptr);
    CHECK(f8.describe().find("FP8 projections") != std::string::npos);
  }
}

TEST_CASE("fp8 linear: (B, T, C) in, (B, T, out) out: the same values and gradients as B·T rows") {
  // Current scaling: the scales depend only on the tensors, so two layers built alike cast
  // the same codes, and the folded and the flat input must agree bit for bit.
  for (Recipe r : {Recipe::Current, Recipe::Block}) {
    Generator g1(3), g2(3), gx(4);
    fp8::Fp8Linear a(32, 24, g1, {r, true}, "a"), b(32, 24, g2, {r, true}, "b");
    Tensor x3 = Tensor::randn({2, 5, 32}, gx).requires_grad_();          // (B, T, C)
    Tensor x2 = x3.detach().reshape({10, 32}).requires_grad_();          // (B·T, C)
    Tensor dy = Tensor::randn({2, 5, 24}, gx);
    Tensor y3 = a.forward(x3), y2 = b.forward(x2);
    REQUIRE(y3.shape() == Shape{2, 5, 24});
    CHECK(y3.to_vector() == y2.to_vector());
    y3.backward(dy);
    y2.backward(dy.reshape({10, 24}));
    REQUIRE(x3.grad().shape() == Shape{2, 5, 32});
    CHECK(x3.grad().to_vector() == x2.grad().to_vector());
    CHECK(a.weight.grad().to_vector() == b.weight.grad().to_vector());
    CHECK(a.bias.grad().to_vector() == b.bias.grad().to_vector());
  }
  Generator g(0);
  fp8::Fp8Linear l(8, 4, g, {Recipe::Current, true}, "l");
  {
    // under BF16 autocast: a BF16 input is taken (widened exactly), the output is BF16, as
    // the BF16 Linear it replaces would give: the same as widening the input by hand
    const Tensor x = Tensor::randn({2, 3, 8}, g);
    const Tensor y32 = l.forward(x);
    CHECK(y32.dtype() == DType::F32);
    amp::Autocast ac(DType::BF16);
    const Tensor y16 = l.forward(x.to(DType::BF16));
    CHECK(y16.dtype() == DType::BF16);
    CHECK(y16.shape() == Shape{2, 3, 4});
    CHECK(y16.to_vector() == l.forward(x.to(DType::BF16).to(DType::F32)).to_vector());
  }
  try {
    l.forward(Tensor::zeros({2, 3, 7}));
    FAIL("a (2, 3, 7) input to a layer of 8 inputs was taken");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("expects x (..., 8), got (2, 3, 7)") != std::string::npos);
  }
}

TEST_CASE("fp8 gpt: logits within FP8's rounding of the F32 GPT's, under each recipe") {
  // E4M3 keeps 3 mantissa bits: each operand of each projection is rounded by up to 2^-4, an
  // RMS of about 0.036 of its value, and a GEMM of two rounded operands is off by about
  // √2 · 0.036 ≈ 0.05 (tests/unit/test_fp8_linear.cpp measures < 0.06). Eight projections
  // in a chain, through softmax and GELU, do not add up to eight times that (the errors are
  // independent, and the residual stream carries part of the signal past each block): the
  // bound is two GEMMs' worth, 0.1. BF16 autocast (8 bits) on the same model is the yardstick
  // below: FP8's error must be several times larger, or the model is not computing in FP8.
  const data::TextCorpus corpus = tiny_corpus();
  const data::TokenBatch batch = data::random_batch(corpus.train, 4, 16, 5, 0);
  Generator g0(11);
  nn::GPT ref(tiny_config(corpus.vocab_size(), std::nullopt), g0);
  // a trained-looking model: weights well away from the tiny initial ones, so the
  // projections matter to the logits
  {
    NoGradGuard ng;
    Generator gw(12);
    for (const auto& p : ref.named_parameters()) {
      Tensor t = p.tensor;
      add_(t, mul(Tensor::randn(t.shape(), gw), 0.1));
    }
  }
  Tensor want;
  double bf16 = 0;
  {
    NoGradGuard ng;
    want = ref.forward(batch.x, batch.B, batch.T);
    amp::Autocast ac(DType::BF16);
    bf16 = relative_rms(ref.forward(batch.x, batch.B, batch.T).to(DType::F32), want);
  }
  std::printf("BF16 autocast    relative RMS error of the logits vs F32: %.4f\n", bf16);
  for (Recipe r : kRecipes) {
    Generator g(11);
    nn::GPT model(tiny_config(corpus.vocab_size(), fp8::RecipeConfig{r, true}), g);
    model.load_state(ref.state());
    // delayed: one training forward fills the amax history (its own cast used scale 1)
    if (r == Recipe::Delayed) model.forward(batch.x, batch.B, batch.T);
    NoGradGuard ng;
    const double rel = relative_rms(model.forward(batch.x, batch.B, batch.T), want);
    std::printf("fp8 gpt %-8s relative RMS error of the logits vs F32: %.4f\n", fp8::recipe_name(r), rel);
    INFO(fp8::recipe_name(r), ": relative error ", rel, ", BF16 autocast's ", bf16);
    CHECK(rel < 0.1);
    CHECK(rel > 4 * bf16);
  }
}

TEST_CASE("fp8 gpt: a gradient for every parameter, and x, w, dy records of every projection in HYBRID formats") {
  const data::TextCorpus corpus = tiny_corpus();
  for (Recipe r : kRecipes) {
    Generator g(2);
    nn::GPT model(tiny_config(corpus.vocab_size(), fp8::RecipeConfig{r, true}), g);
    const data::TokenBatch batch = data::random_batch(corpus.train, 4, 16, 1, 0);
    amp::GradScaler off(amp::ScaleRule{}, /*enabled=*/false);
    train::accumulate_gradients(model, off, {batch}, DType::BF16);  // as chapter 14 trains it
    int missing = 0;
    for (const auto& p : model.named_parameters()) {
      const Tensor gr = p.tensor.grad();
      double norm = 0;
      if (gr.defined())
        for (double v : gr.to_double_vector()) norm += v * v;
      if (!gr.defined() || !(norm > 0) || !std::isfinite(norm)) {
        ++missing;
        MESSAGE(fp8::recipe_name(r), ": no finite non-zero gradient for ", p.name);
      }
    }
    CHECK(missing == 0);

    const std::vector<fp8::ScaleRecord> rec = model.fp8_records();
    REQUIRE(rec.size() == size_t(2 * 4 * 3));  // 2 blocks × 4 projections × x, w, dy
    std::set<std::string> names;
    for (const fp8::ScaleRecord& s : rec) {
      names.insert(s.tensor);
      const bool grad = s.tensor.size() > 3 && s.tensor.substr(s.tensor.size() - 3) == ".dy";
      INFO(s.tensor);
      CHECK(s.format == (grad ? fp8::Format::E5M2 : fp8::Format::E4M3));
      CHECK(s.amax > 0);
      CHECK(std::isfinite(s.scale));
    }
    for (const char* layer : {"h.0.attn.c_attn", "h.0.attn.c_proj", "h.1.mlp.c_fc", "h.1.mlp.c_proj"})
      for (const char* role : {".x", ".w", ".dy"}) CHECK(names.count(std::string(layer) + role) == 1);
    CHECK(names.size() == rec.size());
  }
  Generator g(2);
  CHECK(nn::GPT(tiny_config(tiny_corpus().vocab_size(), std::nullopt), g).fp8_records().empty());
}

TEST_CASE("fp8 gpt: AdamW steps on a tiny corpus lower the loss under each recipe") {
  const data::TextCorpus corpus = tiny_corpus();
  amp::GradScaler off(amp::ScaleRule{}, /*enabled=*/false);
  for (Recipe r : kRecipes) {
    Generator g(1);
    nn::GPT model(tiny_config(corpus.vocab_size(), fp8::RecipeConfig{r, true}), g);
    optim::AdamOptions o;
    o.lr = 1e-2;
    optim::AdamW opt(model.parameters(), o);
    auto val_loss = [&] {
      NoGradGuard ng;
      data::TokenBatch b = data::random_batch(corpus.val, 8, 16, /*seed=*/99, 0);
      amp::Autocast ac(DType::BF16);
      return nn::GPT::loss(model.forward(b.x, b.B, b.T), b.y).item();
    };
    const double before = val_loss();
    for (int64_t step = 0; step < 15; ++step) {
      opt.zero_grad();
      train::accumulate_gradients(model, off, {data::random_batch(corpus.train, 8, 16, 1, step)}, DType::BF16);
      opt.step();
    }
    const double after = val_loss();
    std::printf("fp8 gpt %-8s validation loss %.4f -> %.4f after 15 steps\n", fp8::recipe_name(r), before, after);
    INFO(fp8::recipe_name(r), ": ", before, " -> ", after);
    CHECK(std::isfinite(after));
    CHECK(after < 0.75 * before);
  }
}
