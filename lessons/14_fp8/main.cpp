// Chapter 14 — FP8: two 8-bit formats, a scale for every tensor, and training in FP8.
//
//   1. the formats       E4M3 and E5M2 beside FP16 and BF16: range and step
//   2. why scaling       small gradients and large activations cast with and without a scale
//   3. the recipes       one tensor with an outlier channel under each recipe
//   4. accumulation      the FP8 GEMM's 14-bit accumulator: error against K, and promotion
//   5. training          chapter 02's MLP (--model mlp) or chapter 12's GPT (--model gpt) in
//                        BF16 autocast and in FP8 under each recipe, from the same weights;
//                        the GPT as chapter 12 trains it (framework/train/lm.h)
//   6. main              the flags (parse_flags), then the sections asked for
//
// Sections 1-4 are deterministic; section 5 writes runs/<run-name>_<run>/ for the viewer with
// an fp8_scale event per FP8 tensor and step (docs/run-log.md). A run whose loss or weights
// turn inf/NaN stops there (framework/train/guard.h); the others go on, and the program
// exits 3.
// Legend: N batch, K the summed dimension of a GEMM, C channels (columns); for the GPT B
// sequences of T tokens.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "datasets/text.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/cpu/wait_policy.h"
#include "framework/data/loader.h"
#include "framework/fp8/mlp.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/gpt.h"
#include "framework/nn/models/mlp.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/lr_schedule.h"
#include "framework/optim/sgd.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/lm.h"
#include "framework/train/run_folder.h"
#include "framework/train/step.h"

namespace {

using hg::Tensor;
using namespace hg::fp8;
using Clock = std::chrono::steady_clock;

// ---- 1. the formats ---------------------------------------------------------------------------
void formats() {
  std::printf("== 1. the formats ==\n");
  std::printf("  %-9s %3s %3s %12s %12s %12s %9s %15s\n", "format", "E", "M", "max", "min normal", "min subnorm",
              "step at 1", "normal binades");
  for (const hg::FloatFormat* f : {&hg::kFP16, &hg::kBF16, &hg::kE4M3, &hg::kE5M2})
    std::printf("  %-9s %3d %3d %12.6g %12.6g %12.6g %9.6g %15d\n", f->name, f->exponent_bits, f->mantissa_bits,
                f->max_finite(), f->min_normal(), f->min_subnormal(), f->epsilon(),
                f->max_exponent() - f->min_exponent() + 1);
  std::printf("  E4M3: a step of 1/8 and 15 binades of normals (3 more of subnormals): weights, activations.\n"
              "  E5M2: FP16's range with a step of 1/4: gradients, which span more binades.\n\n");
}

// ---- 2. why scaling ---------------------------------------------------------------------------
struct CastResult {
  double underflow = 0, saturated = 0, rel_rms = 0;
};

// The relative error is over the values with |x| <= error_below (all of them by default).
CastResult cast_with(const Tensor& x, Format f, Tile tile, const std::vector<float>& scales,
                     double error_below = INFINITY) {
  const Fp8Tensor q = quantize(x, f, tile, scales);
  const CastStats s = cast_stats(x, q);
  const std::vector<float> a = x.to_vector(), b = q.dequantize().to_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::fabs(a[i]) > error_below) continue;
    num += (double(b[i]) - a[i]) * (double(b[i]) - a[i]);
    den += double(a[i]) * a[i];
  }
  return {double(s.underflow) / double(std::max<int64_t>(s.nonzero, 1)),
          double(s.saturated) / double(x.numel()), std::sqrt(num / den)};
}

void print_cast(const char* what, const CastResult& r) {
  std::printf("  %-44s underflow %6.2f%%  saturated %6.2f%%  relative error %.4f\n", what, 100 * r.underflow,
              100 * r.saturated, r.rel_rms);
}

