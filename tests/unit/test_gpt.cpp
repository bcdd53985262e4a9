// The GPT of framework/nn/models/gpt.h against nanoGPT in PyTorch (tests/reference/nn/gpt.json,
// written by make_gpt_fixture.py): the same weights by name and the same tokens give the
// same logits, loss and gradients (F64 tightly, F32 within float rounding), and AdamW steps
// give the same losses. Then: it learns a tiny corpus, its initialisation is GPT-2's,
// sampling is reproducible, autocast keeps it close to F32, and bad configurations and
// inputs are named.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "datasets/text.h"
#include "framework/amp/autocast.h"
#include "framework/autograd/grad_mode.h"
#include "framework/memory/accountant.h"
#include "framework/nn/models/gpt.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/train/lm_step.h"
#include "tests/reference/nn/fixture.h"
#include "tests/unit/child_limits.h"

using namespace hg;
using nlohmann::json;

namespace {

nn::GPTConfig config_of(const json& c) {
  nn::GPTConfig g;
  g.n_layer = c.at("n_layer");
  g.n_head = c.at("n_head");
  g.n_embd = c.at("n_embd");
  g.block_size = c.at("block_size");
  g.vocab_size = c.at("vocab_size");
  g.tied = c.at("tied");
  return g;
}

// PyTorch's weights (float32 values) into a fresh model of `dtype`.
std::shared_ptr<nn::GPT> model_from(const json& fx, Generator& gen, DType dtype) {
  auto model = std::make_shared<nn::GPT>(config_of(fx.at("config")), gen);
  if (dtype != DType::F32) model->to(dtype);
  std::vector<nn::NamedTensor> state;
  for (const auto& [name, t] : fx.at("params").items()) state.push_back({name, testing::fixture_tensor(t)});
  model->load_state(state);
  return model;
}

// The tensor as float values, for testing::check_close (which compares floats).
Tensor f32(const Tensor& t) { return t.to(DType::F32); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("GPT: forward, loss and every gradient equal nanoGPT's in PyTorch (tied and untied head)") {
  const json all = testing::read_nn_fixture("gpt.json");
  for (const json& fx : all.at("cases")) {
    const bool tied = fx.at("config").at("tied");
    CAPTURE(tied);
    // F64: only the summation order differs from PyTorch's float64 run
    // F32: rounding of float32 through 2 blocks; gradients are sums of many products
    for (DType dt : {DType::F64, DType::F32}) {
      CAPTURE(dtype_name(dt));
      const double atol = dt == DType::F64 ? 1e-10 : 5e-6, rtol = dt == DType::F64 ? 1e-8 : 1e-4;
      Generator gen(0);
      auto model = model_from(fx, gen, dt);
      std::vector<std::string> order;
      for (const auto& p : model->named_parameters()) order.push_back(p.name);
      CHECK(order == fx.at("param_order").get<std::vector<std::string>>());

      const int64_t B = fx.at("B"), T = fx.at("T");
      const std::vector<int32_t> ids = fx.at("ids"), targets = fx.at("targets");
      Tensor logits = model->forward(ids, B, T);
      REQUIRE(logits.shape() == Shape{B, T, model->config.vocab_size});
      Tensor loss = nn::GPT::loss(logits, targets);
      loss.backward();
      testing::check_close("logits", f32(logits), testing::fixture_tensor(fx.at("logits")), atol, rtol);
      const double ref = fx.at("loss");
      INFO("loss " << loss.item() << ", PyTorch " << ref);
      CHECK(std::fabs(loss.item() - ref) <= atol + rtol * std::fabs(ref));
      for (const auto& p : model->named_parameters())
        testing::check_close("grad of " + p.name, f32(p.tensor.grad()),
                             testing::fixture_tensor(fx.at("grads").at(p.name)), atol, rtol);
      // positions T..block_size-1 were not used: their rows of wpe get no gradient
      std::vector<float> g = model->transformer->wpe->weight.grad().to_vector();
      const int64_t C = model->config.n_embd;
      for (int64_t i = T * C; i < int64_t(g.size()); ++i) CHECK(g[i] == 0.0f);
    }
  }
}

TEST_CASE("GPT: four AdamW steps give PyTorch's losses") {
  const json all = testing::read_nn_fixture("gpt.json");
  for (const json& fx : all.at("cases")) {
    CAPTURE(fx.at("config").at("tied").get<bool>());
    Generator gen(0);
    auto model = model_from(fx, gen, DType::F32);
    const json& a = fx.at("adamw");
    optim::AdamOptions o;
    o.lr = a.at("lr");
    o.beta1 = a.at("beta1");
    o.beta2 = a.at("beta2");
    o.eps = a.at("eps");
    o.weight_decay = a.at("weight_decay");
    optim::AdamW opt(model->parameters(), o);
    const int64_t B = fx.at("B"), T = fx.at("T");
    const std::vector<int32_t> ids = fx.at("ids"), targets = fx.at("targets");
    for (double ref : a.at("losses").get<std::vector<double>>()) {
      opt.zero_grad();
      Tensor loss = nn::GPT::loss(model->forward(ids, B, T), targets);
      INFO("loss " << loss.item() << ", PyTorch " << ref);
      CHECK(std::fabs(loss.item() - ref) <= 1e-5 + 1e-4 * ref);
      loss.backward();
      opt.step();
    }
  }
}

TEST_CASE("GPT: AdamW on a tiny corpus brings the loss far below the uniform guess") {
  // A short text repeated: after a few dozen steps the model predicts it well.
  std::string text;
  for (int i = 0; i < 40; ++i) text += "the cat sat on the mat. the dog sat on the log.\n";
  data::TextCorpus corpus = data::make_text_corpus(text, "tiny corpus", 16);
  nn::GPTConfig cfg;
  cfg.n_layer = 2;
  cfg.n_head = 2;
  cfg.n_embd = 32;
  cfg.block_size = 16;
  cfg.vocab_size = corpus.vocab_size();
  Generator gen(1);
  nn::GPT model(cfg, gen);
  optim::AdamOptions o;
  o.lr = 3e-3;
  o.weight_decay = 0.1;
  optim::AdamW opt(model.parameters(), o);
  auto val_loss = [&] {
    NoGradGuard ng;
    data::TokenBatch b = data::random_batch(corpus.val, 8, 16, /*seed=*/99, 0);
    return nn::GPT::loss(model.forward(b.x, b.B, b.T), b.y).item();
  };
  const double uniform = std::log(double(corpus.vocab_size())), before = val_loss();
  for (int64_t step = 0; step < 60; ++step) {
    data::TokenBatch b = data::random_batch(corpus.train, 8, 16, /*seed=*/1, step);
    opt.zero_grad();
    nn::GPT::loss(model.forward(b.x, b.B, b.T), b.y).backward();
    opt.step();
  }
  const double after = val_loss();
  MESSAGE("validation loss " << before << " -> " << after << " after 60 steps (uniform guess " << uniform << ")");
  CHECK(before == doctest::Approx(uniform).epsilon(0.05));  // GPT-2's small init: nearly uniform at first
  CHECK(after < 0.5 * uniform);
}

TEST_CASE("GPT: GPT-2's initialisation (N(0, 0.02²), residual projections / √(2·n_layer), norms 1 and 0)") {
  nn::GPTConfig cfg;
  cfg.n_layer = 8;
  cfg.n_head = 4;
  cfg.n_embd = 64;
  cfg.block_size = 32;
  cfg.vocab_size = 100;
  cfg.tied = false;
  Generator gen(2);
  nn::GPT model(cfg, gen);
  CHECK(model.num_parameters() == 8 * (12 * 64 * 64 + 13 * 64) + (100 + 32) * 64 + 2 * 64 + 100 * 64);
  for (const auto& p : model.named_parameters()) {
    CAPTURE(p.name);
    std::vector<double> v = p.tensor.to_double_vector();
    double s = 0, ss = 0;
    for (double x : v) s += x, ss += x * x;
    const double mean = s / v.size(), std = std::sqrt(ss / v.size() - mean * mean);
    const bool norm = p.name.find("ln_") != std::string::npos;
    if (norm && p.name.find(".weight") != std::string::npos) CHECK((mean == 1.0 && std == 0.0));
    else if (p.name.find(".bias") != std::string::npos) CHECK((mean == 0.0 && std == 0.0));
    else if (p.name.find("c_proj.weight") != std::string::npos)
      CHECK(std == doctest::Approx(0.02 / std::sqrt(16.0)).epsilon(0.05));
    else CHECK(std == doctest::Approx(0.02).epsilon(0.05));
  }
}

TEST_CASE("GPT: the tied head is the token embedding, untied it is its own parameter") {
  nn::GPTConfig cfg;
  cfg.n_layer = 1;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.block_size = 4;
  cfg.vocab_size = 5;
  Generator gen(3);
  nn::GPT tied(cfg, gen);
  CHECK(tied.lm_head == nullptr);
  CHECK(tied.head_weight().same(tied.transformer->wte->weight));
  // the table's gradient collects both uses, as the input table and as the output head:
  // row 0 is never an input, so only the head gives it a gradient
  auto row0_grad = [](nn::GPT& m) {
    nn::GPT::loss(m.forward({1, 2, 3, 4}, 1, 4), {2, 3, 4, 0}).backward();
    std::vector<float> g = m.transformer->wte->weight.grad().to_vector();
    return std::vector<float>(g.begin(), g.begin() + 8);
  };
  CHECK(row0_grad(tied) != std::vector<float>(8, 0.0f));
  cfg.tied = false;
  nn::GPT untied(cfg, gen);
  REQUIRE(untied.lm_head != nullptr);
  CHECK_FALSE(untied.head_weight().same(untied.transformer->wte->weight));
  CHECK(row0_grad(untied) == std::vector<float>(8, 0.0f));
  CHECK(untied.num_parameters() == tied.num_parameters() + 5 * 8);
  CHECK(untied.named_parameters().back().name == "lm_head.weight");
}

TEST_CASE("GPT: F16 and BF16 autocast stay close to F32, with F32 gradients for the F32 weights") {
  const json fx = testing::read_nn_fixture("gpt.json").at("cases").at(0);
  Generator gen(0);
  auto model = model_from(fx, gen, DType::F32);
  const int64_t B = fx.at("B"), T = fx.at("T");
  const std::vector<int32_t> ids = fx.at("ids"), targets = fx.at("targets");
  const double ref = fx.at("loss");
  for (DType low : {DType::F16, DType::BF16}) {
    model->zero_grad();
    Tensor loss;
    {
      amp::Autocast ac(low);
      Tensor logits = model->forward(ids, B, T);
      CHECK(logits.dtype() == low);  // the LM head is a linear: F16/BF16
      loss = nn::GPT::loss(logits, targets);
    }
    CHECK(loss.dtype() == DType::F32);
    loss.backward();
    // BF16 keeps 8 significant bits, F16 11: the loss moves by about their epsilon
    const double tol = low == DType::F16 ? 5e-3 : 3e-2;
    INFO(std::string(dtype_name(low)) << " loss " << loss.item() << ", F64 PyTorch " << ref);
    CHECK(std::fabs(loss.item() - ref) < tol * ref);
    for (const auto& p : model->named_parameters()) CHECK(p.tensor.grad().dtype() == DType::F32);
  }
}

TEST_CASE("GPT: dropout is active in training mode only") {
  nn::GPTConfig cfg;
  cfg.n_layer = 1;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.block_size = 4;
  cfg.vocab_size = 5;
  cfg.dropout = 0.5;
  Generator gen(4);
  nn::GPT model(cfg, gen);
  const std::vector<int32_t> ids = {1, 2, 3, 4};
  NoGradGuard ng;
  model.eval();
  CHECK(model.forward(ids, 1, 4).to_vector() == model.forward(ids, 1, 4).to_vector());
  model.train();
  CHECK(model.forward(ids, 1, 4).to_vector() != model.forward(ids, 1, 4).to_vector());
}

TEST_CASE("generate: extends the prompt, crops the context at block_size, and repeats with the seed") {
  nn::GPTConfig cfg;
  cfg.n_layer = 1;
  cfg.n_head = 2;
  cfg.n_embd = 8;
  cfg.block_size = 4;
  cfg.vocab_size = 6;
  Generator init(5);
  nn::GPT model(cfg, init);
  Generator g1(42), g2(42), g3(43);
  std::vector<int32_t> a = nn::generate(model, {1, 2}, 20, 1.0, g1);  // grows past block_size
  CHECK(a.size() == 22);
  CHECK(a[0] == 1);
  CHECK(a[1] == 2);
  for (int32_t id : a) CHECK((id >= 0 && id < 6));
  CHECK(nn::generate(model, {1, 2}, 20, 1.0, g2) == a);
  CHECK(nn::generate(model, {1, 2}, 20, 1.0, g3) != a);
  CHECK(model.is_training());  // restored
  CHECK(error_of([&] { nn::generate(model, {}, 1, 1.0, g1); }).find("at least one token") != std::string::npos);
  CHECK(error_of([&] { nn::generate(model, {1}, 1, 0.0, g1); }).find("temperature must be > 0") != std::string::npos);
}

TEST_CASE("GPT: bad configurations and inputs are named") {
  Generator gen(6);
  nn::GPTConfig cfg;
  cfg.vocab_size = 10;
  cfg.n_embd = 30;
  cfg.n_head = 4;
  CHECK(error_of([&] { nn::GPT m(cfg, gen); }) ==
        "GPT config: n_embd (30) must be a multiple of n_head (4): each head gets n_embd / n_head channels");
  cfg.n_embd = 32;
  cfg.vocab_size = 0;
  CHECK(error_of([&] { nn::GPT m(cfg, gen); }) == "GPT config: vocab_size must be ≥ 1, got 0");
  cfg.vocab_size = 10;
  cfg.dropout = 1.0;
  CHECK(error_of([&] { nn::GPT m(cfg, gen); }) == "GPT config: dropout must be in [0, 1), got 1");
  cfg.dropout = 0;
  cfg.block_size = 8;
  cfg.n_layer = 1;
  nn::GPT model(cfg, gen);
  CHECK(error_of([&] { model.forward(std::vector<int32_t>(9, 0), 1, 9); }) ==
        "GPT: a sequence of 9 tokens; the model takes 1 to block_size = 8");
  CHECK(error_of([&] { model.forward(std::vector<int32_t>(7, 0), 2, 4); }) == "GPT: 7 token ids for a batch of B = 2 × T = 4");
  CHECK(error_of([&] { model.forward(std::vector<int32_t>{0, 10}, 1, 2); }).find("embedding: id 10 at position 1") == 0);
}

// --recompute (GPTConfig::recompute_blocks): every block under hg::recompute.
// The loss and every gradient are the same bits as without it — with dropout on, so the
// recomputation must draw the same masks — under F32 and under BF16 autocast; and the
// activations the step holds at its peak shrink from every block's to about one block's.
TEST_CASE("GPT: recomputed blocks give the same loss and gradient bits, for a third of the activations") {
  nn::GPTConfig cfg;
  cfg.n_layer = 6;
  cfg.n_head = 2;
  cfg.n_embd = 16;
  cfg.block_size = 8;
  cfg.vocab_size = 11;
  cfg.dropout = 0.1;
  const int64_t B = 3, T = 8;
  std::vector<int32_t> ids(B * T), targets(B * T);
  for (int64_t i = 0; i < B * T; ++i) {
    ids[i] = int32_t((i * 7 + 3) % cfg.vocab_size);
    targets[i] = int32_t((i * 5 + 1) % cfg.vocab_size);
  }
  for (DType low : {DType::F32, DType::BF16}) {
    struct Result {
      double loss;
      std::vector<std::vector<float>> grads;
      int64_t activation_peak;
    };
    auto run = [&](bool recomputed) {
      nn::GPTConfig c = cfg;
      c.recompute_blocks = recomputed;
      Generator gen(9);  // same weights and the same dropout masks in both models
      nn::GPT model(c, gen);
      hg::memory::reset_peak();
      Tensor loss;
      {
        amp::Autocast ac(low, low != DType::F32);
        loss = nn::GPT::loss(model.forward(ids, B, T), targets);
      }
      loss.backward();
      Result r{loss.item(), {}, hg::memory::usage(Device::CPU).tag_peak[int(hg::memory::Tag::Activation)]};
      for (const Tensor& p : model.parameters()) r.grads.push_back(p.grad().to_vector());
      return r;
    };
    const Result plain = run(false), ckpt = run(true);
    INFO(std::string(dtype_name(low)) << ": activations " << plain.activation_peak << " B without, " << ckpt.activation_peak
                         << " B with recomputed blocks");
    CHECK(ckpt.loss == plain.loss);
    REQUIRE(ckpt.grads.size() == plain.grads.size());
    for (size_t i = 0; i < plain.grads.size(); ++i) CHECK(ckpt.grads[i] == plain.grads[i]);
    CHECK(plain.activation_peak > 0);
    CHECK(3 * ckpt.activation_peak <= plain.activation_peak);
  }
}

TEST_CASE("GPT: a model or a batch too large for memory says how many bytes it needs, not std::bad_alloc") {
  // Each in a child allowed 100 MB more than it holds. The parameter count is checked against
  // GPT-2's formula L(12C² + 13C) + VC + TC + 2C (tied head), written out here.
  auto count = [](int64_t L, int64_t C, int64_t V, int64_t T) {
    return L * (12 * C * C + 13 * C) + V * C + T * C + 2 * C;
  };
  auto config = [](int64_t L, int64_t H, int64_t C, int64_t T, int64_t V) {
    nn::GPTConfig c;
    c.n_layer = L, c.n_head = H, c.n_embd = C, c.block_size = T, c.vocab_size = V;
    return c;
  };
  const nn::GPTConfig small = config(2, 2, 16, 8, 11);
  Generator g0(0);
  CHECK(nn::gpt_memory(small).parameters == nn::GPT(small, g0).num_parameters());
  CHECK(nn::gpt_memory(small).parameters == count(2, 16, 11, 8));

  const struct { const char* what; nn::GPTConfig c; int64_t batch; std::string must_say; } cases[] = {
      // 3.3e12 bytes of parameters: more than any machine this runs on (refused before allocating)
      {"huge", config(256, 256, 16384, 1024, 50304), 0, "parameters"},
      // 403 MB of parameters: more than the child may allocate (the allocation fails)
      {"over the limit", config(2, 4, 2048, 64, 18), 0, "parameters"},
      // a tiny model, but a batch whose attention scores alone are 537 MB
      {"batch", config(1, 2, 32, 256, 10), 1024, "a batch of 1024 sequences"}};
  for (const auto& c : cases) {
    const ChildResult r = run_limited(
        [&] {
          Generator gen(0);
          nn::GPT model(c.c, gen);
          if (c.batch == 0) return;
          data::TokenBatch b;
          b.B = c.batch, b.T = c.c.block_size;
          b.x.assign(size_t(b.B * b.T), 1);
          b.y.assign(size_t(b.B * b.T), 2);
          const amp::GradScaler off(amp::ScaleRule{}, /*enabled=*/false);
          train::accumulate_gradients(model, off, {b}, DType::F32);
        },
        size_t(100) << 20, 60);
    INFO(c.what << ": " << outcome_name(r.outcome) << ": " << r.message);
    CHECK(r.outcome == ChildResult::Refused);
    CHECK(r.message.find("out of memory") != std::string::npos);
    CHECK(r.message.find(c.must_say) != std::string::npos);
    // the parameters, exactly, and what AdamW training adds: 16 bytes a parameter
    const int64_t n = count(c.c.n_layer, c.c.n_embd, c.c.vocab_size, c.c.block_size);
    CHECK(r.message.find(std::to_string(n) + " parameters") != std::string::npos);
    CHECK(r.message.find("16 bytes a parameter") != std::string::npos);
    CHECK(r.message.find("activations") != std::string::npos);
  }
}
