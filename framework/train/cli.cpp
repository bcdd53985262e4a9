#include "framework/train/cli.h"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

#include "cuda/gemm/backend.h"    // set_gemm_backend, set_allow_tf32: kept by a build without CUDA
#include "cuda/runtime/device.h"  // no_gpu_reason(): "this build has no CUDA backend" without CUDA
#include "framework/io/checkpoint.h"
#include "framework/io/run_log.h"
#include "framework/train/run_folder.h"

namespace hg::train {

// ---- 1. errors ---------------------------------------------------------------------------------

std::string program_name(const CLI::App& app) {
  const std::string n = std::filesystem::path(app.get_name()).filename().string();
  return n.empty() ? "halfgrad" : n;
}

int usage_error(const CLI::App& app, const std::string& message) {
  std::fprintf(stderr, "%s: %s\n", program_name(app).c_str(), message.c_str());
  return kExitUsage;
}

// ---- 2. values -----------------------------------------------------------------------------------
namespace {

// Text -> double, the whole text or nothing ("0.05", "1e-3", also "nan" and "inf").
bool parse_real(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size();
}

// Text -> int64, decimal digits only.
bool parse_whole(const std::string& text, int64_t& out) {
  const char* first = text.data();
  const char* last = first + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last) return false;
  const auto [ptr, ec] = std::from_chars(first, last, out);
  return ec == std::errc() && ptr == last;
}

std::string fmt_g(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

std::string got(const std::string& text, const std::string& expected) {
  return "got " + (text.empty() ? std::string("''") : text) + "; expected " + expected;
}

std::string comma_list(const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  return list;
}

}  // namespace

CLI::Validator FiniteIn(double lo, double hi, const std::string& expected) {
  return CLI::Validator(
      [=](std::string& text) {
        double x = 0;
        const bool inside = parse_real(text, x) && std::isfinite(x) && lo <= x && x <= hi;
        return inside ? std::string() : got(text, expected);
      },
      expected);
}

CLI::Validator NonNegative() { return FiniteIn(0.0, std::numeric_limits<double>::max(), "a finite number >= 0"); }

CLI::Validator Positive(double hi) {
  return FiniteIn(std::numeric_limits<double>::denorm_min(), hi,
                  hi < std::numeric_limits<double>::max() ? "a finite number > 0, at most " + fmt_g(hi)
                                                          : std::string("a finite number > 0"));
}

CLI::Validator LossScale() {
  return FiniteIn(std::ldexp(1.0, -126), std::ldexp(1.0, 127), "a loss scale from 2^-126 to 2^127 (1.2e-38 to 1.7e38)");
}

CLI::Validator WholeIn(int64_t lo, int64_t hi, const std::string& expected) {
  return CLI::Validator(
      [=](std::string& text) {
        int64_t x = 0;
        const bool inside = parse_whole(text, x) && lo <= x && x <= hi;
        return inside ? std::string() : got(text, expected);
      },
      expected);
}

CLI::Validator ImageLimit() {
  return CLI::Validator(
      [](std::string& text) {
        int64_t x = 0;
        const bool ok = parse_whole(text, x) && (x == -1 || x >= 1);
        return ok ? std::string() : got(text, "a number of images >= 1, or -1 for all");
      },
      "N >= 1, or -1: all");
}

int max_threads() { return 4 * std::max(1, omp_get_num_procs()); }

CLI::Validator Threads() {
  const int most = max_threads();
  return WholeIn(0, most, "0 (all cores) to " + std::to_string(most) + " (4 per core of the " +
                              std::to_string(most / 4) + " here)");
}

CLI::Validator OneOf(std::vector<std::string> names) {
  const std::string list = comma_list(names);
  return CLI::Validator(
      [=](std::string& text) {
        for (const auto& n : names)
          if (text == n) return std::string();
        return got(text, names.size() == 1 ? names[0] + " (the only one here)" : "one of " + list);
      },
      list);
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  if (!text.empty() && text.back() == ',') out.push_back("");
  return out;
}

CLI::Validator ListOf(std::vector<std::string> names) {
  const std::string list = comma_list(names);
  return CLI::Validator(
      [=](std::string& text) {
        const std::vector<std::string> items = split_list(text);
        if (items.empty()) return got(text, "a comma list of " + list);
        std::set<std::string> seen;
        for (const auto& item : items) {
          if (std::find(names.begin(), names.end(), item) == names.end()) return "'" + item + "' is not one of " + list;
          if (!seen.insert(item).second) return "'" + item + "' appears twice in '" + text + "'";
        }
        return std::string();
      },
      "comma list of " + list);
}

CLI::Validator RunName() {
  return CLI::Validator([](std::string& text) { return run_name_problem(text); }, "NAME");
}

CLI::Validator WritableFile() {
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

CLI::Validator CheckpointFile() {
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

// ---- 3. flags --------------------------------------------------------------------------------------

void add_common_flags(CLI::App& app, CommonFlags& f) {
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
  app.add_option("--gemm", f.gemm, "GEMM on the GPU: ladder (the hand-written rungs) | cublas")
      ->capture_default_str()->check(OneOf({"ladder", "cublas"}));
  app.add_flag("--tf32", f.tf32, "F32 matmuls and convolutions on the GPU's TF32 tensor cores (sm_80+; off by default)");
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

std::string precision_run_name(const CommonFlags& f, const std::string& lesson, const std::string& precision) {
  return (f.run_name.empty() ? lesson.substr(0, 2) + "_" + f.model : f.run_name) + "_" + precision;
}

nlohmann::json comparison_run_json(const std::string& lesson, const CommonFlags& f, const std::string& precision,
                                   Device device, int epochs, const nlohmann::json& own_args) {
  nlohmann::json args = {{"epochs", epochs}, {"batch_size", f.batch_size}, {"lr", f.lr},
                         {"momentum", f.momentum}, {"limit_train", f.limit_train}};
  if (own_args.is_object())
    for (const auto& [k, v] : own_args.items()) args[k] = v;
  return {{"lesson", lesson}, {"model", f.model}, {"precision", precision},
          {"device", device_name(device)}, {"seed", f.seed}, {"args", args}};
}

void add_runs_flag(CLI::App& app, std::string& runs_flag, const std::vector<std::string>& runs) {
  app.add_option("--runs", runs_flag, "comma list of " + comma_list(runs))->capture_default_str()->check(ListOf(runs));
}

std::vector<std::string> runs_in_order(const std::string& runs_flag, const std::vector<std::string>& runs) {
  std::vector<std::string> out;
  for (const auto& p : runs)
    if (("," + runs_flag + ",").find("," + p + ",") != std::string::npos) out.push_back(p);
  return out;
}

std::string unsupported_flags(const CommonFlags& f, bool checkpoints) {
  if (!checkpoints && (!f.checkpoint.empty() || !f.resume.empty() || f.lr_schedule != "constant" ||
                       f.weight_decay != 0.0))
    return "--checkpoint, --resume, --lr-schedule and --weight-decay are not supported in this chapter";
  if (checkpoints && (f.lr_schedule != "constant" || f.weight_decay != 0.0))
    return "--lr-schedule and --weight-decay are not supported in this chapter";
  return "";
}

void add_precision_flag(CLI::App& app, std::string& precision) {
  app.add_option("--precision", precision, "fp32 | amp_f16 (F16 autocast + GradScaler) | amp_bf16 (BF16 autocast)")
      ->capture_default_str()->check(OneOf({"fp32", "amp_f16", "amp_bf16"}));
}

DType autocast_dtype(const std::string& precision) {
  return precision == "amp_f16" ? DType::F16 : precision == "amp_bf16" ? DType::BF16 : DType::F32;
}

void add_grad_accum_flag(CLI::App& app, int64_t& K) {
  app.add_option("--grad-accum", K, "micro-batches per step (each --batch-size / K of the batch)")
      ->capture_default_str()->check(WholeIn(1, kMaxBatch, "a number of micro-batches from 1 to 65536"));
}

std::string grad_accum_problem(int64_t batch_size, int64_t K) {
  if (batch_size % K == 0) return "";
  return "--grad-accum " + std::to_string(K) + ": --batch-size " + std::to_string(batch_size) +
         " does not split into " + std::to_string(K) + " equal micro-batches";
}

amp::ScaleRule ScaleRuleFlags::rule() const {
  amp::ScaleRule r;
  r.init_scale = float(init_scale);
  r.growth_interval = growth_interval;
  r.min_scale = float(min_scale);
  r.max_scale = float(max_scale);
  return r;
}

std::string ScaleRuleFlags::settle() const {
  try {
    amp::validate(rule());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

nlohmann::json ScaleRuleFlags::recorded(nlohmann::json flags) const {
  flags.update({{"--init-scale", init_scale}, {"--growth-interval", growth_interval}, {"--min-scale", min_scale},
                {"--max-scale", max_scale}});
  return flags;
}

nlohmann::json ScaleRuleFlags::args(nlohmann::json more) const {
  const amp::ScaleRule r = rule();
  more.update({{"init_scale", r.init_scale}, {"growth_interval", r.growth_interval}, {"min_scale", r.min_scale},
               {"max_scale", r.max_scale}});
  return more;
}

void add_scale_rule_flags(CLI::App& app, ScaleRuleFlags& s, bool growth) {
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

// ---- 4. settings -------------------------------------------------------------------------------------

void apply_threads(int threads) {
  if (threads > 0) omp_set_num_threads(threads);
}

void apply_settings(const CommonFlags& f) {
  apply_threads(f.threads);
  hg::cuda::set_gemm_backend(f.gemm == "cublas" ? hg::cuda::GemmBackend::Cublas : hg::cuda::GemmBackend::Ladder);
  hg::cuda::set_allow_tf32(f.tf32);
}

Device device_from_flag(const std::string& name) {
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

bool device_from_flag(const std::string& name, const char* program, Device& out) {
  try {
    out = device_from_flag(name);
    return true;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: --device %s: %s\n", program, name.c_str(), e.what());
    return false;
  }
}

}  // namespace hg::train
