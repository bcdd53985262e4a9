// Chapter 08 — static loss scaling: multiply the loss by a constant S before backward, so
// every gradient is S times larger and small ones stay inside F16's range; divide the
// gradients by S (unscale) before clipping and the optimizer step.
//
//   1. the arithmetic: a gradient of 1e-8 flushes to 0 in F16; times 1024 it survives
//   2. training with --loss-scale S (F16 model, F32 master weights, as in chapter 07)
//   3. the table: the gradient histogram moves right by log2 S; too large an S overflows
//      to inf, the weights become NaN, and the run stops — the reason for chapter 09
//
// What changed from chapter 07: the loss is multiplied by S (hg::amp::StaticScaler), the
// master gradients are unscaled by 1/S, gradients are clipped after unscaling (--clip), and
// the run reports where the gradients sit and whether they overflowed.
//
// Sections: 1. flags   2. the arithmetic   3. the F16 SGD step   4. evaluate
//           5. train   6. main: the runs and the table
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/amp/master_weights.h"
#include "framework/amp/unscale.h"
#include "framework/autograd/grad_mode.h"
#include "framework/data/loader.h"
#include "framework/dtype/half.h"
#include "framework/eval/metrics.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/run_folder.h"
#include "framework/train/step.h"

using hg::DType;
using hg::Tensor;

namespace {

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

// ---- 3. the F16 SGD step ------------------------------------------------------------
// PyTorch's SGD on F16 tensors, every result rounded to F16:
//   buf = momentum·buf + g   (buf = g on the first step)      buf is F16
//   p   = p − lr·buf                                         p is F16
// When |lr·buf| is below half an F16 ULP of p, p does not change: the update is lost.
// On the GPU the same three roundings come from in-place ops, each of which computes in F32
// and rounds once to F16: mul_ (momentum·buf), add_ (+ g), add_ with −lr (p − lr·buf).
void sgd_step_f16(const std::vector<Tensor>& params, std::vector<Tensor>& bufs, float lr,
                  float momentum) {
  if (bufs.empty()) bufs.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const bool first = !bufs[i].defined();
    if (first) bufs[i] = Tensor::zeros(p.shape(), DType::F16, p.device());
    if (p.device() == hg::Device::CUDA) {
      if (first) {
        hg::copy_(bufs[i], g);
      } else {
        hg::mul_(bufs[i], momentum);
        hg::add_(bufs[i], g);
      }
      hg::add_(p, bufs[i], -lr);
      continue;
    }
    hg::half* pd = p.data<hg::half>();
    hg::half* bd = bufs[i].data<hg::half>();
    const hg::half* gd = g.data<hg::half>();
    for (int64_t k = 0, n = p.numel(); k < n; ++k) {
      const float gk = float(gd[k]);
      const float b = first ? gk : f16(f16(momentum * float(bd[k])) + gk);
      bd[k] = hg::half(b);
      pd[k] = hg::half(float(pd[k]) - lr * b);
    }
  }
}

// ---- 4. evaluate ----------------------------------------------------------------------
// The model's class for every test image, with the inputs in the model's dtype.
std::vector<int32_t> predict(hg::nn::Module& model, const hg::data::ImageDataset& ds, DType dtype,
                             hg::Device device) {
  hg::NoGradGuard no_grad;
  model.eval();
  std::vector<int32_t> out;
  const int64_t per = ds.image_size(), bs = 1000;
  for (int64_t begin = 0; begin < ds.n; begin += bs) {
    const int64_t b = std::min(bs, ds.n - begin);
    std::vector<float> px(ds.images.begin() + begin * per, ds.images.begin() + (begin + b) * per);
    Tensor x = Tensor::from_vector(px, {b, ds.channels, ds.height, ds.width}, dtype).to(device);  // (B,C,H,W)
    auto pred = hg::train::argmax_classes(model(x));
    out.insert(out.end(), pred.begin(), pred.end());
  }
  model.train();
  return out;
}

