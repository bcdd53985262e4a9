#include "framework/train/lm.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "framework/amp/autocast.h"
#include "framework/autograd/grad_mode.h"
#include "framework/train/cli.h"

namespace hg::train {

// ---- the flags ------------------------------------------------------------------------------------

nn::GPTConfig GptFlags::chapter_12_model() {
  nn::GPTConfig c;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.block_size = 64;
  return c;
}

std::vector<std::string> GptFlags::names() {
  return {"--n-layer", "--n-head", "--n-embd", "--block-size", "--text", "--steps",
          "--warmup", "--min-lr-ratio", "--grad-clip", "--eval-batches"};
}

void add_gpt_flags(CLI::App& app, GptFlags& f) {
  app.add_option("--n-layer", f.model.n_layer, "transformer blocks")->capture_default_str()
      ->check(WholeIn(1, 256, "a depth from 1 to 256"));
  app.add_option("--n-head", f.model.n_head, "attention heads per block")->capture_default_str()
      ->check(WholeIn(1, 256, "a number of heads from 1 to 256"));
  app.add_option("--n-embd", f.model.n_embd, "the residual width C (a multiple of --n-head)")->capture_default_str()
      ->check(WholeIn(1, 16384, "a width from 1 to 16384"));
  app.add_option("--block-size", f.model.block_size, "context length T")->capture_default_str()
      ->check(WholeIn(1, 16384, "a context from 1 to 16384"));
  app.add_option("--text", f.text, "a UTF-8 text file to train on (default: Debian's fortunes)")
      ->check(CLI::ExistingFile);
  app.add_option("--steps", f.steps, "optimizer steps")->capture_default_str()
      ->check(WholeIn(1, 10000000, "a number of steps from 1 to 10^7"));
  app.add_option("--warmup", f.warmup, "steps of linear warmup before the cosine (default: a tenth of --steps, "
                                       "at most " + std::to_string(f.warmup) + ")")
      ->check(WholeIn(0, 10000000, "a number of steps from 0 to 10^7"));
  app.add_option("--min-lr-ratio", f.min_lr_ratio, "the cosine ends at lr times this")->capture_default_str()
      ->check(FiniteIn(0.0, 1.0, "a ratio from 0 to 1"));
  app.add_option("--grad-clip", f.grad_clip, "clip the global gradient norm to this (0: no clipping)")
      ->capture_default_str()->check(NonNegative());
  app.add_option("--eval-batches", f.eval_batches, "validation batches per evaluation")->capture_default_str()
      ->check(WholeIn(1, 100000, "a number of batches from 1 to 100000"));
}

void GptFlags::settle(const CLI::App& app) {
  if (app.count("--warmup") == 0) warmup = std::clamp<int64_t>(steps / 10, 1, warmup);
}

std::string GptFlags::problem() const {
  try {
    nn::GPTConfig c = model;
    c.vocab_size = 1;  // the corpus decides; the rest is checked now
    c.validate();
  } catch (const std::exception& e) {
    return e.what();
  }
  if (warmup >= steps)
    return "--warmup " + std::to_string(warmup) + ": must be below --steps " + std::to_string(steps);
  return "";
}

nn::GPTConfig GptFlags::config(const data::TextCorpus& corpus) const {
  nn::GPTConfig c = model;
  c.vocab_size = corpus.vocab_size();
  return c;
}

// ---- the recipe -----------------------------------------------------------------------------------

optim::AdamOptions lm_adamw(double lr, double weight_decay) {
  optim::AdamOptions ao;
  ao.lr = lr;
  ao.beta2 = 0.99;
  ao.weight_decay = weight_decay;
  return ao;
}

optim::LRSchedule lm_schedule(const GptFlags& f, double lr) {
  return optim::LRSchedule::cosine(lr, std::max<int64_t>(1, f.steps - f.warmup), lr * f.min_lr_ratio, f.warmup);
}

// ---- what a model must beat, and how it does --------------------------------------------------------

Baselines baselines(const data::TextCorpus& corpus) {
  const int64_t V = corpus.vocab_size();
  std::vector<double> count(static_cast<size_t>(V), 1.0);  // add-one
  for (int32_t id : corpus.train) count[size_t(id)] += 1;
  const double n = double(corpus.train.size()) + double(V);
  double nll = 0;
  for (int32_t id : corpus.val) nll -= std::log(count[size_t(id)] / n);
  return {std::log(double(V)), nll / double(corpus.val.size())};
}

double validation_loss_sum(nn::GPT& model, const std::vector<int32_t>& val, int64_t B, int64_t T, int64_t K,
                           int64_t batches, DType autocast, int64_t first, int64_t stride) {
  NoGradGuard no_grad;  // and FP8's delayed scaling keeps its amax histories as they are
  const bool was_training = model.is_training();
  model.eval();
  double sum = 0;
  for (int64_t i = first; i < batches; i += stride) {
    for (const data::TokenBatch& m : split_batch(data::random_batch(val, B, T, kValSeed, i), K)) {
      amp::Autocast ac(autocast == DType::F32 ? DType::F16 : autocast, /*enabled=*/autocast != DType::F32);
      sum += nn::GPT::loss(model.forward(m.x, m.B, m.T), m.y).item();
    }
  }
  model.train(was_training);
  return sum;
}

double validation_loss(nn::GPT& model, const std::vector<int32_t>& val, int64_t B, int64_t T, int64_t K,
                       int64_t batches, DType autocast) {
  return validation_loss_sum(model, val, B, T, K, batches, autocast) / double(batches * K);
}

}  // namespace hg::train
