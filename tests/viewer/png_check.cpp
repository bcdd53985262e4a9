// viewer_png_check — the checks of tests/viewer/screenshots_test.sh, one subcommand each.
// Prints the evidence (sizes, pixel counts, sampled colours) and exits 1 on a failed check.
//
//   size FILE W H                    the PNG is W x H
//   notblank FILE                    many colours, and not one colour almost everywhere
//   differ A B                       same size, and at least 1% of the pixels differ
//   same A B                         identical pixels
//   boxscale A.json B.json R         the bit boxes of layout B are R times as wide as A's
//   memory FILE N                    the Memory panel's stack: at least N pixels of each
//                                    category's colour (viewer/app/memory_colors.h)
//   fp8 FILE LAYOUT N                the FP8 panel: each of its four plots (rectangles from the
//                                    layout file) holds at least N pixels of the first tensor's
//                                    colour; the amax·scale plot holds the format's max as a line
//                                    across it (in 90% of its pixel columns) and red marks over
//                                    saturated steps
//                                    (viewer/app/fp8_colors.h)
//   spike FILE                       a red run whose loss is flat but for one step far below
//                                    is drawn all the way down to that step: every row from
//                                    the flat line to the lowest red pixel has red near it
//   bits FILE LAYOUT ID E M HEX      the boxes of format ID (E exponent and M mantissa bits)
//                                    show HEX: each box sampled has the colour of its field
//                                    (sign | exponent | mantissa) and of its bit (set | clear)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <stb_image.h>  // compiled into Debian's libstb

#include "viewer/app/bit_colors.h"
#include "viewer/app/fp8_colors.h"
#include "viewer/app/memory_colors.h"

using hg::viewer::Rgb;

namespace {

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> px;  // RGB
  Rgb at(int x, int y) const {
    const unsigned char* p = &px[(static_cast<size_t>(y) * w + x) * 3];
    return {p[0], p[1], p[2]};
  }
};

Image load(const char* path) {
  Image im;
  int n = 0;
  unsigned char* data = stbi_load(path, &im.w, &im.h, &n, 3);
  if (!data) {
    std::fprintf(stderr, "FAIL cannot read PNG %s: %s\n", path, stbi_failure_reason());
    std::exit(1);
  }
  im.px.assign(data, data + static_cast<size_t>(im.w) * im.h * 3);
  stbi_image_free(data);
  return im;
}

int fail(const std::string& why) {
  std::printf("FAIL %s\n", why.c_str());
  return 1;
}

int cmd_size(const char* file, int w, int h) {
  Image im = load(file);
  std::printf("%s: %dx%d (asked %dx%d)\n", file, im.w, im.h, w, h);
  return im.w == w && im.h == h ? 0 : fail("wrong size");
}

int cmd_notblank(const char* file) {
  Image im = load(file);
  std::map<uint32_t, long> hist;
  for (size_t i = 0; i < im.px.size(); i += 3)
    hist[(im.px[i] << 16) | (im.px[i + 1] << 8) | im.px[i + 2]]++;
  long top = 0;
  for (const auto& [c, n] : hist) top = std::max(top, n);
  double other = 1.0 - double(top) / (double(im.w) * im.h);
  std::printf("%s: %zu distinct colours, %.1f%% of pixels differ from the commonest one\n", file,
              hist.size(), 100 * other);
  if (hist.size() < 32) return fail("fewer than 32 colours: blank?");
  if (other < 0.05) return fail("under 5% of pixels differ from the background: blank?");
  return 0;
}

int cmd_differ(const char* a, const char* b, bool want_same) {
  Image x = load(a), y = load(b);
  if (x.w != y.w || x.h != y.h) return fail("sizes differ");
  long diff = 0;
  for (size_t i = 0; i < x.px.size(); i += 3)
    diff += x.px[i] != y.px[i] || x.px[i + 1] != y.px[i + 1] || x.px[i + 2] != y.px[i + 2];
  double frac = double(diff) / (double(x.w) * x.h);
  std::printf("%s vs %s: %ld pixels (%.2f%%) differ\n", a, b, diff, 100 * frac);
  if (want_same) return diff == 0 ? 0 : fail("expected identical pictures");
  return frac >= 0.01 ? 0 : fail("expected at least 1% of the pixels to differ");
}

