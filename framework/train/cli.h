#pragma once
// The command-line flags every training chapter shares, so `--epochs`, `--lr`, `--seed` ...
// mean the same thing in chapters 02 and 06–12. A chapter adds its own flags next to them.
//
//   CLI::App app{"..."};
//   hg::train::CommonFlags flags;              // defaults: chapter 02's recipe
//   hg::train::add_common_flags(app, flags);
//   app.get_option("--model")->check(hg::train::OneOf({"mlp"}));      // the chapter's rules,
//   app.add_option("--clip", clip, "...")->check(hg::train::NonNegative());  // one line a flag
//   HG_PARSE_FLAGS(app, argc, argv);           // a bad flag: one line, exit code 2
//   hg::train::apply_threads(flags.threads);
//   hg::Device device;
//   if (!hg::train::device_from_flag(flags.device, "lesson_NN", device)) return 2;  // says why
//
// Every value is checked while parsing, before any data is read or any output printed: a
// value that cannot mean anything (NaN, inf, a count of 0, a negative seed, a run name that
// climbs out of runs/, a checkpoint folder that does not exist) is one line on stderr and
// exit code 2, never a default silently used instead, never an error after an epoch.
//
// --device auto takes the GPU when there is one and otherwise says so once and runs on the
// CPU; --device cuda insists, so no GPU is an error. --gemm picks the GEMM of matmul, linear
// and conv2d on the GPU: the hand-written ladder (default) or cuBLAS, for comparison.
//
// Header-only: it is compiled into the chapters (which link CLI11), not into the library.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <omp.h>

#include "framework/amp/scale_rule.h"
#include "framework/io/checkpoint.h"
#include "framework/io/run_log.h"
#include "framework/tensor/device.h"
#include "framework/train/run_folder.h"
#include "cuda/gemm/backend.h"    // --gemm, --tf32: kept by a build without CUDA, read by none
#include "cuda/runtime/device.h"  // no_gpu_reason(): "this build has no CUDA backend" without CUDA

namespace hg::train {

// The exit code of every halfgrad command-line error: nothing was run.
inline constexpr int kExitUsage = 2;

// "lesson_02" for "./build/lessons/lesson_02": how a program names itself in its messages.
inline std::string program_name(const CLI::App& app) {
  const std::string n = std::filesystem::path(app.get_name()).filename().string();
  return n.empty() ? "halfgrad" : n;
}

// One line, "<program>: <message>", and the exit code for main() to return.
inline int usage_error(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_name(app).c_str(), message.c_str());
  return kExitUsage;
}

}  // namespace hg::train

// Parses the command line inside main(). --help prints and returns 0; any bad flag or value
// (unknown flag, not a number, NaN, a --resume file that does not exist...) prints one line,
// "<program>: --flag: what is wrong", and returns 2, the exit code of every halfgrad
// command-line error. (CLI11_PARSE would print two lines and return CLI11's own codes, 105,
// 106, 109 ..., one per kind of error.)
#define HG_PARSE_FLAGS(app, argc, argv)                          \
  try {                                                          \
    (app).parse((argc), (argv));                                 \
  } catch (const CLI::Success& hg_help) {                        \
    return (app).exit(hg_help);                                  \
  } catch (const CLI::ParseError& hg_parse_error) {              \
    return hg::train::usage_error((app), hg_parse_error.what()); \
  }

