// Chapter 10 — automatic mixed precision: F32 weights, an Autocast region that runs each op
// in the precision the policy table gives it, and a GradScaler. The training step is the
// three lines every AMP program has:
//
//   { hg::amp::Autocast ac(hg::DType::F16);                 // matmul/linear/conv in F16
//     loss = hg::cross_entropy(model(x), labels); }          // softmax, losses, norms in F32
//   scaler.scale(loss).backward();
//   scaler.step(opt);  scaler.update();                      // unscale, skip on inf/NaN
//
//   1. the policy table (framework/amp/policy.cpp) and the dtypes one forward pass produces
//   2. FP32 and AMP on the same model and seed: loss, accuracy, precision/recall/F1,
//      time per epoch, activation memory (and, on the GPU, peak GPU memory)
//
// --device cuda runs the same loop on the GPU: the model and each batch move there, the
// F16 ops go to the tensor-core GEMMs, the scaler's unscale-and-check is one kernel per
// gradient. The classic experiment of the AMP literature is then one command (10 epochs of
// ResNet-50, FP32 vs AMP; tests/gpu/resnet50_amp.sh):
//
//   ./lab lesson 10 --device cuda --model resnet50 --epochs 10 --limit-train -1 --lr 0.01
//                   --stats-every 0      (one command, on two lines here)
//
// What changed from chapter 09: no F16 model and no master copy — the parameters stay F32
// and are cast at op entry (cached per region), the gradients come back F32 through the
// casts, and the optimizer steps the F32 weights directly. The loss scaler is the same.
//
// Sections: 1. the policy   2. train (one loop for all precisions)   3. main: the runs and the table
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/cpu/gemm.h"
#include "framework/amp/activation_memory.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/amp/policy.h"
#include "framework/amp/unscale.h"
#include "framework/autograd/grad_mode.h"
#include "framework/cpu/wait_policy.h"
#include "framework/data/loader.h"
#include "framework/eval/metrics.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/run_folder.h"
#include "framework/train/data.h"
#include "framework/train/step.h"
#if HG_WITH_CUDA
#include "cuda/runtime/memory.h"
#endif

using hg::DType;
using hg::Tensor;

