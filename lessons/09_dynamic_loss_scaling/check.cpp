// Grades the chapter 09 exercise (StudentScaler::step and ::update in exercise.cpp).
//
// The learner's scaler and halfgrad's hg::amp::GradScaler run side by side on the same
// script of steps: F (finite gradients), I (one gradient inf), N (one NaN). For each step the
// grader plays backward — every .grad = S·g with that scaler's own S — then calls step and
// update, and compares: whether the optimizer stepped, the gradients it was handed, the
// parameters bit for bit, the scale and the counter. The optimizer (ShadowSGD, SGD with
// momentum) records what it was given, so a wrong step is explained by what the optimizer
// saw: S·g (no unscale), gradients clipped before unscaling, an inf, or no call at all.
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "framework/amp/grad_scaler.h"
#include "framework/amp/unscale.h"
#include "lessons/09_dynamic_loss_scaling/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::Tensor;
using Values = std::vector<std::vector<float>>;  // one vector per parameter

namespace {

// SGD with momentum that remembers the gradients each step() was handed.
class ShadowSGD : public hg::optim::Optimizer {
 public:
  ShadowSGD(std::vector<Tensor> params, double lr, float momentum)
      : Optimizer(std::move(params), lr), momentum_(momentum), buf_(params_.size()) {}
  void step() override {
    ++calls;
    Values seen;
    for (size_t i = 0; i < params_.size(); ++i) {
      Tensor g = params_[i].grad();
      std::vector<float> gv(g.data<float>(), g.data<float>() + g.numel());
      seen.push_back(gv);
      if (buf_[i].empty()) buf_[i].assign(gv.size(), 0.0f);
      float* w = params_[i].data<float>();
      for (size_t k = 0; k < gv.size(); ++k) {
        buf_[i][k] = momentum_ * buf_[i][k] + gv[k];
        w[k] = w[k] - float(lr_) * buf_[i][k];
      }
    }
    last_seen = seen;
  }
  std::string name() const override { return "shadow_sgd"; }
  int calls = 0;
  Values last_seen;

 protected:
  nlohmann::json hyperparameters() const override { return {{"momentum", momentum_}}; }

 private:
  float momentum_;
  Values buf_;
};

struct Rig {
  std::vector<Tensor> params;
  std::unique_ptr<ShadowSGD> opt;
  Rig(float momentum) {
    hg::Generator gen(9);
    params = {Tensor::randn({4, 3}, gen), Tensor::randn({3}, gen)};
    for (Tensor& p : params) p.requires_grad_(true);
    opt = std::make_unique<ShadowSGD>(params, 0.1, momentum);
  }
  Values values() const {
    Values v;
    for (const Tensor& p : params) v.push_back(p.to_vector());
    return v;
  }
};

// What backward leaves: .grad = S·g, with an inf or a NaN on the overflowing steps.
void play_backward(Rig& rig, const Values& g, float S, char event) {
  for (size_t i = 0; i < rig.params.size(); ++i) {
    std::vector<float> scaled(g[i].size());
    for (size_t k = 0; k < scaled.size(); ++k) scaled[k] = S * g[i][k];
    if (event == 'I' && i == 1) scaled[1] = std::numeric_limits<float>::infinity();
    if (event == 'N' && i == 0) scaled[5] = std::numeric_limits<float>::quiet_NaN();
    rig.params[i].set_grad(Tensor::from_vector(scaled, rig.params[i].shape()));
  }
}

bool same(const Values& a, const Values& b, float factor = 1.0f) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size()) return false;
    for (size_t k = 0; k < a[i].size(); ++k) {
      const float x = a[i][k], y = b[i][k] * factor;
      if (!(x == y || std::fabs(x - y) <= 1e-6f * std::fabs(y))) return false;
    }
  }
  return true;
}

// Gradients clipped the way clip_grad_norm_ does, but to a norm computed as given.
Values clipped(Values g, double max_norm) {
  double sq = 0;
  for (const auto& v : g)
    for (float x : v) sq += double(x) * x;
  const double norm = std::sqrt(sq);
  if (norm > max_norm)
    for (auto& v : g)
      for (float& x : v) x = float(x * (max_norm / (norm + 1e-6)));
  return g;
}

