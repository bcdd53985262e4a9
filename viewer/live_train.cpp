// halfgrad-live — chapter 02's MLP (or its SmallCNN) trained on FashionMNIST, or chapter 12's
// GPT on text, in a precision recipe of chapters 06–11 or 14 (FP8) that can be changed while
// it trains: the training half of the viewer's Lab panel.
//
// It is a training program like a chapter's, not part of the viewer: it writes its run
// folder (runs/<name>/run.json, events.jsonl) and reads commands from runs/<name>/control.jsonl
// between steps (framework/train/live_control.h; docs/run-log.md, "The control channel").
// The viewer only appends to control.jsonl and reads the folder.
//
//   halfgrad-live --recipe dynamic_scale --run-name lab1 --limit-train 10000
//   echo '{"cmd":"set","key":"loss_scale","log2":-4}' >> runs/lab1/control.jsonl
//   halfgrad-live --script docs/demos/08_loss_scale.txt --run-name demo
//   halfgrad-live --script runs/lab1/events.jsonl --run-name lab1_again   (a replay)
//   halfgrad-live --device cuda --recipe amp_f16       (a CUDA build on a machine with a GPU)
//
// Sections: 1. flags   2. branches (a second run of this program)   3. main
#include <CLI/CLI.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "framework/cpu/wait_policy.h"
#include "framework/io/atomic_file.h"
#include "framework/io/run_log.h"
#include "framework/train/cli.h"
#include "framework/train/data.h"
#include "framework/train/live.h"
#include "framework/train/run_folder.h"

extern char** environ;

