// The training programs' shared plumbing for bad input (framework/train/): the divergence
// guard, the value checks of the command line, run names and run folders, and --resume's
// flag rules. The programs themselves are tested by the scripts beside this file.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include "framework/io/checkpoint.h"
#include "framework/tensor/tensor.h"
#include "framework/train/checkpoint.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/resume.h"
#include "framework/train/run_folder.h"

using namespace hg;
namespace fs = std::filesystem;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

std::vector<nn::NamedTensor> params_with(float bad, DType dtype) {
  Tensor a = Tensor::from_vector(std::vector<float>{1.0f, 2.0f, 3.0f}, {3}, dtype);
  Tensor b = Tensor::from_vector(std::vector<float>{0.5f, bad, bad, 0.25f}, {2, 2}, dtype);
  return {{"fc1.weight", a}, {"fc2.bias", b}};
}

// The check's message for `text`, "" when it is accepted.
std::string refusal(const CLI::Validator& v, std::string text) { return v(text); }

// Runs from a fresh empty folder, back where it was at the end.
struct InTempFolder {
  fs::path old = fs::current_path(), dir;
  InTempFolder() {
    dir = fs::temp_directory_path() / ("hg_cli_test_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::current_path(dir);
  }
  ~InTempFolder() {
    fs::current_path(old);
    fs::remove_all(dir);
  }
};

}  // namespace

TEST_CASE("the guard: a finite step passes, then the loss is checked first and each parameter after it") {
  CHECK_FALSE(train::check_finite_step(7, 0.5, params_with(1.0f, DType::F32)));
  const train::Divergence nan_loss = train::check_finite_step(7, kNaN, params_with(1.0f, DType::F32));
  CHECK(nan_loss);
  CHECK(nan_loss.message() == "diverged at step 7: loss is NaN");
  CHECK(train::check_finite_step(3, kInf, {}).cause == "loss is inf");
  CHECK(train::check_finite_step(3, -kInf, {}).cause == "loss is -inf");
  // A finite loss with a NaN weight: the weight is named, with how many values are bad.
  const train::Divergence w = train::check_finite_step(12, 2.3, params_with(std::nanf(""), DType::F32));
  CHECK(w.message() == "diverged at step 12: parameter fc2.bias holds 2 NaN (of 4 values)");
  // F16 weights that overflowed to inf (chapters 06-09 keep the model in F16).
  const train::Divergence h = train::check_finite_step(0, 2.3, params_with(1e6f, DType::F16));
  CHECK(h.cause == "parameter fc2.bias holds 2 inf (of 4 values)");
  CHECK(train::check_finite_step(0, 2.3, params_with(3.0f, DType::BF16)).cause.empty());
}

TEST_CASE("number checks refuse NaN and inf, which a range check written the other way lets through") {
  // The trap the checks avoid: NaN is neither below nor above any bound.
  CHECK(refusal(CLI::Range(0.0, 1.0), "nan").empty());
  CHECK(refusal(train::FiniteIn(0.0, 1.0, "a momentum from 0 to 1"), "nan") == "got nan; expected a momentum from 0 to 1");
  for (const char* bad : {"nan", "inf", "-inf", "-0.5", "abc", "", "1e999"})
    CHECK_MESSAGE(!refusal(train::NonNegative(), bad).empty(), bad);
  for (const char* good : {"0", "0.05", "1e6", "1e-30"}) CHECK_MESSAGE(refusal(train::NonNegative(), good).empty(), good);
  CHECK(!refusal(train::Positive(), "0").empty());
  CHECK(refusal(train::Positive(), "4.9e-324").empty());
  CHECK(!refusal(train::Positive(3.4e38), "1e39").empty());
  // A loss scale: S and 1/S finite in F32.
  CHECK(refusal(train::LossScale(), "65536").empty());
  CHECK(refusal(train::LossScale(), "1.7e38").empty());
  for (const char* bad : {"0", "1e-39", "1e39", "nan", "inf", "-1"})
    CHECK_MESSAGE(!refusal(train::LossScale(), bad).empty(), bad);
}