void why_scaling() {
  std::printf("== 2. why scaling: casts of a (64, 1024) tensor ==\n");
  hg::Generator gen(0);
  Tensor grads = hg::mul(Tensor::randn({64, 1024}, gen), 1e-6);  // gradients: |g| ~ 1e-6
  Tensor acts = hg::mul(Tensor::randn({64, 1024}, gen), 300.0);  // activations: |x| ~ 300
  print_cast("gradients ~1e-6 as E5M2, scale 1", cast_with(grads, Format::E5M2, kPerTensor, {1.0f}));
  const float sg = current_scale(grads, Format::E5M2);
  print_cast(fmt::format("gradients ~1e-6 as E5M2, scale {:g}", sg).c_str(),
             cast_with(grads, Format::E5M2, kPerTensor, {sg}));
  print_cast("activations ~300 as E4M3, scale 1", cast_with(acts, Format::E4M3, kPerTensor, {1.0f}));
  const float sa = current_scale(acts, Format::E4M3);
  print_cast(fmt::format("activations ~300 as E4M3, scale {:g}", sa).c_str(),
             cast_with(acts, Format::E4M3, kPerTensor, {sa}));
  std::printf("  E5M2's smallest subnormal is 2^-16 = 1.5e-5: unscaled, the gradients vanish. E4M3\n"
              "  stops at 448: unscaled, one activation in eight clamps. scale = fp8_max / amax fixes both.\n\n");
}

// ---- 3. the recipes side by side: an outlier channel ------------------------------------------
void recipes_side_by_side() {
  std::printf("== 3. the recipes on activations (64, 1024) ~ U(-1e-3, 1e-3) with channel 5 at 1000 ==\n");
  hg::Generator gen(1);
  Tensor x = Tensor::uniform({64, 1024}, -1e-3, 1e-3, gen);
  float* p = x.data<float>();
  for (int r = 0; r < 64; ++r) p[r * 1024 + 5] = 1000.0f;
  // the relative error is over the small values only (|x| <= 1): what the outlier costs them
  print_cast("per tensor (current scaling)",
             cast_with(x, Format::E4M3, kPerTensor, {current_scale(x, Format::E4M3)}, 1.0));
  print_cast("1x128 tiles (DeepSeek-V3 activations)",
             cast_with(x, Format::E4M3, kTile1x128, block_scales(x, kTile1x128, Format::E4M3), 1.0));
  print_cast("128x128 blocks (DeepSeek-V3 weights)",
             cast_with(x, Format::E4M3, kBlock128x128, block_scales(x, kBlock128x128, Format::E4M3), 1.0));
  print_cast("MX: 1x32 blocks, E8M0 power-of-two scale",
             cast_with(x, Format::E4M3, kMxBlock32, mx_scales(x, Format::E4M3), 1.0));
  std::printf("  (relative error over the values below 1, the outlier channel left out)\n"
              "  One scale for the tensor is set by the outlier: 1e-3 · 448/1000 = 4.5e-4 is below half of\n"
              "  E4M3's smallest subnormal (2^-10), so nearly everything else becomes 0. A tile scale lets\n"
              "  only the outlier's own tile suffer: 127 of 1024 values with 1x128, 31 with MX. The 128x128\n"
              "  block around the outlier holds 128 channels of all 64 rows: 12.4%% too, here. MX's\n"
              "  power-of-two rule puts a block's amax in [256, 512): the values above 448 saturate.\n\n");
}

// ---- 4. accumulation ----------------------------------------------------------------------------
void accumulation() {
  std::printf("== 4. FP8 GEMM accumulation: max relative error of C (16, 16) vs exact, inputs U(0, 448) in E4M3 ==\n");
  std::printf("  %6s %12s %16s %22s\n", "K", "F32 acc", "14-bit acc", "14-bit, promoted/128");
  hg::Generator gen(2);
  for (int64_t K = 128; K <= 16384; K *= 2) {
    Tensor a = Tensor::uniform({16, K}, 0, 448, gen), b = Tensor::uniform({16, K}, 0, 448, gen);
    const Fp8Tensor qa = quantize(a, Format::E4M3, kPerTensor, {1.0f});
    const Fp8Tensor qb = quantize(b, Format::E4M3, kPerTensor, {1.0f});
    // exact: the products are exact and the sum in F64 is exact enough to be the reference
    std::vector<double> exact(16 * 16, 0.0);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 16; ++n)
        for (int64_t k = 0; k < K; ++k)
          exact[size_t(m * 16 + n)] += double(decode(qa.codes[size_t(m * K + k)], Format::E4M3)) *
                                       double(decode(qb.codes[size_t(n * K + k)], Format::E4M3));
    auto max_rel = [&](const Accumulator& acc) {
      const std::vector<float> c = gemm_tn_reference(qa, qb, acc).to_vector();
      double e = 0;
      for (size_t i = 0; i < c.size(); ++i) e = std::max(e, std::fabs(double(c[i]) - exact[i]) / exact[i]);
      return e;
    };
    std::printf("  %6lld %12.2e %16.2e %22.2e\n", (long long)K, max_rel({Accumulate::F32}),
                max_rel({Accumulate::Limited, 14, 0}), max_rel({Accumulate::Promoted, 14, 128}));
  }
  std::printf("  A 14-bit accumulator drops what falls below its last bit: the larger the sum, the more\n"
              "  each product loses, so the error grows with K. Adding every 128-element partial into F32\n"
              "  (DeepSeek-V3's promotion) bounds the sum the short accumulator ever holds.\n\n");
}

