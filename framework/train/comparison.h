#pragma once
// The report of the comparison chapters 06–09: one MLP trained in several precisions.
//
// Each of these chapters trains the same MLP, on the same seed and batches, in several
// precisions — fp32, fp16_naive (06), master_weights (07), static_scale (08),
// dynamic_scale (09) — and compares them. The training step is each chapter's lesson and
// stays in its main.cpp; what they all print about a run is written once, here:
//
//   ComparisonRun r;                          one run's results
//   r.grads.add(h);                       every logged gradient histogram (GradTally)
//   end_of_epoch(r, model, ..., log);     evaluate on the test set, log, one line
//   print_comparison(runs);               the table: accuracy, F1, loss, underflow, lost updates
//   print_gradient_place(runs);           where the F16 gradients sat, times the loss scale (08, 09)
//   print_scale_changes(r);               every change of a dynamic scale (09)
//   return print_footer(model, epochs, runs);   legend, run logs, RESULT lines; the exit code
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/image_dataset.h"
#include "framework/amp/grad_stats.h"
#include "framework/io/run_log.h"
#include "framework/nn/module.h"
#include "framework/train/guard.h"
#include "framework/train/step.h"

namespace hg::train {

// Gradient statistics summed over a run's logged steps and parameters.
struct GradTally {
  int64_t values = 0;        // gradient values seen
  int64_t underflow = 0;     // 0 < |g| < 2^-24: below F16's smallest subnormal
  int64_t zeros = 0;         // exactly zero
  double lost_sum = 0;       // sum of lost_update_fraction over the histograms that measured it
  int64_t lost_samples = 0;

  void add(const amp::GradHistogram& h);
  double underflow_fraction() const { return values ? double(underflow) / double(values) : 0; }
  double zero_fraction() const { return values ? double(zeros) / double(values) : 0; }
  double lost_updates() const { return lost_samples ? lost_sum / double(lost_samples) : 0; }
};

// One run of a comparison chapter.
struct ComparisonRun {
  std::string precision;  // fp32, fp16_naive, master_weights, static_scale, dynamic_scale
  double test_accuracy = 0, macro_f1 = 0, last_loss = 0, seconds_per_epoch = 0;
  GradTally grads;
  Divergence diverged;    // set when the loss or a weight became inf/NaN: the run stopped
  std::string dir;        // runs/<name>
  // With a loss scale (chapters 08, 09):
  std::vector<float> scales;  // the scale used at every step from first_step on (1: none)
  int64_t first_step = 0;     // 0, or the step a resumed run started from
  int64_t overflow_steps = 0; // steps whose scaled F16 gradients held an inf or NaN
  int64_t skipped_steps = 0;  // of those, the steps a scaler skipped (a static one never does)
  std::vector<std::vector<amp::GradHistogram>> hist_scaled;  // the F16 gradients as backward made them
};

// Where the logged F16 gradients sit: the median binary exponent of the finite non-zero
// values (none when there is no such value: a run whose gradients were all inf or NaN has
// no median, not the bottom of the histogram), and the fractions of all values that are
// below 2^-24, beyond 65504 or not finite, and zero.
struct GradientPlace {
  bool has_median = false;
  int median_exp = 0;
  double underflow = 0, overflow = 0, zeros = 0;
};
GradientPlace where_gradients_sit(const std::vector<std::vector<amp::GradHistogram>>& logged);

// After an epoch: the test accuracy and macro F1 of the model, with the images fed as `how`
// says (an F16 model takes F16 images); two scalars in the log and one printed line.
void end_of_epoch(ComparisonRun& r, nn::Module& model, const data::ImageDataset& test, const PredictOptions& how,
                  io::RunLog& log, int64_t step, int epoch, double seconds_per_epoch);

// "== 3. comparison ==" and one row per run (a diverged run: its step and cause).
void print_comparison(const std::vector<ComparisonRun>& runs);
// The F16 gradients as backward produced them (times S): first and last S, the median
// exponent, zeros, overflow, steps that overflowed and steps skipped, whether it stayed finite.
void print_gradient_place(const std::vector<ComparisonRun>& runs);
// Every change of the scale of a run, with why (09's sawtooth).
void print_scale_changes(const ComparisonRun& r);
// The legend, the run folders, a RESULT line per run that finished; returns the program's
// exit code: kExitDiverged when a run diverged, else 0.
int print_footer(const std::string& model, int epochs, const std::vector<ComparisonRun>& runs);

}  // namespace hg::train
