// Chapter 06 — naive FP16 training: weights, activations, gradients and optimizer state
// all in F16, next to the same model in FP32, and where the F16 run loses information.
//
//   1. the arithmetic: 2048 + 1 = 2048, a small update vanishes, a tiny gradient flushes
//   2. one training loop, run twice on the same seed: FP32, then everything-F16
//   3. the comparison table: accuracy, loss, gradients that underflow, updates lost
//
// The F16 optimizer is written here (sgd_step_f16) because the framework's optimizers keep
// their state in F32 — which is already a fix (chapter 07). Naive means: every tensor is
// F16 and every op rounds its result to F16, as `model.half()` in PyTorch does.
//
// Sections: 1. flags   2. the arithmetic   3. the F16 SGD step   4. evaluate
//           5. train (one loop for both precisions)   6. main: the two runs and the table
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/autograd/grad_mode.h"
#include "framework/data/loader.h"
#include "framework/dtype/half.h"
#include "framework/eval/metrics.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"
#include "framework/train/cli.h"
#include "framework/train/step.h"

using hg::DType;
using hg::Tensor;

namespace {

// ---- 2. the arithmetic --------------------------------------------------------------
float f16(float x) { return float(hg::half(x)); }  // round to the nearest F16, back to float

void show_arithmetic() {
  std::printf("== 1. F16 arithmetic a training step runs into ==\n");
  std::printf("  2048 + 1        = %-10g (F16 spacing at 2048 is 2: the tie goes to even)\n",
              f16(2048.0f + 1.0f));
  std::printf("  1 + 0.0001      = %-10g (half an F16 ULP at 1 is 2^-11 = %.3g)\n",
              f16(1.0f + 0.0001f), std::ldexp(1.0, -11));
  std::printf("  0.03 - 0.05*1e-4= %-10.7g (the weight %.7g does not move: lr*g < 2^-18)\n",
              f16(f16(0.03f) - 0.05f * 1e-4f), f16(0.03f));
  std::printf("  gradient 2e-8   -> %-10g (below 2^-25 = %.3g: flushed to zero)\n", f16(2e-8f),
              std::ldexp(1.0, -25));
  std::printf("  gradient 1e-6   -> %-10.7g (subnormal: only %d significant bits left)\n\n",
              f16(1e-6f), int(std::floor(std::log2(1e-6 / std::ldexp(1.0, -24)))) + 1);
}

// ---- 3. the F16 SGD step ------------------------------------------------------------
// PyTorch's SGD on F16 tensors, every result rounded to F16:
//   buf = momentum·buf + g   (buf = g on the first step)      buf is F16
//   p   = p − lr·buf                                         p is F16
// When |lr·buf| is below half an F16 ULP of p, p does not change: the update is lost.
// The three roundings are three in-place ops, each of which computes in F32 and rounds once
// to F16, on either device: mul_ (momentum·buf), add_ (+ g), add_ with −lr (p − lr·buf).
// (Element by element: b = f16(f16(momentum·b) + g); p = f16(p − lr·b). The ops give the
// same bits and convert whole blocks with the CPU's F16 instructions.)
void sgd_step_f16(const std::vector<Tensor>& params, std::vector<Tensor>& bufs, float lr,
                  float momentum) {
  if (bufs.empty()) bufs.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor p = params[i];
    Tensor g = p.grad();
    if (!g.defined()) continue;
    const bool first = !bufs[i].defined();
    if (first) bufs[i] = Tensor::zeros(p.shape(), DType::F16, p.device());
    if (first) {
      hg::copy_(bufs[i], g);
    } else {
      hg::mul_(bufs[i], momentum);
      hg::add_(bufs[i], g);
    }
    hg::add_(p, bufs[i], -lr);
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
  bool finite = true;
  std::string dir;
};

RunResult train(const std::string& precision, const hg::train::CommonFlags& f, hg::Device device,
                int epochs,
                int64_t stats_every, const hg::data::ImageDataset& train_ds,
                const hg::data::ImageDataset& test_ds) {
  const bool half = precision == "fp16_naive";
  const DType dtype = half ? DType::F16 : DType::F32;
  hg::Generator gen(f.seed);
  if (f.model != "mlp") throw std::invalid_argument("--model: this chapter trains mlp");
  hg::nn::ModulePtr model = std::make_shared<hg::nn::MLP>(gen);  // initialised in F32
  model->to(dtype);                                            // then rounded to F16
  model->to(device);                                           // and moved, before any optimizer
  hg::optim::SGD sgd32(model->parameters(), {.lr = f.lr, .momentum = f.momentum});
  std::vector<Tensor> bufs16;  // the F16 momentum buffers

  RunResult r;
  r.precision = precision;
  r.dir = "runs/" + (f.run_name.empty() ? "06_" + f.model : f.run_name) + "_" + precision;
  hg::io::RunLog log(r.dir, {{"lesson", "06_fp16_naive"}, {"model", f.model},
                             {"precision", precision}, {"device", hg::device_name(device)}, {"seed", f.seed},
                             {"args", {{"epochs", epochs}, {"batch_size", f.batch_size},
                                       {"lr", f.lr}, {"momentum", f.momentum},
                                       {"limit_train", f.limit_train}}}});
  hg::DataLoader loader(train_ds, {f.batch_size, true, false, f.seed});
  hg::amp::GradStatsLogger stats(stats_every);
  int64_t step = 0, grad_values = 0, lost_samples = 0;
  double underflow = 0, zeros = 0, lost_sum = 0, seconds = 0;

  for (int epoch = 0; epoch < epochs && r.finite; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    hg::Batch batch;
    while (loader.next(batch)) {
      for (auto& p : model->parameters()) p.zero_grad();
      Tensor x = batch.images.to(dtype).to(device);            // (B, 1, 28, 28)
      Tensor loss = hg::cross_entropy((*model)(x), batch.labels);  // () in the model's dtype
      loss.backward();
      const auto named = model->named_parameters();
      if (stats.due(step)) stats.capture(step, named, 1.0);
      if (half) sgd_step_f16(model->parameters(), bufs16, float(f.lr), float(f.momentum));
      else sgd32.step();
      if (stats.due(step)) {
        for (const auto& h : stats.finish(named, true)) {
          log.grad_hist(step, h.to_event(step));
          grad_values += h.total;
          underflow += double(h.fp16_underflow);
          zeros += double(h.zeros);
          lost_sum += h.lost_update_fraction;
          ++lost_samples;
        }
      }
      r.last_loss = loss.item();
      log.scalar(step, "train/loss", r.last_loss, epoch);
      if (!std::isfinite(r.last_loss)) {
        log.note(step, "loss is not finite; stopping");
        r.finite = false;
        break;
      }
      ++step;
    }
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
  log.end(r.finite ? "finished" : "failed");
  return r;
}

}  // namespace

// ---- 6. main --------------------------------------------------------------------------
int main(int argc, char** argv) {
  CLI::App app{"Chapter 06: naive FP16 training (everything in F16) next to FP32"};
  hg::train::CommonFlags f;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  int64_t stats_every = 50;
  app.add_option("--stats-every", stats_every, "log gradient histograms every N steps")
      ->capture_default_str();
  std::string only = "both";
  app.add_option("--only", only, "fp32 | fp16 | both")->capture_default_str()
      ->check(CLI::IsMember({"fp32", "fp16", "both"}));
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_threads(f.threads);
  // Common flags this chapter does not implement are refused, not ignored.
  if (!f.checkpoint.empty() || !f.resume.empty() || f.lr_schedule != "constant" ||
      f.weight_decay != 0.0) {
    std::fprintf(stderr, "lesson_06: --checkpoint, --resume, --lr-schedule and "
                         "--weight-decay are not supported in this chapter\n");
    return 2;
  }
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, "lesson_06", device)) return 2;
  const int epochs = f.epochs > 0 ? f.epochs : 1;

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
    if (only != "fp16") runs.push_back(train("fp32", f, device, epochs, stats_every, train_ds, test_ds));
    if (only != "fp32") runs.push_back(train("fp16_naive", f, device, epochs, stats_every, train_ds, test_ds));

    std::printf("\n== 3. comparison ==\n");
    std::printf("%-11s %9s %9s %10s %11s %10s %12s %9s\n", "precision", "test acc", "macro F1",
                "last loss", "grad<2^-24", "grad==0", "lost updates", "s/epoch");
    for (const auto& r : runs)
      std::printf("%-11s %9.4f %9.4f %10.4f %10.3f%% %9.3f%% %11.1f%% %9.2f\n",
                  r.precision.c_str(), r.test_accuracy, r.macro_f1, r.last_loss,
                  100 * r.underflow, 100 * r.zeros, 100 * r.lost_updates, r.seconds_per_epoch);
    std::printf("\ngrad<2^-24: gradient values an F16 gradient cannot hold (they become 0)\n"
                "lost updates: elements with a non-zero gradient whose weight did not change\n"
                "run logs: ");
    for (const auto& r : runs) std::printf("%s/  ", r.dir.c_str());
    std::printf("(./lab view)\n");
    for (const auto& r : runs)
      std::printf("RESULT model=%s precision=%s epochs=%d seconds_per_epoch=%.2f "
                  "test_accuracy=%.4f lost_updates=%.4f\n", f.model.c_str(), r.precision.c_str(),
                  epochs, r.seconds_per_epoch, r.test_accuracy, r.lost_updates);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_06: %s\n", e.what());
    return 1;
  }
  return 0;
}
