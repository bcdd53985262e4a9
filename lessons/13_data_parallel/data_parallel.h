#pragma once
// Chapter 13's pieces that its two training loops share — main.cpp's for the image models,
// gpt.cpp's for chapter 12's GPT: what a rank trains (Task), its replica (the model, DDP, the
// optimizer) and the one data-parallel step both loops call (dp_step).
//
// Legend: N ranks, k this rank, B the global batch (all ranks together), b_k this rank's share
// of it, K micro-batches per step (--grad-accum), T tokens per sequence.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/amp/grad_scaler.h"
#include "framework/dist/communicator.h"
#include "framework/dist/ddp.h"
#include "framework/dist/zero.h"
#include "datasets/image_dataset.h"
#include "framework/io/run_log.h"
#include "framework/nn/module.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/lm.h"

namespace ch13 {

using hg::DType;
using hg::Tensor;
using hg::dist::Communicator;

// The chapter's flags (main.cpp, parse_flags).
struct Flags {
  hg::train::CommonFlags common;
  std::string optimizer = "sgd";   // sgd | adamw: plain DP's (ZeRO-1 is AdamW; the GPT trains AdamW)
  bool zero1 = false;              // --zero: ZeRO-1 instead of plain DP
  bool deterministic = false;      // Reduction::FixedOrder
  double bucket_mb = 1.0;
  int64_t grad_accum = 1;          // micro-batches per step, the first K−1 under no_sync
  std::string precision = "fp32";  // fp32 | amp_f16 | amp_bf16
  int check_steps = 8;             // steps of section 3's comparisons (0: skip them)
  double ring_mb = 4.0;            // section 2's buffer
  // Failure injection for the tests: rank `fail_rank` fails at optimizer step `fail_at_step`.
  int fail_rank = -1;
  int64_t fail_at_step = -1;
  std::string fail_how = "throw";  // throw | kill
  hg::train::GptFlags gpt;         // --model gpt: chapter 12's GPT, half its depth (main.cpp)
};

// Rank 0 prints; the other ranks compute and send their lines to it (gather_text).
// set_printing(rank == 0) once, first thing in main(); say() prints only where printing().
void set_printing(bool on);
bool printing();
void say(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string fmt_line(const char* format, ...) __attribute__((format(printf, 1, 2)));
// A global batch of B over N ranks: "32" per rank, or "5 or 6" when N does not divide B.
std::string share_text(int64_t B, int N);
// Every value of the tensors, side by side; "bit-identical", or how many values differ and by
// how much (relative to max|reference|).
std::vector<float> values(const std::vector<Tensor>& ts);
std::string compare(const std::vector<float>& got, const std::vector<float>& want);
// Every rank's `bytes`, on every rank.
std::vector<int64_t> gather_bytes(Communicator& comm, int64_t bytes);

// ---- what a rank trains ------------------------------------------------------------------------

// One rank's share of a global batch (framework/dist/sampler.h): its inputs, their targets,
// and the weight N·b_k/B of its mean loss, which makes the ranks' average the global batch's
// mean whatever the split. No inputs: no example on this rank (the tail of an epoch).
struct Share {
  Tensor inputs;                 // images (b_k, 1, 28, 28), or token ids (b_k, T) as floats
  std::vector<int32_t> targets;  // b_k labels, or b_k·T next tokens
  double weight = 1.0;
};

// Rank k's share of batch `step` of `epoch` (the images'; the text has no epochs).
using Dealer = std::function<Share(int64_t epoch, int64_t step)>;

// A model and the generator it keeps a reference to (the GPT's dropout draws from it).
struct Model {
  std::unique_ptr<hg::Generator> gen;
  hg::nn::ModulePtr net;
};

// What the ranks train: chapter 02's image models on FashionMNIST (main.cpp, image_task) or
// chapter 12's GPT on text (gpt.cpp, gpt_task).
struct Task {
  std::string name;                                       // mlp | smallcnn | gpt
  std::function<Model(uint64_t seed)> fresh_model;        // the same weights for the same seed
  // Rank k of N's dealer of global batches of B, its inputs for a model on `device` (the
  // images are moved there; token ids stay on the host, where the GPT reads them).
  std::function<Dealer(int rank, int world_size, int64_t B, uint64_t seed, hg::Device device)> dealer;
  // Section 6: a Linear of the model's shape split over the ranks, applied to 64 rows.
  Tensor tp_rows;                                         // (64, in)
  int64_t tp_out = 0;
  std::string tp_what;
};

// Rank k's loss on its share: the mean cross entropy of its logits, times the share's weight
// and `scale`; undefined when the share is empty. The model is called on the inputs, so the
// same function serves images (logits (b_k, 10)) and text (logits (b_k, T, V)).
Tensor share_loss(hg::nn::Module& model, const Share& share, double scale, DType autocast);

// ---- a rank's replica, and the step -------------------------------------------------------------

// A rank's optimizer: plain DP's — SGD or AdamW over every parameter, stepping on the
// averages DDP's backward left in .grad — or ZeRO-1's AdamW over this rank's shard
// (framework/dist/zero.h), which reduce-scatters the gradients before its step and
// all-gathers the parameters after it.
struct OptimizerSpec {
  std::string kind = "sgd";        // sgd | adamw | zero1
  hg::optim::SGDOptions sgd;
  hg::optim::AdamOptions adam;
};

// The optimizer of plain DP for `spec` over every parameter (for ZeRO-1: plain AdamW, whose
// state its checkpoints hold).
std::unique_ptr<hg::optim::Optimizer> plain_optimizer(const OptimizerSpec& spec, std::vector<Tensor> params);

class RankOptimizer {
 public:
  RankOptimizer(const OptimizerSpec& spec, std::vector<Tensor> params, Communicator& comm);
  bool sharded() const { return zero1_ != nullptr; }
  void zero_grad();
  void sync_gradients();               // ZeRO-1: the reduce-scatter (DP: DDP's backward did it)
  double clip_grad_norm_(double max);  // the global norm (ZeRO-1: one more allreduce)
  hg::optim::Optimizer& inner();       // what the scaler unscales and steps
  void gather_parameters();            // ZeRO-1: the all-gather (DP: nothing)
  // The state of a plain optimizer over the whole model (ZeRO-1: gathered; a collective).
  hg::optim::OptimizerState state_dict();
  void load_state_dict(const hg::optim::OptimizerState& state);

 private:
  std::unique_ptr<hg::optim::Optimizer> plain_;
  std::unique_ptr<hg::dist::ZeroAdamW> zero1_;
};

// The bytes this process holds under the accountant's OptimizerState tag (on every device):
// momentum buffers, Adam's m and v, F32 master copies (framework/memory/accountant.h).
int64_t optimizer_state_bytes();

// One rank's replica: a model with rank 0's weights (DDP broadcasts them), DDP's buckets
// over its gradients, and its optimizer.
struct Replica {
  Communicator& comm;
  Model model;
  hg::dist::DistributedDataParallel ddp;
  int64_t state0;  // optimizer-state bytes before the optimizer existed
  RankOptimizer opt;

  Replica(const Task& task, uint64_t seed, Communicator& comm, hg::Device device, double bucket_mb,
          const OptimizerSpec& spec);
  hg::nn::Module& net() { return *model.net; }
  int64_t optimizer_bytes() const { return optimizer_state_bytes() - state0; }
};

// Time outside MPI: wall time less the time this rank spent in MPI calls (copying, adding, or
// waiting for the others). A step has two laps that end where the ranks synchronise: the
// gradients' allreduce (no rank leaves it before every rank has entered it), then the
// optimizer step up to the end-of-step agreement (diverged()). Each lap lasts as long as
// its slowest rank computes; the other ranks wait for it inside MPI. (ZeRO-1 and the GPT's
// clipping add collectives inside the second lap; there the wait measured is a lower bound.)
struct StepClock {
  std::chrono::steady_clock::time_point t0;
  double comm0 = 0;
  std::vector<float> laps_ms;  // this rank's, two a step
  void start(const Communicator& comm);
  void lap(const Communicator& comm);  // since start() or the last lap; starts the next
};

// One optimizer step of this rank. K micro-batches: `micro(j)` is this rank's share of
// micro-batch j, whose loss counts 1/K. The gradients are synchronised once per step, after
// the last micro-batch's backward — one toggle, `sync`: DDP allreduces inside that backward
// (the first K−1 run under no_sync: they only add into .grad), ZeRO-1 reduce-scatters after
// it. Then the scaler unscales, the global norm is clipped to `clip` (0: not), the optimizer
// steps (or the scaler skips), and ZeRO-1 gathers the parameters. Returns this rank's loss
// (its weighted share, unscaled) and whether it stepped.
struct StepResult {
  double loss = 0;
  bool stepped = true;
};
StepResult dp_step(Replica& r, hg::amp::GradScaler& scaler, const std::function<Share(int64_t j)>& micro, int64_t K,
                   double clip, DType autocast, StepClock& clock);

// The ranks agree to stop when any rank's loss or weights became inf/NaN (each rank's loss is
// its own share): true on every rank then, each saying why on stderr and in its run log.
bool diverged(Communicator& comm, hg::io::RunLog& log, const std::string& model_name, int64_t step, double loss,
              hg::nn::Module& model, hg::train::Divergence& out);

// For the tests: rank `fail_rank` dies at optimizer step `fail_at_step`.
void maybe_fail(const Flags& flags, int rank, int64_t step);

// One run log per rank: runs/<name>/rank<k>/, so the viewer overlays the ranks.
std::string run_name(const Flags& flags, int world_size);
hg::io::RunLog open_rank_log(Communicator& comm, const Flags& flags, hg::Device device, const nlohmann::json& args);

// What section 4 reports, whichever model it trained.
struct TrainResult {
  double seconds = 0, comm_seconds = 0;
  int64_t steps = 0, skipped = 0, overlapped = 0, buckets = 0;
  double items = 0;               // images or tokens trained on, all ranks together
  std::string items_name;         // "images" | "tokens"
  double score = 0;               // the test accuracy, or the validation loss
  std::string score_name;         // "test_accuracy" | "val_loss"
  int64_t optimizer_bytes = 0;    // this rank's optimizer state, as the accountant counts it
  std::vector<float> compute_ms;  // this rank's laps outside MPI (StepClock)
  hg::train::Divergence diverged; // set on every rank when any rank's loss or weights became inf/NaN
};

// ---- the other files: section 3, the command line, the GPT --------------------------------------

// one_process.cpp: section 3 on the chapter's model, a few steps of global batches of `batch`.
struct CheckSetup {
  const Task& task;
  int64_t batch = 64;  // global: 64 images, or 8 sequences
  int steps = 8;
  uint64_t seed = 0;
  double bucket_mb = 1.0;
};
// Section 5's numbers from section 3's runs: every rank's optimizer state, DP's and ZeRO-1's.
struct Memory {
  std::vector<int64_t> dp, zero1;  // bytes, per rank
};
Memory run_checks(Communicator& comm, const CheckSetup& c);

// flags.cpp. Each rank looks for problems itself; first_report() is the first any rank found,
// on every rank ("rank k: ..." for another rank's), and say_first_problem() says it once, on
// rank 0, and is true on every rank when there is one.
std::string first_report(Communicator& comm, const std::string& mine);
bool say_first_problem(Communicator& comm, const std::string& mine);
// "" when every rank was started with the same command line, else which rank was not.
std::string command_line_problem(Communicator& comm, int argc, char** argv);
// The flags a checkpoint records and --resume holds to (framework/train/resume.h).
nlohmann::json recorded_flags(const Flags& flags);
// Parses and checks the command line on every rank: kGoOn, or main()'s exit code. `epochs`:
// how far the image models train.
inline constexpr int kGoOn = -1;
int parse_flags(CLI::App& app, Communicator& comm, int argc, char** argv, Flags& flags, int& epochs);
// The device --device names, every rank looking for itself: "" or the problem.
std::string choose_device(Communicator& comm, const std::string& flag, hg::Device& device);
// The data each rank reads (its own copy): FashionMNIST, or the GPT's text. "" or the problem.
struct Data {
  hg::data::ImageDataset train, test;
  hg::data::TextCorpus text;
};
std::string load_data(const Flags& flags, Data& data);

// gpt.cpp
Task gpt_task(const hg::nn::GPTConfig& config, const hg::data::TextCorpus& corpus);
TrainResult train_gpt(Communicator& comm, const Flags& flags, const Task& task, const hg::data::TextCorpus& corpus,
                      hg::Device device);

}  // namespace ch13
