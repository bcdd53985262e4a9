#pragma once
// SYNTHETIC DEMO DATA. Writes run folders that look like real training runs (docs/run-log.md)
// so the viewer can be developed, tested, measured and pictured before any real run exists.
// Nothing here trains a model: the curves and histograms come from a small statistical model
// (below), and every run.json says "synthetic": true, which the viewer shows as a banner.
//
// The model, per precision mode (the ladder of chapters 06-11):
//   - each parameter's true gradient has log2|g| ~ Normal(mu, 2.2); mu starts between -9
//     (last layer) and -19 (first layers) and drifts 4 binades down as the loss falls;
//   - the logged histogram is of g * scale (the loss scale, 1 when there is none);
//   - FP16's zones (underflow, subnormal, overflow) are counted from FloatFormat kFP16;
//   - dynamic loss scaling follows PyTorch's GradScaler: start 2^16, halve and skip the step
//     when the largest scaled gradient overflows FP16, double after 2000 good steps;
//   - fp16_naive loses the gradients below 2^-24 and plateaus at a higher loss;
//   - memory events: the bytes per parameter of the mode's model states and the small CNN's
//     activations for a batch of 128 (memory_event() in demo_run.cpp).
//   - fp8_delayed (chapter 14; written only when named): the MLP's nine FP8 tensors (x, w, dy
//     of fc1..fc3, HYBRID formats) with amaxes from a model — inputs flat, weights growing,
//     gradients noisy with rare spikes — cast with framework/fp8's DelayedScaling itself
//     (history 16, margin 0), so the scales are the recipe's; underflow and saturation
//     counted from a log-normal spread of each tensor's values (fp8_events() in demo_run.cpp).
#include <cstdint>
#include <string>
#include <vector>

namespace hg::viewer {

struct DemoOptions {
  int64_t steps = 6000;           // optimizer steps
  int params = 8;                 // parameters with a gradient histogram
  int hist_every = 50;            // a grad_hist per parameter every this many steps
  int64_t steps_per_epoch = 469;  // FashionMNIST, batch 128
  uint64_t seed = 0;
  // > 0: write live, appending and flushing this many steps a second (run.json says
  // "running" until the end), to watch the viewer follow a growing run. 0: all at once.
  double live_steps_per_second = 0;
};

// The precision modes a demo run can imitate, in ladder order:
// fp32, fp16_naive, static_scale, dynamic_scale, amp_f16, amp_bf16 (the default set).
const std::vector<std::string>& demo_modes();
// Modes written only when named (--demo-modes): fp8_delayed.
const std::vector<std::string>& extra_demo_modes();

// Writes DIR/run.json and DIR/events.jsonl (each atomically: temp file, fsync, rename).
// Throws std::runtime_error naming the file on an I/O error or an unknown mode.
void make_demo_run(const std::string& dir, const std::string& precision, const DemoOptions& opt);

// Writes ROOT/demo_<mode> for each mode; returns the folders written.
std::vector<std::string> make_demo_runs(const std::string& root, const DemoOptions& opt,
                                        const std::vector<std::string>& modes = demo_modes());

}  // namespace hg::viewer
