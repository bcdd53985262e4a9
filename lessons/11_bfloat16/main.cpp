// Chapter 11 — BF16: autocast to bfloat16, with no loss scaler. BF16 has F32's 8 exponent
// bits (range up to 3.4e38, down to 1e-38) and only 7 mantissa bits (2-3 decimal digits).
//
//   1. range vs precision: values that overflow F16 but not BF16; what BF16 rounds away;
//      the error of a matmul in F16 and in BF16 against F32
//   2. training: amp_f16 (with GradScaler) next to amp_bf16 (no scaler);
//      --input-scale K multiplies the images by K: activations beyond 65504 become inf in
//      F16 (a loss scaler cannot help: the forward pass itself overflows) but not in BF16
//
// What changed from chapter 10: the runs are amp_f16 and amp_bf16; the images can be
// scaled (--input-scale); section 1 measures the two formats instead of printing the policy.
//
// Sections: 1. range and precision   2. train (one loop for all precisions)   3. main: the runs and the table
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/cpu/gemm.h"
#include "framework/cpu/wait_policy.h"
#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"
#include "framework/amp/activation_memory.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/amp/policy.h"
#include "framework/autograd/grad_mode.h"
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

using hg::DType;
using hg::Tensor;

namespace {

const std::string kLesson = "11_bfloat16";  // run.json's "lesson"; runs/11_<model>_<precision>/
const std::string kProgram = "lesson_" + kLesson.substr(0, 2);  // how its messages start

// ---- 1. range and precision ----------------------------------------------------------------
void show_formats() {
  std::printf("== 1. FP16 vs BF16: range and precision ==\n");
  std::printf("  %-14s %-14s %-14s\n", "value", "as FP16", "as BF16");
  for (float v : {70000.0f, 1.0e6f, 3.0e-8f, 1.0e-30f, 1.001f, 3.14159265f, 2049.0f}) {
    std::printf("  %-14.9g %-14.9g %-14.9g\n", v, float(hg::half(v)), float(hg::bfloat16(v)));
  }
  // A (64 x 256) · (256 x 64) product of random numbers in F16 and BF16 operands (F32
  // accumulation in both, as a tensor core does) against F32.
  hg::Generator gen(7);
  Tensor a = Tensor::randn({64, 256}, gen), b = Tensor::randn({256, 64}, gen);
  const auto ref = hg::matmul(a, b).to_vector();
  for (DType d : {DType::F16, DType::BF16}) {
    const auto got = hg::matmul(a.to(d), b.to(d)).to(DType::F32).to_vector();
    double num = 0, den = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      num += double(got[i] - ref[i]) * (got[i] - ref[i]);
      den += double(ref[i]) * ref[i];
    }
    std::printf("  matmul (64x256)·(256x64) in %-4s: relative error %.2e vs F32\n",
                hg::dtype_name(d), std::sqrt(num / den));
  }
  // An activation above 65504: a linear layer whose output is ~1.2e5. Inside an F16 region
  // the output is inf and the loss NaN — no loss scale can help, the forward pass itself
  // overflows. Inside a BF16 region it is just a large number.
  Tensor x = Tensor::full({1, 784}, 300.0);                 // (1, 784)
  Tensor w = Tensor::full({10, 784}, 0.5);                  // (10, 784): each output 117600
  w.requires_grad_(true);
  const std::vector<int32_t> label = {3};
  for (DType d : {DType::F16, DType::BF16}) {
    hg::amp::Autocast ac(d);
    Tensor h = hg::linear(x, w);                            // (1, 10) in d
    Tensor loss = hg::cross_entropy(h, label);              // () in F32
    std::printf("  linear output 784 x 300 x 0.5 = 117600 in a %-4s region: %-10g loss %g\n",
                hg::dtype_name(d), h.to(DType::F32).to_vector()[0], loss.item());
  }
  // Where the speed comes from: 16-bit operands on tensor cores — a GPU's, or the CPU's own
  // BF16 unit (chapter 05), which sums in its own order (the numbers above ran on it too).
  std::printf("  on a GPU (--device cuda): F16 and BF16 matmuls and convolutions run on tensor cores (BF16 from\n"
              "  sm_80; an older GPU widens BF16 to F32), F32 stays F32 unless --tf32 puts it on TF32 tensor\n"
              "  cores (sm_80+).\n  On this CPU: %s.\n", hg::cpu::cpu_lowp_sentence().c_str());
  std::printf("\n");
}