namespace hg::train {

// ---- rules for values ------------------------------------------------------------------------
// CLI11 runs a flag's checks on its text before converting it; each check below returns ""
// or why the value is refused, and CLI11 makes that "--flag: why".
//
// NaN needs care: every comparison with NaN is false, so a range check written "refuse if
// x < lo or x > hi" lets NaN through (CLI::Range does). These checks ask the other way
// round — "accept if lo <= x and x <= hi" — which NaN never is, and name what they expect.
namespace detail {

// Text -> double, the whole text or nothing ("0.05", "1e-3", also "nan" and "inf").
inline bool parse_real(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

// Text -> int64, decimal digits only (strtoll would take "010" as octal 8, "0x10" as 16, and
// turn 99999999999999999999 into the largest int64 without a word).
inline bool parse_whole(const std::string& text, int64_t& out) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last) return false;
  const auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

inline std::string fmt_g(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

inline std::string got(const std::string& text, const std::string& expected) {
  return "got " + (text.empty() ? std::string("''") : text) + "; expected " + expected;
}

}  // namespace detail

// A finite number in [lo, hi]; `expected` says it in words ("a number from 0 to 1").
inline CLI::Validator FiniteIn(double lo, double hi, const std::string& expected) {
  return CLI::Validator(
      [=](std::string& text) {
        double x = 0;
        const bool inside = detail::parse_real(text, x) && std::isfinite(x) && lo <= x && x <= hi;
        return inside ? std::string() : detail::got(text, expected);
      },
      expected);
}
inline CLI::Validator NonNegative() {
  return FiniteIn(0.0, std::numeric_limits<double>::max(), "a finite number >= 0");
}
// x > 0, and at most `hi` (FLT_MAX for a value that becomes an F32).
inline CLI::Validator Positive(double hi = std::numeric_limits<double>::max()) {
  return FiniteIn(std::numeric_limits<double>::denorm_min(), hi,
                  hi < std::numeric_limits<double>::max() ? "a finite number > 0, at most " + detail::fmt_g(hi)
                                                          : std::string("a finite number > 0"));
}
// A loss scale S: S and 1/S must both be finite, non-zero F32 numbers (S is kept as an F32
// and the gradients are multiplied by 1/S in F32), so 2^-126 <= S <= 2^127.
inline CLI::Validator LossScale() {
  return FiniteIn(std::ldexp(1.0, -126), std::ldexp(1.0, 127), "a loss scale from 2^-126 to 2^127 (1.2e-38 to 1.7e38)");
}

inline constexpr int64_t kMaxWhole = std::numeric_limits<int64_t>::max();

// A whole number in [lo, hi], written in decimal digits.
inline CLI::Validator WholeIn(int64_t lo, int64_t hi, const std::string& expected) {
  return CLI::Validator(
      [=](std::string& text) {
        int64_t x = 0;
        const bool inside = detail::parse_whole(text, x) && lo <= x && x <= hi;
        return inside ? std::string() : detail::got(text, expected);
      },
      expected);
}

// --limit-train / --limit-test: a number of images >= 1, or -1 for all of them.
inline CLI::Validator ImageLimit() {
  return CLI::Validator(
      [](std::string& text) {
        int64_t x = 0;
        const bool ok = detail::parse_whole(text, x) && (x == -1 || x >= 1);
        return ok ? std::string() : detail::got(text, "a number of images >= 1, or -1 for all");
      },
      "N >= 1, or -1: all");
}

// --threads: 0 (OpenMP's default) up to 4 threads per core of this machine. More only
// queue for the same cores, and thousands make the OpenMP runtime itself fail.
inline int max_threads() { return 4 * std::max(1, omp_get_num_procs()); }
inline CLI::Validator Threads() {
  const int most = max_threads();
  return WholeIn(0, most, "0 (all cores) to " + std::to_string(most) + " (4 per core of the " +
                              std::to_string(most / 4) + " here)");
}

// One of `names`.
inline CLI::Validator OneOf(std::vector<std::string> names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [=](std::string& text) {
        for (const auto& n : names)
          if (text == n) return std::string();
        return detail::got(text, names.size() == 1 ? names[0] + " (the only one here)" : "one of " + list);
      },
      list);
}

// "a,b," -> {"a", "b", ""}: every item, empty ones too, so that a check can refuse them.
inline std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (!text.empty() && text.back() == ',') out.push_back("");
  return out;
}
// A comma list of `names`: at least one, each known, none twice (each item is one run with
// its own run folder, and two runs cannot share one).
inline CLI::Validator ListOf(std::vector<std::string> names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return CLI::Validator(
      [=](std::string& text) {
        const std::vector<std::string> items = split_list(text);
        if (items.empty()) return detail::got(text, "a comma list of " + list);
        std::set<std::string> seen;
        for (const auto& item : items) {
          bool known = false;
          for (const auto& n : names) known = known || item == n;
          if (!known) return "'" + item + "' is not one of " + list;
          if (!seen.insert(item).second) return "'" + item + "' appears twice in '" + text + "'";
        }
        return std::string();
      },
      "comma list of " + list);
}

