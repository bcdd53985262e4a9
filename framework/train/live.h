#pragma once
// A live training run: one of chapter 02's models on FashionMNIST (the MLP, or the SmallCNN
// that chapter 10 also trains), or chapter 12's GPT on text, in one of the precision recipes
// of chapters 06–11 and 14, which the learner changes while it trains (halfgrad-live; the
// viewer's Lab panel drives it).
//
//   recipe          model   master  loss scale        autocast    update
//   fp32            F32     -       -                 -           SGD
//   fp16_naive      F16     -       -                 -           F16 SGD (train/f16_sgd.h)
//   master_weights  F16     F32     -                 -           SGD on the master
//   static_scale    F16     F32     S, never skips    -           SGD on the master
//   dynamic_scale   F16     F32     GradScaler        -           scaler.step on the master
//   amp_f16         F32     -       GradScaler        F16         scaler.step
//   amp_bf16        F32     -       -                 BF16        SGD
//   fp8_current     F32, its Linear layers in FP8      -           SGD       (chapter 14,
//   fp8_delayed       (fp8/mlp.h: E4M3 forward, E5M2 gradients;   "          the MLP only)
//   fp8_block         the recipe scales x, w and dy of each        "
//   fp8_mx            layer; amax history 16 for delayed)          "
//
// Each step:  apply the commands due (live_control.h)  →  forward, S·loss, backward  →
// the update of the recipe  →  the log: train/loss, the loss scale and whether the step was
// skipped, under an FP8 recipe what each of the nine casts did (fp8_scale, every step, as
// chapter 14 logs them: the viewer's FP8 panel reads them), and every stats_every steps each
// parameter's gradient histogram (as backward made it, times S) with its lost updates, and
// the step's memory. A command applied or
// refused is a "command" event at the step it took effect (docs/run-log.md): the log alone
// replays the run (--script runs/<name>/events.jsonl).
//
// Every recipe is the same code for either image model: the model's dtype, the master copy,
// the scalers, autocast and the F16 SGD all work on whatever parameters the model has.
//
// The GPT (live_gpt_config: chapter 14's small one, 2 blocks of width 64, context 32) takes
// chapter 12's recipes for it, fp32, amp_f16 and amp_bf16 (an F32 model; autocast, with a
// GradScaler for F16), and chapter 12's optimizer: AdamW (β2 0.99, weight decay 0.1), the
// global gradient norm clipped to 1, at a constant lr (the knob; no schedule). Its batch of
// step k is random_batch(text, B, 32, seed, k), so a branch needs only the step; its
// evaluation is the validation loss (val/loss) over 4 batches.
//
// Changing the recipe keeps the weights (the F32 master where there is one, so no bit is
// lost going F16 → F32; into or out of FP8, whose model is another class built in nn::MLP's
// order with the same shapes and names, the F32 weights are copied across; between two FP8
// recipes the casts' scales and amax histories start afresh) and the SGD momentum: it is F32
// in every recipe but fp16_naive, whose F16 buffers are widened exactly going out and rounded
// to F16 coming in (what chapter 06's F16 SGD would have kept). A recipe with a GradScaler
// after one with a GradScaler goes on with its state (the scale and the count of good steps);
// otherwise the scaler starts at the run's loss scale. A branch saves the weights, the
// momentum (F32), the GradScaler's state and where the data stands (train/checkpoint.h) in
// the run folder; the program then starts a second run from it, which goes on bit for bit
// as its parent would in the same recipe (FP8's delayed amax history excepted: not saved).
//
// On the GPU (cfg.device, a CUDA build with a GPU) the same code runs: the model, the master
// copy, the momentum and the scaler's checks live there, the batches are copied there, and
// the logged statistics come back. (Not run on a GPU yet: the machines these were written on
// have none.)
//
// Nothing here measures time: the same seed, data, thread count and script give the same log,
// line for line, whatever the machine's load (the test compares two runs).
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "datasets/text.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/gpt.h"
#include "framework/tensor/device.h"
#include "framework/train/data.h"
#include "framework/train/live_control.h"

