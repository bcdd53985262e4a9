// Chapter 12 — memory and scale: a small GPT trained on text, in FP32, F16 AMP or BF16 AMP.
//
//   1. F16 in attention: the three places a transformer overflows F16 without care (the
//      scores q·kᵀ, the softmax, the loss) and the fix for each, computed with the real ops
//   2. data: a character-level corpus (Debian's fortunes, or --text FILE), and the two losses
//      a model must beat: uniform over the vocabulary, and the unigram (letter frequencies)
//   3. the model and its compute: parameters, FLOPs per token (6N + 12·L·C·T), this
//      machine's peak (the best SGEMM GFLOP/s, measured now)
//   4. training: AdamW, linear warmup then cosine decay, gradient clipping, gradient
//      accumulation (--grad-accum K), validation loss every --eval-every steps, run log,
//      checkpoints and --resume; a loss or weight that turns inf/NaN stops the run (exit 3)
//   5. the compute line (tokens/s, achieved FLOP/s, MFU), where the memory went (the
//      accountant's table: parameters, gradients, optimizer state, activations, temporaries;
//      a "memory" event per step in the run log) and a sample of generated text
//
// The GPT, its flags, its recipe (AdamW, the schedule, clipping), the step of K micro-batches,
// the validation loss and the baselines are framework/train/lm.h's: chapters 13 and 14 train
// the same model the same way. This program adds what the chapter is about: the compute and
// the memory.
//
// --plan prints the memory a model of any size needs (bytes per parameter, ZeRO stages 1–3
// over --ranks, activations per layer) from the formulas, and trains nothing:
//   ./lab lesson 12 --plan --params 7.5e9 --ranks 64 [--layers --hidden --heads --seq --batch]
// --recompute-table measures per-block activation recomputation (activation checkpointing in
// PyTorch's words) across depths, and trains nothing either.
//
// What changed from chapter 11: the model is a transformer on text instead of a CNN on
// images, the optimizer AdamW with a schedule, and a step is K micro-batches.
//
// Sections: 1. F16 in attention  2. data  3. compute  4. train  5. the end of a run  6. main
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/text.h"
#include "framework/amp/grad_scaler.h"
#include "framework/cpu/wait_policy.h"
#include "framework/io/run_log.h"
#include "framework/memory/formulas.h"
#include "framework/memory/report.h"
#include "framework/nn/models/gpt.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/train/checkpoint.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/lm.h"
#include "framework/train/resume.h"
#include "framework/train/run_folder.h"

using hg::DType;
using hg::Tensor;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kLesson = "12_memory_and_scale";

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// ---- 1. F16 in attention ------------------------------------------------------------------
// The largest finite F16 is 65504. Three places of a transformer's forward pass pass it
// long before the model itself is "large":
//   scores   q·kᵀ sums D products: entries of 32 in q and k, D = 64, give 65536
//   softmax  e^x overflows F16 for x > 11.09: a logit of 12 is an everyday value
//   loss     log(softmax) of a row that overflowed is log(inf/inf) = NaN
// and the fix of each: scale q by 1/√D before the product; subtract the row maximum and
// exponentiate in F32 (causal_softmax, F32 under autocast); the loss as a log-sum-exp in F32
// (cross_entropy, F32 under autocast).
std::string show(const Tensor& t) {
  const auto v = t.to(DType::F32).to_vector();
  return v.empty() ? "-" : fmt::format("{:g}", v[0]);
}