// --run-name: one safe path component (framework/train/run_folder.h).
inline CLI::Validator RunName() {
  return CLI::Validator([](std::string& text) { return run_name_problem(text); }, "NAME");
}

// --dot (and --checkpoint, below): a file path whose folder exists and can be written now,
// not after an epoch. The file is written as a temporary and renamed over the path, so the
// path must not be a device or a pipe (/dev/null would be replaced by a regular file).
inline CLI::Validator WritableFile() {
  return CLI::Validator(
      [](std::string& text) {
        namespace fs = std::filesystem;
        std::error_code ec;
        if (text.empty() || text.back() == '/') return text + " is not a file name";
        if (fs::is_directory(text, ec)) return text + " is a folder; give a file name in it";
        if (fs::exists(text, ec) && !fs::is_regular_file(text, ec)) return text + " exists and is not a regular file";
        const fs::path parent = fs::path(text).parent_path();
        const std::string dir = parent.empty() ? "." : parent.string();
        if (!fs::exists(dir, ec)) return text + ": the folder " + dir + " does not exist";
        if (!fs::is_directory(dir, ec)) return text + ": " + dir + " is not a folder";
        return folder_write_problem(dir);
      },
      "FILE");
}

// --checkpoint: a WritableFile that a save may replace. What is at the path now must be a
// checkpoint or nothing (framework/io/checkpoint.h): never the training text, a run log or
// any other file, whatever the command line says. And the name is not one of a run log's
// files, which a run may create after this check. (That the file is not inside another
// run's folder is check_run_folders()'s: it knows this program's run names.)
inline CLI::Validator CheckpointFile() {
  return CLI::Validator(
      [](std::string& text) {
        std::string why = WritableFile()(text);
        if (!why.empty()) return why;
        const std::string name = std::filesystem::path(text).filename().string();
        if (name == io::kRunJson || name == io::kEventsJsonl)
          return text + " is a run log's name (" + name + "); give the checkpoint another";
        return io::checkpoint_target_problem(text);
      },
      "FILE");
}

// ---- the flags -------------------------------------------------------------------------------

struct CommonFlags {
  int epochs = -1;             // -1 (not given): the chapter's default for the model
  int64_t batch_size = 128;
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string model = "mlp";   // a name, or several separated by commas ("mlp,smallcnn")
  std::string device = "cpu";  // cpu | cuda | auto
  std::string gemm = "ladder";  // ladder | cublas: the GEMM behind matmul/linear/conv2d on the GPU
  bool tf32 = false;           // F32 matmul/conv2d on the GPU's TF32 tensor cores (sm_80+)
  int threads = 0;             // 0: OpenMP's default (all cores, or $OMP_NUM_THREADS)
  uint64_t seed = 0;
  std::string data;            // FashionMNIST folder; "" = $HG_DATA, then Debian's package
  std::string run_name;        // runs/<run_name>/; "" = the chapter's default
  bool overwrite = false;      // replace runs/<run_name>/ when it exists
  int64_t limit_train = -1;    // use only the first N training images (-1: all)
  int64_t limit_test = -1;     // the same for the test set
  std::string checkpoint;      // save a checkpoint here after every epoch ("" = never)
  std::string resume;          // continue from this checkpoint
  std::string lr_schedule = "constant";  // constant | step | cosine (over epochs)
};

// The largest batch: FashionMNIST has 60000 training images, so a larger batch could only
// ever be the whole set; a bound also keeps B·784 floats far from any integer limit.
inline constexpr int64_t kMaxBatch = 65536;
inline constexpr int kMaxEpochs = 100000;

