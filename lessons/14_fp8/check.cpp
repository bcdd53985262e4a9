// Grades the chapter 14 exercise: student_delayed_update, the delayed-scaling update.
//
// Each check replays sequences of amaxes through the learner's update and through halfgrad's
// hg::fp8::DelayedScaling (framework/fp8/scaling.h, tested against numbers worked by hand),
// and compares the history and the scale after every step. The checks go from the first step
// to the special cases (0, inf, NaN, the margin, a scale past float's range), then random
// sequences, and explain the first difference in words. Every check has hand-picked sequences
// and sequences of the same kind drawn from this grading's seed (formats, lengths, margins and
// amaxes), asked in an order drawn from it: answers recorded from one grading, or given in
// the order one grading asked for them, fit no other.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "framework/fp8/scaling.h"
#include "lessons/14_fp8/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::fp8::Format;

namespace {

struct Sequence {
  Format format;
  int length, margin;
  std::vector<float> amaxes;
};

std::string show(const std::vector<float>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += format("%s%g", i ? ", " : "", double(v[i]));
  return s + "]";
}

bool same_value(float a, float b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

// Why the learner's scale differs from the expected one, for the common mistakes.
std::string diagnose(const Sequence& q, const std::vector<float>& history, float prev, float got, float want) {
  const float fp8_max = hg::fp8::max_value(q.format);
  const float newest = history.empty() ? 0.0f : history.front();
  const float p2 = std::ldexp(1.0f, q.margin);
  if (std::isinf(got) && want == std::numeric_limits<float>::max())
    return "The scale became inf: the history's max is so small that fp8_max / max passes float's range. A scale "
           "of inf casts every value to NaN or ±max, so Transformer Engine takes the largest float, FLT_MAX "
           "(std::numeric_limits<float>::max()), instead. " + see("## Delayed scaling");
  if (std::isnan(got) || got == 0 || std::isinf(got))
    return "The scale became " + format("%g", double(got)) + ". A step whose amax is 0, inf or NaN (or a history "
           "holding a NaN) must keep the previous scale: dividing by it would make the scale inf, 0 or NaN, and "
           "every later cast garbage. " + see("## Delayed scaling");
  // A max that leaves a NaN out (std::fmax(m, a), `a > m ? a : m` and std::max(m, a) all
  // return m when a is NaN), or an inf, sees only the finite amaxes.
  bool nan = false, inf = false;
  float finite_max = 0;
  for (float a : history) {
    nan = nan || std::isnan(a);
    inf = inf || std::isinf(a);
    if (std::isfinite(a)) finite_max = std::max(finite_max, a);
  }
  const bool from_finite =
      finite_max > 0 && grader::rel_diff(got, std::min(fp8_max / finite_max / p2, std::numeric_limits<float>::max())) <= 1e-6;
  if (nan && from_finite)
    return "The history holds a NaN, and your max over it skips the NaN: std::fmax(m, a), `a > m ? a : m` and "
           "std::max(m, a) all return m when a is NaN. A NaN in the history makes its max NaN, so the scale "
           "stays as it was until the NaN leaves the history, `length` steps later. " + see("## Delayed scaling");
  if (inf && !nan && from_finite)
    return "The history holds an inf, and your max over it leaves the inf out. An inf in the history makes its "
           "max inf, so the scale stays as it was until the inf leaves the history, `length` steps later: an "
           "overflowed step must not set the scale. " + see("## Delayed scaling");
  if (newest > 0 && std::isfinite(newest) && got == fp8_max / newest / p2 && want != got)
    return "You scaled by the newest amax alone. Transformer Engine takes the largest amax of the whole history "
           "(amax_compute_algo \"max\"): a spike a few steps ago still holds the scale down, so the next spike "
           "of that size does not saturate. " + see("## Delayed scaling");
  if (q.margin > 0 && want > 0 && std::fabs(got / want - p2 * p2) < 1e-3f)
    return format("With margin %d the scale is %g times too large: the margin is headroom, so it divides the "
                  "scale by 2^margin (the amax lands 2^margin below fp8_max), it does not multiply. ",
                  q.margin, double(p2 * p2)) + see("## Delayed scaling");
  if (got == prev && want != prev)
    return "The scale did not move although the history's max is a finite number > 0. " + see("## Delayed scaling");
  return format("The scale should be fp8_max / max(history) / 2^margin = %g / max%s / %g. ", double(fp8_max),
                show(history).c_str(), double(p2)) + see("## Delayed scaling");
}

// The learner's state after each step of a sequence: the history and the scale.
using After = std::pair<std::vector<float>, float>;

// Compares the learner's states `mine` for `q` with halfgrad's; "" or the first difference,
// explained.
std::string replay(const Sequence& q, const std::vector<After>& mine) {
  hg::fp8::DelayedScaling want(q.format, q.length, q.margin);
  DelayedState got;
  for (size_t i = 0; i < q.amaxes.size(); ++i) {
    const float prev = got.scale;
    std::tie(got.history, got.scale) = mine[i];
    want.update(q.amaxes[i]);
    const std::vector<float> wh(want.history().begin(), want.history().end());
    const std::string where =
        format("%s, history length %d, margin %d, amaxes %s: after step %zu (amax %g)\n",
               hg::fp8::format_name(q.format), q.length, q.margin, show(q.amaxes).c_str(), i, double(q.amaxes[i]));
    bool same_history = got.history.size() == wh.size();
    for (size_t k = 0; same_history && k < wh.size(); ++k) same_history = same_value(got.history[k], wh[k]);
    if (!same_history) {
      std::string why = where + "history " + show(got.history) + ", expected " + show(wh) + ".\n";
      if (got.history.size() > wh.size())
        return why + format("The history keeps at most %d amaxes: when a new one makes it longer, the oldest (the "
                            "last entry) leaves. ", q.length) + see("## Delayed scaling");
      if (!got.history.empty() && !wh.empty() && got.history.back() == wh.front())
        return why + "The newest amax goes in front (index 0), the oldest is at the back. " + see("## Delayed scaling");
      return why + "Every step's amax enters the history, whatever its value (0, inf and NaN too). " +
             see("## Delayed scaling");
    }
    if (!same_value(got.scale, want.scale()) && grader::rel_diff(got.scale, want.scale()) > 1e-6)
      return where + format("scale %g, expected %g.\n", double(got.scale), double(want.scale())) +
             diagnose(q, wh, prev, got.scale, want.scale());
  }
  return "";
}

// Every sequence through the learner's update, in one child, in an order drawn from stream
// `stream`; then each, in the list's order, through halfgrad's here.
std::string replay_all(grader::Grader& g, const std::vector<Sequence>& qs, uint64_t stream) {
  const std::vector<std::vector<After>> mine = g.answers(qs, stream, [](const Sequence& q) {
    DelayedState s;
    std::vector<After> out;
    for (float amax : q.amaxes) {
      student_delayed_update(s, amax, q.length, hg::fp8::max_value(q.format), q.margin);
      out.emplace_back(s.history, s.scale);
    }
    return out;
  });
  for (size_t k = 0; k < qs.size(); ++k) {
    const std::string why = replay(qs[k], grader::sized(mine[k], qs[k].amaxes.size()));
    if (!why.empty()) return why;
  }
  return "";
}

// Sequences drawn from one stream of the grading's seed.
struct Draw {
  std::mt19937_64 rng;
  int between(int lo, int hi) { return lo + int(rng() % uint64_t(hi - lo + 1)); }
  Format format() { return rng() % 2 ? Format::E5M2 : Format::E4M3; }
  // A finite amax > 0 of binade 2^lo .. 2^hi, with 10 bits of mantissa.
  float amax(int lo, int hi) { return std::ldexp(1.0f + float(rng() % 1024) / 1024.0f, between(lo, hi)); }
  std::vector<float> amaxes(int n, int lo, int hi) {
    std::vector<float> v;
    for (int k = 0; k < n; ++k) v.push_back(amax(lo, hi));
    return v;
  }
};

// Hand-picked sequences, then `n` drawn by `make`, which adds to a Sequence the Draw hands it.
template <class Make>
std::vector<Sequence> with_drawn(grader::Grader& g, uint64_t stream, std::vector<Sequence> qs, int n, Make make) {
  Draw d{g.rng(stream)};
  for (int i = 0; i < n; ++i) qs.push_back(make(d));
  return qs;
}

std::vector<Sequence> random_sequences(Draw& d) {
  std::vector<Sequence> out;
  for (int i = 0; i < 200; ++i) {
    Sequence q{d.format(), d.between(1, 20), d.between(0, 2), {}};
    const int n = d.between(1, 60);
    for (int k = 0; k < n; ++k) {
      const int r = d.between(0, 99);
      q.amaxes.push_back(r < 3 ? 0.0f : r < 5 ? INFINITY : r < 6 ? NAN : d.amax(-30, 10));
    }
    out.push_back(q);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"14", "the delayed-scaling update", "14_fp8", "Exercise"}, argc, argv);
  // The exercise is arithmetic on a vector: no function of halfgrad has a place in it, and
  // several would do the work (DelayedScaling's own update, the scale rule, a tensor's scale).
  g.own_code_only({{"hg::fp8::DelayedScaling::", "halfgrad's own delayed scaling"},
                   {"hg::fp8::DelayedScaling", "halfgrad's own delayed scaling"},
                   {"hg::fp8::scale_from_amax", "halfgrad's scale rule"},
                   {"hg::fp8::current_scale", "halfgrad's current scaling"},
                   {"hg::", "a function of halfgrad: this exercise is written with plain arithmetic on the history"}});
  g.stop_at_first_failure(true);
  // Each check: the hand-picked sequences, then 4 of the same kind drawn from this grading's
  // seed (stream k for check k), all asked in an order drawn from it (stream 100 + k).
  constexpr int kDrawn = 4;
  g.check("the first step: the amax enters the history, scale = fp8_max / amax", [&] {
    return replay_all(g, with_drawn(g, 1, {{Format::E4M3, 4, 0, {2.0f}}, {Format::E5M2, 4, 0, {7.0f}},
                                           {Format::E4M3, 1, 0, {0.5f}}}, kDrawn, [](Draw& d) {
      return Sequence{d.format(), d.between(1, 20), 0, d.amaxes(1, -20, 10)};
    }), 101);
  });
  g.check("the scale follows the largest amax of the history, not the newest", [&] {
    return replay_all(g, with_drawn(g, 2, {{Format::E4M3, 3, 0, {2.0f, 8.0f, 1.0f, 1.0f}},
                                           {Format::E5M2, 5, 0, {0.25f, 1.0f, 0.5f}}}, kDrawn, [](Draw& d) {
      const int length = d.between(3, 10);  // no amax leaves the history: the max is over them all
      return Sequence{d.format(), length, 0, d.amaxes(d.between(3, length), -8, 8)};
    }), 102);
  });
  g.check("the history keeps `length` steps: an old spike leaves it", [&] {
    return replay_all(g, with_drawn(g, 3, {{Format::E4M3, 3, 0, {8.0f, 1.0f, 1.0f, 1.0f, 1.0f}},
                                           {Format::E4M3, 1, 0, {4.0f, 1.0f, 2.0f}}}, kDrawn, [](Draw& d) {
      const int length = d.between(1, 6);
      Sequence q{d.format(), length, 0, {d.amax(5, 8)}};  // a spike, then steps that push it out
      for (float a : d.amaxes(length + d.between(1, 6), -4, 4)) q.amaxes.push_back(a);
      return q;
    }), 103);
  });
  g.check("amax 0 (an all-zero tensor) keeps the scale", [&] {
    return replay_all(g, with_drawn(g, 4, {{Format::E4M3, 2, 0, {0.0f, 0.0f}}, {Format::E4M3, 1, 0, {4.0f, 0.0f}}},
                                    kDrawn, [](Draw& d) {
      Sequence q{d.format(), d.between(1, 4), 0, d.amaxes(d.between(2, 8), -8, 8)};
      for (float& a : q.amaxes)
        if (d.between(0, 9) < 4) a = 0;
      return q;
    }), 104);
  });
  g.check("inf and NaN keep the scale; a NaN freezes it until it leaves the history", [&] {
    return replay_all(g, with_drawn(g, 5, {{Format::E4M3, 3, 0, {2.0f, INFINITY, 1.0f}},
                                           {Format::E4M3, 3, 0, {1.0f, 0.0f, NAN, 4.0f, 4.0f, 4.0f}},
                                           {Format::E5M2, 2, 0, {1.0f, INFINITY, INFINITY, 2.0f}}}, kDrawn,
                                    [](Draw& d) {
      // an overflowed step, then a step larger than every one before it while that one is
      // still in the history, then steps enough for it to leave
      const int length = d.between(2, 6);
      Sequence q{d.format(), length, 0, d.amaxes(d.between(1, 4), -2, 2)};
      q.amaxes.push_back(d.between(0, 1) ? NAN : INFINITY);
      q.amaxes.push_back(d.amax(4, 6));
      for (float a : d.amaxes(length + d.between(0, 2), -2, 2)) q.amaxes.push_back(a);
      return q;
    }), 105);
  });
  g.check("margin: the amax lands 2^margin below fp8_max", [&] {
    return replay_all(g, with_drawn(g, 6, {{Format::E4M3, 4, 2, {2.0f}}, {Format::E5M2, 2, 1, {3.0f, 1.0f, 1.0f}}},
                                    kDrawn, [](Draw& d) {
      return Sequence{d.format(), d.between(1, 5), d.between(1, 4), d.amaxes(d.between(1, 6), -8, 8)};
    }), 106);
  });
  g.check("an amax too small for a float scale (1e-38, a subnormal): FLT_MAX", [&] {
    return replay_all(g, with_drawn(g, 7, {{Format::E4M3, 2, 0, {0x1p-149f, 1.0f, 1.0f}},
                                           {Format::E5M2, 3, 1, {1e-38f}}}, kDrawn, [](Draw& d) {
      // fp8_max / amax passes FLT_MAX (2^128) for every amax below 2^-124, in both formats
      Sequence q{d.format(), d.between(1, 4), d.between(0, 2), {d.amax(-149, -125)}};
      for (float a : d.amaxes(d.between(0, 3), -4, 4)) q.amaxes.push_back(a);
      return q;
    }), 107);
  });
  g.check("200 random sequences (E4M3 and E5M2, lengths 1 to 20, margins 0 to 2, with 0, inf and NaN)", [&] {
    Draw d{g.rng(8)};
    return replay_all(g, random_sequences(d), 108);
  });
  return g.finish();
}