void show_f16_attention() {
  std::printf("== 1. F16 in attention: where it overflows (max finite F16 = 65504) and the fix ==\n");
  const int64_t T = 4, D = 64;
  // scores: one head, q and k rows of 32s
  Tensor q = Tensor::full({T, D}, 32.0, DType::F16), k = Tensor::full({T, D}, 32.0, DType::F16);
  Tensor naive = hg::matmul(q, k, false, true);                               // (T, T) F16
  Tensor fixed = hg::matmul(hg::mul(q, 1.0 / std::sqrt(double(D))), k, false, true);
  std::printf("  scores q·kᵀ, D = 64, entries 32:    F16 %-8s   q/√D first: %s  (then no 1/√D after)\n",
              show(naive).c_str(), show(fixed).c_str());
  // softmax of one row of logits [12, 0, 0, 0]
  Tensor row = Tensor::from_vector(std::vector<float>{12, 0, 0, 0}, {1, 4}).to(DType::F16);
  Tensor e = hg::exp(row);                                                    // F16: e^12 = inf
  Tensor naive_p = hg::div(e, hg::sum(e, 1, true));                           // inf/inf = NaN
  Tensor fixed_p = hg::softmax(row.to(DType::F32), -1);                      // e^(x − max) in F32
  std::printf("  softmax [12, 0, 0, 0], F16 e^x/Σ:   e^12 = %-8s p = %-6s  max-subtracted in F32: p = %s\n",
              show(e).c_str(), show(naive_p).c_str(), show(fixed_p).c_str());
  // the loss of that row for target 0
  Tensor naive_loss = hg::neg(hg::log(naive_p));
  Tensor fixed_loss = hg::cross_entropy(row.to(DType::F32), std::vector<int32_t>{0});
  std::printf("  loss −log p[0] of that row:         F16 %-8s   log-sum-exp in F32: %.6f\n",
              show(naive_loss).c_str(), fixed_loss.item());
  std::printf("  under autocast: matmul in F16, causal_softmax and cross_entropy in F32 (framework/amp/policy.cpp)\n\n");
}

// ---- 2. data ------------------------------------------------------------------------------------
// The corpus, and the two losses a model must beat (framework/train/lm.h, baselines()).
void print_data(const hg::data::TextCorpus& corpus, const hg::train::Baselines& base) {
  std::printf("== 2. data: %s\n  %lld characters (%lld train, %lld validation), vocabulary %lld\n",
              corpus.source.c_str(), (long long)corpus.num_chars, (long long)corpus.train.size(),
              (long long)corpus.val.size(), (long long)corpus.vocab_size());
  std::printf("  baselines on the validation text: uniform ln V = %.4f, unigram = %.4f nats/char\n\n", base.uniform,
              base.unigram);
}

// ---- 3. compute ------------------------------------------------------------------------------------
// FLOPs per token of one training step (forward + backward), as Kaplan et al. and PaLM count:
//   6N           every weight w of a matmul does one multiply-add (2 FLOPs) per token in the
//                forward pass and two in the backward (the input's and the weight's
//                gradients): 2 + 4 = 6 per weight. N counts the weights of the matmuls: the
//                blocks, and the token embedding as the (tied) LM head; not the position
//                embedding, which is only looked up.
//   12·L·C·T     attention's own products, which have no weights: q·kᵀ and att·v are each
//                2·T·C FLOPs per token and layer forward, ×3 with backward. Counted in full
//                (PaLM's convention), though the causal mask zeroes half of them.
struct Compute {
  int64_t matmul_params = 0;     // N
  double flops_per_token = 0;    // 6N + 12·L·C·T
  double peak_gflops = 0;        // the best SGEMM of this machine, measured
};

// The best of a few 1024³ F32 matmuls on `device`, in GFLOP/s: what MFU is measured against.
double measure_peak_gflops(hg::Device device) {
  const int64_t n = 1024, reps = 4;
  hg::Generator gen(1);
  Tensor a = Tensor::randn({n, n}, gen).to(device), b = Tensor::randn({n, n}, gen).to(device);
  hg::sum(hg::matmul(a, b)).item();  // warm up: packing buffers, threads, the GPU's clocks
  double best = 0;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = Clock::now();
    Tensor c;
    for (int64_t i = 0; i < reps; ++i) c = hg::matmul(a, b);
    hg::sum(c).item();  // waits for the GPU
    best = std::max(best, 2.0 * n * n * n * reps / seconds_since(t0) / 1e9);
  }
  return best;
}

Compute compute_of(const hg::nn::GPT& model, hg::Device device, double peak_gflops) {
  const hg::nn::GPTConfig& c = model.config;
  Compute out;
  // All but the embeddings that are only looked up: wpe, and wte when the head has its own weight.
  out.matmul_params = model.num_parameters() - c.block_size * c.n_embd - (c.tied ? 0 : c.vocab_size * c.n_embd);
  out.flops_per_token = 6.0 * double(out.matmul_params) + 12.0 * double(c.n_layer * c.n_embd * c.block_size);
  out.peak_gflops = peak_gflops > 0 ? peak_gflops : measure_peak_gflops(device);
  return out;
}