const char* rule_line(char event) {
  return event == 'F' ? "a finite step adds 1 to the counter; when the counter reaches growth_interval, S is "
                        "multiplied by growth_factor and the counter goes back to 0"
                      : "an inf or NaN multiplies S by backoff_factor and sets the counter to 0";
}

struct Step {
  char event;
  Values g;
};

// What the learner's scaler did at one step of a script.
struct Seen {
  float scale_before = 0;
  bool stepped = false;  // what step() returned
  bool called = false;   // whether it called the optimizer's step()
  Values handed;         // the gradients the optimizer was handed (when called)
  Values params;         // the parameters after the step
  float scale_after = 0;
  int64_t tracker_after = 0;
};

// Runs the script on the learner's scaler, in a child: what it did at each step.
std::vector<Seen> learner_steps(grader::Grader& g, const hg::amp::ScaleRule& rule, const std::vector<Step>& script,
                                double max_norm, float momentum) {
  using Row = std::tuple<float, bool, bool, Values, Values, float, int64_t>;
  const std::vector<Row> rows = grader::sized(g.run([&] {
    Rig mine(momentum);
    StudentScaler student(rule);
    std::vector<Row> out;
    for (const Step& st : script) {
      const float S = student.scale();
      play_backward(mine, st.g, S, st.event);
      const int calls_before = mine.opt->calls;
      const bool stepped = student.step(*mine.opt, max_norm);
      student.update();
      const bool called = mine.opt->calls > calls_before;
      out.emplace_back(S, stepped, called, called ? mine.opt->last_seen : Values{}, mine.values(), student.scale(),
                       student.growth_tracker());
    }
    return out;
  }), script.size());
  std::vector<Seen> seen(rows.size());
  for (size_t s = 0; s < rows.size(); ++s)
    std::tie(seen[s].scale_before, seen[s].stepped, seen[s].called, seen[s].handed, seen[s].params,
             seen[s].scale_after, seen[s].tracker_after) = rows[s];
  return seen;
}