// ---- 5. training --------------------------------------------------------------------------------
struct Flags {
  std::string sections = "formats,scaling,recipes,accumulation,train";
  std::string runs = "bf16,current,delayed,block,mx";
  std::string model = "mlp";
  int epochs = 1;
  int64_t batch_size = 128, limit_train = 10000, limit_test = 2000;  // the GPT's batch: 16 sequences
  double lr = 0.05, momentum = 0.9;                                   // the GPT's lr: 3e-3 (AdamW)
  hg::train::GptFlags gpt = small_gpt();
  uint64_t seed = 0;
  int history = 16, margin = 0;
  std::string formats = "hybrid";
  std::string data, run_name = "14_fp8";
  bool overwrite = false;
  int threads = 0;

  // The GPT: small enough that five runs of the emulated FP8 GEMM take minutes on 2 cores.
  static hg::train::GptFlags small_gpt() {
    hg::train::GptFlags g;
    g.model.n_layer = 2;
    g.model.n_head = 2;
    g.model.n_embd = 64;
    g.model.block_size = 32;
    g.steps = 200;
    g.warmup = 20;
    g.eval_batches = 8;
    return g;
  }
};

struct RunResult {
  bool diverged = false;
  double last_loss = 0, accuracy = 0, seconds = 0, max_dy_underflow = 0;
};

bool contains(const std::string& list, const std::string& item) {
  for (const std::string& s : hg::train::split_list(list))
    if (s == item) return true;
  return false;
}

// x to 4 decimals, without trailing zeros: "0.0015", "0", "-0" (a gap that rounds to 0 from below).
std::string rounded_4(double x) { return fmt::format("{:g}", std::round(x * 1e4) / 1e4); }

// The largest fraction of a gradient's non-zero values that its FP8 cast flushed to 0, over
// `records` (the .dy casts) and `so_far`.
double max_dy_underflow(const std::vector<ScaleRecord>& records, double so_far) {
  for (const ScaleRecord& s : records)
    if (s.tensor.size() > 3 && s.tensor.substr(s.tensor.size() - 3) == ".dy" && s.stats.nonzero)
      so_far = std::max(so_far, double(s.stats.underflow) / double(s.stats.nonzero));
  return so_far;
}