int cmd_bits(const char* file, const char* layout, const std::string& id, int E, int M,
             unsigned long long bits) {
  Image im = load(file);
  std::ifstream in(layout);
  if (!in) return fail(std::string("cannot read ") + layout);
  nlohmann::json j = nlohmann::json::parse(in);
  const int n = 1 + E + M;
  std::vector<nlohmann::json> boxes;
  for (const auto& b : j["boxes"])
    if (b["format"] == id) boxes.push_back(b);
  std::printf("%s: %zu boxes of %s (expected %d)\n", layout, boxes.size(), id.c_str(), n);
  if (static_cast<int>(boxes.size()) != n) return fail("wrong number of bit boxes");
  int bad = 0;
  float prev_x = -1;
  for (int k = 0; k < n; ++k) {
    const auto& b = boxes[k];
    const int bit = b["bit"];
    const auto r = b["rect"];
    const float x0 = r[0], y0 = r[1], x1 = r[2], y1 = r[3];
    // Boxes run left to right from the most significant bit.
    if (bit != n - 1 - k || !(x0 > prev_x)) {
      std::printf("  box %d: bit %d at x=%.0f is out of order\n", k, bit, x0);
      ++bad;
    }
    prev_x = x0;
    const bool sign = bit == n - 1, exponent = !sign && bit >= M;
    const int value = static_cast<int>((bits >> bit) & 1ull);
    using namespace hg::viewer;
    const Rgb want = sign ? (value ? kSignOn : kSignOff)
                          : exponent ? (value ? kExponentOn : kExponentOff)
                                     : (value ? kMantissaOn : kMantissaOff);
    // Sample left of the digit, half-way down: inside the box, away from the rounded corners.
    const int sx = static_cast<int>(x0 + 3), sy = static_cast<int>((y0 + y1) * 0.5f);
    if (sx < 0 || sy < 0 || sx >= im.w || sy >= im.h || x1 <= x0) {
      std::printf("  bit %d: box outside the picture\n", bit);
      ++bad;
      continue;
    }
    const Rgb got = im.at(sx, sy);
    const int d = std::abs(got.r - want.r) + std::abs(got.g - want.g) + std::abs(got.b - want.b);
    const char* field = sign ? "sign" : exponent ? "exponent" : "mantissa";
    std::printf("  bit %2d %-8s %d  pixel (%d,%d) = (%3d,%3d,%3d)  expected (%3d,%3d,%3d)  %s\n",
                bit, field, value, sx, sy, got.r, got.g, got.b, want.r, want.g, want.b,
                d <= 24 ? "ok" : "WRONG");
    bad += d > 24;
  }
  return bad == 0 ? 0 : fail(std::to_string(bad) + " bit boxes wrong");
}

// Mean width of the bit boxes in a layout file.
double mean_box_width(const char* layout) {
  std::ifstream in(layout);
  if (!in) return 0;
  nlohmann::json j = nlohmann::json::parse(in);
  double sum = 0;
  int n = 0;
  for (const auto& b : j["boxes"]) sum += double(b["rect"][2]) - double(b["rect"][0]), ++n;
  return n ? sum / n : 0;
}

int cmd_boxscale(const char* a, const char* b, double ratio) {
  double wa = mean_box_width(a), wb = mean_box_width(b);
  std::printf("bit boxes: %.1f px in %s, %.1f px in %s: ratio %.2f (expected %.2f)\n", wa, a, wb,
              b, wa > 0 ? wb / wa : 0.0, ratio);
  if (!(wa > 0 && wb > 0)) return fail("no boxes");
  return std::fabs(wb / wa - ratio) <= 0.1 * ratio ? 0 : fail("boxes not scaled as asked");
}