// ---- 5. train -------------------------------------------------------------------------
struct RunResult {
  std::string precision;
  double test_accuracy = 0, macro_f1 = 0, last_loss = 0, seconds_per_epoch = 0;
  double underflow = 0;     // of all gradient values seen: fraction below 2^-24 (FP16 zero)
  double zeros = 0;         // fraction exactly zero
  double lost_updates = 0;  // mean lost_update_fraction over the logged steps and parameters
  hg::train::Divergence diverged;  // set when the loss or a weight became inf/NaN: the run stopped
  int64_t inf_steps = 0;  // steps whose scaled gradients overflowed F16
  std::string dir;
  std::vector<std::vector<hg::amp::GradHistogram>> hist_scaled;  // the F16 grads, scale S
};

// Median binary exponent of the logged gradient values (finite, non-zero), and the
// fractions that F16 flushes to zero or overflows.
struct Where { double median_exp = 0, underflow = 0, overflow = 0, zeros = 0; };
Where where_gradients_sit(const std::vector<std::vector<hg::amp::GradHistogram>>& hs) {
  std::vector<int64_t> counts;
  int exp_min = -40;
  int64_t total = 0, under = 0, over = 0, zeros = 0, nonfinite = 0;
  for (const auto& step : hs)
    for (const auto& h : step) {
      if (counts.empty()) counts.assign(h.counts.size(), 0);
      exp_min = h.exp_min;
      for (size_t i = 0; i < h.counts.size(); ++i) counts[i] += h.counts[i];
      total += h.total;
      under += h.fp16_underflow;
      over += h.fp16_overflow;
      zeros += h.zeros;
      nonfinite += h.inf + h.nan;
    }
  Where w;
  if (total == 0) return w;
  int64_t in_bins = 0, seen = 0;
  for (auto c : counts) in_bins += c;
  for (size_t i = 0; i < counts.size(); ++i) {
    seen += counts[i];
    if (2 * seen >= in_bins) { w.median_exp = exp_min + int(i); break; }
  }
  w.underflow = double(under) / double(total);
  w.overflow = double(over + nonfinite) / double(total);
  w.zeros = double(zeros) / double(total);
  return w;
}

// runs/<name>/ of one precision's run: "--run-name X" gives X_fp32, X_fp16_naive, ...
std::string run_name(const hg::train::CommonFlags& f, const std::string& precision) {
  return (f.run_name.empty() ? "08_" + f.model : f.run_name) + "_" + precision;
}