void print_compute(const hg::nn::GPT& model, const Compute& comp, bool peak_given, hg::Device device) {
  const hg::nn::GPTConfig& config = model.config;
  std::printf("== 3. model and compute: %s\n  %lld parameters, %lld in matmuls (N, all but %s)\n",
              config.str().c_str(), (long long)model.num_parameters(), (long long)comp.matmul_params,
              config.tied ? "the position embedding" : "the two embeddings");
  std::printf("  FLOPs per token = 6N + 12·L·C·T = %.0f + %.0f = %.3g\n", 6.0 * double(comp.matmul_params),
              12.0 * double(config.n_layer * config.n_embd * config.block_size), comp.flops_per_token);
  std::printf("  peak of this machine: %.1f GFLOP/s (%s, %s)\n\n", comp.peak_gflops,
              peak_given ? "--peak-gflops" : "the best 1024³ F32 matmul, measured now", hg::device_name(device));
}

// ---- 4. train --------------------------------------------------------------------------------------
struct Options {
  hg::train::CommonFlags common;
  hg::train::GptFlags gpt;         // the model, --text, --steps, --warmup, ... (lm.h)
  std::string precision = "fp32";  // fp32 | amp_f16 | amp_bf16
  int64_t grad_accum = 1;          // micro-batches per step
  int64_t stop_after = 0;          // > 0: end this invocation after that many steps (a run in parts)
  int64_t eval_every = 100;
  int64_t sample_chars = 400;
  double temperature = 0.8;
  uint64_t sample_seed = 0;
  double peak_gflops = 0;          // > 0: the peak MFU is measured against, instead of measuring it
  std::string prompt = "\n";
  bool untied = false;             // --untied: the LM head has its own weight
  bool plan = false;               // --plan: print the memory formulas' table and stop
  bool recompute_table = false;    // --recompute-table: measure per-block recomputation, train nothing
  std::vector<int64_t> depths = {4, 8, 12, 16};
  int64_t table_steps = 10;        // timed steps per row of that table (after one untimed)
  hg::memory::PlanConfig plan_config;
};

// The flags a checkpoint records and --resume holds to (framework/train/resume.h): those that
// decide the model, the data each step sees and what each step does. --grad-accum is not
// among them: it changes how a step is computed, not what (lm_step.h).
nlohmann::json recorded_flags(const Options& o) {
  nlohmann::json j = {{"--seed", o.common.seed}, {"--batch-size", o.common.batch_size}, {"--lr", o.common.lr},
                      {"--weight-decay", o.common.weight_decay}, {"--steps", o.gpt.steps},
                      {"--warmup", o.gpt.warmup}, {"--min-lr-ratio", o.gpt.min_lr_ratio},
                      {"--grad-clip", o.gpt.grad_clip}, {"--precision", o.precision},
                      {"--n-layer", o.gpt.model.n_layer}, {"--n-head", o.gpt.model.n_head},
                      {"--n-embd", o.gpt.model.n_embd}, {"--block-size", o.gpt.model.block_size},
                      {"--dropout", o.gpt.model.dropout}, {"--untied", o.untied}};
  if (!o.gpt.text.empty()) j["--text"] = o.gpt.text;
  return j;
}

// The model the flags describe, for the corpus's vocabulary.
hg::nn::GPTConfig model_config(const Options& o, const hg::data::TextCorpus& corpus) {
  hg::nn::GPTConfig config = o.gpt.config(corpus);
  config.tied = !o.untied;
  return config;
}

std::string run_name_of(const Options& o) {
  return o.common.run_name.empty() ? std::string("12_gpt_") + o.precision : o.common.run_name;
}

// What a run needs besides its model: the optimizer, the schedule, the scaler, the generator
// its dropout draws from, and a fingerprint of its text for the checkpoint.
struct Trainer {
  hg::Generator gen;
  hg::nn::GPT model;
  hg::optim::AdamW opt;
  hg::optim::LRSchedule schedule;
  hg::amp::GradScaler scaler;
  nlohmann::json text;