// ---- 2. train -----------------------------------------------------------------------------
struct RunResult {
  std::string precision;
  hg::eval::Report report;
  double last_loss = 0, seconds_per_epoch = 0;
  int64_t activation_bytes = 0;  // of one training step's graph, batch size as given
  int64_t weight_copy_bytes = 0;  // F16 casts of the F32 weights the graph holds (AMP only)
  int64_t skipped = 0;
  float last_scale = 0;       // the GradScaler's scale at the end (amp_f16 only)
  bool has_scaler = false;    // BF16 and FP32 runs have none: nothing to skip, no scale
  hg::train::Divergence diverged;  // set when the loss or a weight became inf/NaN: the run stopped
  std::string dir;
};

RunResult train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device, int epochs,
                int64_t stats_every, double input_scale, const hg::train::FashionMnist& data) {
  const bool amp = precision != "fp32";
  const DType low = precision == "amp_bf16" ? DType::BF16 : DType::F16;
  hg::Generator gen(f.seed);
  hg::nn::ModulePtr model = hg::nn::make_model(f.model, gen);  // F32, and it stays F32
  model->to(device);  // before the optimizer: it holds the tensors it will step
  hg::optim::SGD opt(model->parameters(), {.lr = f.lr, .momentum = f.momentum});
  // BF16 has F32's range: no scaler needed (chapter 11). F16 gets PyTorch's defaults.
  hg::amp::GradScaler scaler(hg::amp::ScaleRule{}, /*enabled=*/precision == "amp_f16");

  RunResult r;
  r.precision = precision;
  r.dir = hg::train::claim_run_folder(hg::train::precision_run_name(f, kLesson, precision), f.overwrite, false);
  hg::io::RunLog log(r.dir, hg::train::comparison_run_json(kLesson, f, precision, device, epochs,
                                                          {{"input_scale", input_scale}}));
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
        loss = hg::cross_entropy((*model)(hg::mul(batch.images.to(device), input_scale)), batch.labels);
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
      r.last_loss = loss.item();
      log.scalar(step, "train/loss", r.last_loss, epoch);
      // A skipped step (gradients overflowed at scale S) leaves the weights as they were and
      // is the scaler's business; a loss or a weight that is inf/NaN ends the run. An F16
      // forward pass that overflows gives an inf/NaN loss: no loss scale can help there.
      r.diverged = hg::train::check_finite_step(step, r.last_loss, model->named_parameters());
      if (r.diverged) {
        hg::train::report_divergence(log, kProgram + ": " + precision, r.diverged);
        break;
      }
      ++step;
    }
    if (r.diverged) break;  // no evaluation of a broken model
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto pred = hg::train::predict(
        *model, data.test, {.autocast = amp, .autocast_dtype = low, .input_scale = input_scale, .device = device});
    r.report = hg::eval::classification_report(data.test.labels, pred, data.test.num_classes);
    log.scalar(step, "test/accuracy", r.report.accuracy, epoch);
    log.scalar(step, "test/macro_f1", r.report.macro_f1, epoch);
    log.scalar(step, "time/epoch_s", seconds / (epoch + 1), epoch);
    std::printf("  %-8s epoch %d  loss %.4f  test accuracy %.4f  macro F1 %.4f  (%.1f s)\n",
                precision.c_str(), epoch + 1, r.last_loss, r.report.accuracy, r.report.macro_f1,
                seconds / (epoch + 1));
  }
  r.seconds_per_epoch = seconds / epochs;
  r.has_scaler = scaler.is_enabled();
  r.last_scale = scaler.get_scale();
  if (!r.diverged) log.end("finished");
  return r;
}

// "%g" of x, or "-" for a run that has no such number (no loss scaler: no skips, no scale).
std::string g_or_dash(bool has, double x) {
  if (!has) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%g", x);
  return text;
}

}  // namespace