RunResult train(const std::string& run, const Flags& f, const hg::data::ImageDataset& train_ds,
                const hg::data::ImageDataset& test_ds) {
  hg::Generator gen(f.seed);
  const bool bf16 = run == "bf16";
  RecipeConfig recipe{bf16 ? Recipe::Delayed : parse_recipe(run), f.formats == "hybrid", f.history, f.margin};
  std::shared_ptr<hg::nn::Module> model;
  std::shared_ptr<Fp8Mlp> fp8_model;
  if (bf16) model = std::make_shared<hg::nn::MLP>(gen);
  else model = fp8_model = std::make_shared<Fp8Mlp>(gen, recipe);  // same weights as the MLP
  hg::optim::SGD opt(model->parameters(), {.lr = f.lr, .momentum = f.momentum});
  const std::string dir = hg::train::claim_run_folder(f.run_name + "_" + run, f.overwrite, false);
  hg::io::RunLog log(dir, {{"lesson", "14_fp8"}, {"model", "mlp"},
                           {"precision", bf16 ? "amp_bf16" : "fp8_" + run}, {"device", "cpu"},
                           {"seed", f.seed},
                           {"args", {{"epochs", f.epochs}, {"batch_size", f.batch_size}, {"lr", f.lr},
                                     {"momentum", f.momentum}, {"formats", f.formats},
                                     {"history", f.history}, {"margin", f.margin}}}});
  hg::DataLoader loader(train_ds, {f.batch_size, true, false, f.seed});
  RunResult r;
  std::vector<double> recent;  // the last 20 losses: the "last loss" averages them
  const auto t0 = Clock::now();
  int64_t step = 0;
  hg::Batch batch;
  for (int epoch = 0; epoch < f.epochs && !r.diverged; ++epoch) {
    while (loader.next(batch)) {
      opt.zero_grad();
      Tensor loss;
      {
        std::optional<hg::amp::Autocast> ac;  // the baseline: BF16 matmuls, F32 elsewhere
        if (bf16) ac.emplace(hg::DType::BF16);
        loss = hg::cross_entropy((*model)(batch.images), batch.labels);
      }
      loss.backward();
      const double l = loss.item();
      opt.step();
      if (fp8_model) {  // what this step's casts did, logged even when it diverged: the evidence
        const std::vector<ScaleRecord> rec = fp8_model->records();
        log_fp8_scales(log, step, rec);
        r.max_dy_underflow = max_dy_underflow(rec, r.max_dy_underflow);
      }
      // The loss alone is not enough here: a ReLU turns a NaN into 0 and the saturating casts
      // clamp inf to ±448, so weights can be inf or NaN under a finite loss.
      if (const hg::train::Divergence d = hg::train::check_finite_step(step, l, model->named_parameters())) {
        hg::train::report_divergence(log, "lesson_14: " + run, d);
        r.diverged = true;
        break;
      }
      log.scalar(step, "train/loss", l, epoch);
      recent.push_back(l);
      if (recent.size() > 20) recent.erase(recent.begin());
      ++step;
    }
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (r.diverged) return r;
  for (double l : recent) r.last_loss += l / double(recent.size());
  std::vector<int32_t> pred;
  {
    std::optional<hg::amp::Autocast> ac;
    if (bf16) ac.emplace(hg::DType::BF16);
    pred = hg::train::predict(*model, test_ds);
  }
  int64_t right = 0;
  for (int64_t i = 0; i < test_ds.n; ++i) right += pred[size_t(i)] == test_ds.labels[size_t(i)];
  r.accuracy = double(right) / double(test_ds.n);
  log.scalar(step - 1, "test/accuracy", r.accuracy, f.epochs - 1);
  log.end("finished");
  return r;
}

int training(const Flags& f) {
  const std::string dir = hg::data::fashion_mnist_dir(f.data);
  auto train_ds = hg::data::load_fashion_mnist(dir, true, f.limit_train);
  auto test_ds = hg::data::load_fashion_mnist(dir, false, f.limit_test);
  hg::data::normalize(train_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
  hg::data::normalize(test_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
  std::printf("== 5. training the MLP on the CPU: %lld train images, %lld test, %d epoch(s), batch %lld, lr %g, "
              "momentum %g, %s formats, delayed history %d, margin %d ==\n",
              (long long)train_ds.n, (long long)test_ds.n, f.epochs, (long long)f.batch_size, f.lr, f.momentum,
              f.formats == "hybrid" ? "HYBRID (E4M3 forward, E5M2 gradients)" : "E4M3-only", f.history, f.margin);
  const std::vector<std::string> runs = hg::train::split_list(f.runs);
  std::vector<RunResult> results;
  for (const std::string& run : runs) {
    results.push_back(train(run, f, train_ds, test_ds));
    const RunResult& r = results.back();
    if (r.diverged) std::printf("  %-8s diverged\n", run.c_str());
    else std::printf("  %-8s last loss %.4f  test accuracy %.4f  (%.1f s)\n", run.c_str(), r.last_loss, r.accuracy, r.seconds);
  }
  // The table: the gap is measured against the BF16 run when there is one.
  const RunResult* base = nullptr;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i] == "bf16" && !results[i].diverged) base = &results[i];
  std::printf("\n%-8s %10s %12s %9s %13s %8s\n", "run", "last loss", "gap vs BF16", "test acc", "dy underflow",
              "s/run");
  bool any_diverged = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const RunResult& r = results[i];
    if (r.diverged) {
      std::printf("%-8s %10s\n", runs[i].c_str(), "diverged");
      any_diverged = true;
      continue;
    }
    const std::string gap = base ? rounded_4(r.last_loss - base->last_loss) : "-";
    const std::string dy = runs[i] == "bf16" ? "-" : rounded_4(r.max_dy_underflow);
    std::printf("%-8s %10.4f %12s %9.4f %13s %8.1f\n", runs[i].c_str(), r.last_loss, gap.c_str(), r.accuracy,
                dy.c_str(), r.seconds);
  }
  std::printf("last loss: the mean of the last 20 steps' training losses; dy underflow: the largest fraction of a\n"
              "gradient's non-zero values that its E5M2 (HYBRID) cast flushed to 0, over all steps and layers.\n");
  return any_diverged ? 3 : 0;
}

