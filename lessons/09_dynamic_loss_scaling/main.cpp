// Chapter 09 — dynamic loss scaling: hg::amp::GradScaler picks the scale S as it goes.
// Start high (2^16); when a gradient overflows (inf/NaN) skip that step and halve S; after
// --growth-interval finite steps in a row double S. The scale draws a sawtooth that hugs
// the largest S the gradients tolerate.
//
//   1. the rule on a scripted sequence of good and overflowing steps
//   2. training: F16 model, F32 master weights (chapter 07), GradScaler on the master grads
//   3. the scale over time, the skipped steps, and the accuracy next to the static scale
//
// --checkpoint PATH / --resume PATH (dynamic_scale run only): at the end of every epoch
// the F16 model, the F32 master weights, the optimizer's momentum, where the loader stands
// and the GradScaler's state_dict() (scale, growth tracker, rule) go into one checkpoint
// (framework/train/checkpoint.h; the scaler's state in the metadata, under
// train.extra.grad_scaler). A resumed run continues bit for bit as if never stopped.
//
// What changed from chapter 08: the StaticScaler became a GradScaler; the optimizer step
// goes through scaler.step(opt), which unscales, checks, and skips on inf/NaN; then
// scaler.update(). The run log gets one loss_scale event per step (./lab view, Scale panel).
//
// Sections: 1. flags   2. the rule   3. the F16 SGD step   4. evaluate
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
#include "framework/amp/scale_rule.h"
#include "framework/amp/unscale.h"
#include "framework/autograd/grad_mode.h"
#include "framework/data/loader.h"
#include "framework/dtype/half.h"
#include "framework/eval/metrics.h"
#include "framework/io/checkpoint.h"
#include "framework/io/checkpoint_tensor.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/resume.h"
#include "framework/train/run_folder.h"
#include "framework/train/step.h"

using hg::DType;
using hg::Tensor;