TEST_CASE("whole-number checks: decimal digits in range, nothing wrapped or guessed") {
  const CLI::Validator seed = train::WholeIn(0, train::kMaxWhole, "a seed");
  CHECK(refusal(seed, "0").empty());
  CHECK(refusal(seed, "9223372036854775807").empty());
  for (const char* bad : {"-1", "9223372036854775808", "18446744073709551615", "1e3", "2.5", "0x10", " 5", ""})
    CHECK_MESSAGE(!refusal(seed, bad).empty(), bad);
  CHECK(refusal(train::WholeIn(1, 10, "x"), "010").empty());  // decimal 10, not octal 8
  const CLI::Validator limit = train::ImageLimit();
  CHECK(refusal(limit, "-1").empty());
  CHECK(refusal(limit, "1").empty());
  for (const char* bad : {"0", "-2", "-5"}) CHECK_MESSAGE(!refusal(limit, bad).empty(), bad);
  CHECK(!refusal(train::Threads(), std::to_string(train::max_threads() + 1)).empty());
  CHECK(refusal(train::Threads(), "0").empty());
}

TEST_CASE("lists and choices") {
  const CLI::Validator runs = train::ListOf({"fp32", "amp_f16"});
  CHECK(refusal(runs, "fp32,amp_f16").empty());
  CHECK(refusal(runs, "amp_f16,fp32,amp_f16") == "'amp_f16' appears twice in 'amp_f16,fp32,amp_f16'");
  CHECK(refusal(runs, "fp8") == "'fp8' is not one of fp32, amp_f16");
  CHECK(!refusal(runs, "").empty());
  CHECK(!refusal(runs, "fp32,").empty());
  CHECK(!refusal(runs, ",fp32").empty());
  CHECK(train::split_list("a,b") == std::vector<std::string>{"a", "b"});
  CHECK(refusal(train::OneOf({"mlp"}), "smallcnn") == "got smallcnn; expected mlp (the only one here)");
}

TEST_CASE("run names are one safe path component") {
  for (const char* good : {"readme", "02_mlp_fp32", "lr0.001", "A-b_c.d", "_x"})
    CHECK_MESSAGE(train::run_name_problem(good).empty(), good);
  for (const char* bad : {"", ".", "..", "../x", "a/b", "/abs", ".hidden", "-x", "a b", "a\\b", "é"})
    CHECK_MESSAGE(!train::run_name_problem(bad).empty(), bad);
  CHECK(train::run_name_problem(std::string(train::kMaxRunName, 'a')).empty());
  CHECK(!train::run_name_problem(std::string(train::kMaxRunName + 1, 'a')).empty());
}

TEST_CASE("run folders: free, taken, --overwrite, --resume") {
  InTempFolder tmp;
  CHECK(train::check_run_folders({"a", "b"}, false, false).empty());  // runs/ does not exist yet
  CHECK(!fs::exists("runs"));                                          // and checking made nothing
  CHECK(train::claim_run_folder("a", false, false) == "runs/a");
  CHECK(fs::is_directory("runs/a"));
  const std::string taken = train::check_run_folders({"b", "a"}, false, false);
  CHECK(taken.find("runs/a already exists") != std::string::npos);
  CHECK(taken.find("--overwrite") != std::string::npos);
  CHECK(train::check_run_folders({"a"}, true, false).empty());
  CHECK(train::check_run_folders({"a"}, false, true).empty());
  // Claiming a folder that appeared since the check: refused (another program has it).
  CHECK_THROWS_WITH_AS(train::claim_run_folder("a", false, false),
                       doctest::Contains("appeared after this program started"), std::runtime_error);
  // --overwrite replaces it; --resume keeps what is in it.
  std::ofstream("runs/a/old") << "x";
  train::claim_run_folder("a", false, true);
  CHECK(fs::exists("runs/a/old"));
  train::claim_run_folder("a", true, false);
  CHECK(fs::is_directory("runs/a"));
  CHECK(!fs::exists("runs/a/old"));
  CHECK_THROWS(train::claim_run_folder("../a", true, false));  // never outside runs/
}

TEST_CASE("run folders: --overwrite with --resume is refused (it would delete the log it continues)") {
  InTempFolder tmp;
  train::claim_run_folder("r", false, false);
  std::ofstream("runs/r/events.jsonl") << "{\"type\":\"scalar\",\"step\":0}\n";
  const std::string why = train::check_run_folders({"r"}, true, true);
  CHECK(why.find("--overwrite") != std::string::npos);
  CHECK(why.find("--resume") != std::string::npos);
  CHECK_THROWS_WITH_AS(train::claim_run_folder("r", true, true), doctest::Contains("--resume"), std::runtime_error);
  CHECK(fs::file_size("runs/r/events.jsonl") > 0);  // nothing deleted
}