// ---- 5b. training the GPT ----------------------------------------------------------------------
// Chapter 12's GPT, trained as chapter 12 trains it (framework/train/lm.h: AdamW, warmup then
// cosine, clipping, a fixed set of validation batches), with its four projections per block
// in FP8 (GPTConfig::fp8). Every run, the baseline too, runs under BF16 autocast, as
// Transformer Engine's fp8_autocast sits inside a BF16 model: the embeddings, layer norms,
// q·kᵀ, att·v and the LM head are the same in every run, so the gap to BF16 is the
// projections' FP8 alone. The same seed gives every run the same initial weights and the
// same batches.
struct GptResult {
  bool diverged = false;
  double last_loss = 0, val_loss = 0, seconds = 0, max_dy_underflow = 0;
};

GptResult train_gpt(const std::string& run, const Flags& f, const hg::data::TextCorpus& corpus) {
  hg::nn::GPTConfig config = f.gpt.config(corpus);
  if (run != "bf16") config.fp8 = RecipeConfig{parse_recipe(run), f.formats == "hybrid", f.history, f.margin};
  hg::Generator gen(f.seed);
  hg::nn::GPT model(config, gen);  // the same weights in every run: fp8 only changes the layer type
  hg::optim::AdamW opt(model.parameters(), hg::train::lm_adamw(f.lr, 0.1));
  const hg::optim::LRSchedule schedule = hg::train::lm_schedule(f.gpt, f.lr);
  hg::amp::GradScaler no_scaler(hg::amp::ScaleRule{}, /*enabled=*/false);  // BF16 and FP8 need none

  const std::string dir = hg::train::claim_run_folder(f.run_name + "_" + run, f.overwrite, false);
  const hg::nn::GPTConfig& c = f.gpt.model;
  hg::io::RunLog log(dir, {{"lesson", "14_fp8"}, {"model", "gpt"},
                           {"precision", run == "bf16" ? "amp_bf16" : "fp8_" + run + "+amp_bf16"},
                           {"device", "cpu"}, {"seed", f.seed},
                           {"args", {{"steps", f.gpt.steps}, {"batch_size", f.batch_size}, {"lr", f.lr},
                                     {"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_embd", c.n_embd},
                                     {"block_size", c.block_size}, {"formats", f.formats},
                                     {"history", f.history}, {"margin", f.margin}}}});
  GptResult r;
  std::vector<double> recent;  // the last 20 losses: the "train loss" averages them
  const auto t0 = Clock::now();
  for (int64_t step = 0; step < f.gpt.steps; ++step) {
    opt.set_lr(schedule.lr_at(step));
    const hg::data::TokenBatch batch = hg::data::random_batch(corpus.train, f.batch_size, c.block_size, f.seed, step);
    const double l = hg::train::lm_step(model, opt, no_scaler, batch, 1, hg::DType::BF16, f.gpt.grad_clip).loss;
    const std::vector<ScaleRecord> rec = model.fp8_records();  // empty for bf16
    log_fp8_scales(log, step, rec);
    r.max_dy_underflow = max_dy_underflow(rec, r.max_dy_underflow);
    if (const hg::train::Divergence d = hg::train::check_finite_step(step, l, model.named_parameters())) {
      hg::train::report_divergence(log, "lesson_14: " + run, d);
      r.diverged = true;
      return r;
    }
    log.scalar(step, "train/loss", l);
    recent.push_back(l);
    if (recent.size() > 20) recent.erase(recent.begin());
  }
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (double l : recent) r.last_loss += l / double(recent.size());
  r.val_loss = hg::train::validation_loss(model, corpus.val, f.batch_size, c.block_size, 1, f.gpt.eval_batches,
                                          hg::DType::BF16);
  log.scalar(f.gpt.steps - 1, "val/loss", r.val_loss);
  log.end("finished");
  return r;
}