namespace hg::train {

struct LiveConfig {
  std::string model = "mlp";       // live_models(): "mlp", "smallcnn" or "gpt"
  Device device = Device::CPU;     // where the model, its gradients and the optimizer live
  std::string recipe = "fp32";
  double lr = 0.05, momentum = 0.9;
  int log2_scale = 16;             // the static scale, and where a GradScaler starts (2^16)
  int64_t growth_interval = 2000;  // the GradScaler's
  int64_t batch_size = 128;        // images, or the GPT's sequences
  uint64_t seed = 0;
  int64_t stats_every = 10;        // gradient histograms and memory every N steps
  int64_t eval_every = 100;        // test accuracy every N steps (0: never)
  int64_t max_steps = 0;           // stop after this many steps (0: when told to)
  bool paused = false;             // start paused
};

// Why `recipe` cannot run in this configuration ("" when it can): the FP8 recipes are
// chapter 14's FP8 Linear layers of the MLP, so the SmallCNN has none, and their GEMM is the
// CPU's emulation of an FP8 tensor core (fp8/fp8_gemm.h), so they run on the CPU only; the
// GPT takes chapter 12's three recipes.
// The live GPT for a vocabulary of `vocab_size` characters.
nn::GPTConfig live_gpt_config(int64_t vocab_size);
std::string live_recipe_problem(const LiveConfig& cfg, const std::string& recipe);

// What the run does when a branch is applied: start the second run (the program spawns
// itself with --from CHECKPOINT). Returns "" or why it could not.
using BranchStarter = std::function<std::string(const std::string& checkpoint, const std::string& recipe,
                                                const std::string& run_name)>;

class LiveTrainer {
 public:
  // `from` is a branch checkpoint ("" for a fresh model from cfg.seed): its weights, the
  // optimizer's state, the GradScaler's and the data's position are restored, and its step is
  // where this run's count starts. The images for the MLP and the SmallCNN, the text for the GPT.
  LiveTrainer(const FashionMnist& data, LiveConfig cfg, io::RunLog& log, const std::string& from = "");
  LiveTrainer(const data::TextCorpus& text, LiveConfig cfg, io::RunLog& log, const std::string& from = "");
  ~LiveTrainer();

  // The loop: until max_steps, "stop", a divergence, or `keep_going` says no (checked between
  // steps, and every 50 ms while paused). Script commands apply at their step; control.jsonl
  // is read before every step. Returns the program's exit code (0, or kExitDiverged).
  int run(const std::vector<Command>& script, ControlChannel& control, const BranchStarter& branch,
          const std::function<bool()>& keep_going = {});

  // Applies one command now, or refuses it; either way a "command" event. "" or the refusal.
  std::string apply(const Command& c, const std::string& source);
  // A line that is no command at all (bad JSON, too long): a refused "command" event.
  void refuse_line(const std::string& text, const std::string& why, const std::string& source);

  int64_t step() const { return step_; }
  bool paused() const { return paused_; }
  const LiveConfig& config() const { return cfg_; }
  double steps_per_second() const;  // of the steps run so far (for the program's last line)

 private:
  struct State;
  LiveTrainer(const FashionMnist* images, const data::TextCorpus* text, LiveConfig cfg, io::RunLog& log,
              const std::string& from);
  void set_recipe(const std::string& recipe);
  Tensor forward_loss();  // this step's batch through the model: the mean loss ()
  bool train_step();  // false when the run diverged
  void evaluate();
  std::string branch(const Command& c, nlohmann::json& effect);

  const FashionMnist* images_;      // one of the two: the image models' data
  const data::TextCorpus* text_;    // the GPT's
  LiveConfig cfg_;
  io::RunLog& log_;
  std::unique_ptr<State> st_;
  int64_t step_ = 0;
  bool paused_ = false, stop_ = false;
  int64_t steps_granted_ = 0;  // "step N" while paused: steps left to run
  BranchStarter branch_;
};

}  // namespace hg::train