int cmd_memory(const char* file, long min_pixels) {
  Image im = load(file);
  const char* names[] = {"parameters", "gradients", "optimizer_state", "activations", "temporaries"};
  bool ok = true;
  for (int k = 0; k < 5; ++k) {
    const Rgb c = hg::viewer::kMemoryColors[k];
    long n = 0;
    for (int y = 0; y < im.h; ++y)
      for (int x = 0; x < im.w; ++x) {
        const Rgb p = im.at(x, y);
        n += p.r == c.r && p.g == c.g && p.b == c.b;
      }
    std::printf("%s: %ld pixels of %s's colour (%d, %d, %d)\n", file, n, names[k], c.r, c.g, c.b);
    ok = ok && n >= min_pixels;
  }
  return ok ? 0 : fail("a category of the stack is missing or too thin");
}

// Within `tol` of colour c (the sum of the channels' differences).
bool near(const Rgb& p, const Rgb& c, int tol) {
  return std::abs(p.r - c.r) + std::abs(p.g - c.g) + std::abs(p.b - c.b) <= tol;
}

// A pixel of a line of colour c drawn over a plot's background bg, or of its anti-aliased edge
// at `min_alpha` or more: p = bg + a·(c - bg) for some a in [min_alpha, 1], each channel within
// 12. (A thin line at a fractional position covers no pixel whole, so its exact colour is rare.)
bool blend_of(const Rgb& p, const Rgb& c, const Rgb& bg, double min_alpha) {
  const int dr = c.r - bg.r, dg = c.g - bg.g, db = c.b - bg.b;
  const int big = std::abs(dr) >= std::abs(dg) && std::abs(dr) >= std::abs(db) ? dr : std::abs(dg) >= std::abs(db) ? dg : db;
  const int got = big == dr ? p.r - bg.r : big == dg ? p.g - bg.g : p.b - bg.b;
  if (big == 0) return false;
  const double a = double(got) / big;
  if (!(a >= min_alpha && a <= 1.05)) return false;
  return std::abs(p.r - (bg.r + a * dr)) <= 12 && std::abs(p.g - (bg.g + a * dg)) <= 12 &&
         std::abs(p.b - (bg.b + a * db)) <= 12;
}

int cmd_fp8(const char* file, const char* layout, long min_pixels) {
  Image im = load(file);
  std::ifstream in(layout);
  if (!in) return fail(std::string("cannot read ") + layout);
  const nlohmann::json j = nlohmann::json::parse(in);
  using namespace hg::viewer;
  bool ok = true;
  for (const char* id : {"fp8_amax", "fp8_scale", "fp8_product", "fp8_underflow"}) {
    const nlohmann::json* plot = nullptr;
    for (const auto& p : j["plots"])
      if (p["id"] == id) plot = &p;
    if (!plot) {
      std::printf("%s: no plot %s\n", layout, id);
      ok = false;
      continue;
    }
    const auto& r = (*plot)["rect"];
    const int x0 = std::max(0, int(std::ceil(double(r[0])))), y0 = std::max(0, int(std::ceil(double(r[1]))));
    const int x1 = std::min(im.w, int(double(r[2]))), y1 = std::min(im.h, int(double(r[3])));
    long line = 0, marks = 0, max_cols = 0;  // max_cols: columns holding a pixel of the max line
    for (int x = x0; x < x1; ++x) {
      bool max_here = false;
      for (int y = y0; y < y1; ++y) {
        const Rgb p = im.at(x, y);
        line += blend_of(p, kFp8TensorColors[0], kPlotBackground, 0.4);  // bit_colors.h
        marks += near(p, kFp8Saturated, 40);
        max_here |= p.r == kFp8MaxLine.r && p.g == kFp8MaxLine.g && p.b == kFp8MaxLine.b;
      }
      max_cols += max_here;
    }
    std::printf("%s %s (%d,%d)-(%d,%d): %ld pixels of the tensor's colour", file, id, x0, y0, x1, y1, line);
    ok = ok && line >= min_pixels && x1 > x0 && y1 > y0;
    if (std::string(id) == "fp8_product") {
      const double across = x1 > x0 ? double(max_cols) / (x1 - x0) : 0;
      std::printf(", the max line across %.0f%% of the width, %ld pixels of saturation marks", 100 * across, marks);
      ok = ok && across >= 0.9 && marks >= 20;
    }
    std::printf("\n");
  }
  return ok ? 0 : fail("an FP8 plot is missing, empty, without its max line or without saturation marks");
}

}  // namespace