inline void add_common_flags(CLI::App& app, CommonFlags& f) {
  app.add_option("--epochs", f.epochs, "passes over the training set (default: per model)")
      ->check(WholeIn(1, kMaxEpochs, "a number of epochs from 1 to " + std::to_string(kMaxEpochs)));
  app.add_option("--batch-size", f.batch_size, "images per optimizer step")
      ->capture_default_str()->check(WholeIn(1, kMaxBatch, "a batch size from 1 to " + std::to_string(kMaxBatch)));
  app.add_option("--lr", f.lr, "learning rate")->capture_default_str()->check(NonNegative());
  app.add_option("--momentum", f.momentum, "SGD momentum")->capture_default_str()
      ->check(FiniteIn(0.0, 1.0, "a momentum from 0 to 1"));
  app.add_option("--weight-decay", f.weight_decay, "L2 weight decay")->capture_default_str()->check(NonNegative());
  app.add_option("--model", f.model, "mlp | smallcnn | resnet18 | resnet50, or a comma list")->capture_default_str();
  app.add_option("--device", f.device, "cpu | cuda | auto (the GPU if there is one, else the CPU)")
      ->capture_default_str()->check(OneOf({"cpu", "cuda", "auto"}));
  app.add_option("--gemm", f.gemm, "GEMM on the GPU: ladder (hand-written) | cublas")
      ->capture_default_str()->check(OneOf({"ladder", "cublas"}))
      ->each([](const std::string& v) {
        hg::cuda::set_gemm_backend(v == "cublas" ? hg::cuda::GemmBackend::Cublas : hg::cuda::GemmBackend::Ladder);
      });
  // As torch.backends.cuda.matmul.allow_tf32: off by default, because TF32 keeps 10 mantissa
  // bits of each F32 operand (chapter 05); the CPU has no TF32 and ignores it.
  app.add_flag("--tf32", f.tf32, "F32 matmuls and convolutions on the GPU's TF32 tensor cores (sm_80+; off by default)")
      ->each([](const std::string&) {
        hg::cuda::set_allow_tf32(true);
      });
  app.add_option("--threads", f.threads, "CPU threads (0: all)")->capture_default_str()->check(Threads());
  app.add_option("--seed", f.seed, "seed of initialisation and shuffling")->capture_default_str()
      ->check(WholeIn(0, kMaxWhole, "a seed from 0 to 2^63-1"));
  app.add_option("--data", f.data, "FashionMNIST folder (default: $HG_DATA, then /usr/share/datasets/fashion-mnist)")
      ->check(CLI::ExistingDirectory);
  app.add_option("--run-name", f.run_name, "run folder name under runs/ (letters, digits, . _ -)")->check(RunName());
  app.add_flag("--overwrite", f.overwrite, "replace the run folder if it exists (else that is an error)");
  app.add_option("--limit-train", f.limit_train, "use only the first N training images (-1: all)")->check(ImageLimit());
  app.add_option("--limit-test", f.limit_test, "use only the first N test images (-1: all)")->check(ImageLimit());
  app.add_option("--checkpoint", f.checkpoint, "save a checkpoint to this file after every epoch")
      ->check(CheckpointFile());
  app.add_option("--resume", f.resume, "continue training from this checkpoint")->check(CLI::ExistingFile);
  app.add_option("--lr-schedule", f.lr_schedule, "constant | step | cosine, over epochs")
      ->capture_default_str()->check(OneOf({"constant", "step", "cosine"}));
}

// ---- what the comparison chapters (06–11) share ------------------------------------------

// runs/<name>/ of one run of a comparison: "--run-name X" gives X_fp32, X_fp16_naive, ...;
// without it "<NN>_<model>_<precision>", NN the chapter's number (the start of its lesson
// name, "06_fp16_naive"): 06_mlp_fp32.
inline std::string precision_run_name(const CommonFlags& f, const std::string& lesson, const std::string& precision) {
  return (f.run_name.empty() ? lesson.substr(0, 2) + "_" + f.model : f.run_name) + "_" + precision;
}

// run.json of one run of a comparison (docs/run-log.md): the chapter, the model, the
// precision, the device, the seed, and under "args" the flags that shaped the run — the
// common ones and the chapter's own (`own_args`).
inline nlohmann::json comparison_run_json(const std::string& lesson, const CommonFlags& f, const std::string& precision,
                                          Device device, int epochs, const nlohmann::json& own_args) {
  nlohmann::json args = {{"epochs", epochs}, {"batch_size", f.batch_size}, {"lr", f.lr},
                         {"momentum", f.momentum}, {"limit_train", f.limit_train}};
  if (own_args.is_object())
    for (const auto& [k, v] : own_args.items()) args[k] = v;
  return {{"lesson", lesson}, {"model", f.model}, {"precision", precision},
          {"device", device_name(device)}, {"seed", f.seed}, {"args", args}};
}

