#pragma once
// GradStatsLogger: every N optimizer steps, one grad_hist event per parameter
// (docs/run-log.md), measured on a live model.
//
//   hg::amp::GradStatsLogger stats(50);                     // every 50 steps
//   ...
//   scaler.scale(loss).backward();
//   if (stats.due(step)) stats.capture(step, model.named_parameters(), scaler.get_scale());
//   scaler.step(opt);                                       // or opt.step()
//   if (stats.due(step))
//     for (const auto& h : stats.finish(model.named_parameters(), stepped))
//       log.grad_hist(step, h.to_event(step));
//
// capture() histograms each .grad as backward produced it (scale included) and keeps a
// copy of the weights; finish() compares the weights after the step with that copy:
// an element whose gradient was not zero but whose stored weight did not change lost its
// update to rounding (w + lr·u rounded back to w). That is the lost_update_fraction.
// When the step was skipped (inf/NaN) no fraction is reported.
#include <cstdint>
#include <vector>

#include "framework/amp/grad_stats.h"
#include "framework/nn/module.h"

namespace hg::amp {

// Histograms of every parameter's .grad (parameters without a .grad are left out), each
// with the dtype the .grad holds: an F16 gradient's underflow is among its zeros.
std::vector<GradHistogram> grad_histograms(const std::vector<nn::NamedTensor>& params,
                                           double scale);

class GradStatsLogger {
 public:
  explicit GradStatsLogger(int64_t every_n_steps);
  bool due(int64_t step) const { return every_ > 0 && step % every_ == 0; }

  void capture(int64_t step, const std::vector<nn::NamedTensor>& params, double scale);
  // The captured histograms, with lost_update_fraction filled in when `stepped`.
  // `params` are the same parameters after the optimizer step (same order).
  std::vector<GradHistogram> finish(const std::vector<nn::NamedTensor>& params, bool stepped);

 private:
  int64_t every_;
  std::vector<GradHistogram> hist_;
  std::vector<Tensor> before_;  // weights before the step (copies)
};

}  // namespace hg::amp