namespace {

const std::string kLesson = "10_autocast_amp";  // run.json's "lesson"; runs/10_<model>_<precision>/
const std::string kProgram = "lesson_" + kLesson.substr(0, 2);  // how its messages start

// ---- 1. the policy --------------------------------------------------------------------
void show_policy(hg::nn::Module& model, DType low) {
  std::printf("== 1. the autocast policy (framework/amp/policy.cpp) ==\n");
  for (const auto& e : hg::amp::policy_table())
    std::printf("  %-18s %s\n", e.op, hg::amp::to_string(e.policy));
  // Where this table deliberately differs from PyTorch's autocast, and why.
  // Ops that differ in the same way are listed together.
  std::printf("\n  where halfgrad differs from PyTorch 1.13's autocast:\n");
  const auto diffs = hg::amp::policy_differences();
  for (size_t i = 0; i < diffs.size(); ++i) {
    bool seen = false;
    for (size_t j = 0; j < i; ++j) seen |= diffs[j].pytorch == diffs[i].pytorch && diffs[j].reason == diffs[i].reason;
    if (seen) continue;
    std::string ops = diffs[i].op;
    for (size_t j = i + 1; j < diffs.size(); ++j)
      if (diffs[j].pytorch == diffs[i].pytorch && diffs[j].reason == diffs[i].reason) ops += ", " + diffs[j].op;
    std::printf("  %s: halfgrad %s\n    PyTorch: %s\n    why: %s\n", ops.c_str(), diffs[i].halfgrad.c_str(),
                diffs[i].pytorch.c_str(), diffs[i].reason.c_str());
  }
  // One forward pass on a small batch, inside and outside a region.
  hg::NoGradGuard no_grad;
  Tensor x = Tensor::zeros({2, 1, 28, 28});
  Tensor logits_fp32 = model(x);
  Tensor logits_amp, loss_amp;
  {
    hg::amp::Autocast ac(low);
    logits_amp = model(x);
    loss_amp = hg::cross_entropy(logits_amp, std::vector<int32_t>{0, 1});
  }
  std::printf("\n  logits outside a region: %s;  inside a %s region: %s;  the loss: %s\n"
              "  the weights stay %s\n\n", hg::dtype_name(logits_fp32.dtype()), hg::dtype_name(low),
              hg::dtype_name(logits_amp.dtype()), hg::dtype_name(loss_amp.dtype()),
              hg::dtype_name(model.parameters()[0].dtype()));
}

// ---- 2. train -----------------------------------------------------------------------------
struct RunResult {
  std::string precision;
  hg::eval::Report report;
  double last_loss = 0, seconds_per_epoch = 0;
  int64_t activation_bytes = 0;  // of one training step's graph, batch size as given
  int64_t gpu_peak_bytes = -1;   // the GPU allocator's peak over the run (-1: not on the GPU)
  int64_t weight_copy_bytes = 0;  // F16 casts of the F32 weights the graph holds (AMP only)
  int64_t skipped = 0;
  std::string skipped_steps;  // "12 (scale 65536), 13 (scale 32768)"
  double max_grad = 0;        // the largest finite |gradient| of the run, after unscaling
  int64_t max_grad_step = 0;
  float last_scale = 0;
  hg::train::Divergence diverged;  // set when the loss or a weight became inf/NaN: the run stopped
  std::string dir;
};

RunResult train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device,
                int epochs, int64_t stats_every, const hg::train::ScaleRuleFlags& scale_flags,
                const hg::train::FashionMnist& data) {
  const bool amp = precision != "fp32";
  const DType low = precision == "amp_bf16" ? DType::BF16 : DType::F16;
  hg::Generator gen(f.seed);
  hg::nn::ModulePtr model = hg::nn::make_model(f.model, gen);  // F32, and it stays F32
  model->to(device);  // before the optimizer: it holds the tensors it will step
  hg::optim::SGD opt(model->parameters(), {.lr = f.lr, .momentum = f.momentum});
#if HG_WITH_CUDA
  if (device == hg::Device::CUDA) hg::cuda::reset_peak_bytes();  // this run's peak only
#endif
  // BF16 has F32's range: no scaler needed (chapter 11). F16 gets PyTorch's defaults.
  hg::amp::GradScaler scaler(scale_flags.rule(), /*enabled=*/precision == "amp_f16");

  RunResult r;
  r.precision = precision;
  r.dir = hg::train::claim_run_folder(hg::train::precision_run_name(f, kLesson, precision), f.overwrite, false);
  hg::io::RunLog log(r.dir, hg::train::comparison_run_json(kLesson, f, precision, device, epochs, scale_flags.args()));
  hg::DataLoader loader(data.train, {f.batch_size, true, false, f.seed});
  hg::amp::GradStatsLogger stats(stats_every);
  int64_t step = 0;
  double seconds = 0;
  for (int epoch = 0; epoch < epochs && !r.diverged; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    hg::Batch batch;
    while (loader.next(batch)) {
      opt.zero_grad();
      const float scale_used = scaler.get_scale();
      Tensor loss;
      {
        hg::amp::Autocast ac(low, amp);  // enabled = false for the FP32 run: same loop
        loss = hg::cross_entropy((*model)(batch.images.to(device)), batch.labels);
      }
      if (step == 0) {
        const auto mem = hg::amp::graph_memory(loss);
        r.activation_bytes = mem.activations;
        r.weight_copy_bytes = mem.weight_copies;
      }
      scaler.scale(loss).backward();
      const auto named = model->named_parameters();
      if (stats.due(step)) stats.capture(step, named, scaler.is_enabled() ? scale_used : 1.0);
      const bool stepped = scaler.step(opt);
      scaler.update();
      if (stats.due(step))
        for (const auto& h : stats.finish(named, stepped)) log.grad_hist(step, h.to_event(step));
      if (scaler.is_enabled()) log.loss_scale(step, scale_used, !stepped, !stepped);
      r.skipped += !stepped;
      if (!stepped)
        r.skipped_steps += (r.skipped_steps.empty() ? "" : ", ") + std::to_string(step) +
                           " (scale " + std::to_string(int64_t(scale_used)) + ")";
      // The gradients are unscaled now (step() did it): how large do they get? A value
      // above 65504 / S overflowed F16 while still scaled by S.
      if (stepped) {
        const double g = hg::amp::max_abs_grad(model->parameters());
        if (g > r.max_grad) r.max_grad = g, r.max_grad_step = step;
      }
      r.last_loss = loss.item();
      log.scalar(step, "train/loss", r.last_loss, epoch);
      // A skipped step (gradients overflowed at scale S) leaves the weights as they were and
      // is the scaler's business; a loss or a weight that is inf/NaN ends the run.
      r.diverged = hg::train::check_finite_step(step, r.last_loss, model->named_parameters());
      if (r.diverged) {
        hg::train::report_divergence(log, kProgram + ": " + precision, r.diverged);
        break;
      }
      ++step;
    }
    if (r.diverged) break;  // no evaluation of a broken model
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto pred = hg::train::predict(*model, data.test, {.autocast = amp, .autocast_dtype = low, .device = device});
    r.report = hg::eval::classification_report(data.test.labels, pred, data.test.num_classes);
    log.scalar(step, "test/accuracy", r.report.accuracy, epoch);
    log.scalar(step, "test/macro_f1", r.report.macro_f1, epoch);
    log.scalar(step, "time/epoch_s", seconds / (epoch + 1), epoch);
    std::printf("  %-8s epoch %d  loss %.4f  test accuracy %.4f  macro F1 %.4f  (%.1f s)\n",
                precision.c_str(), epoch + 1, r.last_loss, r.report.accuracy, r.report.macro_f1,
                seconds / (epoch + 1));
  }
  r.seconds_per_epoch = seconds / epochs;
  r.last_scale = scaler.get_scale();
#if HG_WITH_CUDA
  if (device == hg::Device::CUDA) r.gpu_peak_bytes = int64_t(hg::cuda::peak_bytes());
#endif
  if (!r.diverged) log.end("finished");
  return r;
}