  Trainer(const Options& o, const hg::data::TextCorpus& corpus, hg::Device device)
      : gen(o.common.seed),
        model(model_config(o, corpus), gen),
        opt(model.to(device).parameters(), hg::train::lm_adamw(o.common.lr, o.common.weight_decay)),
        schedule(hg::train::lm_schedule(o.gpt, o.common.lr)),
        scaler(hg::amp::ScaleRule{}, /*enabled=*/o.precision == "amp_f16"),
        text(hg::train::text_fingerprint(corpus)) {}
};

void save(const Options& o, const Trainer& t, int64_t step) {
  hg::train::TrainingState s;
  s.step = step;
  s.generators["init"] = t.gen.state();  // dropout draws from it
  s.extra["lesson"] = kLesson;
  s.extra["flags"] = recorded_flags(o);
  s.extra["data"] = t.text;  // --resume checks it is still the same text (framework/train/resume.h)
  s.extra["scaler"] = t.scaler.state_dict();
  hg::train::save_training_checkpoint(o.common.checkpoint, t.model, &t.opt, s);
}

// --resume: the model, the optimizer, the scaler and the generator as the checkpoint left them;
// returns the step to continue from (0 for a fresh run).
int64_t resume(const Options& o, Trainer& t) {
  if (o.common.resume.empty()) return 0;
  hg::train::TrainingState state = hg::train::load_training_checkpoint(o.common.resume, t.model, &t.opt);
  if (state.extra.contains("scaler")) t.scaler.load_state_dict(state.extra["scaler"]);
  if (state.generators.count("init")) t.gen = hg::Generator(state.generators.at("init"));
  std::printf("resumed from %s at step %lld\n", o.common.resume.c_str(), (long long)state.step);
  return state.step;
}

hg::io::RunLog open_log(const Options& o, hg::Device device) {
  nlohmann::json args = recorded_flags(o);
  args["--grad-accum"] = o.grad_accum;
  args["--eval-every"] = o.eval_every;
  args["--threads"] = o.common.threads;
  const bool resuming = !o.common.resume.empty();
  return hg::io::RunLog(hg::train::claim_run_folder(run_name_of(o), o.common.overwrite, resuming),
                        {{"lesson", kLesson}, {"model", "gpt"}, {"precision", o.precision},
                         {"device", hg::device_name(device)}, {"seed", o.common.seed}, {"args", args}},
                        /*append=*/resuming);
}

// The time of the steps, for the compute line.
struct Timing {
  double seconds = 0;
  int64_t steps = 0;
};

void end_of_run(const Options& o, Trainer& t, const hg::data::TextCorpus& corpus, const Compute& comp,
                const Timing& time, int64_t skipped, hg::io::RunLog& log, int64_t step, hg::Device device);

