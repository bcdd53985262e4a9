// The progress bar with a fake clock, writing to a temporary file: plain periodic lines
// when the output is not a terminal, a redrawn bar when it is; rates and ETA checked
// against the arithmetic.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "framework/io/progress.h"

namespace {
std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += char(c);
  return s;
}
std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0, nl;
  while ((nl = s.find('\n', pos)) != std::string::npos) {
    out.push_back(s.substr(pos, nl - pos));
    pos = nl + 1;
  }
  return out;
}
}  // namespace

TEST_CASE("progress: plain lines every line_every_s seconds when not a terminal") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  double t = 100.0;  // fake seconds
  hg::io::ProgressOptions o;
  o.out = f;
  o.terminal = 0;
  o.line_every_s = 10.0;
  o.clock = [&] { return t; };
  {
    hg::io::Progress bar("epoch 1/5", 100, o);
    for (int i = 1; i <= 100; ++i) {
      t += 1.0;                     // one second per step
      bar.step(128, 2.0 / i);       // losses 2/1, 2/2, ...
      if (i == 50) {
        // 50 steps × 128 images in 50 s → 128 img/s; 50 s for half → 50 s left.
        CHECK(bar.images_per_s() == doctest::Approx(128.0));
        CHECK(bar.eta_s() == doctest::Approx(50.0));
        double sum = 0;
        for (int j = 1; j <= 50; ++j) sum += 2.0 / j;
        CHECK(bar.mean_loss() == doctest::Approx(sum / 50));
      }
    }
    bar.finish();
    bar.finish();  // idempotent
  }
  const std::vector<std::string> lines = split_lines(contents(f));
  std::fclose(f);
  // One line at each 10 s (steps 10, 20, ..., 100) and the final line.
  REQUIRE(lines.size() == 11);
  double sum = 0;  // the mean of the first 50 losses, formatted as the bar does (%.4f)
  for (int j = 1; j <= 50; ++j) sum += 2.0 / j;
  char loss[32];
  std::snprintf(loss, sizeof loss, "%.4f", sum / 50);
  CHECK(lines[4] == "epoch 1/5 50/100 (50%)  loss " + std::string(loss) + "  128 img/s  ETA 0:50");
  CHECK(lines[4].find("\r") == std::string::npos);
  CHECK(lines.back().find("epoch 1/5 100/100 (100%)") == 0);
  CHECK(lines.back().find("took 1:40") != std::string::npos);
}

TEST_CASE("progress: a redrawn bar on a terminal") {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  double t = 0.0;
  hg::io::ProgressOptions o;
  o.out = f;
  o.terminal = 1;
  o.bar_width = 10;
  o.clock = [&] { return t; };
  hg::io::Progress bar("train", 4, o);
  for (int i = 0; i < 4; ++i) {
    t += 0.5;
    bar.step(10, 1.0);
  }
  bar.finish();
  const std::string s = contents(f);
  std::fclose(f);
  CHECK(s.find('\r') == 0);  // redraws in place
  CHECK(s.find("train [=====>    ] 2/4  loss 1.0000  20 img/s  ETA 0:01") != std::string::npos);
  CHECK(s.find("train [==========] 4/4") != std::string::npos);
  CHECK(s.back() == '\n');  // the finished bar ends its line
  // Each redraw is padded only to the previous line's width: it erases the old text without
  // growing past it (a 100-column pad would wrap on an 80-column terminal).
  size_t widest = 0, start = 1;
  for (size_t cr; (cr = s.find('\r', start)) != std::string::npos || start < s.size(); start = cr + 1) {
    if (cr == std::string::npos) cr = s.size() - 1;  // the last segment, without its '\n'
    const std::string seg = s.substr(start, cr - start);
    widest = std::max(widest, seg.size());
    CHECK(seg.size() < 70);
    if (cr == s.size() - 1) break;
  }
  CHECK(widest > 40);
}

TEST_CASE("progress: durations and a NaN loss") {
  CHECK(hg::io::format_duration(7) == "0:07");
  CHECK(hg::io::format_duration(754) == "12:34");
  CHECK(hg::io::format_duration(3723) == "1:02:03");
  CHECK(hg::io::format_duration(std::nan("")) == "?");
  std::FILE* f = std::tmpfile();
  hg::io::ProgressOptions o;
  o.out = f;
  o.terminal = 0;
  double t = 0;
  o.clock = [&] { return t; };
  {
    hg::io::Progress bar("fp16", 2, o);
    t = 1;
    bar.step(1, std::nan(""));  // a diverged loss shows as nan, it is not hidden
    CHECK(std::isnan(bar.mean_loss()));
    CHECK(bar.line().find("loss nan") != std::string::npos);
  }  // the bar's destructor prints its last line: close the file only after it
  std::fclose(f);
}