// The comparison table, each run against the first (FP32 by default), and the largest gradients.
void print_summary(const std::vector<RunResult>& runs) {
  std::printf("\n%-9s %9s %9s %9s %9s %10s %9s %12s %13s %8s\n", "precision", "test acc",
              "macro P", "macro R", "macro F1", "last loss", "s/epoch", "activations",
              "weight copies", "skipped");
  for (const auto& r : runs)
    if (r.diverged) std::printf("%-9s %s\n", r.precision.c_str(), r.diverged.message().c_str());
    else std::printf("%-9s %9.4f %9.4f %9.4f %9.4f %10.4f %9.2f %9.3f MB %10.3f MB %8lld\n",
                     r.precision.c_str(), r.report.accuracy, r.report.macro_precision,
                     r.report.macro_recall, r.report.macro_f1, r.last_loss, r.seconds_per_epoch,
                     r.activation_bytes / 1e6, r.weight_copy_bytes / 1e6, (long long)r.skipped);
  if (runs.size() >= 2 && runs[0].activation_bytes > 0 && !runs[0].diverged)
    for (size_t i = 1; i < runs.size(); ++i)
      if (!runs[i].diverged)
        std::printf("%s vs %s: time x%.2f, activation memory x%.2f, accuracy %+.4f\n",
                    runs[i].precision.c_str(), runs[0].precision.c_str(),
                    runs[i].seconds_per_epoch / runs[0].seconds_per_epoch,
                    double(runs[i].activation_bytes) / double(runs[0].activation_bytes),
                    runs[i].report.accuracy - runs[0].report.accuracy);
  for (const auto& r : runs) {
    std::printf("%-9s largest |gradient| %.3g (step %lld)", r.precision.c_str(), r.max_grad,
                (long long)r.max_grad_step);
    if (r.skipped > 0) std::printf("; skipped steps: %s", r.skipped_steps.c_str());
    std::printf("\n");
  }
}

}  // namespace