int training_gpt(const Flags& f) {
  const hg::nn::GPTConfig& c = f.gpt.model;
  const hg::data::TextCorpus corpus = hg::data::load_text_corpus(f.gpt.text, c.block_size);
  std::printf("== 5. training the GPT on the CPU: %s, vocabulary %lld; n_layer %lld, n_head %lld, n_embd %lld, "
              "block_size %lld; %lld steps of %lld sequences, AdamW lr %g (cosine), clip %g, %s formats, "
              "delayed history %d, margin %d ==\n",
              corpus.source.c_str(), (long long)corpus.vocab_size(), (long long)c.n_layer, (long long)c.n_head,
              (long long)c.n_embd, (long long)c.block_size, (long long)f.gpt.steps, (long long)f.batch_size, f.lr,
              f.gpt.grad_clip,
              f.formats == "hybrid" ? "HYBRID (E4M3 forward, E5M2 gradients)" : "E4M3-only", f.history, f.margin);
  std::printf("  FP8: the 4 projections of each block (x, w, dy of each cast); BF16 autocast for the rest in every run\n");
  const std::vector<std::string> runs = hg::train::split_list(f.runs);
  std::vector<GptResult> results;
  for (const std::string& run : runs) {
    results.push_back(train_gpt(run, f, corpus));
    const GptResult& r = results.back();
    if (r.diverged) std::printf("  %-8s diverged\n", run.c_str());
    else std::printf("  %-8s train loss %.4f  validation loss %.4f  (%.1f s)\n", run.c_str(), r.last_loss, r.val_loss, r.seconds);
    std::fflush(stdout);
  }
  const GptResult* base = nullptr;
  for (size_t i = 0; i < runs.size(); ++i)
    if (runs[i] == "bf16" && !results[i].diverged) base = &results[i];
  auto gap = [&](double v, double b) { return base ? rounded_4(v - b) : "-"; };
  std::printf("\n%-8s %10s %10s %10s %10s %13s %8s\n", "run", "train loss", "train gap", "val loss", "val gap",
              "dy underflow", "s/run");
  bool any_diverged = false;
  for (size_t i = 0; i < runs.size(); ++i) {
    const GptResult& r = results[i];
    if (r.diverged) {
      std::printf("%-8s %10s\n", runs[i].c_str(), "diverged");
      any_diverged = true;
      continue;
    }
    const std::string dy = runs[i] == "bf16" ? "-" : rounded_4(r.max_dy_underflow);
    std::printf("%-8s %10.4f %10s %10.4f %10s %13s %8.1f\n", runs[i].c_str(), r.last_loss,
                gap(r.last_loss, base ? base->last_loss : 0).c_str(), r.val_loss,
                gap(r.val_loss, base ? base->val_loss : 0).c_str(), dy.c_str(), r.seconds);
  }
  std::printf("train loss: the mean of the last 20 steps' losses; val loss: %lld fixed validation batches, the same\n"
              "for every run; gap: minus BF16's; dy underflow: the largest fraction of a gradient's non-zero values\n"
              "that its FP8 cast (E5M2 in HYBRID) flushed to 0, over all steps and projections.\n",
              (long long)f.gpt.eval_batches);
  return any_diverged ? 3 : 0;
}

