#pragma once
// The command line of the training chapters, so `--epochs`, `--lr`, `--seed` ... mean the
// same thing in every chapter that has them. Four jobs, one section each:
//
//   1. errors      a bad flag is one line and exit code 2 (HG_PARSE_FLAGS, usage_error)
//   2. values      the checks a flag's text must pass (FiniteIn, WholeIn, OneOf, ListOf, ...)
//   3. flags       CommonFlags (chapter 02's recipe) and ScaleRuleFlags (chapters 09-10),
//                  and the runs of the comparison chapters (06-11)
//   4. settings    what the flags set in the process, applied by main() after parsing:
//                  threads, the GPU's GEMM and TF32, the device
//
//   CLI::App app{"..."};
//   hg::train::CommonFlags flags;              // defaults: chapter 02's recipe
//   hg::train::add_common_flags(app, flags);
//   app.get_option("--model")->check(hg::train::OneOf({"mlp"}));      // the chapter's rules,
//   app.add_option("--clip", clip, "...")->check(hg::train::NonNegative());  // one line a flag
//   HG_PARSE_FLAGS(app, argc, argv);           // a bad flag: one line, exit code 2
//   hg::train::apply_settings(flags);          // threads, --gemm, --tf32: nothing before this
//   hg::Device device;
//   if (!hg::train::device_from_flag(flags.device, "lesson_NN", device)) return 2;  // says why
//
// Every value is checked while parsing, before any data is read or any output printed: a
// value that cannot mean anything (NaN, inf, a count of 0, a negative seed, a run name that
// climbs out of runs/, a checkpoint folder that does not exist) is one line on stderr and
// exit code 2, never a default silently used instead, never an error after an epoch.
// Parsing only fills the flags' struct: a setting of the whole process (the number of
// threads, the GEMM on the GPU) changes when main() applies it, where the reader sees it.
//
// --device auto takes the GPU when there is one and otherwise says so once and runs on the
// CPU; --device cuda insists, so no GPU is an error. --gemm picks the GEMM of matmul, linear
// and conv2d on the GPU: the hand-written GEMM rungs (default) or cuBLAS, for comparison.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "framework/amp/scale_rule.h"
#include "framework/tensor/device.h"
#include "framework/tensor/dtype.h"

