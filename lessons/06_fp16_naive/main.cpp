// Chapter 06 — naive FP16 training: weights, activations, gradients and optimizer state
// all in F16, next to the same model in FP32, and where the F16 run loses information.
//
// Naive means: every tensor is F16 and every op rounds its result to F16, as `model.half()`
// in PyTorch does. The optimizer too: framework/train/f16_sgd.cpp is SGD with its momentum
// and its result in F16 (the framework's own optimizers keep their state in F32, which is
// already a fix: chapter 07).
//
// Sections: 1. flags   2. the arithmetic   3. train (one loop for both precisions)
//           4. main: the two runs and the table
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/amp/grad_stats_logger.h"
#include "framework/cpu/wait_policy.h"
#include "framework/data/loader.h"
#include "framework/dtype/decompose.h"
#include "framework/dtype/half.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/cli.h"
#include "framework/train/data.h"
#include "framework/train/f16_sgd.h"
#include "framework/train/guard.h"
#include "framework/train/comparison.h"
#include "framework/train/run_folder.h"

using hg::DType;
using hg::Tensor;

namespace {

const std::string kLesson = "06_fp16_naive";     // run.json's "lesson"; runs/06_mlp_<precision>/
const std::string kProgram = "lesson_" + kLesson.substr(0, 2);  // how its messages start

// ---- 2. the arithmetic --------------------------------------------------------------
float f16(float x) { return float(hg::half(x)); }  // round to the nearest F16, back to float

void show_arithmetic() {
  std::printf("== 1. F16 arithmetic a training step runs into ==\n");
  std::printf("  2048 + 1        = %-10g (F16 spacing at 2048 is 2: the tie goes to even)\n",
              f16(2048.0f + 1.0f));
  std::printf("  1 + 0.0001      = %-10g (half an F16 ULP at 1 is 2^-11 = %.3g)\n",
              f16(1.0f + 0.0001f), std::ldexp(1.0, -11));
  // An update vanishes when it is at most half the spacing of F16 numbers around the weight
  // (half an ULP): the bound depends on the weight, not on a fixed power of two.
  const float w = f16(0.03f), update = 0.05f * 1e-4f;
  const double half_ulp = hg::decompose(w, hg::kFP16).ulp / 2;
  std::printf("  0.03 - 0.05*1e-4= %-10.7g (lr*g = %.3g < half an F16 ULP at the weight, 2^%d = %.3g:"
              " the weight does not move)\n", f16(w - update), update, std::ilogb(half_ulp), half_ulp);
  // Below the smallest subnormal 2^-24: round to nearest, with 2^-25 exactly half way.
  const double tiny = hg::kFP16.min_subnormal();
  std::printf("  gradient 2e-8   -> %-10g (at most 2^-25 = %.3g, half of F16's smallest subnormal: rounds to 0)\n",
              f16(2e-8f), tiny / 2);
  std::printf("  gradient 4e-8   -> %-10.6g (above 2^-25: rounds up to the smallest subnormal, 2^-24)\n", f16(4e-8f));
  std::printf("  gradient 1e-6   -> %-10.7g (subnormal: only %d significant bits left)\n\n",
              f16(1e-6f), int(std::floor(std::log2(1e-6 / tiny))) + 1);
}

// ---- 3. train -------------------------------------------------------------------------
hg::train::ComparisonRun train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device,
                               int epochs, int64_t stats_every, const hg::train::FashionMnist& data) {
  const bool half = precision == "fp16_naive";
  const DType dtype = half ? DType::F16 : DType::F32;
  hg::Generator gen(f.seed);
  hg::nn::ModulePtr model = std::make_shared<hg::nn::MLP>(gen);  // initialised in F32
  model->to(dtype);                                            // then rounded to F16
  model->to(device);                                           // and moved, before any optimizer
  hg::optim::SGD sgd32(model->parameters(), {.lr = f.lr, .momentum = f.momentum});
  std::vector<Tensor> bufs16;  // the F16 momentum buffers

  hg::train::ComparisonRun r;
  r.precision = precision;
  r.dir = hg::train::claim_run_folder(hg::train::precision_run_name(f, kLesson, precision), f.overwrite, false);
  hg::io::RunLog log(r.dir, hg::train::comparison_run_json(kLesson, f, precision, device, epochs, {}));
  hg::DataLoader loader(data.train, {f.batch_size, true, false, f.seed});
  hg::amp::GradStatsLogger stats(stats_every);
  int64_t step = 0;
  double seconds = 0;
  int timed_epochs = 0;

  for (int epoch = 0; epoch < epochs && !r.diverged; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    hg::Batch batch;
    while (loader.next(batch)) {
      for (auto& p : model->parameters()) p.zero_grad();
      Tensor x = batch.images.to(dtype).to(device);            // (B, 1, 28, 28)
      Tensor loss = hg::cross_entropy((*model)(x), batch.labels);  // () in the model's dtype
      loss.backward();
      const auto named = model->named_parameters();
      if (stats.due(step)) stats.capture(step, named, 1.0);
      if (half) hg::train::sgd_step_f16(model->parameters(), bufs16, float(f.lr), float(f.momentum));
      else sgd32.step();
      if (stats.due(step)) {
        for (const auto& h : stats.finish(named, true)) {
          log.grad_hist(step, h.to_event(step));
          r.grads.add(h);
        }
      }
      r.last_loss = loss.item();
      log.scalar(step, "train/loss", r.last_loss, epoch);
      r.diverged = hg::train::check_finite_step(step, r.last_loss, model->named_parameters());
      if (r.diverged) {
        hg::train::report_divergence(log, kProgram + ": " + precision, r.diverged);
        break;
      }
      ++step;
    }
    if (r.diverged) break;  // no evaluation of a broken model
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++timed_epochs;
    hg::train::end_of_epoch(r, *model, data.test, {.input_dtype = dtype, .device = device}, log, step, epoch,
                            seconds / timed_epochs);
  }
  r.seconds_per_epoch = timed_epochs ? seconds / timed_epochs : 0;
  if (!r.diverged) log.end("finished");
  return r;
}

}  // namespace

