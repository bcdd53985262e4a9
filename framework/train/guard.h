#pragma once
// Divergence: a loss or a weight that became inf or NaN ends a training run.
//
// After every optimizer step a training program asks one question — is the loss finite,
// and is every parameter? — and stops the run at the first "no":
//
//   const hg::train::Divergence d = hg::train::check_finite_step(step, loss, model->named_parameters());
//   if (d) {
//     hg::train::report_divergence(log, "lesson_02: mlp", d);  // one line on stderr, run.json "diverged"
//     break;                                                   // no checkpoint, no evaluation
//   }
//   ...
//   return hg::train::kExitDiverged;                           // the program's exit code
//
// Why stop: NaN spreads. One NaN weight makes every output it touches NaN, the gradients
// NaN, every later update NaN; training on would only write NaN weights into checkpoints
// and print accuracies of a broken model. Nothing after that step means anything.
//
// What is NOT divergence: a step that a loss scaler skipped (chapters 09–11). Scaled
// gradients that overflow F16 are the scaler's signal to halve S; it skips the update, so
// the weights stay as they were and the loss (computed before any scaling) is finite. The
// guard looks only at the loss and the weights, so a skipped step passes. A non-finite
// loss, on the other hand, comes from the forward pass, before any scale was applied: no
// scale can fix it, and it is divergence even when a scaler then skips the step.
//
// Cost: one read of every parameter per step (on the GPU one kernel per tensor and a single
// 4-byte download), small next to the forward and backward passes that read them too.
#include <cstdint>
#include <string>
#include <vector>

#include "framework/io/run_log.h"
#include "framework/nn/module.h"

namespace hg::train {

// The exit code of a program whose training diverged (2 is a bad command line, 1 any other
// error, 0 success).
inline constexpr int kExitDiverged = 3;

struct Divergence {
  int64_t step = -1;  // the optimizer step after which the loss or a weight was not finite
  std::string cause;  // "" when nothing diverged; else e.g. "loss is NaN",
                      // "parameter fc1.weight holds NaN (12 of 200704 values)"
  explicit operator bool() const { return !cause.empty(); }
  // "diverged at step 12: loss is NaN"
  std::string message() const;
};

// The loss first (the cheaper and more telling check), then each parameter in order; the
// first non-finite one is the cause. `params` may live on the CPU or the GPU.
Divergence check_finite_step(int64_t step, double loss, const std::vector<nn::NamedTensor>& params);

// The first parameter holding an inf or a NaN, as a cause ("parameter NAME holds ..."), or "".
std::string nonfinite_parameter(const std::vector<nn::NamedTensor>& params);

// Says it once: "<who> diverged at step N: <cause>; run stopped (runs/X: status diverged)"
// on stderr, a note in the run log, and the log's end with status "diverged".
void report_divergence(io::RunLog& log, const std::string& who, const Divergence& d);

}  // namespace hg::train