// A run of another program, alive: a child that claims runs/<name> and waits until told to end.
struct LiveRun {
  pid_t pid = -1;
  int go_fd = -1;  // the child ends when this is closed
  explicit LiveRun(const std::string& name) {
    int ready[2], go[2];
    REQUIRE(::pipe(ready) == 0);
    REQUIRE(::pipe(go) == 0);
    pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(ready[0]);
      ::close(go[1]);
      int code = 0;
      try {
        train::claim_run_folder(name, false, false);
        std::ofstream("runs/" + name + "/events.jsonl") << "the live run's\n";
      } catch (...) {
        code = 1;
      }
      if (::write(ready[1], "x", 1) != 1) code = 1;
      char c;
      while (::read(go[0], &c, 1) > 0) {}  // until the parent closes its end
      ::_exit(code);
    }
    ::close(ready[1]);
    ::close(go[0]);
    go_fd = go[1];
    char c;
    REQUIRE(::read(ready[0], &c, 1) == 1);
    ::close(ready[0]);
  }
  int end() {  // the child's exit code
    if (go_fd >= 0) ::close(go_fd);
    go_fd = -1;
    int status = 0;
    if (pid > 0) ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  ~LiveRun() { end(); }
};

TEST_CASE("run folders: a folder a live run writes is never taken over, not even with --overwrite") {
  InTempFolder tmp;
  std::string live_pid;
  {
    LiveRun live("race");
    live_pid = std::to_string(live.pid);
    const std::string overwrite = train::check_run_folders({"race"}, true, false);
    INFO(overwrite);
    CHECK(overwrite.find("runs/race") != std::string::npos);
    CHECK(overwrite.find("process " + live_pid) != std::string::npos);
    CHECK(train::check_run_folders({"race"}, false, true) == overwrite);  // nor continued
    const std::string by_pid = "process " + live_pid;
    CHECK_THROWS_WITH_AS(train::claim_run_folder("race", true, false), doctest::Contains(by_pid.c_str()),
                         std::runtime_error);
    CHECK_THROWS_WITH_AS(train::claim_run_folder("race", false, true), doctest::Contains(by_pid.c_str()),
                         std::runtime_error);
    std::ifstream in("runs/race/events.jsonl");
    std::string line;
    std::getline(in, line);
    CHECK(line == "the live run's");  // untouched
    CHECK(live.end() == 0);
  }
  // The lock ends with the process that held it (here it exited; a crash or kill -9 alike):
  // no stale lock is left behind.
  CHECK(train::check_run_folders({"race"}, true, false).empty());
  CHECK(train::claim_run_folder("race", true, false) == "runs/race");
  CHECK(!fs::exists("runs/race/events.jsonl"));
  // This program holds it now: it may claim it again (a chapter never does; nothing is lost).
  CHECK(train::claim_run_folder("race", false, true) == "runs/race");
}

TEST_CASE("--checkpoint: never over a file that is not a checkpoint, nor into another run's folder") {
  InTempFolder tmp;
  std::ofstream("text.txt") << "the training text\n";
  std::ofstream("empty.ckpt").flush();
  io::save_checkpoint("good.ckpt", io::Checkpoint{});
  const CLI::Validator v = train::CheckpointFile();
  CHECK(refusal(v, "new.ckpt").empty());
  CHECK(refusal(v, "good.ckpt").empty());   // a checkpoint is replaced by the next one
  CHECK(refusal(v, "empty.ckpt").empty());  // nothing to lose
  CHECK(refusal(v, "text.txt") == "text.txt exists and is not a halfgrad checkpoint (it does not start with "
                                  "HGCKPT); not replacing it");
  CHECK(refusal(v, "none/x.ckpt") == "none/x.ckpt: the folder none does not exist");  // WritableFile's checks first
  fs::create_directories("runs/mine");
  for (const char* log : {"runs/mine/events.jsonl", "runs/mine/run.json", "events.jsonl"})
    CHECK_MESSAGE(refusal(v, log).find("is a run log's name") != std::string::npos, log);
  // The save itself holds to the same rule, whoever calls it.
  CHECK_THROWS_WITH_AS(io::save_checkpoint("text.txt", io::Checkpoint{}), doctest::Contains("not replacing it"),
                       std::runtime_error);
  std::ifstream in("text.txt");
  std::string line;
  std::getline(in, line);
  CHECK(line == "the training text");

  // Into the program's own run folder, yes; into another run's, no.
  fs::create_directories("runs/other");
  CHECK(train::check_run_folders({"mine"}, true, false, "runs/mine/c.ckpt").empty());
  CHECK(train::check_run_folders({"mine"}, true, false, "c.ckpt").empty());
  CHECK(train::check_run_folders({"mine"}, true, false, "runs/other/c.ckpt") ==
        "--checkpoint runs/other/c.ckpt: inside runs/other, the folder of another run (a run folder holds "
        "one run's files)");
  CHECK(!train::check_run_folders({"mine"}, true, false, "./runs/../runs/other/c.ckpt").empty());
}