// ---- 4. main --------------------------------------------------------------------------
int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  // ---- 1. flags ---------------------------------------------------------------------------
  CLI::App app{"Chapter 06: naive FP16 training (everything in F16) next to FP32"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps (0: never)")
      ->capture_default_str()->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a number of steps >= 0 (0: never)"));
  app.get_option("--model")->check(hg::train::OneOf({"mlp"}));
  std::string only = "both";
  app.add_option("--only", only, "fp32 | fp16 | both")->capture_default_str()
      ->check(hg::train::OneOf({"fp32", "fp16", "both"}));
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_settings(f);  // threads, --gemm, --tf32
  const std::string why = hg::train::unsupported_flags(f, /*checkpoints=*/false);
  if (!why.empty()) return hg::train::usage_error(app, why);
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, kProgram.c_str(), device)) return 2;
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  std::vector<std::string> wanted;
  if (only != "fp16") wanted.push_back("fp32");
  if (only != "fp32") wanted.push_back("fp16_naive");
  std::vector<std::string> names;  // every run folder is checked before any work
  for (const auto& p : wanted) names.push_back(hg::train::precision_run_name(f, kLesson, p));
  const std::string run_problem = hg::train::check_run_folders(names, f.overwrite, false);
  if (!run_problem.empty()) return hg::train::usage_error(app, run_problem);

  show_arithmetic();
  try {
    const hg::train::FashionMnist data = hg::train::load_fashion_mnist_normalized(f.data, f.limit_train, f.limit_test);
    std::printf("== 2. training %s: %lld train images, %lld test, %d epoch(s), batch %lld, "
                "lr %g, momentum %g ==\n", f.model.c_str(), (long long)data.train.n,
                (long long)data.test.n, epochs, (long long)f.batch_size, f.lr, f.momentum);
    std::vector<hg::train::ComparisonRun> runs;
    for (const auto& p : wanted) runs.push_back(train(p, f, device, epochs, stats_every, data));
    hg::train::print_comparison(runs);
    return hg::train::print_footer(f.model, epochs, runs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), e.what());
    return 1;
  }
}