// ---- 3. main ------------------------------------------------------------------------------
int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  CLI::App app{"Chapter 10: automatic mixed precision (autocast + GradScaler) vs FP32"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps (0: never)")
      ->capture_default_str()->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a number of steps >= 0 (0: never)"));
  app.get_option("--model")->check(hg::train::OneOf(hg::nn::model_names()));
  std::string runs_flag = "fp32,amp_f16";
  hg::train::add_runs_flag(app, runs_flag, {"fp32", "amp_f16", "amp_bf16"});
  hg::train::ScaleRuleFlags scale_flags;  // the amp_f16 run's GradScaler: --init-scale, --min/max-scale
  hg::train::add_scale_rule_flags(app, scale_flags, /*growth=*/false);
  bool per_class = false;
  app.add_flag("--per-class", per_class, "print the per-class precision/recall/F1 tables");
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_settings(f);  // threads, --gemm, --tf32
  std::string why = hg::train::unsupported_flags(f, /*checkpoints=*/false);
  if (why.empty()) why = scale_flags.settle();  // e.g. --min-scale above --max-scale
  if (!why.empty()) return hg::train::usage_error(app, why);
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, kProgram.c_str(), device)) return 2;
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  const std::vector<std::string> wanted = hg::train::split_list(runs_flag);  // checked by ListOf
  std::vector<std::string> names;  // every run folder is checked before any work
  for (const auto& p : wanted) names.push_back(hg::train::precision_run_name(f, kLesson, p));
  const std::string run_problem = hg::train::check_run_folders(names, f.overwrite, false);
  if (!run_problem.empty()) return hg::train::usage_error(app, run_problem);

  try {
    {
      hg::Generator gen(f.seed);
      auto model = hg::nn::make_model(f.model, gen);
      show_policy(*model, DType::F16);
    }
    const hg::train::FashionMnist data = hg::train::load_fashion_mnist_normalized(f.data, f.limit_train, f.limit_test);
    std::printf("== 2. training %s on the %s: %lld train images, %lld test, %d epoch(s), batch %lld, "
                "lr %g, momentum %g ==\n", f.model.c_str(), device == hg::Device::CUDA ? "GPU" : "CPU",
                (long long)data.train.n, (long long)data.test.n, epochs, (long long)f.batch_size, f.lr,
                f.momentum);
    std::vector<RunResult> runs;
    for (const auto& p : wanted) runs.push_back(train(p, f, device, epochs, stats_every, scale_flags, data));

    print_summary(runs);
    if (per_class)
      for (const auto& r : runs)
        if (!r.diverged)
          std::printf("\n%s\n%s", r.precision.c_str(),
                      hg::eval::format_report(r.report, data.test.class_names).c_str());
    for (const auto& r : runs)
      if (r.gpu_peak_bytes >= 0)
        std::printf("%-9s GPU memory at its peak: %.1f MB (parameters, gradients, momentum, "
                    "activations, workspace)\n", r.precision.c_str(), r.gpu_peak_bytes / 1e6);
    std::printf("\nactivations: bytes the autograd graph of one training step keeps for backward "
                "(batch %lld);\nweight copies: the F16 casts of the F32 weights it also keeps\n",
                (long long)f.batch_size);
    if (device == hg::Device::CPU)
      std::printf("on the CPU: %s; on a GPU the same program runs with --device cuda\n",
                  hg::cpu::cpu_lowp_sentence().c_str());
    std::printf("run logs: ");
    for (const auto& r : runs) std::printf("%s/  ", r.dir.c_str());
    std::printf("(./lab view)\n");
    bool diverged = false;
    for (const auto& r : runs) {
      diverged = diverged || r.diverged;
      if (!r.diverged)
        std::printf("RESULT model=%s device=%s precision=%s epochs=%d batch=%lld seconds_per_epoch=%.2f "
                    "test_accuracy=%.4f macro_f1=%.4f activation_bytes=%lld gpu_peak_bytes=%lld\n",
                    f.model.c_str(), hg::device_name(device), r.precision.c_str(), epochs,
                    (long long)f.batch_size, r.seconds_per_epoch, r.report.accuracy, r.report.macro_f1,
                    (long long)r.activation_bytes, (long long)r.gpu_peak_bytes);
    }
    if (diverged) return hg::train::kExitDiverged;  // the table above says which run and why
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), e.what());
    return 1;
  }
  return 0;
}