int train(const Options& o, const hg::data::TextCorpus& corpus, hg::Device device) {
  const int64_t B = o.common.batch_size, T = o.gpt.model.block_size, K = o.grad_accum;
  const DType low = hg::train::autocast_dtype(o.precision);
  const hg::train::Baselines base = hg::train::baselines(corpus);
  print_data(corpus, base);
  Trainer t(o, corpus, device);
  const Compute comp = compute_of(t.model, device, o.peak_gflops);
  print_compute(t.model, comp, o.peak_gflops > 0, device);
  const int64_t first = resume(o, t);
  hg::io::RunLog log = open_log(o, device);

  std::printf("== 4. training: %s, AdamW lr %g (warmup %lld, cosine to %g), wd %g, clip %g, batch %lld × %lld "
              "tokens = %lld micro-batch(es) of %lld\n",
              o.precision.c_str(), o.common.lr, (long long)o.gpt.warmup, o.common.lr * o.gpt.min_lr_ratio,
              o.common.weight_decay, o.gpt.grad_clip, (long long)B, (long long)T, (long long)K, (long long)(B / K));
  std::printf("  %6s %9s %9s %9s %9s %10s %10s\n", "step", "train", "val", "unigram", "uniform", "lr", "scale");
  std::fflush(stdout);

  hg::memory::reset_peak();  // the model and optimizer exist: from here, the training's bytes
  hg::memory::take_window(device);
  Timing time;
  double loss_ema = 0, last_val = std::nan("");
  int64_t skipped = 0, step = first;
  for (; step < o.gpt.steps; ++step) {
    t.opt.set_lr(t.schedule.lr_at(step));
    const auto t0 = Clock::now();
    const hg::train::LmStep s = hg::train::lm_step(
        t.model, t.opt, t.scaler, hg::data::random_batch(corpus.train, B, T, o.common.seed, step), K, low,
        o.gpt.grad_clip);
    time.seconds += seconds_since(t0);
    ++time.steps;
    skipped += s.stepped ? 0 : 1;
    loss_ema = step == first ? s.loss : 0.95 * loss_ema + 0.05 * s.loss;

    const hg::train::Divergence d = hg::train::check_finite_step(step, s.loss, t.model.named_parameters());
    if (d) {
      hg::train::report_divergence(log, "lesson_12", d);
      return hg::train::kExitDiverged;
    }
    log.scalar(step, "train/loss", s.loss);
    if (o.gpt.grad_clip > 0) log.scalar(step, "train/grad_norm", s.grad_norm);
    if (t.scaler.is_enabled()) log.loss_scale(step, s.scale, !s.stepped, !s.stepped);
    hg::memory::log_memory(log, step, device);  // this step's peak, by category

    const bool last = step + 1 == o.gpt.steps, stop = o.stop_after > 0 && step + 1 == o.stop_after;
    if ((step + 1) % o.eval_every == 0 || last || stop || step == first) {
      last_val = hg::train::validation_loss(t.model, corpus.val, B, T, K, o.gpt.eval_batches, low);
      log.scalar(step, "val/loss", last_val);
      log.scalar(step, "lr", t.opt.lr());
      // The loss scale exists only under amp_f16; FP32 and BF16 have no scaler: "-".
      const std::string scale_text = t.scaler.is_enabled() ? fmt::format("{:g}", t.scaler.get_scale()) : "-";
      std::printf("  %6lld %9.4f %9.4f %9.4f %9.4f %10.3g %10s\n", (long long)step + 1, loss_ema, last_val,
                  base.unigram, base.uniform, t.opt.lr(), scale_text.c_str());
      std::fflush(stdout);
      if (!o.common.checkpoint.empty()) save(o, t, step + 1);
    }
    if (stop) {
      ++step;
      std::printf("stopped after step %lld of %lld (--stop-after); --resume continues the run\n",
                  (long long)step, (long long)o.gpt.steps);
      break;
    }
  }
  end_of_run(o, t, corpus, comp, time, skipped, log, step, device);
  std::printf("RESULT lesson=12 precision=%s steps=%lld val_loss=%.4f unigram=%.4f uniform=%.4f\n",
              o.precision.c_str(), (long long)step, last_val, base.unigram, base.uniform);
  log.end("finished");
  return 0;
}

// ---- 5. the end of a run: the compute line, the memory and a sample ---------------------------------
void end_of_run(const Options& o, Trainer& t, const hg::data::TextCorpus& corpus, const Compute& comp,
                const Timing& time, int64_t skipped, hg::io::RunLog& log, int64_t step, hg::Device device) {
  if (time.steps > 0) {
    const int64_t tokens = time.steps * o.common.batch_size * o.gpt.model.block_size;
    const double tokens_per_s = double(tokens) / time.seconds;
    const double achieved = tokens_per_s * comp.flops_per_token / 1e9;
    std::printf("\ncompute: %.2f s/step, %.0f tokens/s × %.3g FLOPs/token = %.2f GFLOP/s achieved, "
                "MFU %.1f%% of %.1f GFLOP/s\n", time.seconds / double(time.steps), tokens_per_s,
                comp.flops_per_token, achieved, 100.0 * achieved / comp.peak_gflops, comp.peak_gflops);
    log.scalar(step, "time/tokens_per_s", tokens_per_s);
    log.scalar(step, "time/mfu", achieved / comp.peak_gflops);
  }
  if (skipped) std::printf("the scaler skipped %lld step(s) with inf/NaN gradients\n", (long long)skipped);
  std::printf("\n%s", hg::memory::memory_table(device).c_str());

  hg::Generator sample_gen(o.sample_seed);
  const std::vector<int32_t> ids =
      hg::nn::generate(t.model, corpus.encode(o.prompt), o.sample_chars, o.temperature, sample_gen);
  std::printf("\nsample (temperature %g, seed %llu):\n----\n%s\n----\n", o.temperature,
              (unsigned long long)o.sample_seed, corpus.decode(ids).c_str());
}