// Runs the script; "" when the learner's scaler matches GradScaler at every step.
std::string run(grader::Grader& g, const hg::amp::ScaleRule& rule, const std::vector<Step>& script, double max_norm,
                float momentum) {
  const std::vector<Seen> mine = learner_steps(g, rule, script, max_norm, momentum);
  Rig ref(momentum);
  hg::amp::GradScaler scaler(rule);
  for (size_t s = 0; s < script.size(); ++s) {
    const Step& st = script[s];
    const Seen& m = mine[s];
    const float S_mine = m.scale_before, S_ref = scaler.get_scale();
    const int64_t t_before = scaler.growth_tracker();
    const Values before = ref.values();
    play_backward(ref, st.g, S_ref, st.event);
    const bool stepped_mine = m.stepped;
    if (max_norm > 0) {
      scaler.unscale_(*ref.opt);
      hg::amp::clip_grad_norm_(ref.params, max_norm);
    }
    const bool stepped_ref = scaler.step(*ref.opt);
    scaler.update();
    const bool called = m.called;
    const std::string at = format("step %zu (%s, S = %g): ", s + 1,
                                  st.event == 'F' ? "finite gradients" : st.event == 'I' ? "a gradient is inf"
                                                                                           : "a gradient is NaN",
                                  double(S_ref));
    if (S_mine != S_ref)
      return at + format("your scale before this step was %g, it should have been %g (see the steps before).",
                         double(S_mine), double(S_ref));
    if (stepped_ref && !called)
      return at + "the optimizer was not stepped. The gradients were finite: unscale them and step. " +
             see("## The loop");
    if (!stepped_ref && called) {
      bool finite = true;
      for (const auto& v : m.handed)
        for (float x : v) finite = finite && std::isfinite(x);
      return at + (finite ? "the optimizer was stepped although a gradient was inf or NaN. Whatever the "
                            "gradients were changed into, this batch's gradient is unknown: skip the step, "
                            "and leave parameters and optimizer state (momentum) exactly as they were."
                          : "the optimizer was stepped with an inf or NaN gradient: the weights (and the "
                            "momentum) become inf/NaN and the run is over — chapter 08's static scale. A "
                            "step whose gradients overflowed must be skipped.") +
             " " + see("## The loop");
    }
    if (stepped_mine != stepped_ref)
      return at + format("step() returned %s, but the optimizer %s: it returns whether it stepped.",
                         stepped_mine ? "true" : "false", called ? "stepped" : "did not step");
    if (called) {
      const Values& seen = m.handed;
      const Values& want = ref.opt->last_seen;
      if (!same(seen, want)) {
        std::string what = at + "the optimizer was handed the wrong gradients.\n";
        const Values& raw = st.g;  // the true g
        Values scaled = raw;       // S·g, what backward left
        for (auto& v : scaled)
          for (float& x : v) x *= S_ref;
        if (same(seen, scaled) || (max_norm > 0 && same(seen, clipped(scaled, max_norm))))
          return what + "It got S·g: the gradients were not unscaled. The update would be S times too large.";
        Values clip_first = clipped(scaled, max_norm);
        for (auto& v : clip_first)
          for (float& x : v) x /= S_ref;
        if (max_norm > 0 && same(seen, clip_first))
          return what + format("They were clipped before they were unscaled: the norm compared with max_norm "
                               "= %g was that of S·g, S = %g times too large, so every step was clipped far "
                               "too hard. Unscale first, then clip. ", max_norm, double(S_ref)) + see("## The loop");
        if (max_norm > 0 && same(seen, raw))
          return what + format("They were not clipped: with max_norm = %g the whole gradient vector is scaled "
                               "down when its norm is above it (hg::amp::clip_grad_norm_).", max_norm);
        return what + "Expected g = (S·g)/S, clipped to max_norm when max_norm > 0.";
      }
    }
    if (!same(m.params, ref.values()))
      return at + (same(m.params, before) ? "the parameters did not change although the optimizer should have stepped."
                                               : "the parameters differ from the reference after this step.");
    if (m.scale_after != scaler.get_scale() || m.tracker_after != scaler.growth_tracker()) {
      std::string what = at + format("after update(): scale %g and counter %lld; expected scale %g and counter "
                                     "%lld (counter before: %lld).\n", double(m.scale_after),
                                     (long long)m.tracker_after, double(scaler.get_scale()),
                                     (long long)scaler.growth_tracker(), (long long)t_before);
      if (m.scale_after == S_ref && m.tracker_after == t_before && scaler.get_scale() != S_ref)
        return what + "Nothing changed: still the TODO? The rule: " + rule_line(st.event) + ". " +
               see("## Why a sawtooth");
      if (st.event == 'F' && std::isinf(S_ref * rule.growth_factor) && !std::isfinite(m.scale_after))
        return what + "The growth made S infinite: a growth that would overflow F32 is not applied (the "
                      "counter still resets).";
      if (scaler.get_scale() == rule.min_scale || scaler.get_scale() == rule.max_scale)
        return what + format("S is kept inside [min_scale, max_scale] = [%g, %g] after every change.",
                             double(rule.min_scale), double(rule.max_scale));
      return what + "The rule: " + rule_line(st.event) + ". " + see("## Why a sawtooth");
    }
  }
  return "";
}

Values random_g(std::mt19937& rng, double size) {
  std::normal_distribution<float> n(0.0f, 1.0f);
  Values g = {std::vector<float>(12), std::vector<float>(3)};
  for (auto& v : g)
    for (float& x : v) x = float(size) * n(rng);
  return g;
}