RunResult train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device,
                int epochs,
                int64_t stats_every, double loss_scale, double clip, const hg::data::ImageDataset& train_ds,
                const hg::data::ImageDataset& test_ds) {
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

  RunResult r;
  r.precision = precision;
  r.dir = hg::train::claim_run_folder(run_name(f, precision), f.overwrite, false);
  hg::io::RunLog log(r.dir, {{"lesson", "08_loss_scaling"}, {"model", f.model},
                             {"precision", precision}, {"device", hg::device_name(device)}, {"seed", f.seed},
                             {"args", {{"epochs", epochs}, {"batch_size", f.batch_size},
                                       {"lr", f.lr}, {"momentum", f.momentum},
                                       {"limit_train", f.limit_train}, {"loss_scale", loss_scale}, {"clip", clip}}}});
  hg::DataLoader loader(train_ds, {f.batch_size, true, false, f.seed});
  hg::amp::GradStatsLogger stats(stats_every);
  int64_t step = 0, grad_values = 0, lost_samples = 0;
  double underflow = 0, zeros = 0, lost_sum = 0, seconds = 0;

  for (int epoch = 0; epoch < epochs && !r.diverged; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    hg::Batch batch;
    while (loader.next(batch)) {
      for (auto& p : model->parameters()) p.zero_grad();
      Tensor x = batch.images.to(dtype).to(device);            // (B, 1, 28, 28)
      Tensor loss = hg::cross_entropy((*model)(x), batch.labels);  // () in the model's dtype
      scaler.scale(loss).backward();  // every gradient is S·g, in F16
      // Unscale: master grad = F32(S·g) / S. An S·g that overflowed F16 is inf here.
      bool found_inf = false;
      if (master_weights) found_inf = mw->copy_grads_to_master(1.0f / scaler.get_scale());
      if (found_inf) ++r.inf_steps;
      if (master_weights && clip > 0) hg::amp::clip_grad_norm_(mw->master_params(), clip);  // after unscale
      // Statistics on what the optimizer updates: the master copy when there is one.
      const auto named = master_weights ? master_named : model->named_parameters();
      if (stats.due(step)) stats.capture(step, named, 1.0);
      // The log keeps the gradients as the backward pass produced them (S·g, in the model's
      // dtype) with their scale S, as docs/run-log.md says: the viewer shows them shifted
      // right by log2 S, and can divide S back out.
      std::vector<hg::amp::GradHistogram> logged;
      if (stats.due(step)) {
        logged = hg::amp::grad_histograms(model->named_parameters(), scaler.get_scale());
        r.hist_scaled.push_back(logged);
      }
      if (half) sgd_step_f16(model->parameters(), bufs16, float(f.lr), float(f.momentum));
      else sgd32.step();
      if (master_weights) mw->copy_master_to_model();  // F32 -> F16, rounded once
      if (stats.due(step)) {
        const auto unscaled = stats.finish(named, true);
        for (size_t i = 0; i < unscaled.size(); ++i) {
          const auto& h = unscaled[i];
          if (i < logged.size() && logged[i].param == h.param) {
            logged[i].lost_update_fraction = h.lost_update_fraction;
            log.grad_hist(step, logged[i].to_event(step));
          } else {
            log.grad_hist(step, h.to_event(step));
          }
          grad_values += h.total;
          underflow += double(h.fp16_underflow);
          zeros += double(h.zeros);
          lost_sum += h.lost_update_fraction;
          ++lost_samples;
        }
      }
      log.loss_scale(step, scaler.get_scale(), found_inf, false);  // static: never skips
      r.last_loss = loss.item();
      log.scalar(step, "train/loss", r.last_loss, epoch);
      r.diverged = hg::train::check_finite_step(step, r.last_loss, model->named_parameters());
      if (r.diverged) {
        hg::train::report_divergence(log, "lesson_08: " + precision, r.diverged);
        break;
      }
      ++step;
    }
    if (r.diverged) break;  // no checkpoint and no evaluation of a broken model
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    auto pred = predict(*model, test_ds, dtype, device);
    auto rep = hg::eval::classification_report(test_ds.labels, pred, test_ds.num_classes);
    r.test_accuracy = rep.accuracy;
    r.macro_f1 = rep.macro_f1;
    log.scalar(step, "test/accuracy", rep.accuracy, epoch);
    log.scalar(step, "time/epoch_s", seconds / (epoch + 1), epoch);
    std::printf("  %-10s epoch %d  loss %.4f  test accuracy %.4f  (%.1f s)\n", precision.c_str(),
                epoch + 1, r.last_loss, rep.accuracy, seconds / (epoch + 1));
  }
  r.seconds_per_epoch = seconds / epochs;
  r.underflow = grad_values ? underflow / double(grad_values) : 0;
  r.zeros = grad_values ? zeros / double(grad_values) : 0;
  r.lost_updates = lost_samples ? lost_sum / double(lost_samples) : 0;
  if (!r.diverged) log.end("finished");
  return r;
}

}  // namespace