// ---- the recompute table: per-block activation recomputation across depths ------------------------
// The same training step (the chapter's batch, precision and recipe) with and without
// --recompute, for models of several depths: the accountant's own peak of the
// activations tag, the time per step, and whether the first step's gradients are the same bits.
struct RecomputeRow {
  int64_t activation_peak = 0;            // bytes: the most the activations tag held at once
  double seconds_per_step = 0;
  std::vector<std::vector<double>> grads; // every parameter's gradient after the first step
};

RecomputeRow measure_recompute(const Options& o, const hg::data::TextCorpus& corpus, hg::Device device,
                               int64_t depth, bool recomputed) {
  Options table = o;
  table.gpt.model.n_layer = depth;
  table.gpt.model.recompute_blocks = recomputed;
  Trainer t(table, corpus, device);
  const DType low = hg::train::autocast_dtype(o.precision);
  RecomputeRow row;
  hg::memory::reset_peak();  // the model exists: from here, what training holds
  double seconds = 0;
  for (int64_t step = 0; step <= o.table_steps; ++step) {  // step 0 is not timed
    const auto t0 = Clock::now();
    hg::train::lm_step(t.model, t.opt, t.scaler,
                       hg::data::random_batch(corpus.train, o.common.batch_size, o.gpt.model.block_size,
                                              o.common.seed, step),
                       o.grad_accum, low, o.gpt.grad_clip);
    if (step > 0) seconds += seconds_since(t0);
    if (step == 0)
      for (const Tensor& p : t.model.parameters()) row.grads.push_back(p.grad().to_double_vector());
  }
  row.activation_peak = hg::memory::usage(device).tag_peak[int(hg::memory::Tag::Activation)];
  row.seconds_per_step = seconds / double(std::max<int64_t>(1, o.table_steps));
  return row;
}

void print_recompute_table(const Options& o, const hg::data::TextCorpus& corpus, hg::Device device) {
  std::printf("== activation recomputation per block (--recompute): %s, batch %lld × %lld tokens, "
              "n_embd %lld, n_head %lld, %lld timed steps per row\n",
              o.precision.c_str(), (long long)o.common.batch_size, (long long)o.gpt.model.block_size,
              (long long)o.gpt.model.n_embd, (long long)o.gpt.model.n_head, (long long)o.table_steps);
  std::printf("  %5s  %-32s  %-26s  %s\n", "", "activations at their peak", "seconds per step", "");
  std::printf("  %5s  %12s %12s %6s  %9s %9s %6s  %s\n", "depth", "plain", "recomputed", "ratio", "plain",
              "recomp", "ratio", "first step's gradients");
  for (int64_t depth : o.depths) {
    const RecomputeRow plain = measure_recompute(o, corpus, device, depth, false);
    const RecomputeRow again = measure_recompute(o, corpus, device, depth, true);
    std::printf("  %5lld  %12s %12s %6.2f  %9.3f %9.3f %6.2f  %s\n", (long long)depth,
                hg::memory::human_bytes(plain.activation_peak).c_str(),
                hg::memory::human_bytes(again.activation_peak).c_str(),
                double(again.activation_peak) / double(std::max<int64_t>(1, plain.activation_peak)),
                plain.seconds_per_step, again.seconds_per_step, again.seconds_per_step / plain.seconds_per_step,
                plain.grads == again.grads ? "the same bits" : "DIFFERENT");
    std::fflush(stdout);
  }
  std::printf("  (activations: the accountant's own peak of the activations tag during the steps; "
              "ratio: recomputed / not)\n");
}