// ---- 3. main ------------------------------------------------------------------------------
int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  CLI::App app{"Chapter 11: BF16 autocast without a loss scaler, next to F16 AMP"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps (0: never)")
      ->capture_default_str()->check(hg::train::WholeIn(0, hg::train::kMaxWhole, "a number of steps >= 0 (0: never)"));
  app.get_option("--model")->check(hg::train::OneOf(hg::nn::model_names()));
  std::string runs_flag = "amp_f16,amp_bf16";
  double input_scale = 1.0;
  app.add_option("--input-scale", input_scale, "multiply the images by this (large: F16 overflows)")
      ->capture_default_str()->check(hg::train::Positive(std::numeric_limits<float>::max()));
  hg::train::add_runs_flag(app, runs_flag, {"fp32", "amp_f16", "amp_bf16"});
  bool per_class = false;
  app.add_flag("--per-class", per_class, "print the per-class precision/recall/F1 tables");
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_settings(f);  // threads, --gemm, --tf32
  const std::string why = hg::train::unsupported_flags(f, /*checkpoints=*/false);
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
    show_formats();
    const hg::train::FashionMnist data = hg::train::load_fashion_mnist_normalized(f.data, f.limit_train, f.limit_test);
    std::printf("== 2. training %s on the %s: %lld train images, %lld test, %d epoch(s), batch %lld, "
                "lr %g, momentum %g ==\n", f.model.c_str(), device == hg::Device::CUDA ? "GPU" : "CPU",
                (long long)data.train.n, (long long)data.test.n, epochs, (long long)f.batch_size, f.lr,
                f.momentum);
    std::vector<RunResult> runs;
    for (const auto& p : wanted) runs.push_back(train(p, f, device, epochs, stats_every, input_scale, data));

    std::printf("\n%-9s %9s %9s %10s %10s %14s %8s %11s\n", "precision", "test acc",
                "macro F1", "last loss", "s/epoch", "activations", "skipped", "last scale");
    for (const auto& r : runs)  // a run without a scaler skips nothing and has no scale: "-"
      if (r.diverged) std::printf("%-9s %s\n", r.precision.c_str(), r.diverged.message().c_str());
      else std::printf("%-9s %9.4f %9.4f %10.4f %10.2f %11.2f MB %8s %11s\n",
                       r.precision.c_str(), r.report.accuracy, r.report.macro_f1, r.last_loss,
                       r.seconds_per_epoch, r.activation_bytes / 1e6,
                       g_or_dash(r.has_scaler, double(r.skipped)).c_str(), g_or_dash(r.has_scaler, r.last_scale).c_str());
    if (runs.size() >= 2 && runs[0].activation_bytes > 0 && !runs[0].diverged)
      for (size_t i = 1; i < runs.size(); ++i)
        if (!runs[i].diverged)
          std::printf("%s vs %s: time x%.2f, activation memory x%.2f, accuracy %+.4f\n",
                      runs[i].precision.c_str(), runs[0].precision.c_str(),
                      runs[i].seconds_per_epoch / runs[0].seconds_per_epoch,
                      double(runs[i].activation_bytes) / double(runs[0].activation_bytes),
                      runs[i].report.accuracy - runs[0].report.accuracy);
    if (per_class)
      for (const auto& r : runs)
        if (!r.diverged)
          std::printf("\n%s\n%s", r.precision.c_str(),
                      hg::eval::format_report(r.report, data.test.class_names).c_str());
    std::printf("\nactivations: bytes the autograd graph of one training step keeps for backward "
                "(batch %lld)\nskipped, last scale: amp_f16's GradScaler; -: no scaler (BF16 has F32's range, "
                "FP32 needs none)\nrun logs: ", (long long)f.batch_size);
    for (const auto& r : runs) std::printf("%s/  ", r.dir.c_str());
    std::printf("(./lab view)\n");
    bool diverged = false;
    for (const auto& r : runs) {
      diverged = diverged || r.diverged;
      if (!r.diverged)
        std::printf("RESULT model=%s device=%s precision=%s epochs=%d seconds_per_epoch=%.2f "
                    "test_accuracy=%.4f activation_bytes=%lld\n", f.model.c_str(),
                    hg::device_name(device), r.precision.c_str(), epochs, r.seconds_per_epoch,
                    r.report.accuracy, (long long)r.activation_bytes);
    }
    if (diverged) return hg::train::kExitDiverged;  // the table above says which run and why
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram.c_str(), e.what());
    return 1;
  }
  return 0;
}
