// Chapter 13's command line, checked by every rank before any work: every rank parses the same
// flags and finds the same errors, rank 0 says them once, and every rank exits (2 for a flag,
// 1 for missing or damaged data) without MPI_Abort.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda/runtime/device.h"  // no_gpu_reason(), for --device auto
#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/train/resume.h"
#include "framework/train/run_folder.h"
#include "lessons/13_data_parallel/data_parallel.h"

namespace ch13 {

// What each rank found for itself ("" when nothing): the first report of any rank, on every
// rank — "rank k: ..." for another rank's (its first 255 bytes, what gather_text carries),
// rank 0's own whole — or "" when no rank reported anything.
std::string first_report(Communicator& comm, const std::string& mine) {
  const std::vector<std::string> all = comm.gather_text(mine);
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return r == 0 ? (comm.rank() == 0 ? mine : all[0]) : fmt_line("rank %zu: %s", r, all[r].c_str());
  return "";
}

// A problem that each rank looks for itself: true on every rank when any rank found one,
// which rank 0 then says, once.
bool say_first_problem(Communicator& comm, const std::string& mine) {
  const std::string why = first_report(comm, mine);
  if (!why.empty() && comm.rank() == 0) std::fprintf(stderr, "lesson_13: %s\n", why.c_str());
  return !why.empty();
}

// Every rank must be given the same command line: each parses its own, and ranks that read
// different flags would train different things, write other folders, or wait forever in a
// collective the others never call (`mpirun -np 1 lesson_13 --epochs 1 : -np 1 lesson_13
// --epochs 2`). So before any flag is read the ranks compare a hash of their words (FNV-1a,
// 64 bits, each word with its terminating NUL): "" when all agree, else which rank differs.
std::string command_line_problem(Communicator& comm, int argc, char** argv) {
  uint64_t h = 14695981039346656037ull;
  for (int i = 1; i < argc; ++i)
    for (const char* c = argv[i];; ++c) {
      h = (h ^ uint8_t(*c)) * 1099511628211ull;
      if (*c == '\0') break;
    }
  const std::vector<std::string> all = comm.gather_text(fmt_line("%016llx", (unsigned long long)h));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      return fmt_line("rank %zu was started with another command line than rank 0: every rank must be given the "
                      "same flags (mpirun -np N lesson_13 FLAGS)", r);
  return "";
}

// What a checkpoint records and --resume checks (framework/train/resume.h): the flags that
// decide which batches the run sees and what each step does. The number of ranks is not one
// of them: every world size sees the same global batches and takes the same steps.
nlohmann::json recorded_flags(const Flags& flags) {
  const hg::train::CommonFlags& common = flags.common;
  return {{"--model", common.model}, {"--seed", common.seed}, {"--batch-size", common.batch_size}, {"--lr", common.lr},
          {"--momentum", common.momentum}, {"--weight-decay", common.weight_decay}, {"--limit-train", common.limit_train},
          {"--optimizer", flags.optimizer}, {"--grad-accum", flags.grad_accum}, {"--precision", flags.precision}};
}

namespace {

void add_flags(CLI::App& app, Flags& flags) {
  using namespace hg::train;
  CommonFlags& common = flags.common;
  common.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  flags.gpt.model.n_layer = 2;  // the GPT: chapter 12's width and context, half its depth, so that
  flags.gpt.steps = 300;        // 2 ranks on 2 cores train it in seconds
  flags.gpt.warmup = 20;
  flags.gpt.eval_batches = 8;
  add_common_flags(app, common);
  // BatchNorm's running statistics would need their own synchronisation: no ResNets here.
  app.get_option("--model")->check(OneOf({"mlp", "smallcnn", "gpt"}));
  app.add_option("--optimizer", flags.optimizer, "sgd | adamw")->capture_default_str()->check(OneOf({"sgd", "adamw"}));
  app.add_flag("--zero", flags.zero1, "ZeRO-1: AdamW with the optimizer state sharded over the ranks");
  app.add_flag("--deterministic", flags.deterministic, "sum gradients in rank order (same bits as one process)");
  app.add_option("--bucket-mb", flags.bucket_mb, "gradient bucket size in MiB")->capture_default_str()->check(Positive(1024));
  add_grad_accum_flag(app, flags.grad_accum);
  add_precision_flag(app, flags.precision);
  app.add_option("--check-steps", flags.check_steps, "steps of section 3's comparisons (0: skip)")
      ->capture_default_str()->check(WholeIn(0, 10000, "a number of steps from 0 (skip) to 10000"));
  app.add_option("--ring-mb", flags.ring_mb, "section 2's buffer in MiB")->capture_default_str()->check(Positive(1024));
  add_gpt_flags(app, flags.gpt);  // --model gpt: chapter 12's flags (framework/train/lm.h)
  app.add_option("--fail-rank", flags.fail_rank)->group("");  // for the tests
  app.add_option("--fail-at-step", flags.fail_at_step)->group("");
  app.add_option("--fail-how", flags.fail_how)->group("")->check(OneOf({"throw", "kill"}));
}

// The rules between flags. "" or the first flag that cannot be.
std::string flag_problem(const CLI::App& app, Flags& flags) {
  hg::train::CommonFlags& common = flags.common;
  if (common.model == "gpt") {  // chapter 12's loop: steps of random windows, AdamW; no epochs, images or checkpoints here
    for (const char* name : {"--epochs", "--limit-train", "--limit-test", "--data", "--optimizer", "--momentum",
                             "--checkpoint", "--resume"})
      if (app.count(name) > 0)
        return fmt_line("%s does not apply to --model gpt (it trains chapter 12's way: --steps of AdamW%s)", name,
                        std::string(name) == "--checkpoint" || std::string(name) == "--resume"
                            ? "; chapter 12 checkpoints the GPT" : "");
    if (const std::string why = flags.gpt.problem(); !why.empty()) return why;
    flags.optimizer = "adamw";
    if (app.count("--batch-size") == 0) common.batch_size = 16;  // chapter 12's recipe
    if (app.count("--lr") == 0) common.lr = 2e-3;
    if (app.count("--weight-decay") == 0) common.weight_decay = 0.1;
  } else {
    for (const std::string& name : hg::train::GptFlags::names())
      if (app.count(name) > 0) return name + " belongs to --model gpt";
  }
  if (flags.zero1 && app.count("--optimizer") > 0 && flags.optimizer != "adamw")
    return "--optimizer " + flags.optimizer + " with --zero: ZeRO-1 here shards AdamW's state (master, m, v); "
           "leave --optimizer out, or drop --zero for plain DP with " + flags.optimizer;
  if (flags.zero1) flags.optimizer = "adamw";  // recorded so: its checkpoint is plain AdamW's (zero.h)
  if (common.lr_schedule != "constant") return "--lr-schedule is not supported in this chapter";
  if (common.model != "gpt" && flags.optimizer == "adamw" && app.count("--lr") == 0) common.lr = 1e-3;  // SGD's 0.05 is far too big for Adam
  return hg::train::grad_accum_problem(common.batch_size, flags.grad_accum);
}

}  // namespace

int parse_flags(CLI::App& app, Communicator& comm, int argc, char** argv, Flags& flags, int& epochs) {
  add_flags(app, flags);
  hg::train::CommonFlags& common = flags.common;
  const auto refuse = [&](const std::string& why) {
    if (comm.rank() == 0) hg::train::usage_error(app, why);
    return hg::train::kExitUsage;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& help) {
    return comm.rank() == 0 ? app.exit(help) : 0;
  } catch (const CLI::ParseError& e) {
    return refuse(e.what());
  }
  flags.gpt.settle(app);
  if (const std::string why = flag_problem(app, flags); !why.empty()) return refuse(why);
  const bool resuming = !common.resume.empty();
  int64_t epochs_done = 0;
  if (resuming) {  // the checkpoint's flags fill in what the command line left out
    const std::string why = hg::train::resume_flags(app, common.resume, "13_data_parallel", recorded_flags(flags), epochs_done);
    if (!why.empty()) return refuse(why);
    if (flags.zero1 && flags.optimizer != "adamw")
      return refuse("--resume " + common.resume + " with --zero: the checkpoint was trained with --optimizer " +
                    flags.optimizer + ", and ZeRO-1 here shards AdamW's state; resume it without --zero");
  }
  epochs = common.epochs > 0 ? common.epochs : 1;
  if (resuming && epochs_done >= epochs) {
    say("%s has done %lld epoch(s), --epochs is %d: nothing left to train (--epochs %lld trains further)\n",
        common.resume.c_str(), (long long)epochs_done, epochs, (long long)epochs_done + 1);
    return 0;
  }
  // The run folder: checked by every rank before any work (on one machine they see the same
  // runs/; on several, each its own), and refused everywhere if any rank refuses it. Rank 0
  // says the first problem, once.
  if (say_first_problem(comm, hg::train::check_run_folders({run_name(flags, comm.world_size())}, common.overwrite, resuming)))
    return hg::train::kExitUsage;
  if (common.batch_size / flags.grad_accum < comm.world_size())
    return refuse(fmt_line("--batch-size %lld is the global batch: %s at least one %s per rank (%d ranks)",
                           (long long)common.batch_size, flags.grad_accum > 1 ? "each of its micro-batches needs" : "it needs",
                           common.model == "gpt" ? "sequence" : "example", comm.world_size()));
  // Threads: by default the cores this rank may use, shared with the other ranks on its machine
  // (mpirun binds each of 2 ranks to a core; with more ranks than cores it binds none).
  if (common.threads == 0) common.threads = std::max(1, omp_get_num_procs() / comm.local_size());
  hg::train::apply_settings(common);
  return kGoOn;
}

// The device, before any work. Every rank looks for itself (on several machines each has its
// own GPUs); rank 0 says the first problem found, once, and every rank returns: N copies of
// one line and MPI_Abort's banner say less. "" or the problem.
std::string choose_device(Communicator& comm, const std::string& flag, hg::Device& device) {
  if (flag == "auto") {
    // The GPUs when every rank has one, else the CPU on every rank (NCCL wants all of them).
    const std::string no_gpu = first_report(comm, hg::cuda_available() ? "" : hg::cuda::no_gpu_reason());
    device = no_gpu.empty() ? hg::Device::CUDA : hg::Device::CPU;
    if (!no_gpu.empty() && comm.rank() == 0)
      std::fprintf(stderr, "--device auto: %s; running on the CPU, every rank\n", no_gpu.c_str());
    return "";
  }
  try {
    device = hg::train::device_from_flag(flag);
  } catch (const std::exception& e) {
    return "--device " + flag + ": " + e.what();
  }
  return "";
}

// The data: FashionMNIST for the image models, a text corpus for the GPT; each rank reads
// its own copy. Missing or damaged: exit 1, as in every chapter. "" or the problem.
std::string load_data(const Flags& flags, Data& data) {
  const hg::train::CommonFlags& common = flags.common;
  try {
    if (common.model == "gpt") {
      data.text = hg::data::load_text_corpus(flags.gpt.text, flags.gpt.model.block_size);
    } else {
      const std::string dir = hg::data::fashion_mnist_dir(common.data);
      data.train = hg::data::load_fashion_mnist(dir, true, common.limit_train);
      data.test = hg::data::load_fashion_mnist(dir, false, common.limit_test);
      hg::data::normalize(data.train, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
      hg::data::normalize(data.test, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace ch13