// ---- 6. main ---------------------------------------------------------------------------------------
void add_flags(CLI::App& app, Options& o) {
  using namespace hg::train;
  o.common.batch_size = 16;  // the defaults: a validation loss well below the unigram in minutes on 2 cores
  o.common.lr = 2e-3;
  o.common.weight_decay = 0.1;
  add_common_flags(app, o.common);
  // A chapter of steps, not epochs, with one model and a text of its own: the image flags go.
  for (const char* name : {"--epochs", "--momentum", "--model", "--data", "--limit-train", "--limit-test",
                           "--lr-schedule"})
    app.remove_option(app.get_option(name));
  add_gpt_flags(app, o.gpt);
  add_precision_flag(app, o.precision);
  add_grad_accum_flag(app, o.grad_accum);
  app.add_option("--stop-after", o.stop_after, "end after this many steps of the run (resume later)")
      ->check(WholeIn(1, 10000000, "a number of steps from 1 to 10^7"));
  app.add_option("--dropout", o.gpt.model.dropout, "dropout probability")->capture_default_str()
      ->check(FiniteIn(0.0, 0.99, "a probability from 0 to 0.99"));
  app.add_flag("--untied", o.untied, "an LM head of its own (default: tied to wte)");
  app.add_option("--eval-every", o.eval_every, "validation loss every N steps")->capture_default_str()
      ->check(WholeIn(1, 10000000, "a number of steps from 1 to 10^7"));
  app.add_option("--sample-chars", o.sample_chars, "characters to generate at the end")->capture_default_str()
      ->check(WholeIn(0, 1000000, "a length from 0 to 10^6"));
  app.add_option("--temperature", o.temperature, "sampling temperature (< 1 sharper, > 1 flatter)")
      ->capture_default_str()->check(FiniteIn(1e-3, 100.0, "a temperature from 0.001 to 100"));
  app.add_option("--sample-seed", o.sample_seed, "seed of the sampling")->capture_default_str()
      ->check(WholeIn(0, kMaxWhole, "a seed from 0 to 2^63-1"));
  app.add_option("--peak-gflops", o.peak_gflops, "the machine's peak for MFU (default: measure it)")
      ->check(NonNegative());
  app.add_option("--prompt", o.prompt, "text the sample starts from (characters of the corpus)")
      ->check(CLI::Validator(
          [](std::string& text) { return text.empty() ? "the sample starts from at least one character" : ""; },
          "TEXT"));
  app.add_flag("--recompute", o.gpt.model.recompute_blocks,
               "keep only each block's input for backward and run the block again there (activation "
               "checkpointing in PyTorch)");
  app.add_flag("--recompute-table", o.recompute_table,
               "measure activation memory and step time with and without --recompute "
               "for the --depths; train nothing");
  app.add_option("--depths", o.depths, "--recompute-table: the n_layer values")
      ->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(64)));
  app.add_option("--table-steps", o.table_steps, "--recompute-table: timed steps per row")
      ->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(1000)));
  app.add_flag("--plan", o.plan, "print the memory a model needs from the formulas (ZeRO stages, activations); train nothing");
  // The sizes are checked as text: CLI11 would turn 9223372036854775808 into 2^63-1 without
  // a word. plan_table checks the rest (Ψ's range, which sizes go together).
  app.add_option("--params", o.plan_config.params, "--plan: parameters Ψ (e.g. 7.5e9)");
  app.add_option("--ranks", o.plan_config.ranks, "--plan: data-parallel ranks N")->capture_default_str()
      ->check(WholeIn(1, kMaxWhole, "a number of ranks from 1 to 2^63-1"));
  const CLI::Validator plan_size = WholeIn(1, kMaxWhole, "a size from 1 to 2^63-1");
  app.add_option("--layers", o.plan_config.layers, "--plan: transformer layers (adds the activation term)")
      ->check(plan_size);
  app.add_option("--hidden", o.plan_config.hidden, "--plan: hidden size h")->check(plan_size);
  app.add_option("--heads", o.plan_config.heads, "--plan: attention heads a")->check(plan_size);
  app.add_option("--seq", o.plan_config.seq, "--plan: sequence length s")->check(plan_size);
  app.add_option("--batch", o.plan_config.batch, "--plan: micro-batch b")->check(plan_size);
}