// ---- 6. main --------------------------------------------------------------------------------------
void add_flags(CLI::App& app, Flags& f) {
  using namespace hg::train;
  app.add_option("--sections", f.sections, "comma list of formats, scaling, recipes, accumulation, train")
      ->capture_default_str()->check(ListOf({"formats", "scaling", "recipes", "accumulation", "train"}));
  app.add_option("--runs", f.runs, "training runs: bf16 (autocast baseline) and FP8 recipes")
      ->capture_default_str()->check(ListOf({"bf16", "current", "delayed", "block", "mx"}));
  app.add_option("--model", f.model, "what section 5 trains: mlp (FashionMNIST) | gpt (text)")
      ->capture_default_str()->check(OneOf({"mlp", "gpt"}));
  app.add_option("--epochs", f.epochs, "mlp: passes over the training set")->capture_default_str()
      ->check(WholeIn(1, kMaxEpochs, "a number of epochs from 1 to " + std::to_string(kMaxEpochs)));
  app.add_option("--batch-size", f.batch_size, "images per step (mlp, default 128) or sequences (gpt, default 16)")
      ->check(WholeIn(1, kMaxBatch, "a batch size from 1 to " + std::to_string(kMaxBatch)));
  app.add_option("--limit-train", f.limit_train, "mlp: use the first N training images")->capture_default_str()->check(ImageLimit());
  app.add_option("--limit-test", f.limit_test, "mlp: use the first N test images")->capture_default_str()->check(ImageLimit());
  app.add_option("--lr", f.lr, "learning rate: SGD's for the mlp (default 0.05), AdamW's for the gpt (default 3e-3)")
      ->check(NonNegative());
  app.add_option("--momentum", f.momentum, "mlp: SGD momentum")->capture_default_str()
      ->check(FiniteIn(0.0, 1.0, "a momentum from 0 to 1"));
  app.add_option("--seed", f.seed, "initial weights and shuffling")->capture_default_str()
      ->check(WholeIn(0, kMaxWhole, "a seed from 0 to 2^63-1"));
  app.add_option("--history", f.history, "delayed scaling: amax history length")->capture_default_str()
      ->check(WholeIn(1, 100000, "a history length from 1 to 100000"));
  app.add_option("--margin", f.margin, "current and delayed scaling: binades of headroom")->capture_default_str()
      ->check(WholeIn(0, 64, "a margin from 0 to 64"));
  app.add_option("--formats", f.formats, "hybrid (E4M3 forward, E5M2 gradients) | e4m3")->capture_default_str()
      ->check(OneOf({"hybrid", "e4m3"}));
  app.add_option("--data", f.data, "mlp: FashionMNIST folder (default: $HG_DATA, then the Debian package)");
  add_gpt_flags(app, f.gpt);  // --model gpt: --steps --n-layer ... --text (framework/train/lm.h)
  app.add_option("--run-name", f.run_name, "runs/<NAME>_<run>/ for each run (default 14_fp8, 14_fp8_gpt for the gpt)")
      ->check(RunName());
  app.add_flag("--overwrite", f.overwrite, "replace run folders that exist");
  app.add_option("--threads", f.threads, "OpenMP threads (0: the default)")->check(Threads());
}

// Parses and checks the command line: kGoOn, or main()'s exit code (0 after --help, 2 after
// one line saying what is wrong).
constexpr int kGoOn = -1;
int parse_flags(CLI::App& app, int argc, char** argv, Flags& f) {
  using namespace hg::train;
  add_flags(app, f);
  HG_PARSE_FLAGS(app, argc, argv);
  apply_threads(f.threads);
  // The flags of one model are refused with the other: a --steps that trains nothing would
  // look like a result.
  const bool gpt = f.model == "gpt";
  for (const char* name : {"--epochs", "--limit-train", "--limit-test", "--momentum", "--data"})
    if (gpt && app.count(name) > 0) return usage_error(app, fmt::format("{} belongs to --model mlp", name));
  for (const std::string& name : GptFlags::names())
    if (!gpt && app.count(name) > 0) return usage_error(app, fmt::format("{} belongs to --model gpt", name));
  f.gpt.settle(app);
  if (const std::string problem = f.gpt.problem(); gpt && !problem.empty()) return usage_error(app, problem);
  if (gpt && app.count("--batch-size") == 0) f.batch_size = 16;
  if (gpt && app.count("--lr") == 0) f.lr = 3e-3;
  if (app.count("--run-name") == 0) f.run_name = gpt ? "14_fp8_gpt" : "14_fp8";
  if (contains(f.sections, "train")) {
    std::vector<std::string> names;
    for (const std::string& run : split_list(f.runs)) names.push_back(f.run_name + "_" + run);
    const std::string problem = check_run_folders(names, f.overwrite, false);
    if (!problem.empty()) return usage_error(app, problem);
  }
  return kGoOn;
}

}  // namespace

int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  CLI::App app{"Chapter 14: FP8 formats, scaling recipes, the FP8 GEMM's accumulation, and FP8 training"};
  Flags f;
  if (const int code = parse_flags(app, argc, argv, f); code != kGoOn) return code;
  try {
    if (contains(f.sections, "formats")) formats();
    if (contains(f.sections, "scaling")) why_scaling();
    if (contains(f.sections, "recipes")) recipes_side_by_side();
    if (contains(f.sections, "accumulation")) accumulation();
    if (contains(f.sections, "train")) return f.model == "gpt" ? training_gpt(f) : training(f);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_14: %s\n", e.what());
    return 1;
  }
  return 0;
}