namespace {

// ---- 2. the arithmetic --------------------------------------------------------------
float f16(float x) { return float(hg::half(x)); }  // round to the nearest F16, back to float

void show_arithmetic() {
  std::printf("== 1. the scale rule on a script (growth interval 3; F = finite, I = inf) ==\n");
  hg::amp::ScaleRule rule;
  rule.growth_interval = 3;
  hg::amp::ScaleState st = hg::amp::initial_state(rule);
  std::printf("  step  grads  scale used  skipped  scale after  good steps in a row\n");
  const char* script = "FFFIFFFFII";
  for (int i = 0; script[i]; ++i) {
    const bool inf = script[i] == 'I';
    const float used = st.scale;
    st = hg::amp::next_scale(st, inf, rule);
    std::printf("  %4d  %5c  %10g  %7s  %11g  %lld\n", i, script[i], used, inf ? "yes" : "no",
                st.scale, (long long)st.growth_tracker);
  }
  std::printf("\n");
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
// The checkpoint of the dynamic_scale run: the training glue's model + optimizer + state,
// plus the master copies ("master.<name>"), which the F16 model alone cannot give back.
void save_checkpoint(const std::string& path, const hg::nn::Module& model,
                     const std::vector<hg::nn::NamedTensor>& master_named,
                     const hg::optim::Optimizer& opt, const hg::train::TrainingState& state) {
  hg::io::Checkpoint ckpt = hg::train::make_checkpoint(model, &opt, state);
  for (const auto& m : master_named) hg::io::add_tensor(ckpt, "master." + m.name, m.tensor);
  hg::io::save_checkpoint(path, ckpt);  // atomic: a failed save keeps the previous file
}

// Restores everything save_checkpoint wrote; returns the training state (with the scaler's).
hg::train::TrainingState load_checkpoint(const std::string& path, hg::nn::Module& model,
                                         std::vector<hg::nn::NamedTensor>& master_named,
                                         hg::optim::Optimizer& opt, hg::DataLoader& loader) {
  const hg::io::Checkpoint ckpt = hg::io::load_checkpoint(path);
  if (!ckpt.meta.contains("train") || !ckpt.meta["train"].contains("extra") ||
      !ckpt.meta["train"]["extra"].contains("grad_scaler"))
    throw std::runtime_error(path + ": holds no GradScaler state (train.extra.grad_scaler); "
                             "write it with this chapter's --checkpoint");
  for (const auto& m : master_named)
    if (!ckpt.has("master." + m.name))
      throw std::runtime_error(path + ": holds no master weight 'master." + m.name + "'");
  hg::train::TrainingState state = hg::train::restore_checkpoint(ckpt, model, &opt, &loader);
  for (auto& m : master_named) hg::io::load_into(ckpt, "master." + m.name, m.tensor);
  return state;
}

// What a checkpoint records and --resume checks (framework/train/resume.h): the flags that
// decide which batches the run sees and what each step does.
nlohmann::json recorded_flags(const hg::train::CommonFlags& f, int epochs, double init_scale,
                              int64_t growth_interval, double clip, double min_scale, double max_scale) {
  return {{"--model", f.model}, {"--epochs", epochs}, {"--seed", f.seed}, {"--batch-size", f.batch_size},
          {"--lr", f.lr}, {"--momentum", f.momentum}, {"--limit-train", f.limit_train},
          {"--init-scale", init_scale}, {"--growth-interval", growth_interval}, {"--clip", clip},
          {"--min-scale", min_scale}, {"--max-scale", max_scale}};
}

struct RunResult {
  std::string precision;
  double test_accuracy = 0, macro_f1 = 0, last_loss = 0, seconds_per_epoch = 0;
  double underflow = 0;     // of all gradient values seen: fraction below 2^-24 (FP16 zero)
  double zeros = 0;         // fraction exactly zero
  double lost_updates = 0;  // mean lost_update_fraction over the logged steps and parameters
  hg::train::Divergence diverged;  // set when the loss or a weight became inf/NaN: the run stopped
  int64_t inf_steps = 0;  // steps skipped because the scaled gradients overflowed F16
  std::vector<float> scales;  // the scale used at every step from first_step on
  int64_t first_step = 0;     // 0, or the step a resumed run started from
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
  return (f.run_name.empty() ? "09_" + f.model : f.run_name) + "_" + precision;
}

RunResult train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device,
                int epochs,
                int64_t stats_every, const hg::amp::ScaleRule& rule, double clip, const hg::data::ImageDataset& train_ds,
                const hg::data::ImageDataset& test_ds) {
  const bool half = precision == "fp16_naive";
  const bool master_weights = precision == "master_weights" || precision == "dynamic_scale";
  hg::amp::GradScaler scaler(rule, /*enabled=*/precision == "dynamic_scale");
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
  r.dir = hg::train::claim_run_folder(run_name(f, precision), f.overwrite, !f.resume.empty());
  hg::io::RunLog log(r.dir, {{"lesson", "09_dynamic_loss_scaling"}, {"model", f.model},
                             {"precision", precision}, {"device", hg::device_name(device)}, {"seed", f.seed},
                             {"args", {{"epochs", epochs}, {"batch_size", f.batch_size},
                                       {"lr", f.lr}, {"momentum", f.momentum},
                                       {"limit_train", f.limit_train}, {"init_scale", rule.init_scale}, {"growth_interval", rule.growth_interval}, {"clip", clip},
                                       {"min_scale", rule.min_scale}, {"max_scale", rule.max_scale},
                                       {"resume", f.resume}}}},
                     /*append=*/!f.resume.empty());  // a resumed run continues its log
  hg::DataLoader loader(train_ds, {f.batch_size, true, false, f.seed});
  hg::amp::GradStatsLogger stats(stats_every);
  hg::train::TrainingState resumed;
  if (!f.resume.empty()) {  // main() allows it for the dynamic_scale run only
    resumed = load_checkpoint(f.resume, *model, master_named, sgd32, loader);
    scaler.load_state_dict(resumed.extra.at("grad_scaler"));
    std::printf("  resumed from %s: step %lld, epoch %lld, scale %g, growth tracker %lld\n",
                f.resume.c_str(), (long long)resumed.step, (long long)resumed.epoch + 1,
                scaler.get_scale(), (long long)scaler.growth_tracker());
  }
  r.first_step = resumed.step;
  int64_t step = resumed.step, grad_values = 0, lost_samples = 0;
  double underflow = 0, zeros = 0, lost_sum = 0, seconds = 0;
  int timed_epochs = 0;

  for (int epoch = int(resumed.epoch); epoch < epochs && !r.diverged; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    hg::Batch batch;
    while (loader.next(batch)) {
      for (auto& p : model->parameters()) p.zero_grad();
      Tensor x = batch.images.to(dtype).to(device);            // (B, 1, 28, 28)
      Tensor loss = hg::cross_entropy((*model)(x), batch.labels);  // () in the model's dtype
      const float scale_used = scaler.get_scale();
      scaler.scale(loss).backward();  // every gradient is S·g, in F16
      // The master grads get S·g exactly (F16 -> F32 is exact; an overflow stays inf);
      // the scaler unscales them and checks for inf/NaN.
      if (master_weights) mw->copy_grads_to_master(1.0f);
      if (master_weights && clip > 0) {
        scaler.unscale_(sgd32);                                // once per step
        hg::amp::clip_grad_norm_(mw->master_params(), clip);  // on the true gradients
      }
      // Statistics on what the optimizer updates: the master copy when there is one.
      const auto named = master_weights ? master_named : model->named_parameters();
      if (stats.due(step)) stats.capture(step, named, master_weights ? scale_used : 1.0);
      if (stats.due(step)) r.hist_scaled.push_back(hg::amp::grad_histograms(model->named_parameters(), scale_used));
      bool stepped = true;
      if (half) sgd_step_f16(model->parameters(), bufs16, float(f.lr), float(f.momentum));
      else if (precision == "dynamic_scale") stepped = scaler.step(sgd32);  // skips on inf/NaN
      else sgd32.step();
      if (master_weights) mw->copy_master_to_model();  // F32 -> F16, rounded once
      if (precision == "dynamic_scale") scaler.update();
      const bool found_inf = !stepped;
      if (found_inf) ++r.inf_steps;
      r.scales.push_back(scale_used);
      if (stats.due(step)) {
        for (const auto& h : stats.finish(named, stepped)) {
          log.grad_hist(step, h.to_event(step));
          grad_values += h.total;
          underflow += double(h.fp16_underflow);
          zeros += double(h.zeros);
          if (h.lost_update_fraction >= 0) {
            lost_sum += h.lost_update_fraction;
            ++lost_samples;
          }
        }
      }
      if (precision == "dynamic_scale") log.loss_scale(step, scale_used, found_inf, !stepped);
      r.last_loss = loss.item();
      log.scalar(step, "train/loss", r.last_loss, epoch);
      r.diverged = hg::train::check_finite_step(step, r.last_loss, model->named_parameters());
      if (r.diverged) {
        hg::train::report_divergence(log, "lesson_09: " + precision, r.diverged);
        break;
      }
      ++step;
    }
    if (r.diverged) break;  // no checkpoint and no evaluation of a broken model
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ++timed_epochs;
    if (!f.checkpoint.empty()) {
      hg::train::TrainingState s;
      s.step = step;
      s.epoch = epoch + 1;  // the next epoch to run
      s.loader = loader.state_json();
      s.generators["init"] = gen.state();
      s.extra["grad_scaler"] = scaler.state_dict();
      s.extra["lesson"] = "09_dynamic_loss_scaling";
      s.extra["flags"] = recorded_flags(f, epochs, rule.init_scale, rule.growth_interval, clip,
                                        rule.min_scale, rule.max_scale);
      save_checkpoint(f.checkpoint, *model, master_named, sgd32, s);
      std::printf("  checkpoint: %s (epoch %d done, scale %g, growth tracker %lld)\n",
                  f.checkpoint.c_str(), epoch + 1, scaler.get_scale(),
                  (long long)scaler.growth_tracker());
    }
    auto pred = predict(*model, test_ds, dtype, device);
    auto rep = hg::eval::classification_report(test_ds.labels, pred, test_ds.num_classes);
    r.test_accuracy = rep.accuracy;
    r.macro_f1 = rep.macro_f1;
    log.scalar(step, "test/accuracy", rep.accuracy, epoch);
    log.scalar(step, "time/epoch_s", seconds / (epoch + 1), epoch);
    std::printf("  %-10s epoch %d  loss %.4f  test accuracy %.4f  (%.1f s)\n", precision.c_str(),
                epoch + 1, r.last_loss, rep.accuracy, seconds / timed_epochs);
  }
  r.seconds_per_epoch = timed_epochs ? seconds / timed_epochs : 0;
  r.underflow = grad_values ? underflow / double(grad_values) : 0;
  r.zeros = grad_values ? zeros / double(grad_values) : 0;
  r.lost_updates = lost_samples ? lost_sum / double(lost_samples) : 0;
  if (!r.diverged) log.end("finished");
  return r;
}

}  // namespace

