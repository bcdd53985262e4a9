// Grades the chapter 07 exercise (master_weight_step in exercise.cpp).
//
// Each check runs a sequence of steps on the learner's code and on the reference written
// here (F32 velocity and master, the model rounded from the master after every step) and
// compares master, velocity and model after every step: first the hand-picked sequence,
// then one drawn from this grading's seed (other weights, other gradients, other lengths). A difference is explained by its
// symptom: nothing moved; the update was added in F16 (the master follows the model); the
// update was rounded to F16 before it was added; the model was not refreshed; the velocity
// is not kept in F32.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "framework/dtype/half.h"
#include "lessons/07_master_weights/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::half;

namespace {

struct State {
  std::vector<half> model;
  std::vector<float> master, velocity;
};

State start_from(const std::vector<float>& weights) {
  State s;
  for (float w : weights) {
    s.master.push_back(w);
    s.model.push_back(half(w));
    s.velocity.push_back(0.0f);
  }
  return s;
}

void reference_step(State& s, const std::vector<half>& grad, float lr, float momentum) {
  for (size_t i = 0; i < s.master.size(); ++i) {
    s.velocity[i] = momentum * s.velocity[i] + float(grad[i]);
    s.master[i] = s.master[i] - lr * s.velocity[i];
    s.model[i] = half(s.master[i]);
  }
}

bool near(float a, float b) {  // within one F32 rounding
  return a == b || std::fabs(double(a) - double(b)) <= std::ldexp(std::fabs(double(b)), -23);
}

// Why the learner's state `got` differs from `want` after `step` steps started from `before`.
std::string diagnose(const State& before, const State& got, const State& want, int step, float lr) {
  const std::string at = format("after step %d: ", step + 1);
  for (size_t i = 0; i < want.master.size(); ++i) {
    const float gm = got.master[i], wm = want.master[i], bm = before.master[i];
    const float gw = float(got.model[i]), ww = float(want.model[i]);
    if (near(gm, wm) && near(got.velocity[i], want.velocity[i]) && gw == float(half(gm))) continue;
    std::string what = at + format("weight %zu: master %.9g (should be %.9g), model %.9g (should be %.9g), "
                                   "velocity %.9g (should be %.9g).\n", i, double(gm), double(wm), double(gw),
                                   double(ww), double(got.velocity[i]), double(want.velocity[i]));
    if (gm == bm && gw == float(before.model[i]) && got.velocity[i] == before.velocity[i] && wm != bm)
      return what + "Nothing moved: still the TODO? The optimizer's step happens on the F32 master copy; the "
                    "F16 model then takes the master's new value. " + see("## Exercise");
    // The update formed in F16 before it reached the master.
    const float update_in_f16 = bm - float(half(lr * want.velocity[i]));
    if (gm == gw && gm != wm)
      return what + "Your master equals the F16 model: the update was added in F16 (or the master was read "
                    "back from the model), so a step smaller than half an F16 ULP of the weight was rounded "
                    "away — chapter 06's lost update. The master copy is the truth the next step starts "
                    "from; add the update to it in F32 and derive the model from it.";
    if (gm == update_in_f16 && update_in_f16 != wm && near(got.velocity[i], want.velocity[i]))
      return what + format("The update lr·v = %.9g was rounded to F16 before it was added (to %.9g): F16 keeps "
                           "11 bits, flushes values below 2^-25 to zero and has few bits below 2^-14. Form "
                           "the update in F32.", double(lr * want.velocity[i]),
                           double(float(half(lr * want.velocity[i]))));
    if (!near(got.velocity[i], want.velocity[i]) && got.velocity[i] == float(half(got.velocity[i])) &&
        want.velocity[i] != float(half(want.velocity[i])))
      return what + "The velocity was rounded to F16. It is optimizer state and lives in F32 like the master: "
                    "rounded each step, the small gradients it averages are lost the way chapter 06 lost "
                    "the updates.";
    if (!near(got.velocity[i], want.velocity[i]))
      return what + "The velocity is wrong: it is the optimizer's running sum, v = momentum·v + g, carried in "
                    "F32 from one step to the next, and the update is lr·v.";
    if (near(gm, wm) && gw != float(half(gm)))
      return what + "The master is right, but the F16 model is not the master rounded to F16: after every "
                    "step the model is refreshed from the master (rounded once, to nearest), or the next "
                    "forward pass computes with stale weights.";
    return what + "Compare your step with the four lines of the picture in \"## Exercise\": which number is in "
                  "which precision, and which copy the next step starts from.";
  }
  return "";
}

// Runs `steps` steps of gradients from `grad_of(step)`; "" when every step matches. The
// learner's steps run first, all of them in one child, which returns the state after each.
template <class GradOf>
std::string run(grader::Grader& g, const std::vector<float>& weights, int steps, float lr, float momentum,
                GradOf grad_of) {
  std::vector<std::vector<half>> grads;
  for (int s = 0; s < steps; ++s) grads.push_back(grad_of(s));
  using Step = std::tuple<std::vector<half>, std::vector<float>, std::vector<float>>;  // model, master, velocity
  const std::vector<Step> after = grader::sized(g.run([&] {
    State mine = start_from(weights);
    std::vector<Step> out;
    for (int s = 0; s < steps; ++s) {
      master_weight_step(mine.model, mine.master, mine.velocity, grads[size_t(s)], lr, momentum);
      out.emplace_back(mine.model, mine.master, mine.velocity);
    }
    return out;
  }), size_t(steps));
  State want = start_from(weights);
  for (int s = 0; s < steps; ++s) {
    const std::vector<half>& grad = grads[size_t(s)];
    const State before = want;
    State got;
    std::tie(got.model, got.master, got.velocity) = after[size_t(s)];
    reference_step(want, grad, lr, momentum);
    if (got.model.size() != want.model.size() || got.master.size() != want.master.size() ||
        got.velocity.size() != want.velocity.size())
      return "the step changed the number of weights; it must update model, master and velocity in place.";
    const std::string why = diagnose(before, got, want, s, lr);
    if (!why.empty()) return why;
  }
  return "";
}

std::vector<half> halves(const std::vector<float>& v) {
  std::vector<half> h;
  for (float x : v) h.push_back(half(x));
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"07", "the master-weight step", "07_master_weights", "Exercise"}, argc, argv);
  g.own_code_only({{"hg::amp::MasterWeights::", "halfgrad's master weights, which do this step"},
                   {"hg::amp::convert_model_", "halfgrad's model conversion for master weights"},
                   {"hg::optim::SGD::", "halfgrad's SGD, which would do the update for you"},
                   {"hg::amp::", "halfgrad's mixed-precision machinery, master weights among it"},
                   {"hg::optim::", "halfgrad's optimizers, which would do the update for you"},
                   {"hg::Tensor", "the engine's tensors and their ops: the step is written on the vectors"}});

  // The hand-picked sequences: fixed weights and gradients (rng, seed 7: what the README
  // shows), each followed by a sequence drawn from the grading's seed.
  using grader::first_wrong;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> random_weights(64);
  for (float& w : random_weights) w = 0.1f * normal(rng);
  // (A distribution keeps a value for its next call: the drawn sequences have their own, so
  // that the hand-picked ones stay what they are whatever was drawn before them.)
  auto normals = [](auto& engine, std::normal_distribution<float>& dist, size_t n, float scale) {
    std::vector<float> v(n);
    for (float& x : v) x = scale * dist(engine);
    return v;
  };

  g.check("one step on random weights (lr 0.01, no momentum)", [&] {
    std::mt19937_64 drawn = g.rng(1);
    std::normal_distribution<float> drawn_normal(0.0f, 1.0f);
    const std::vector<float> weights = normals(drawn, drawn_normal, 64, 0.1f);
    return first_wrong(
        {[&] { return run(g, random_weights, 1, 0.01f, 0.0f, [&](int) { return halves(normals(rng, normal, 64, 1)); }); },
         [&] { return run(g, weights, 1, 0.01f, 0.0f, [&](int) { return halves(normals(drawn, drawn_normal, 64, 1)); }); }});
  });
  g.check("ten steps of +1 on a weight of 2048: the master reaches 2058, and so does the model", [&] {
    // Drawn: a weight of ±2^k and steps of half its F16 spacing, 2^(k-11): each one a tie the
    // F16 model alone would lose.
    std::mt19937_64 drawn = g.rng(2);
    const int k = 8 + int(drawn() % 7), steps = 5 + int(drawn() % 11);
    const float sign = drawn() % 2 ? 1.0f : -1.0f, w = sign * std::ldexp(1.0f, k);
    const std::vector<half> step = halves({-sign * std::ldexp(1.0f, k - 11)});
    return first_wrong({[&] { return run(g, {2048.0f}, 10, 1.0f, 0.0f, [](int) { return halves({-1.0f}); }); },
                        [&] { return run(g, {w}, steps, 1.0f, 0.0f, [&](int) { return step; }); }});
  });
  g.check("a thousand steps of 2^-13 on a weight of 1 (each below half an F16 ULP) add up", [&] {
    // Drawn: weights ±2^j and steps of 2^(j-13), a quarter of the F16 spacing at the weight.
    std::mt19937_64 drawn = g.rng(3);
    const int j = -4 + int(drawn() % 9);
    const float lr = std::ldexp(1.0f, j - 13);
    return first_wrong({[&] { return run(g, {1.0f, -1.0f}, 1000, 0x1p-13f, 0.0f, [](int) { return halves({-1.0f, 1.0f}); }); },
                        [&] {
                          return run(g, {std::ldexp(1.0f, j), -std::ldexp(1.0f, j)}, 1000, lr, 0.0f,
                                     [](int) { return halves({-1.0f, 1.0f}); });
                        }});
  });
  g.check("updates below F16's smallest subnormal (lr·g ≈ 1e-9) still move the master", [&] {
    std::mt19937_64 drawn = g.rng(4);
    std::uniform_real_distribution<float> weight(0.001f, 0.5f), grad(1e-5f, 3e-5f);
    const std::vector<float> weights = {weight(drawn), -weight(drawn), weight(drawn)};
    const std::vector<half> grads = halves({grad(drawn), grad(drawn), -grad(drawn)});
    return first_wrong({[&] { return run(g, {0.001f, 0.5f}, 10, 1e-4f, 0.0f, [](int) { return halves({1e-5f, 2e-5f}); }); },
                        [&] { return run(g, weights, 10, 1e-4f, 0.0f, [&](int) { return grads; }); }});
  });
  g.check("momentum 0.9: the velocity is F32 state carried from step to step", [&] {
    std::mt19937_64 drawn = g.rng(5);
    std::normal_distribution<float> drawn_normal(0.0f, 1.0f);
    const std::vector<float> weights = normals(drawn, drawn_normal, 64, 0.1f);
    return first_wrong(
        {[&] { return run(g, random_weights, 20, 0.01f, 0.9f, [&](int) { return halves(normals(rng, normal, 64, 1e-3f)); }); },
         [&] { return run(g, weights, 20, 0.01f, 0.9f, [&](int) { return halves(normals(drawn, drawn_normal, 64, 1e-3f)); }); }});
  });
  return g.finish();
}
