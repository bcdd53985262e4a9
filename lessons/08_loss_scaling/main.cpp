// Chapter 08 — static loss scaling: multiply the loss by a constant S before backward, so
// every gradient is S times larger and small ones stay inside F16's range; divide the
// gradients by S (unscale) before clipping and the optimizer step.
//
// What changed from chapter 07: the loss is multiplied by S (hg::amp::StaticScaler), the
// master gradients are unscaled by 1/S, gradients are clipped after unscaling (--clip), and
// the run reports where the gradients sit and whether they overflowed.
//
// Sections: 1. flags   2. the arithmetic   3. train (one loop for all precisions)
//           4. main: the runs and the tables
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/amp/grad_scaler.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/amp/master_weights.h"
#include "framework/amp/unscale.h"
#include "framework/cpu/wait_policy.h"
#include "framework/data/loader.h"
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

const std::string kLesson = "08_loss_scaling";     // run.json's "lesson"; runs/08_mlp_<precision>/
const std::string kProgram = "lesson_" + kLesson.substr(0, 2);  // how its messages start
const std::vector<std::string> kRuns = {"fp32", "fp16_naive", "master_weights", "static_scale"};  // --runs, in table order

// ---- 2. the arithmetic --------------------------------------------------------------
float f16(float x) { return float(hg::half(x)); }  // round to the nearest F16, back to float

void show_arithmetic() {
  std::printf("== 1. what a loss scale does to a small gradient ==\n");
  for (float g : {1e-8f, 3e-6f, 1e-3f}) {
    std::printf("  g = %-7g  F16(g) = %-12.6g  F16(1024 g)/1024 = %-12.6g  F16(2^20 g) = %g\n",
                g, f16(g), f16(1024.0f * g) / 1024.0f, f16(1048576.0f * g));
  }
  std::printf("  (F16 keeps 2^-24 .. 65504: scaling lifts the small ones; too much overflows)\n\n");
}

// ---- 3. train -------------------------------------------------------------------------
hg::train::ComparisonRun train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device,
                               int epochs, int64_t stats_every, double loss_scale, double clip,
                               const hg::train::FashionMnist& data) {
  const bool half = precision == "fp16_naive";
  const bool master_weights = precision == "master_weights" || precision == "static_scale";
  const hg::amp::StaticScaler scaler(precision == "static_scale" ? float(loss_scale) : 1.0f);
  const DType dtype = (half || master_weights) ? DType::F16 : DType::F32;
  hg::Generator gen(f.seed);
  hg::nn::ModulePtr model = std::make_shared<hg::nn::MLP>(gen);  // initialised in F32
  model->to(dtype);                                            // then rounded to F16
  model->to(device);                                           // and moved, before any optimizer
  // Master weights: an F32 copy of every F16 parameter; the optimizer (and its momentum,
  // also F32) works on the copies.
  std::unique_ptr<hg::amp::MasterWeights> mw;
  std::vector<hg::nn::NamedTensor> master_named;
  if (master_weights) {
    mw = std::make_unique<hg::amp::MasterWeights>(model->parameters());
    const auto names = model->named_parameters();
    for (size_t i = 0; i < names.size(); ++i)
      master_named.push_back({names[i].name, mw->master_params()[i]});
  }
  hg::optim::SGD sgd32(master_weights ? mw->master_params() : model->parameters(),
                       {.lr = f.lr, .momentum = f.momentum});
  std::vector<Tensor> bufs16;  // the F16 momentum buffers

  hg::train::ComparisonRun r;
  r.precision = precision;
  r.dir = hg::train::claim_run_folder(hg::train::precision_run_name(f, kLesson, precision), f.overwrite, false);
  hg::io::RunLog log(r.dir, hg::train::comparison_run_json(kLesson, f, precision, device, epochs,
                                                          {{"loss_scale", loss_scale}, {"clip", clip}}));
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
      const float scale_used = scaler.get_scale();
      scaler.scale(loss).backward();  // every gradient is S·g, in F16
      // Unscale: master grad = F32(S·g) / S. An S·g that overflowed F16 is inf here.
      bool found_inf = false;
      if (master_weights) found_inf = mw->copy_grads_to_master(1.0f / scale_used);
      if (master_weights && clip > 0) hg::amp::clip_grad_norm_(mw->master_params(), clip);  // after unscale
      // Statistics on what the optimizer updates: the master copy when there is one.
      const auto named = master_weights ? master_named : model->named_parameters();
      if (stats.due(step)) stats.capture(step, named, 1.0);
      // The log keeps the gradients as the backward pass produced them (S·g, in the model's
      // dtype) with their scale S, as docs/run-log.md says: the viewer shows them shifted
      // right by log2 S, and can divide S back out.
      std::vector<hg::amp::GradHistogram> logged;
      if (stats.due(step)) {
        logged = hg::amp::grad_histograms(model->named_parameters(), scale_used);
        r.hist_scaled.push_back(logged);
      }
      if (half) hg::train::sgd_step_f16(model->parameters(), bufs16, float(f.lr), float(f.momentum));
      else sgd32.step();  // a static scaler does not look: an inf goes into the weights
      if (master_weights) mw->copy_master_to_model();  // F32 -> F16, rounded once
      if (stats.due(step)) {
        const auto captured = stats.finish(named, true);
        for (size_t i = 0; i < captured.size(); ++i) {
          const auto& h = captured[i];
          if (i < logged.size() && logged[i].param == h.param) {
            logged[i].lost_update_fraction = h.lost_update_fraction;
            log.grad_hist(step, logged[i].to_event(step));
          } else {
            log.grad_hist(step, h.to_event(step));
          }
          r.grads.add(h);
        }
      }
      r.overflow_steps += found_inf;
      r.scales.push_back(scale_used);
      log.loss_scale(step, scale_used, found_inf, false);  // static: never skips
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
  CLI::App app{"Chapter 08: static loss scaling (F16 model, F32 master weights, loss x S)"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps (0: never)")
      ->capture_default_str()->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a number of steps >= 0 (0: never)"));
  app.get_option("--model")->check(hg::train::OneOf({"mlp"}));
  std::string runs_flag = "master_weights,static_scale";
  hg::train::add_runs_flag(app, runs_flag, kRuns);
  double loss_scale = 1024.0, clip = 0.0;
  app.add_option("--loss-scale", loss_scale, "the static loss scale S")->capture_default_str()
      ->check(hg::train::LossScale());
  app.add_option("--clip", clip, "clip the gradient norm to this after unscaling (0: off)")
      ->capture_default_str()->check(hg::train::NonNegative());
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_settings(f);  // threads, --gemm, --tf32
  const std::string why = hg::train::unsupported_flags(f, /*checkpoints=*/false);
  if (!why.empty()) return hg::train::usage_error(app, why);
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, kProgram.c_str(), device)) return 2;
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  const std::vector<std::string> wanted = hg::train::runs_in_order(runs_flag, kRuns);
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
    for (const auto& p : wanted) runs.push_back(train(p, f, device, epochs, stats_every, loss_scale, clip, data));
    hg::train::print_comparison(runs);
    hg::train::print_gradient_place(runs);
    return hg::train::print_footer(f.model, epochs, runs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), e.what());
    return 1;
  }
}