// Parses and checks the command line: kGoOn, or main()'s exit code (0 after --help or --plan,
// 2 after one line saying what is wrong). `saved` is the checkpoint's state when resuming.
constexpr int kGoOn = -1;
int parse_flags(CLI::App& app, int argc, char** argv, Options& o, hg::train::TrainingState& saved) {
  using namespace hg::train;
  add_flags(app, o);
  HG_PARSE_FLAGS(app, argc, argv);
  if (o.plan) {
    try {
      std::fputs(hg::memory::plan_table(o.plan_config).c_str(), stdout);
    } catch (const std::invalid_argument& e) {
      return usage_error(app, e.what());
    }
    return 0;
  }
  for (const char* name : {"--params", "--ranks", "--layers", "--hidden", "--heads", "--seq", "--batch"})
    if (app.count(name) > 0) return usage_error(app, fmt::format("{} belongs to --plan, which trains nothing", name));
  for (const char* name : {"--depths", "--table-steps"})
    if (app.count(name) > 0 && !o.recompute_table)
      return usage_error(app, fmt::format("{} belongs to --recompute-table", name));
  const bool resuming = !o.common.resume.empty();
  if (resuming && o.recompute_table)
    return usage_error(app, "--recompute-table trains fresh models and cannot --resume");
  if (resuming) {  // the checkpoint's flags fill in what the command line left out
    const std::string why = resume_flags(app, o.common.resume, kLesson, recorded_flags(o), saved);
    if (!why.empty()) return usage_error(app, why);
  }
  o.gpt.settle(app);
  std::string problem = o.gpt.problem();
  if (problem.empty()) problem = grad_accum_problem(o.common.batch_size, o.grad_accum);
  if (problem.empty() && !o.recompute_table)
    problem = check_run_folders({run_name_of(o)}, o.common.overwrite, resuming, o.common.checkpoint);
  if (!problem.empty()) return usage_error(app, problem);
  apply_settings(o.common);  // threads, --gemm, --tf32
  return kGoOn;
}

// The corpus, and what can only be checked against it. A missing or damaged text is a data
// problem, exit 1, as in every chapter; a prompt the vocabulary cannot spell, or a checkpoint
// of another text, is a command-line error, exit 2.
int load_corpus(const CLI::App& app, const Options& o, const hg::train::TrainingState& saved,
                hg::data::TextCorpus& corpus) {
  try {
    corpus = hg::data::load_text_corpus(o.gpt.text, o.gpt.model.block_size);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_12: %s\n", e.what());
    return 1;
  }
  try {
    corpus.encode(o.prompt);
  } catch (const std::exception& e) {
    return hg::train::usage_error(app, fmt::format("--prompt: {}", e.what()));
  }
  if (!o.common.resume.empty()) {
    const std::string why = hg::train::text_problem(o.common.resume, saved, corpus);
    if (!why.empty()) return hg::train::usage_error(app, why);
  }
  return kGoOn;
}

}  // namespace

int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  CLI::App app{"halfgrad chapter 12: a small GPT trained on text, FP32 / F16 AMP / BF16 AMP"};
  Options o;
  hg::train::TrainingState saved;  // the checkpoint's, when resuming
  if (const int code = parse_flags(app, argc, argv, o, saved); code != kGoOn) return code;
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(o.common.device, "lesson_12", device)) return 2;
  hg::data::TextCorpus corpus;
  if (const int code = load_corpus(app, o, saved, corpus); code != kGoOn) return code;
  try {
    if (o.recompute_table) {
      print_recompute_table(o, corpus, device);
      return 0;
    }
    show_f16_attention();                                // 1
    if (!o.common.resume.empty() && saved.step >= o.gpt.steps) {  // nothing left to train: say so before any work
      std::printf("%s: all %lld steps of this run are done; nothing to train\n", o.common.resume.c_str(),
                  (long long)saved.step);
      return 0;
    }
    return train(o, corpus, device);                     // 2-5
  } catch (const std::bad_alloc&) {  // the optimizer's state, an evaluation, the sample: what it all needs
    std::fprintf(stderr, "lesson_12: out of memory: %s\n",
                 hg::nn::gpt_memory_needs(model_config(o, corpus), o.common.batch_size / o.grad_accum).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_12: %s\n", e.what());
    return 1;
  }
}
