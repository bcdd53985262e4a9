#pragma once
// The language model of chapters 12, 13 and 14, trained one way, written once: chapter 12's
// GPT on characters, with nanoGPT's recipe. Each chapter adds only its idea around it —
// 12 the memory and the compute, 13 the ranks, 14 the FP8 projections.
//
//   GptFlags gpt;  gpt.model.n_layer = 2;            the chapter's defaults, then
//   add_gpt_flags(app, gpt);                         --n-layer --n-head --n-embd --block-size
//   HG_PARSE_FLAGS(app, argc, argv);                 --text --steps --warmup --min-lr-ratio
//   gpt.settle(app);  gpt.problem();                 --grad-clip --eval-batches
//   TextCorpus corpus = load_text_corpus(gpt.text, gpt.model.block_size);
//   GPT model(gpt.config(corpus), gen);
//   AdamW opt(model.parameters(), lm_adamw(lr, weight_decay));
//   LRSchedule schedule = lm_schedule(gpt, lr);
//   for (step = 0; step < gpt.steps; ++step) {
//     opt.set_lr(schedule.lr_at(step));
//     LmStep s = lm_step(model, opt, scaler, random_batch(corpus.train, B, T, seed, step), K, low, gpt.grad_clip);
//   }
//   validation_loss(model, corpus.val, B, T, K, gpt.eval_batches, low)   beside   baselines(corpus)
//
// The recipe (nanoGPT's for small character models):
//   AdamW       β = (0.9, 0.99): the second moment follows faster than 0.999's; weight decay
//               decoupled (chapter 12 takes 0.1)
//   schedule    linear warmup from 0 to lr over --warmup steps, then a cosine down to
//               lr · --min-lr-ratio at --steps
//   clipping    the global gradient norm to --grad-clip (1), after unscaling
//   a step      the batch of B sequences as K micro-batches, one update (lm_step.h)
//   validation  --eval-batches fixed batches of the validation text, drawn with kValSeed
//               whatever --seed, so every run of every chapter is measured on the same text
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/text.h"
#include "framework/amp/grad_scaler.h"
#include "framework/nn/models/gpt.h"
#include "framework/optim/adam.h"
#include "framework/optim/lr_schedule.h"
#include "framework/train/lm_step.h"

namespace CLI {
class App;
}

namespace hg::train {

// ---- the flags ------------------------------------------------------------------------------------

// The GPT's flags, shared by the three chapters. A chapter sets its defaults in the struct
// before add_gpt_flags() (chapter 12's are below), and adds its own flags beside them.
struct GptFlags {
  nn::GPTConfig model = chapter_12_model();  // the shape; vocab_size comes from the corpus
  std::string text;                 // --text FILE: a UTF-8 text; "" = Debian's fortunes
  int64_t steps = 600;              // --steps: optimizer steps (no epochs: random windows)
  int64_t warmup = 30;              // --warmup: given, or a tenth of --steps up to this (settle)
  double min_lr_ratio = 0.1;        // --min-lr-ratio: the cosine ends at lr · this
  double grad_clip = 1.0;           // --grad-clip: the global gradient norm's cap (0: none)
  int64_t eval_batches = 10;        // --eval-batches: validation batches per evaluation

  static nn::GPTConfig chapter_12_model();  // n_layer 4, n_head 4, n_embd 128, block_size 64
  // The flags' names, for a chapter that refuses them with another model.
  static std::vector<std::string> names();
  // After parsing: --warmup left out becomes a tenth of --steps, at least 1 and at most its
  // default (a short run warms up for its first tenth).
  void settle(const CLI::App& app);
  // "" or why the flags cannot make a run: the shape (GPTConfig::validate, with any
  // vocabulary), or a warmup that leaves no step of the cosine.
  std::string problem() const;
  // The model for `corpus`: the shape, and the corpus's vocabulary.
  nn::GPTConfig config(const data::TextCorpus& corpus) const;
};

void add_gpt_flags(CLI::App& app, GptFlags& f);

// ---- the recipe -----------------------------------------------------------------------------------

// The validation batches are drawn with this seed, whatever --seed is.
inline constexpr uint64_t kValSeed = 0x5eed0f7a1;

// AdamW as nanoGPT sets it for small character models: β2 = 0.99.
optim::AdamOptions lm_adamw(double lr, double weight_decay);

// Linear warmup to lr over f.warmup steps, then a cosine to lr · f.min_lr_ratio at f.steps.
optim::LRSchedule lm_schedule(const GptFlags& f, double lr);

// ---- what a model must beat, and how it does --------------------------------------------------------

// Uniform: every token equally likely, ln V nats. Unigram: each token with its training
// frequency (add-one smoothed, so a character that only the validation text holds costs a
// finite amount), measured on the validation text. A model below the unigram loss has
// learned something about context, not just which letters are common.
struct Baselines {
  double uniform = 0, unigram = 0;
};
Baselines baselines(const data::TextCorpus& corpus);

// The sum of the mean losses of validation batches i = first, first + stride, ... below
// `batches` (B windows each, drawn with kValSeed), without a graph, in the run's precision,
// each batch in K micro-batches as training computes it (only a K-th of it in memory at a
// time). Ranks that share the work take first = rank, stride = N, and add their sums.
double validation_loss_sum(nn::GPT& model, const std::vector<int32_t>& val, int64_t B, int64_t T, int64_t K,
                           int64_t batches, DType autocast, int64_t first = 0, int64_t stride = 1);

// The mean loss over the `batches` validation batches: one process's validation loss.
double validation_loss(nn::GPT& model, const std::vector<int32_t>& val, int64_t B, int64_t T, int64_t K,
                       int64_t batches, DType autocast);

}  // namespace hg::train
