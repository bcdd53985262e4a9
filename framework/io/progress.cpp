#include "framework/io/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <algorithm>
#include <cmath>

namespace hg::io {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = int64_t(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

Progress::Progress(std::string label, int64_t total_steps, ProgressOptions options)
    : label_(std::move(label)), total_(total_steps), opt_(std::move(options)) {
  terminal_ = opt_.terminal < 0 ? ::isatty(::fileno(opt_.out)) != 0 : opt_.terminal != 0;
  start_ = last_draw_ = now();
}

Progress::~Progress() { finish(); }

double Progress::now() const {
  if (opt_.clock) return opt_.clock();
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

double Progress::mean_loss() const { return losses_ ? loss_sum_ / double(losses_) : std::nan(""); }

double Progress::images_per_s() const {
  const double elapsed = now() - start_;
  return elapsed > 0 ? double(images_) / elapsed : 0.0;
}

double Progress::eta_s() const {
  if (done_ == 0) return std::nan("");
  return (now() - start_) / double(done_) * double(std::max<int64_t>(0, total_ - done_));
}

std::string Progress::line() const {
  std::string s = label_;
  if (terminal_ && total_ > 0) {
    const int filled = int(double(opt_.bar_width) * double(std::min(done_, total_)) / double(total_));
    std::string bar(size_t(opt_.bar_width), ' ');
    for (int i = 0; i < filled; ++i) bar[size_t(i)] = '=';
    if (filled < opt_.bar_width) bar[size_t(filled)] = '>';
    s += fmt::format(" [{}] {}/{}", bar, done_, total_);
  } else {
    s += fmt::format(" {}/{} ({}%)", done_, total_, total_ > 0 ? done_ * 100 / total_ : 0);
  }
  if (losses_) s += fmt::format("  loss {:.4f}", mean_loss());
  s += fmt::format("  {:.0f} img/s", images_per_s());
  s += finished_ ? "  took " + format_duration(now() - start_) : "  ETA " + format_duration(eta_s());
  return s;
}

void Progress::draw(bool final_line) {
  const std::string text = line();
  if (terminal_) {
    // \r back to the start of the line; pad with spaces so a shorter line erases what is
    // left of the longer one before (never wider than that, so an 80-column terminal does
    // not wrap the bar onto a new line).
    const int pad = std::max(0, int(last_width_) - int(text.size()));
    std::fprintf(opt_.out, "\r%s%*s%s", text.c_str(), pad, "", final_line ? "\n" : "");
    last_width_ = text.size();
  } else {
    std::fprintf(opt_.out, "%s\n", text.c_str());
  }
  std::fflush(opt_.out);
  last_draw_ = now();
}

void Progress::step(int64_t images, double loss) {
  if (finished_) return;
  ++done_;
  images_ += images;
  loss_sum_ += loss;  // a NaN or inf loss shows up as such: hiding it would hide the lesson
  ++losses_;
  const double since = now() - last_draw_;
  if (terminal_ ? since >= opt_.redraw_every_s : since >= opt_.line_every_s) draw(false);
}

void Progress::finish() {
  if (finished_) return;
  finished_ = true;
  draw(true);
}

}  // namespace hg::io