namespace hg::train {

// ---- 1. errors ---------------------------------------------------------------------------------

// The exit code of every halfgrad command-line error: nothing was run.
inline constexpr int kExitUsage = 2;

// "lesson_02" for "./build/lessons/lesson_02": how a program names itself in its messages.
std::string program_name(const CLI::App& app);

// One line, "<program>: <message>", and the exit code for main() to return.
int usage_error(const CLI::App& app, const std::string& message);

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

// ---- 2. values -----------------------------------------------------------------------------------
// CLI11 runs a flag's checks on its text before converting it; each check below returns ""
// or why the value is refused, and CLI11 makes that "--flag: why".
//
// NaN needs care: every comparison with NaN is false, so a range check written "refuse if
// x < lo or x > hi" lets NaN through (CLI::Range does). These checks ask the other way
// round — "accept if lo <= x and x <= hi" — which NaN never is, and name what they expect.

inline constexpr int64_t kMaxWhole = std::numeric_limits<int64_t>::max();

// A finite number in [lo, hi]; `expected` says it in words ("a number from 0 to 1").
CLI::Validator FiniteIn(double lo, double hi, const std::string& expected);
CLI::Validator NonNegative();
// x > 0, and at most `hi` (FLT_MAX for a value that becomes an F32).
CLI::Validator Positive(double hi = std::numeric_limits<double>::max());
// A loss scale S: S and 1/S must both be finite, non-zero F32 numbers (S is kept as an F32
// and the gradients are multiplied by 1/S in F32), so 2^-126 <= S <= 2^127.
CLI::Validator LossScale();
// A whole number in [lo, hi], written in decimal digits (not "010", which strtoll reads as
// octal 8, nor 99999999999999999999, which it turns into the largest int64 without a word).
CLI::Validator WholeIn(int64_t lo, int64_t hi, const std::string& expected);
// --limit-train / --limit-test: a number of images >= 1, or -1 for all of them.
CLI::Validator ImageLimit();
// --threads: 0 (OpenMP's default) up to 4 threads per core of this machine. More only
// queue for the same cores, and thousands make the OpenMP runtime itself fail.
int max_threads();
CLI::Validator Threads();
// One of `names`.
CLI::Validator OneOf(std::vector<std::string> names);
// A comma list of `names`: at least one, each known, none twice (each item is one run with
// its own run folder, and two runs cannot share one).
CLI::Validator ListOf(std::vector<std::string> names);
// "a,b," -> {"a", "b", ""}: every item, empty ones too, so that a check can refuse them.
std::vector<std::string> split_list(const std::string& text);
// --run-name: one safe path component (framework/train/run_folder.h).
CLI::Validator RunName();
// --dot (and --checkpoint, below): a file path whose folder exists and can be written now,
// not after an epoch. The file is written as a temporary and renamed over the path, so the
// path must not be a device or a pipe (/dev/null would be replaced by a regular file).
CLI::Validator WritableFile();
// --checkpoint: a WritableFile that a save may replace. What is at the path now must be a
// checkpoint or nothing (framework/io/checkpoint.h): never the training text, a run log or
// any other file, whatever the command line says. And the name is not one of a run log's
// files, which a run may create after this check. (That the file is not inside another
// run's folder is check_run_folders()'s: it knows this program's run names.)
CLI::Validator CheckpointFile();

// ---- 3. flags --------------------------------------------------------------------------------------

struct CommonFlags {
  int epochs = -1;             // -1 (not given): the chapter's default for the model
  int64_t batch_size = 128;
  double lr = 0.05;
  double momentum = 0.9;
  double weight_decay = 0.0;
  std::string model = "mlp";   // a name, or several separated by commas ("mlp,smallcnn")
  std::string device = "cpu";  // cpu | cuda | auto
  std::string gemm = "ladder";  // ladder (the hand-written GEMM rungs) | cublas: behind matmul/linear/conv2d on the GPU
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

void add_common_flags(CLI::App& app, CommonFlags& f);

// The comparison chapters (06–11) train one model several ways ("runs"), side by side.
//
// runs/<name>/ of one run of a comparison: "--run-name X" gives X_fp32, X_fp16_naive, ...;
// without it "<NN>_<model>_<precision>", NN the chapter's number (the start of its lesson
// name, "06_fp16_naive"): 06_mlp_fp32.
std::string precision_run_name(const CommonFlags& f, const std::string& lesson, const std::string& precision);

// run.json of one run of a comparison (docs/run-log.md): the chapter, the model, the
// precision, the device, the seed, and under "args" the flags that shaped the run — the
// common ones and the chapter's own (`own_args`).
nlohmann::json comparison_run_json(const std::string& lesson, const CommonFlags& f, const std::string& precision,
                                   Device device, int epochs, const nlohmann::json& own_args);

// --runs: a comma list of the chapter's runs (`runs`, in the order its table shows them).
void add_runs_flag(CLI::App& app, std::string& runs_flag, const std::vector<std::string>& runs);

// The runs a --runs list names (checked by ListOf), in the chapter's order (`runs`) whatever
// the order on the command line.
std::vector<std::string> runs_in_order(const std::string& runs_flag, const std::vector<std::string>& runs);

// Common flags a chapter does not implement are refused, not ignored: "" or the one line
// that says which (a chapter with checkpoints allows --checkpoint and --resume).
std::string unsupported_flags(const CommonFlags& f, bool checkpoints);

// --precision (chapters 12 and 13): fp32, amp_f16 (F16 autocast and a GradScaler) or
// amp_bf16 (BF16 autocast, no scaler); autocast_dtype() is the autocast's type, F32 for none.
void add_precision_flag(CLI::App& app, std::string& precision);
DType autocast_dtype(const std::string& precision);

// --grad-accum K (chapters 12 and 13): each step computes its batch of --batch-size as K
// micro-batches, one after another, and steps once; the batch stays --batch-size, and only a
// K-th of it is in memory at a time. grad_accum_problem(): "" when K splits the batch
// evenly, else the one line that says it does not.
void add_grad_accum_flag(CLI::App& app, int64_t& K);
std::string grad_accum_problem(int64_t batch_size, int64_t K);

// --init-scale, --growth-interval, --min-scale and --max-scale: the rule of a GradScaler
// (chapters 09 and 10; framework/amp/scale_rule.h). Kept as parsed, for run.json and
// --resume; settle() makes the rule and checks it whole.
struct ScaleRuleFlags {
  double init_scale = 65536.0;
  int64_t growth_interval = 2000;
  double min_scale = amp::kMinLossScale, max_scale = amp::kMaxLossScale;

  // The rule as given.
  amp::ScaleRule rule() const;
  // "" when it is a rule, else why not (e.g. --min-scale above --max-scale, or --init-scale
  // outside them), for usage_error().
  std::string settle() const;
  // For a checkpoint (framework/train/resume.h): the four flags as given, added to `flags`.
  nlohmann::json recorded(nlohmann::json flags) const;
  // For run.json's "args": the rule, and `more` (the chapter's other flags).
  nlohmann::json args(nlohmann::json more = nlohmann::json::object()) const;
};

// `growth`: also --growth-interval (chapter 10 keeps PyTorch's 2000).
void add_scale_rule_flags(CLI::App& app, ScaleRuleFlags& s, bool growth);

// ---- 4. settings -------------------------------------------------------------------------------------

// --threads: OpenMP's thread count (0 leaves OpenMP's default).
void apply_threads(int threads);

// Everything the common flags set in the process, once the command line is parsed: the
// threads, and the GEMM behind the GPU's matmul (--gemm) and TF32 for its F32 matmuls
// (--tf32; as torch.backends.cuda.matmul.allow_tf32, off unless asked for, because TF32
// keeps 10 mantissa bits of each F32 operand: chapter 05). A build without CUDA keeps the
// GPU settings and never reads them; the CPU has no TF32.
void apply_settings(const CommonFlags& f);

// "cpu" or "cuda" -> Device; for "cuda" checks a GPU is usable and throws the framework's
// message otherwise ("built without CUDA; use --device cpu").
// "auto": the GPU when cuda_available(), else one line on stderr and the CPU.
Device device_from_flag(const std::string& name);

// The same for main(): false after one line on stderr, "<program>: --device NAME: why", when
// the device cannot be used; the caller then exits 2, as for any command-line error.
//   hg::Device device;
//   if (!hg::train::device_from_flag(flags.device, "lesson_02", device)) return 2;
bool device_from_flag(const std::string& name, const char* program, Device& out);

}  // namespace hg::train