TEST_CASE("--checkpoint: the folder must exist and take a new file now") {
  InTempFolder tmp;
  fs::create_directories("sub");
  CHECK(refusal(train::WritableFile(), "x.ckpt").empty());
  CHECK(refusal(train::WritableFile(), "sub/x.ckpt").empty());
  CHECK(refusal(train::WritableFile(), "sub") == "sub is a folder; give a file name in it");
  CHECK(refusal(train::WritableFile(), "none/x.ckpt") == "none/x.ckpt: the folder none does not exist");
  CHECK(refusal(train::WritableFile(), "/proc/x.ckpt").find("cannot write into /proc") == 0);
  CHECK(refusal(train::WritableFile(), "/dev/null") == "/dev/null exists and is not a regular file");
  CHECK(fs::is_empty("sub"));  // the probe leaves nothing behind
}

TEST_CASE("--resume: left-out flags come from the checkpoint, contradicting ones are refused") {
  InTempFolder tmp;
  io::Checkpoint ckpt;
  ckpt.meta["train"] = {{"step", 40}, {"epoch", 2}, {"batch_in_epoch", 0}, {"generators", {{"init", "7"}}},
                        {"extra", {{"lesson", "02_fp32_training"},
                                   {"flags", {{"--lr", 0.01}, {"--seed", 3}, {"--model", "mlp"}, {"--epochs", 2}}}}}};
  io::save_checkpoint("c.ckpt", ckpt);

  auto parse = [](CLI::App& app, std::vector<const char*> argv) { app.parse(int(argv.size()), argv.data()); };
  {
    CLI::App app{"test"};
    train::CommonFlags f;
    train::add_common_flags(app, f);
    parse(app, {"test", "--resume", "c.ckpt", "--epochs", "5"});
    int64_t done = -1;
    const nlohmann::json given = {{"--lr", f.lr}, {"--seed", f.seed}, {"--model", f.model}, {"--epochs", f.epochs}};
    CHECK(train::resume_flags(app, "c.ckpt", "02_fp32_training", given, done).empty());
    CHECK(done == 2);
    CHECK(f.lr == 0.01);      // not given: the checkpoint's
    CHECK(f.seed == 3u);
    CHECK(f.epochs == 5);     // given: how far to train is the command line's
  }
  {
    CLI::App app{"test"};
    train::CommonFlags f;
    train::add_common_flags(app, f);
    parse(app, {"test", "--resume", "c.ckpt", "--lr", "0.05"});
    int64_t done = -1;
    const std::string why = train::resume_flags(app, "c.ckpt", "02_fp32_training", {{"--lr", f.lr}}, done);
    CHECK(why == "--resume c.ckpt: the checkpoint was trained with --lr 0.01, not 0.05 (leave --lr out to "
                 "continue with its value)");
  }
  {
    CLI::App app{"test"};
    train::CommonFlags f;
    train::add_common_flags(app, f);
    parse(app, {"test"});
    int64_t done = -1;
    CHECK(train::resume_flags(app, "c.ckpt", "09_dynamic_loss_scaling", {}, done) ==
          "--resume c.ckpt: a checkpoint of 02_fp32_training, not of 09_dynamic_loss_scaling");
    std::ofstream("junk.ckpt") << "junk";
    // A file with a valid CRC but a training state of the wrong type: refused in one line,
    // as every other bad checkpoint (it used to escape as a JSON type_error).
    io::Checkpoint bad;
    bad.meta["train"] = {{"step", "3"}, {"epoch", 0}, {"batch_in_epoch", 0}, {"generators", nlohmann::json::object()},
                         {"extra", {{"lesson", "02_fp32_training"}, {"flags", nlohmann::json::object()}}}};
    io::save_checkpoint("string_step.ckpt", bad);
    CHECK(train::resume_flags(app, "string_step.ckpt", "02_fp32_training", {}, done) ==
          "--resume string_step.ckpt: train.step is missing or not an integer");
    CHECK(train::resume_flags(app, "junk.ckpt", "02_fp32_training", {}, done).rfind("--resume: junk.ckpt", 0) == 0);
  }
}