namespace {

const char* kProgram = "halfgrad-live";

// ---- 1. flags ---------------------------------------------------------------------------
struct Flags {
  hg::train::LiveConfig live;
  std::string run_name = "live";
  std::string device = "cpu";
  std::string data, text, script, from;
  int64_t limit_train = 10000, limit_test = 1000;
  int threads = 0;
  bool exit_with_parent = false;  // the viewer's children: end when the viewer ends
};

void add_flags(CLI::App& app, Flags& f) {
  using namespace hg::train;
  auto& c = f.live;
  app.add_option("--model", c.model, "mlp | smallcnn (chapter 02's models, on FashionMNIST) | gpt (chapter 12's, "
                 "small: 2 blocks of width 64, on text; lr 0.002 and batch 16 unless given)")->capture_default_str()
      ->check(OneOf(live_models()));
  app.add_option("--device", f.device, "cpu | cuda (a CUDA build on a machine with a GPU; the FP8 recipes: cpu)")
      ->capture_default_str()->check(OneOf({"cpu", "cuda"}));
  app.add_option("--recipe", c.recipe, "fp32 | fp16_naive | master_weights | static_scale | dynamic_scale | "
                 "amp_f16 | amp_bf16 (chapters 06-11) | fp8_current | fp8_delayed | fp8_block | fp8_mx "
                 "(chapter 14, the MLP only)")->capture_default_str()->check(OneOf(live_recipes()));
  app.add_option("--lr", c.lr, "learning rate")->capture_default_str()
      ->check(FiniteIn(1e-30, kMaxLr, "a learning rate in (0, 10]"));
  app.add_option("--momentum", c.momentum, "SGD momentum (the image models; the GPT's AdamW has its betas)")->capture_default_str()
      ->check(FiniteIn(0, 1, "a number from 0 to 1"));
  app.add_option("--log2-scale", c.log2_scale, "log2 of the loss scale: static_scale's S, where a GradScaler starts")
      ->capture_default_str()->check(WholeIn(kMinLog2Scale, kMaxLog2Scale, "a power of two's exponent, -126 to 127"));
  app.add_option("--growth-interval", c.growth_interval, "the GradScaler doubles S after this many good steps")
      ->capture_default_str()->check(WholeIn(1, kMaxGrowthInterval, "a number of steps >= 1"));
  app.add_option("--batch-size", c.batch_size, "images per step (the GPT: sequences of 32 characters)")->capture_default_str()
      ->check(WholeIn(1, kMaxBatch, "a batch of 1 to 65536 images"));
  app.add_option("--seed", c.seed, "seed of initialisation and shuffling")->capture_default_str();
  app.add_option("--stats-every", c.stats_every, "gradient histograms and memory every N steps (0: never)")
      ->capture_default_str()->check(WholeIn(0, kMaxWhole, "a number of steps >= 0"));
  app.add_option("--eval-every", c.eval_every, "test accuracy (the GPT: validation loss) every N steps (0: never)")
      ->capture_default_str()->check(WholeIn(0, kMaxWhole, "a number of steps >= 0"));
  app.add_option("--steps", c.max_steps, "stop at this step (0: when told to: stop, or the viewer ends)")
      ->capture_default_str()->check(WholeIn(0, kMaxAtStep, "a step >= 0"));
  app.add_flag("--paused", c.paused, "start paused (resume or step from control.jsonl)");
  app.add_option("--run-name", f.run_name, "run folder name under runs/")->capture_default_str()->check(RunName());
  app.add_option("--script", f.script, "commands at given steps (a text script, JSON lines, or a run's events.jsonl)")
      ->check(CLI::ExistingFile);
  app.add_option("--from", f.from, "start from a branch checkpoint (runs/<name>/branch_<step>.ckpt)")
      ->check(CLI::ExistingFile);
  app.add_option("--text", f.text, "--model gpt: a UTF-8 text file to train on (default: Debian's fortunes)");
  app.add_option("--data", f.data, "FashionMNIST folder (default: $HG_DATA, then /usr/share/datasets/fashion-mnist)");
  app.add_option("--limit-train", f.limit_train, "the first N training images (-1: all)")->capture_default_str()
      ->check(ImageLimit());
  app.add_option("--limit-test", f.limit_test, "the first N test images (-1: all)")->capture_default_str()
      ->check(ImageLimit());
  app.add_option("--threads", f.threads, "CPU threads (0: all)")->capture_default_str()->check(Threads());
  app.add_flag("--exit-with-parent", f.exit_with_parent, "end when the program that started this one ends");
}

// ---- 2. branches ------------------------------------------------------------------------
// A branch is this program again, from the checkpoint, in its own run folder, with the data
// flags of this one (the loader's position is only valid on the same images). It ends with
// this program: it is started with --exit-with-parent, and main waits for it.
struct Branch {
  pid_t pid;
  std::string dir;  // runs/<name>
};

std::string start_branch(const Flags& f, const std::string& checkpoint, const std::string& recipe,
                         const std::string& run_name, std::vector<Branch>& children) {
  std::vector<std::string> args = {kProgram, "--from", checkpoint, "--model", f.live.model, "--device", f.device, "--recipe", recipe,
                                   "--run-name", run_name,
                                   "--limit-train", std::to_string(f.limit_train), "--limit-test",
                                   std::to_string(f.limit_test), "--threads", std::to_string(f.threads),
                                   "--steps", std::to_string(f.live.max_steps), "--stats-every",
                                   std::to_string(f.live.stats_every), "--eval-every", std::to_string(f.live.eval_every),
                                   "--batch-size", std::to_string(f.live.batch_size), "--seed",
                                   std::to_string(f.live.seed), "--exit-with-parent"};
  if (!f.data.empty()) args.insert(args.end(), {"--data", f.data});
  if (!f.text.empty()) args.insert(args.end(), {"--text", f.text});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), environ);
  if (rc != 0) return std::string("cannot start ") + kProgram + ": " + std::strerror(rc);
  children.push_back({pid, hg::train::run_path(run_name)});
  return "";
}

// A branch ends where its parent was told to stop: "stop" at the parent's last step, through the
// branch's own control channel (once the branch has made it), then wait for it. A parent that
// ended otherwise (diverged, failed) ends its branches now.
void end_branches(const std::vector<Branch>& children, bool finished, int64_t step) {
  for (const Branch& b : children) {
    const std::string control = b.dir + "/control.jsonl";
    int fd = -1;
    bool ended = false;  // reaped already: its pid may be another process's now
    for (int i = 0; finished && fd < 0 && i < 600 && !ended; ++i) {
      ended = ::waitpid(b.pid, nullptr, WNOHANG) == b.pid;
      fd = ended ? -1 : ::open(control.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);  // the branch makes it
      if (fd < 0 && !ended) ::usleep(100000);
    }
    if (ended) continue;
    const std::string line = "{\"cmd\":\"stop\",\"at\":" + std::to_string(step) + "}\n";
    if (fd < 0 || ::write(fd, line.data(), line.size()) != ssize_t(line.size())) ::kill(b.pid, SIGTERM);
    if (fd >= 0) ::close(fd);
    ::waitpid(b.pid, nullptr, 0);
  }
}

}  // namespace