// ---- 6. main --------------------------------------------------------------------------
int main(int argc, char** argv) {
  CLI::App app{"Chapter 09: dynamic loss scaling with GradScaler (F16 model, F32 master weights)"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps (0: never)")
      ->capture_default_str()->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a number of steps >= 0 (0: never)"));
  app.get_option("--model")->check(hg::train::OneOf({"mlp"}));
  std::string runs_flag = "dynamic_scale";
  app.add_option("--runs", runs_flag, "comma list of fp32, fp16_naive, master_weights, dynamic_scale")
      ->capture_default_str()->check(hg::train::ListOf({"fp32", "fp16_naive", "master_weights", "dynamic_scale"}));
  double loss_scale = 65536.0, clip = 0.0;
  int64_t growth_interval = 2000;
  app.add_option("--init-scale", loss_scale, "the initial loss scale")->capture_default_str()
      ->check(hg::train::LossScale());
  app.add_option("--growth-interval", growth_interval, "double the scale after this many finite steps")
      ->capture_default_str()->check(hg::train::WholeIn(1, hg::train::kMaxWhole, "a number of steps >= 1"));
  app.add_option("--clip", clip, "clip the gradient norm to this after unscaling (0: off)")
      ->capture_default_str()->check(hg::train::NonNegative());
  // The scale never leaves [min, max]: backoff stops at the minimum, growth at the maximum
  // (framework/amp/scale_rule.h; PyTorch's GradScaler has no such bounds, see pytorch#99640).
  double min_scale = hg::amp::kMinLossScale, max_scale = hg::amp::kMaxLossScale;
  app.add_option("--min-scale", min_scale, "the scale never backs off below this")
      ->capture_default_str()->check(hg::train::LossScale());
  app.add_option("--max-scale", max_scale, "the scale never grows above this")
      ->capture_default_str()->check(hg::train::FiniteIn(std::ldexp(1.0, -126), 3.4028234663852886e38,
                                                          "a loss scale from 2^-126 to 3.4e38 (F32's largest)"));
  HG_PARSE_FLAGS(app, argc, argv);
  const bool resuming = !f.resume.empty();
  int64_t epochs_done = 0;
  if (resuming) {  // the checkpoint's flags fill in what the command line left out
    const std::string why = hg::train::resume_flags(app, f.resume, "09_dynamic_loss_scaling",
                                                    recorded_flags(f, f.epochs, loss_scale, growth_interval, clip,
                                                                   min_scale, max_scale),
                                                    epochs_done);
    if (!why.empty()) return hg::train::usage_error(app, why);
  }
  hg::amp::ScaleRule rule;
  rule.init_scale = float(loss_scale);
  rule.growth_interval = growth_interval;
  rule.min_scale = float(min_scale);
  rule.max_scale = float(max_scale);
  try {
    hg::amp::validate(rule);  // e.g. --min-scale above --max-scale, or --init-scale outside them
  } catch (const std::invalid_argument& e) {
    return hg::train::usage_error(app, e.what());
  }
  hg::train::apply_threads(f.threads);
  // Common flags this chapter does not implement are refused, not ignored.
  if (f.lr_schedule != "constant" || f.weight_decay != 0.0) {
    std::fprintf(stderr, "lesson_09: --lr-schedule and --weight-decay are not "
                         "supported in this chapter\n");
    return 2;
  }
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, "lesson_09", device)) return 2;
  if ((!f.checkpoint.empty() || !f.resume.empty()) && device != hg::Device::CPU) {
    std::fprintf(stderr, "lesson_09: --checkpoint and --resume run on the CPU only (checkpoints "
                         "load into CPU tensors); drop --device\n");
    return 2;
  }
  if ((!f.checkpoint.empty() || !f.resume.empty()) && runs_flag != "dynamic_scale") {
    std::fprintf(stderr, "lesson_09: --checkpoint and --resume need --runs dynamic_scale alone "
                         "(one checkpoint holds one run), got --runs %s\n", runs_flag.c_str());
    return 2;
  }
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  std::vector<std::string> wanted;  // in the order of the ladder, whatever the order of --runs
  for (const char* p : {"fp32", "fp16_naive", "master_weights", "dynamic_scale"})
    if (("," + runs_flag + ",").find(std::string(",") + p + ",") != std::string::npos) wanted.push_back(p);
  std::vector<std::string> names;  // every run folder is checked before any work
  for (const auto& p : wanted) names.push_back(run_name(f, p));
  const std::string run_problem = hg::train::check_run_folders(names, f.overwrite, resuming);
  if (!run_problem.empty()) return hg::train::usage_error(app, run_problem);
  if (resuming && epochs_done >= epochs) {  // nothing left to train: say so, print no empty table
    std::printf("%s: all %lld epoch(s) of this run are done; nothing to train (--epochs N with N > %lld "
                "trains further)\n", f.resume.c_str(), (long long)epochs_done, (long long)epochs_done);
    return 0;
  }

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
    for (const auto& p : wanted) runs.push_back(train(p, f, device, epochs, stats_every, rule, clip, train_ds, test_ds));

    std::printf("\n== 3. comparison ==\n");
    std::printf("%-15s %9s %9s %10s %11s %10s %12s %9s\n", "precision", "test acc", "macro F1",
                "last loss", "grad<2^-24", "grad==0", "lost updates", "s/epoch");
    for (const auto& r : runs)
      if (r.diverged) std::printf("%-15s %s\n", r.precision.c_str(), r.diverged.message().c_str());
      else std::printf("%-15s %9.4f %9.4f %10.4f %10.3f%% %9.3f%% %11.1f%% %9.2f\n",
                       r.precision.c_str(), r.test_accuracy, r.macro_f1, r.last_loss,
                       100 * r.underflow, 100 * r.zeros, 100 * r.lost_updates, r.seconds_per_epoch);
    std::printf("\nwhere the F16 gradients sit (as backward produced them, i.e. times S):\n");
    std::printf("%-15s %10s %10s %15s %12s %13s %10s\n", "precision", "first S", "last S",
                "median log2|g|", "==0 in F16", "skipped steps", "finite");
    for (const auto& r : runs) {
      const Where w = where_gradients_sit(r.hist_scaled);
      std::printf("%-15s %10g %10g %15.0f %11.3f%% %13lld %10s\n", r.precision.c_str(),
                  r.scales.empty() ? 0.0 : r.scales.front(), r.scales.empty() ? 0.0 : r.scales.back(),
                  w.median_exp, 100 * w.zeros, (long long)r.inf_steps, r.diverged ? "NO" : "yes");
    }
    for (const auto& r : runs) {
      if (r.precision != "dynamic_scale") continue;
      std::printf("\nthe scale over time (every change; log2 S):\n");
      for (size_t i = 0; i < r.scales.size(); ++i)
        if (i == 0 || r.scales[i] != r.scales[i - 1])
          std::printf("  step %5lld  S = 2^%-4.0f %s\n", (long long)(r.first_step + int64_t(i)),
                      std::log2(r.scales[i]),
                      i > 0 && r.scales[i] < r.scales[i - 1] ? "(halved: the step before overflowed and was skipped)"
                      : i > 0 ? "(doubled: growth interval of finite steps)" : "");
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
    std::fprintf(stderr, "lesson_09: %s\n", e.what());
    return 1;
  }
  return 0;
}
