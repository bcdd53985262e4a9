#pragma once
// The command-line flags every training chapter shares, so `--epochs`, `--lr`, `--seed` ...
// mean the same thing in chapters 02 and 06–12. A chapter adds its own flags next to them.
//
//   CLI::App app{"..."};
//   hg::train::CommonFlags flags;              // defaults: chapter 02's recipe
//   hg::train::add_common_flags(app, flags);
//   HG_PARSE_FLAGS(app, argc, argv);           // a bad flag: CLI11's message + exit code 2
//   hg::train::apply_threads(flags.threads);
//   hg::Device device;
//   if (!hg::train::device_from_flag(flags.device, "lesson_NN", device)) return 2;  // says why
//
// --device auto takes the GPU when there is one and otherwise says so once and runs on the
// CPU; --device cuda insists, so no GPU is an error. --gemm picks the GEMM of matmul, linear
// and conv2d on the GPU: the hand-written ladder (default) or cuBLAS, for comparison.
//
// Header-only: it is compiled into the chapters (which link CLI11), not into the library.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <omp.h>

#include "framework/tensor/device.h"
#if HG_WITH_CUDA
#include "cuda/gemm/matmul.h"
#include "cuda/runtime/device.h"
#endif

// Parses the command line inside main(). --help prints and returns 0; any bad flag or value
// (unknown flag, not a number, a --resume file that does not exist...) prints CLI11's
// one-line message and returns 2, the exit code of every halfgrad command-line error.
// (CLI11_PARSE would return CLI11's own codes, 105, 106, 109 ..., one per kind of error.)
#define HG_PARSE_FLAGS(app, argc, argv)                  \
  try {                                                  \
    (app).parse((argc), (argv));                         \
  } catch (const CLI::ParseError& hg_parse_error) {      \
    return (app).exit(hg_parse_error) == 0 ? 0 : 2;      \
  }

namespace hg::train {

struct CommonFlags {
  int epochs = -1;             // -1: the chapter's default for the model
  int64_t batch_size = 128;
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string model = "mlp";   // a name, or several separated by commas ("mlp,smallcnn")
  std::string device = "cpu";  // cpu | cuda | auto
  std::string gemm = "ladder";  // ladder | cublas: the GEMM behind matmul/linear/conv2d on the GPU
  int threads = 0;             // 0: OpenMP's default (all cores, or $OMP_NUM_THREADS)
  uint64_t seed = 0;
  std::string data;            // FashionMNIST folder; "" = $HG_DATA, then Debian's package
  std::string run_name;        // runs/<run_name>/; "" = the chapter's default
  int64_t limit_train = -1;    // use only the first N training images (-1: all)
  int64_t limit_test = -1;     // the same for the test set
  std::string checkpoint;      // save a checkpoint here after every epoch ("" = never)
  std::string resume;          // continue from this checkpoint
  std::string lr_schedule = "constant";  // constant | step | cosine (over epochs)
};

inline void add_common_flags(CLI::App& app, CommonFlags& f) {
  app.add_option("--epochs", f.epochs, "passes over the training set (default: per model)");
  app.add_option("--batch-size", f.batch_size, "images per optimizer step")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--lr", f.lr, "learning rate")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--momentum", f.momentum, "SGD momentum")->capture_default_str()->check(CLI::Range(0.0, 1.0));
  app.add_option("--weight-decay", f.weight_decay, "L2 weight decay")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--model", f.model, "mlp | smallcnn | resnet18 | resnet50, or a comma list")->capture_default_str();
  app.add_option("--device", f.device, "cpu | cuda | auto (the GPU if there is one, else the CPU)")
      ->capture_default_str()->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--gemm", f.gemm, "GEMM on the GPU: ladder (hand-written) | cublas")
      ->capture_default_str()->check(CLI::IsMember({"ladder", "cublas"}))
      ->each([](const std::string& v) {
#if HG_WITH_CUDA
        hg::cuda::set_gemm_backend(v == "cublas" ? hg::cuda::GemmBackend::Cublas : hg::cuda::GemmBackend::Ladder);
#else
        (void)v;  // no GPU GEMM in a CPU-only build: the flag changes nothing
#endif
      });
  app.add_option("--threads", f.threads, "CPU threads (0: all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--seed", f.seed, "seed of initialisation and shuffling")->capture_default_str();
  app.add_option("--data", f.data, "FashionMNIST folder (default: $HG_DATA, then /usr/share/datasets/fashion-mnist)");
  app.add_option("--run-name", f.run_name, "run folder name under runs/");
  app.add_option("--limit-train", f.limit_train, "use only the first N training images");
  app.add_option("--limit-test", f.limit_test, "use only the first N test images");
  app.add_option("--checkpoint", f.checkpoint, "save a checkpoint to this file after every epoch");
  app.add_option("--resume", f.resume, "continue training from this checkpoint")->check(CLI::ExistingFile);
  app.add_option("--lr-schedule", f.lr_schedule, "constant | step | cosine, over epochs")
      ->capture_default_str()->check(CLI::IsMember({"constant", "step", "cosine"}));
}

inline void apply_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

// "cpu" or "cuda" -> Device; for "cuda" checks a GPU is usable and throws the framework's
// message otherwise ("built without CUDA; use --device cpu").
// "auto": the GPU when cuda_available(), else one line on stderr and the CPU.
inline Device device_from_flag(const std::string& name) {
  if (name == "auto") {
    if (cuda_available()) return Device::CUDA;
#if HG_WITH_CUDA
    const std::string why = hg::cuda::no_gpu_reason();
#else
    const std::string why = "this build has no CUDA backend";
#endif
    std::fprintf(stderr, "--device auto: %s; running on the CPU\n", why.c_str());
    return Device::CPU;
  }
  const Device d = parse_device(name);
  if (d == Device::CUDA) require_cuda();
  return d;
}

// The same for main(): false after one line on stderr, "<program>: --device NAME: why", when
// the device cannot be used; the caller then exits 2, as for any command-line error.
//   hg::Device device;
//   if (!hg::train::device_from_flag(flags.device, "lesson_02", device)) return 2;
inline bool device_from_flag(const std::string& name, const char* program, Device& out) {
  try {
    out = device_from_flag(name);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: --device %s: %s\n", program, name.c_str(), e.what());
    return false;
  }
}

}  // namespace hg::train