std::vector<Step> script_of(const char* events, uint32_t seed, double size = 1e-3) {
  std::mt19937 rng(seed);
  std::vector<Step> s;
  for (const char* e = events; *e; ++e) s.push_back({*e, random_g(rng, size)});
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"09", "a dynamic loss scaler: skip, clip, scale rule",
                    "09_dynamic_loss_scaling", "Exercise"}, argc, argv);
  g.own_code_only({{"hg::amp::GradScaler::", "halfgrad's GradScaler, which is what you are writing"},
                   {"hg::amp::StaticScaler::", "halfgrad's static scaler"},
                   {"hg::amp::next_scale", "halfgrad's scale rule"},
                   {"hg::amp::unscale_grads_", "halfgrad's unscale-and-check pass"},
                   {"hg::amp::grads_have_inf_or_nan", "halfgrad's inf/NaN check"},
                   {"hg::amp::MasterWeights::copy_grads_to_master", "halfgrad's unscale-and-check copy"}});
  // Each check plays its script with the hand-picked gradients (fixed seeds: what the README
  // shows), then again with gradients drawn from this grading's seed; the scale rule and the
  // long run also get a script of their own drawn.
  using grader::first_wrong;
  auto drawn = [&](uint64_t stream) { return uint32_t(g.seed_for(stream)); };
  hg::amp::ScaleRule r3;
  r3.growth_interval = 3;
  g.check("a finite step: the optimizer gets the true gradient g, not S·g", [&] {
    return first_wrong({[&] { return run(g, r3, script_of("F", 1), 0.0, 0.0f); },
                        [&] { return run(g, r3, script_of("F", drawn(1)), 0.0, 0.0f); }});
  });
  g.check("inf and NaN steps are skipped; parameters and momentum stay as they were", [&] {
    return first_wrong({[&] { return run(g, r3, script_of("FIFNFF", 2), 0.0, 0.9f); },
                        [&] { return run(g, r3, script_of("FNFIFF", drawn(2)), 0.0, 0.9f); }});
  });
  g.check("clipping (max_norm 0.001) sees the true gradients: unscale, then clip", [&] {
    return first_wrong({[&] { return run(g, r3, script_of("FFIF", 3), 1e-3, 0.0f); },
                        [&] { return run(g, r3, script_of("FFIF", drawn(3)), 1e-3, 0.0f); }});
  });
  g.check("the scale rule, growth interval 3: F F F F I I F F F", [&] {
    std::mt19937_64 rng = g.rng(4);
    std::string events;
    for (int i = 0; i < 16; ++i) events += rng() % 4 == 0 ? 'I' : 'F';
    hg::amp::ScaleRule r;
    r.growth_interval = 2 + int(rng() % 4);
    return first_wrong({[&] { return run(g, r3, script_of("FFFFIIFFF", 4), 0.0, 0.0f); },
                        [&] { return run(g, r, script_of(events.c_str(), drawn(4)), 0.0, 0.0f); }});
  });
  g.check("bounds: S stays inside [min_scale, max_scale]", [&] {
    hg::amp::ScaleRule r;
    r.init_scale = 4.0f;
    r.growth_interval = 1;
    r.min_scale = 1.0f;
    r.max_scale = 16.0f;
    return first_wrong({[&] { return run(g, r, script_of("FFFIIIIIF", 5), 0.0, 0.0f); },
                        [&] { return run(g, r, script_of("IIIIIFFFFFFI", drawn(5)), 0.0, 0.0f); }});
  });
  g.check("a growth that would make S infinite is not applied", [&] {
    hg::amp::ScaleRule r;
    r.init_scale = 1.5e38f;
    r.growth_interval = 2;
    return first_wrong({[&] { return run(g, r, script_of("FFFFF", 6, 1e-40), 0.0, 0.0f); },
                        [&] { return run(g, r, script_of("FFFFFFF", drawn(6), 1e-40), 0.0, 0.0f); }});
  });
  g.check("2000 random steps (1 in 7 overflows), growth interval 5, momentum 0.9, max_norm 0.01", [&] {
    // The events from `rng` (the hand-picked script: std::mt19937 seeded 7), the gradients from
    // `grads_seed`.
    auto long_run = [&](auto rng, uint32_t grads_seed) {
      std::string events;
      for (int i = 0; i < 2000; ++i) events += rng() % 7 == 0 ? (rng() % 2 ? 'I' : 'N') : 'F';
      hg::amp::ScaleRule r;
      r.init_scale = 1024.0f;
      r.growth_interval = 5;
      return run(g, r, script_of(events.c_str(), grads_seed), 1e-2, 0.9f);
    };
    return first_wrong({[&] { return long_run(std::mt19937(7), 8); },
                        [&] { return long_run(std::mt19937_64(g.seed_for(7)), drawn(8)); }});
  });
  return g.finish();
}
