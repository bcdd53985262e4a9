// Chapter 02 — FP32 training: an MLP, then a small CNN, on FashionMNIST.
//
// The whole training recipe, top to bottom:
//   1. flags            --model mlp|smallcnn|resnet18|resnet50 (or "mlp,smallcnn"), --epochs ...
//   2. data             FashionMNIST, pixels /255, then (x − 0.2860) / 0.3530
//   3. model, optimizer initialised as PyTorch does; SGD lr 0.05, momentum 0.9, batch 128
//   4. resume           (optional) parameters, optimizer buffers, RNG and loader position
//   5. the epoch loop   shuffle -> batches -> forward, loss, backward, step; progress bar;
//                       a loss or weight that becomes inf/NaN stops the run (exit code 3)
//   6. evaluation       test accuracy every epoch; at the end precision/recall/F1 per class
//                       and the confusion matrix
//   7. RESULT line      one machine-readable line per model (benchmarks read it)
// Every run writes runs/<run-name>/run.json and events.jsonl (docs/run-log.md) for the viewer.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/cpu/wait_policy.h"
#include "framework/data/loader.h"
#include "framework/eval/metrics.h"
#include "framework/io/progress.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/optim/lr_schedule.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/resume.h"
#include "framework/train/run_folder.h"
#include "framework/train/step.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Epochs a model gets when --epochs is not given: what the chapter's expected results use.
int default_epochs(const std::string& model) {
  if (model == "mlp") return 5;
  if (model == "smallcnn") return 3;
  return 1;  // the ResNets are slow on a CPU: one epoch shows they train
}

struct ModelResult {
  std::string model;
  int epochs = 0;
  double seconds_per_epoch = 0;
  double test_accuracy = 0;
  bool diverged = false;  // stopped at a loss or weight that was inf/NaN: no report
};

// What this program records in a checkpoint and checks on --resume (framework/train/resume.h):
// the flags that decide which batches the run sees and what each step does.
nlohmann::json recorded_flags(const hg::train::CommonFlags& f, const std::string& model, int epochs) {
  return hg::train::recorded_common_flags(f, model, epochs,
                                          {{"--weight-decay", f.weight_decay}, {"--lr-schedule", f.lr_schedule}});
}

// The per-class report and the confusion matrix of the final model; returns its accuracy.
double print_report(const std::string& model_name, const hg::data::ImageDataset& test_set,
                    const std::vector<int32_t>& test_pred, hg::io::RunLog& log, int64_t step) {
  const hg::eval::Report report = hg::eval::classification_report(test_set.labels, test_pred, test_set.num_classes);
  std::printf("\n%s: test set, %lld images\n%s\n", model_name.c_str(), (long long)test_set.n,
              hg::eval::format_report(report, test_set.class_names).c_str());
  std::printf("confusion matrix (rows: true class, columns: predicted)\n%s\n",
              hg::eval::format_confusion(report.confusion, test_set.class_names).c_str());
  log.scalar(step, "test/macro_f1", report.macro_f1);
  return report.accuracy;
}

// runs/<run_name>/: run.json says what ran; a resumed run continues its log.
hg::io::RunLog open_run_log(const hg::train::CommonFlags& flags, const std::string& model_name, int epochs,
                            hg::Device device, const std::string& run_name) {
  nlohmann::json args = {{"epochs", epochs}, {"batch_size", flags.batch_size}, {"lr", flags.lr},
                         {"momentum", flags.momentum}, {"weight_decay", flags.weight_decay},
                         {"lr_schedule", flags.lr_schedule}, {"limit_train", flags.limit_train},
                         {"threads", flags.threads}, {"resume", flags.resume}};
  const bool resuming = !flags.resume.empty();
  return hg::io::RunLog(hg::train::claim_run_folder(run_name, flags.overwrite, resuming),
                        {{"lesson", "02_fp32_training"}, {"model", model_name}, {"precision", "fp32"},
                         {"device", hg::device_name(device)}, {"seed", flags.seed}, {"args", args}},
                        /*append=*/resuming);
}