// ---- 3. main ------------------------------------------------------------------------------
int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep (wait_policy.h)
  CLI::App app{"halfgrad-live: chapter 02's MLP or SmallCNN, or chapter 12's GPT, trained live; commands from "
               "runs/<name>/control.jsonl"};
  Flags f;
  add_flags(app, f);
  HG_PARSE_FLAGS(app, argc, argv);
  if (f.live.model == "gpt") {  // chapter 12's AdamW and batch, unless the command line says otherwise
    if (app.count("--lr") == 0) f.live.lr = 2e-3;
    if (app.count("--batch-size") == 0) f.live.batch_size = 16;
  }
  if (f.exit_with_parent) {
    const pid_t parent = ::getppid();
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) return 1;  // the parent ended before the line above
  }
  hg::train::CommonFlags settings;
  settings.threads = f.threads;
  hg::train::apply_settings(settings);
  if (!hg::train::device_from_flag(f.device, kProgram, f.live.device)) return hg::train::kExitUsage;  // says why
  std::vector<hg::train::Command> script;
  try {
    if (!f.script.empty()) script = hg::train::load_script(f.script);
  } catch (const std::exception& e) {
    return hg::train::usage_error(app, std::string("--script ") + e.what());
  }
  if (const std::string why = hg::train::live_recipe_problem(f.live, f.live.recipe); !why.empty())
    return hg::train::usage_error(app, "--recipe " + why);
  const std::string problem = hg::train::check_run_folders({f.run_name}, /*overwrite=*/false, /*resume=*/false);
  if (!problem.empty()) return hg::train::usage_error(app, problem);

  std::vector<Branch> children;
  int rc = 0;
  int64_t last_step = 0;
  try {
    const bool gpt = f.live.model == "gpt";
    const hg::train::FashionMnist data =
        gpt ? hg::train::FashionMnist{} : hg::train::load_fashion_mnist_normalized(f.data, f.limit_train, f.limit_test);
    const hg::data::TextCorpus text =
        gpt ? hg::data::load_text_corpus(f.text, hg::train::live_gpt_config(0).block_size) : hg::data::TextCorpus{};
    const std::string dir = hg::train::claim_run_folder(f.run_name, false, false);
    // "precision": "live": the recipe changes as the run goes; it starts as args.recipe, and
    // every change is a command event.
    hg::io::RunLog log(dir, {{"lesson", "live"}, {"model", f.live.model}, {"precision", "live"},
                             {"device", hg::device_name(f.live.device)},
                             {"seed", f.live.seed},
                             {"args", {{"recipe", f.live.recipe}, {"batch_size", f.live.batch_size}, {"lr", f.live.lr},
                                       {"momentum", f.live.momentum}, {"log2_scale", f.live.log2_scale},
                                       {"growth_interval", f.live.growth_interval}, {"limit_train", f.limit_train},
                                       {"limit_test", f.limit_test}, {"text", f.text}, {"script", f.script},
                                       {"from", f.from}}}});
    hg::train::ControlChannel control(dir + "/control.jsonl");
    hg::io::write_file_atomic(control.path(), "");  // there for the viewer to append to: the
                                                    // folder is new, so nothing is in it yet
    hg::train::LiveTrainer trainer = gpt ? hg::train::LiveTrainer(text, f.live, log, f.from)
                                         : hg::train::LiveTrainer(data, f.live, log, f.from);
    std::printf("%s: %s, recipe %s, %s at step %lld; commands: %s\n", kProgram, dir.c_str(), f.live.recipe.c_str(),
                trainer.paused() ? "paused" : "training", (long long)trainer.step(), control.path().c_str());
    std::fflush(stdout);
    rc = trainer.run(script, control, [&](const std::string& ckpt, const std::string& recipe, const std::string& name) {
      return start_branch(f, ckpt, recipe, name, children);
    });
    last_step = trainer.step();
    std::printf("RESULT steps=%lld recipe=%s steps_per_s=%.1f\n", (long long)trainer.step(),
                trainer.config().recipe.c_str(), trainer.steps_per_second());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProgram, e.what());
    rc = 1;
  }
  // A run that reached --steps leaves its branches to reach it too (they have the same
  // --steps); one told to stop earlier tells them where.
  const bool at_steps = f.live.max_steps > 0 && last_step >= f.live.max_steps;
  if (!at_steps) end_branches(children, rc == 0, last_step);
  for (const Branch& b : children) ::waitpid(b.pid, nullptr, 0);
  return rc;
}