// ---- 6. main --------------------------------------------------------------------------
int main(int argc, char** argv) {
  CLI::App app{"Chapter 08: static loss scaling (F16 model, F32 master weights, loss x S)"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps (0: never)")
      ->capture_default_str()->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a number of steps >= 0 (0: never)"));
  app.get_option("--model")->check(hg::train::OneOf({"mlp"}));
  std::string runs_flag = "master_weights,static_scale";
  app.add_option("--runs", runs_flag, "comma list of fp32, fp16_naive, master_weights, static_scale")
      ->capture_default_str()->check(hg::train::ListOf({"fp32", "fp16_naive", "master_weights", "static_scale"}));
  double loss_scale = 1024.0, clip = 0.0;
  app.add_option("--loss-scale", loss_scale, "the static loss scale S")->capture_default_str()
      ->check(hg::train::LossScale());
  app.add_option("--clip", clip, "clip the gradient norm to this after unscaling (0: off)")
      ->capture_default_str()->check(hg::train::NonNegative());
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_threads(f.threads);
  // Common flags this chapter does not implement are refused, not ignored.
  if (!f.checkpoint.empty() || !f.resume.empty() || f.lr_schedule != "constant" ||
      f.weight_decay != 0.0) {
    std::fprintf(stderr, "lesson_08: --checkpoint, --resume, --lr-schedule and "
                         "--weight-decay are not supported in this chapter\n");
    return 2;
  }
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, "lesson_08", device)) return 2;
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  std::vector<std::string> wanted;  // in the order of the ladder, whatever the order of --runs
  for (const char* p : {"fp32", "fp16_naive", "master_weights", "static_scale"})
    if (("," + runs_flag + ",").find(std::string(",") + p + ",") != std::string::npos) wanted.push_back(p);
  std::vector<std::string> names;  // every run folder is checked before any work
  for (const auto& p : wanted) names.push_back(run_name(f, p));
  const std::string run_problem = hg::train::check_run_folders(names, f.overwrite, false);
  if (!run_problem.empty()) return hg::train::usage_error(app, run_problem);

  show_arithmetic();
  try {
    const std::string dir = hg::data::fashion_mnist_dir(f.data);
    auto train_ds = hg::data::load_fashion_mnist(dir, true, f.limit_train);
    auto test_ds = hg::data::load_fashion_mnist(dir, false, f.limit_test);
    hg::data::normalize(train_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    hg::data::normalize(test_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    std::printf("== 2. training %s: %lld train images, %lld test, %d epoch(s), batch %lld, "
                "lr %g, momentum %g ==\n", f.model.c_str(), (long long)train_ds.n,
                (long long)test_ds.n, epochs, (long long)f.batch_size, f.lr, f.momentum);
    std::vector<RunResult> runs;
    for (const auto& p : wanted) runs.push_back(train(p, f, device, epochs, stats_every, loss_scale, clip, train_ds, test_ds));

    std::printf("\n== 3. comparison ==\n");
    std::printf("%-15s %9s %9s %10s %11s %10s %12s %9s\n", "precision", "test acc", "macro F1",
                "last loss", "grad<2^-24", "grad==0", "lost updates", "s/epoch");
    for (const auto& r : runs)
      if (r.diverged) std::printf("%-15s %s\n", r.precision.c_str(), r.diverged.message().c_str());
      else std::printf("%-15s %9.4f %9.4f %10.4f %10.3f%% %9.3f%% %11.1f%% %9.2f\n",
                       r.precision.c_str(), r.test_accuracy, r.macro_f1, r.last_loss,
                       100 * r.underflow, 100 * r.zeros, 100 * r.lost_updates, r.seconds_per_epoch);
    std::printf("\nwhere the F16 gradients sit (as backward produced them, i.e. times S):\n");
    std::printf("%-15s %10s %15s %12s %12s %9s %10s\n", "precision", "scale S", "median log2|g|",
                "==0 in F16", ">65504/inf", "inf steps", "finite");
    for (const auto& r : runs) {
      const Where w = where_gradients_sit(r.hist_scaled);
      std::printf("%-15s %10g %15.0f %11.3f%% %11.4f%% %9lld %10s\n", r.precision.c_str(),
                  r.precision == "static_scale" ? loss_scale : 1.0, w.median_exp, 100 * w.zeros,
                  100 * w.overflow, (long long)r.inf_steps, r.diverged ? "NO" : "yes");
    }
    std::printf("\ngrad<2^-24: gradient values an F16 gradient cannot hold (they become 0)\n"
                "lost updates: elements with a non-zero gradient whose weight did not change\n"
                "run logs: ");
    for (const auto& r : runs) std::printf("%s/  ", r.dir.c_str());
    std::printf("(./lab view)\n");
    bool diverged = false;
    for (const auto& r : runs) {
      diverged = diverged || r.diverged;
      if (!r.diverged)
        std::printf("RESULT model=%s precision=%s epochs=%d seconds_per_epoch=%.2f "
                    "test_accuracy=%.4f lost_updates=%.4f\n", f.model.c_str(), r.precision.c_str(),
                    epochs, r.seconds_per_epoch, r.test_accuracy, r.lost_updates);
    }
    if (diverged) return hg::train::kExitDiverged;  // the table above says which run and why
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_08: %s\n", e.what());
    return 1;
  }
  return 0;
}
