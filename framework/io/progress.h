#pragma once
// A progress bar for long work: step/total, mean loss, images/s and the time left.
//
// On a terminal (isatty) it redraws one line in place, at most every 0.1 s:
//   epoch 1/5 [===========>                  ] 187/469  loss 0.5123  2210 img/s  ETA 0:16
// When stdout is a file or a pipe (a log, CI), a bar of carriage returns would be noise, so
// it prints a plain line every `line_every_s` seconds instead, and one at the end:
//   epoch 1/5 187/469 (40%)  loss 0.5123  2210 img/s  ETA 0:16
//   epoch 1/5 469/469 (100%)  loss 0.4412  2205 img/s  took 0:27
//
//   hg::io::Progress bar("epoch 1/5", steps);
//   for (...) { ...; bar.step(batch_size, loss); }
//   bar.finish();
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace hg::io {

struct ProgressOptions {
  std::FILE* out = stdout;
  int terminal = -1;             // -1: isatty(out) decides; 0: plain lines; 1: redrawn bar
  double line_every_s = 10.0;    // plain lines: at most one per this many seconds
  double redraw_every_s = 0.1;   // terminal: redraw at most this often
  int bar_width = 30;
  std::function<double()> clock; // seconds since any origin; empty: std::chrono::steady_clock
};

class Progress {
 public:
  Progress(std::string label, int64_t total_steps, ProgressOptions options = {});
  ~Progress();  // finish() if it was not called

  // One step done, with `images` processed in it and its loss (a NaN loss makes the mean NaN).
  void step(int64_t images, double loss);
  // Prints the final line (and, on a terminal, ends the bar's line). Idempotent.
  void finish();

  double mean_loss() const;       // mean of the losses given so far
  double images_per_s() const;    // images / elapsed seconds (0 before any time passed)
  double eta_s() const;           // elapsed / done · (total − done)
  std::string line() const;       // the text of the current state (without \r or \n)

 private:
  double now() const;
  void draw(bool final_line);

  std::string label_;
  int64_t total_, done_ = 0, images_ = 0, losses_ = 0;
  double loss_sum_ = 0;
  ProgressOptions opt_;
  bool terminal_;
  double start_, last_draw_;
  bool finished_ = false;
  size_t last_width_ = 0;  // characters of the last redrawn bar
};

// "0:07", "12:34", "1:02:03".
std::string format_duration(double seconds);

}  // namespace hg::io