// --runs: a comma list of the chapter's runs (`ladder`, in the order the table shows them).
inline void add_runs_flag(CLI::App& app, std::string& runs_flag, const std::vector<std::string>& ladder) {
  std::string list;
  for (const auto& p : ladder) list += (list.empty() ? "" : ", ") + p;
  app.add_option("--runs", runs_flag, "comma list of " + list)->capture_default_str()->check(ListOf(ladder));
}

// The runs a --runs list names (checked by ListOf), in the order of the chapter's ladder
// whatever the order on the command line.
inline std::vector<std::string> runs_in_order(const std::string& runs_flag, const std::vector<std::string>& ladder) {
  std::vector<std::string> out;
  for (const auto& p : ladder)
    if (("," + runs_flag + ",").find("," + p + ",") != std::string::npos) out.push_back(p);
  return out;
}

// Common flags a chapter does not implement are refused, not ignored: "" or the one line
// that says which (a chapter with checkpoints allows --checkpoint and --resume).
inline std::string unsupported_flags(const CommonFlags& f, bool checkpoints) {
  if (!checkpoints && (!f.checkpoint.empty() || !f.resume.empty() || f.lr_schedule != "constant" ||
                       f.weight_decay != 0.0))
    return "--checkpoint, --resume, --lr-schedule and --weight-decay are not supported in this chapter";
  if (checkpoints && (f.lr_schedule != "constant" || f.weight_decay != 0.0))
    return "--lr-schedule and --weight-decay are not supported in this chapter";
  return "";
}

// --init-scale, --growth-interval, --min-scale and --max-scale: the rule of a GradScaler
// (chapters 09 and 10; framework/amp/scale_rule.h). Kept as parsed, for run.json and
// --resume; settle() makes the rule and checks it whole.
struct ScaleRuleFlags {
  double init_scale = 65536.0;
  int64_t growth_interval = 2000;
  double min_scale = amp::kMinLossScale, max_scale = amp::kMaxLossScale;

  // The rule as given; settle() checks it whole: "" when it is a rule, else why not (e.g.
  // --min-scale above --max-scale, or --init-scale outside them), for usage_error().
  amp::ScaleRule rule() const {
    amp::ScaleRule r;
    r.init_scale = float(init_scale);
    r.growth_interval = growth_interval;
    r.min_scale = float(min_scale);
    r.max_scale = float(max_scale);
    return r;
  }
  std::string settle() const {
    try {
      amp::validate(rule());
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }
  // For a checkpoint (framework/train/resume.h): the four flags as given, added to `flags`.
  nlohmann::json recorded(nlohmann::json flags) const {
    flags.update({{"--init-scale", init_scale}, {"--growth-interval", growth_interval}, {"--min-scale", min_scale},
                  {"--max-scale", max_scale}});
    return flags;
  }
  // For run.json's "args": the rule, and `more` (the chapter's other flags).
  nlohmann::json args(nlohmann::json more = nlohmann::json::object()) const {
    const amp::ScaleRule r = rule();
    more.update({{"init_scale", r.init_scale}, {"growth_interval", r.growth_interval}, {"min_scale", r.min_scale},
                 {"max_scale", r.max_scale}});
    return more;
  }
};

// `growth`: also --growth-interval (chapter 10 keeps PyTorch's 2000).
inline void add_scale_rule_flags(CLI::App& app, ScaleRuleFlags& s, bool growth) {
  app.add_option("--init-scale", s.init_scale, "the initial loss scale")->capture_default_str()->check(LossScale());
  if (growth)
    app.add_option("--growth-interval", s.growth_interval, "double the scale after this many finite steps")
        ->capture_default_str()->check(WholeIn(1, kMaxWhole, "a number of steps >= 1"));
  // The scale never leaves [min, max]: backoff stops at the minimum, growth at the maximum
  // (PyTorch's GradScaler has no such bounds, see pytorch#99640).
  app.add_option("--min-scale", s.min_scale, "the scale never backs off below this")
      ->capture_default_str()->check(LossScale());
  app.add_option("--max-scale", s.max_scale, "the scale never grows above this")
      ->capture_default_str()->check(FiniteIn(std::ldexp(1.0, -126), 3.4028234663852886e38,
                                              "a loss scale from 2^-126 to 3.4e38 (F32's largest)"));
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
    const std::string why = hg::cuda::no_gpu_reason();
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