// Trains one model from scratch (or from --resume) and prints its report.
ModelResult train_model(const std::string& model_name, const hg::train::CommonFlags& flags,
                        const hg::data::ImageDataset& train_set, const hg::data::ImageDataset& test_set,
                        hg::Device device, const std::string& run_name) {
  const int epochs = flags.epochs > 0 ? flags.epochs : default_epochs(model_name);

  // ---- 3. model and optimizer ------------------------------------------------------------
  hg::Generator init_gen(flags.seed);  // initialisation draws from here, nothing else does
  hg::nn::ModulePtr model = hg::nn::make_model(model_name, init_gen, train_set.channels,
                                               train_set.num_classes, train_set.height);
  model->to(device);
  // after .to(device): the optimizer holds the final tensors
  hg::optim::SGD opt(model->parameters(), {.lr = flags.lr, .momentum = flags.momentum, .weight_decay = flags.weight_decay});
  hg::optim::LRSchedule schedule = hg::optim::LRSchedule::constant(flags.lr);
  if (flags.lr_schedule == "step") schedule = hg::optim::LRSchedule::step(flags.lr, std::max(1, epochs / 3), 0.1);
  if (flags.lr_schedule == "cosine") schedule = hg::optim::LRSchedule::cosine(flags.lr, epochs);

  // epoch e is shuffled by (seed, e) alone: resumable
  hg::DataLoader loader(train_set, {.batch_size = flags.batch_size, .shuffle = true, .seed = flags.seed});

  std::printf("\n== %s: %lld parameters, %d epoch(s), batch %lld, SGD lr %g momentum %g, %s\n",
              model_name.c_str(), (long long)model->num_parameters(), epochs, (long long)flags.batch_size,
              flags.lr, flags.momentum, hg::device_name(device));
  std::printf("%s", model->str().c_str());

  // ---- 4. resume --------------------------------------------------------------------------
  // Parameters, optimizer buffers, the loader's position: all or nothing (framework/train/checkpoint.h).
  const hg::train::TrainingState state = hg::train::resume_training(flags.resume, *model, opt, loader);

  hg::io::RunLog log = open_run_log(flags, model_name, epochs, device, run_name);

  // ---- 5. the epoch loop -------------------------------------------------------------------
  int64_t step = state.step;
  double train_seconds = 0;
  int timed_epochs = 0;
  std::vector<int32_t> test_pred;
  ModelResult res{model_name, epochs};
  for (int64_t epoch = state.epoch; epoch < epochs; ++epoch) {
    model->train();
    opt.set_lr(schedule.lr_at(epoch));
    const int64_t total_batches = loader.batches_per_epoch();
    hg::io::Progress bar("epoch " + std::to_string(epoch + 1) + "/" + std::to_string(epochs),
                         total_batches - loader.position() / flags.batch_size);
    double loss_sum = 0;
    int64_t seen = 0, correct = 0, batches = 0;
    const auto t0 = Clock::now();
    hg::Batch batch;
    while (loader.next(batch)) {
      hg::Tensor images = device == hg::Device::CPU ? batch.images : batch.images.to(device);
      const hg::train::StepResult r = hg::train::train_step(*model, opt, images, batch.labels);
      if (step % 50 == 0) log.scalar(step, "train/loss", r.loss, epoch);
      // A loss or a weight that is inf/NaN: nothing after this step would mean anything.
      const hg::train::Divergence d = hg::train::check_finite_step(step, r.loss, model->named_parameters());
      if (d) {
        hg::train::report_divergence(log, "lesson_02: " + model_name, d);
        res.diverged = true;
        break;
      }
      loss_sum += r.loss * batch.size();
      seen += batch.size();
      correct += r.correct;
      ++batches;
      bar.step(batch.size(), r.loss);
      ++step;
    }
    if (res.diverged) break;  // no evaluation and no checkpoint of a broken model
    bar.finish();
    const double epoch_s = seconds_since(t0);
    if (batches == total_batches) {  // a whole epoch (not the tail of a resumed one): time it
      train_seconds += epoch_s;
      ++timed_epochs;
    }

    // ---- 6. evaluation, every epoch ----------------------------------------------------------
    test_pred = hg::train::predict(*model, test_set, 1000, device);
    const double test_acc = hg::eval::accuracy(test_set.labels, test_pred);
    const double train_loss = seen ? loss_sum / seen : 0, train_acc = seen ? double(correct) / seen : 0;
    std::printf("epoch %lld/%d  train loss %.4f  train acc %.4f  test acc %.4f  (%.1f s, %.0f img/s)\n",
                (long long)epoch + 1, epochs, train_loss, train_acc, test_acc, epoch_s, seen / epoch_s);
    std::fflush(stdout);
    log.scalar(step, "train/loss_epoch", train_loss, epoch + 1);
    log.scalar(step, "train/accuracy", train_acc, epoch + 1);
    log.scalar(step, "test/accuracy", test_acc, epoch + 1);
    log.scalar(step, "time/epoch_s", epoch_s, epoch + 1);
    log.scalar(step, "train/images_per_s", seen / epoch_s, epoch + 1);
    log.scalar(step, "lr", opt.lr(), epoch + 1);

    if (!flags.checkpoint.empty())
      hg::train::save_epoch_checkpoint(flags.checkpoint, *model, opt, loader, init_gen.state(), step, epoch + 1,
                                       "02_fp32_training", recorded_flags(flags, model_name, epochs));
  }
  if (res.diverged) return res;  // its one line is on stderr; no report of a broken model
  if (test_pred.empty()) test_pred = hg::train::predict(*model, test_set, 1000, device);
  res.test_accuracy = print_report(model_name, test_set, test_pred, log, step);
  log.end("finished");
  res.seconds_per_epoch = timed_epochs ? train_seconds / timed_epochs : 0;
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h)
  // ---- 1. flags (every value is checked here, before any data is read) -------------------------
  CLI::App app{"halfgrad chapter 02: FP32 training of an MLP and a CNN on FashionMNIST"};
  hg::train::CommonFlags flags;  // defaults: batch 128, SGD lr 0.05, momentum 0.9
  hg::train::add_common_flags(app, flags);
  app.get_option("--model")->check(hg::train::ListOf(hg::nn::model_names()));
  HG_PARSE_FLAGS(app, argc, argv);

  const bool resuming = !flags.resume.empty();
  int64_t epochs_done = 0;
  if (resuming) {  // the checkpoint's flags fill in what the command line left out
    const std::string why = hg::train::resume_flags(app, flags.resume, "02_fp32_training",
                                                    recorded_flags(flags, flags.model, flags.epochs), epochs_done);
    if (!why.empty()) return hg::train::usage_error(app, why);
  }
  const std::vector<std::string> models = hg::train::split_list(flags.model);  // checked by ListOf
  if (resuming && models.size() != 1)
    return hg::train::usage_error(app, "--resume: give exactly one --model (the checkpoint holds one model)");
  std::vector<std::string> run_names;
  for (const auto& m : models)
    run_names.push_back(flags.run_name.empty() ? "02_" + m + "_fp32"
                        : models.size() == 1   ? flags.run_name
                                               : flags.run_name + "_" + m);
  const std::string run_problem = hg::train::check_run_folders(run_names, flags.overwrite, resuming, flags.checkpoint);
  if (!run_problem.empty()) return hg::train::usage_error(app, run_problem);

  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(flags.device, "lesson_02", device)) return 2;

  if (resuming && hg::train::all_epochs_done(flags.resume, epochs_done,
                                             flags.epochs > 0 ? flags.epochs : default_epochs(models[0])))
    return 0;  // nothing left to train: said so, no empty report

  try {
    hg::train::apply_settings(flags);  // threads, --gemm, --tf32

    // ---- 2. data -----------------------------------------------------------------------------
    const std::string dir = hg::data::fashion_mnist_dir(flags.data);
    hg::data::ImageDataset train_set = hg::data::load_fashion_mnist(dir, true, flags.limit_train);
    hg::data::ImageDataset test_set = hg::data::load_fashion_mnist(dir, false, flags.limit_test);
    // Centre and scale the pixels with the training set's statistics (both sets alike):
    // inputs near zero mean and unit variance keep the first layer's pre-activations in
    // the range the PyTorch-style initialisation assumes.
    hg::data::normalize(train_set, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    hg::data::normalize(test_set, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    std::printf("FashionMNIST from %s: %lld train, %lld test images, %lldx%lld, normalised (x - %.4f) / %.4f\n",
                dir.c_str(), (long long)train_set.n, (long long)test_set.n, (long long)train_set.height,
                (long long)train_set.width, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);

    std::vector<ModelResult> results;
    for (size_t i = 0; i < models.size(); ++i)
      results.push_back(train_model(models[i], flags, train_set, test_set, device, run_names[i]));

    // ---- 7. RESULT lines (machine-readable; see CONTRACTS.md) ----------------------------------
    bool diverged = false;
    for (const auto& r : results) {
      diverged = diverged || r.diverged;
      if (!r.diverged)
        std::printf("RESULT model=%s precision=fp32 epochs=%d seconds_per_epoch=%.2f test_accuracy=%.4f\n",
                    r.model.c_str(), r.epochs, r.seconds_per_epoch, r.test_accuracy);
    }
    if (diverged) return hg::train::kExitDiverged;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_02: %s\n", e.what());
    return 1;
  }
  return 0;
}