// The second run's colour (run_color(1), red) or its anti-aliased edge over a dark background:
// red well above green and blue.
bool reddish(const Rgb& p) { return p.r >= 90 && p.r >= p.g + 50 && p.r >= p.b + 50; }

// The row with the most red pixels is the flat part of the line; the lowest red pixel is the
// tip of the spike. In the seven columns around the tip, every row between them must hold a
// red pixel. ImGui's polyline clamps its miter at sharp corners, and a one-step spike came out
// dashed or without its tip (viewer/app/widgets.h, draw_polyline).
int cmd_spike(const char* file) {
  Image im = load(file);
  std::vector<long> per_row(im.h, 0);
  int tip_x = -1, tip_y = -1;
  for (int y = 0; y < im.h; ++y)
    for (int x = 0; x < im.w; ++x)
      if (reddish(im.at(x, y))) {
        ++per_row[y];
        if (y > tip_y) tip_y = y, tip_x = x;
      }
  const int flat_y = int(std::max_element(per_row.begin(), per_row.end()) - per_row.begin());
  std::printf("%s: flat line at row %d (%ld red pixels), spike tip at (%d, %d)\n", file, flat_y,
              per_row[flat_y], tip_x, tip_y);
  if (tip_y < 0 || tip_y - flat_y < 100) return fail("no red spike reaching 100 rows below the flat line");
  int missing = 0, first_missing = -1;
  for (int y = flat_y + 1; y <= tip_y; ++y) {
    bool found = false;
    for (int x = std::max(0, tip_x - 3); x <= std::min(im.w - 1, tip_x + 3) && !found; ++x)
      found = reddish(im.at(x, y));
    if (!found && missing++ == 0) first_missing = y;
  }
  std::printf("rows %d..%d: %d without red near x = %d%s\n", flat_y + 1, tip_y, missing, tip_x,
              missing ? (" (first: row " + std::to_string(first_missing) + ")").c_str() : "");
  return missing == 0 ? 0 : fail("the spike is drawn with gaps");
}

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "size" && argc == 5) return cmd_size(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
  if (cmd == "notblank" && argc == 3) return cmd_notblank(argv[2]);
  if (cmd == "differ" && argc == 4) return cmd_differ(argv[2], argv[3], false);
  if (cmd == "same" && argc == 4) return cmd_differ(argv[2], argv[3], true);
  if (cmd == "bits" && argc == 8)
    return cmd_bits(argv[2], argv[3], argv[4], std::atoi(argv[5]), std::atoi(argv[6]),
                    std::strtoull(argv[7], nullptr, 16));
  if (cmd == "boxscale" && argc == 5) return cmd_boxscale(argv[2], argv[3], std::atof(argv[4]));
  if (cmd == "memory" && argc == 4) return cmd_memory(argv[2], std::atol(argv[3]));
  if (cmd == "fp8" && argc == 5) return cmd_fp8(argv[2], argv[3], std::atol(argv[4]));
  if (cmd == "spike" && argc == 3) return cmd_spike(argv[2]);
  std::fprintf(stderr, "usage: viewer_png_check size|notblank|differ|same|boxscale|bits|memory|fp8|spike ... (see the source)\n");
  return 2;
}
