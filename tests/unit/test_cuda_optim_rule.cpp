// CPU tests of the GPU optimizers' per-element rules (cuda/ops/optim.h: sgd_update,
// adam_update — the kernels' own code, compiled here by g++) against the CPU optimizers of
// framework/optim on the same values. No GPU needed.
//
//   weight decay 0   adds nothing: a parameter that is inf stays inf (0 · inf would be NaN),
//                    as on the CPU
//   agreement        several steps of SGD (momentum, Nesterov, dampening, decay), Adam and
//                    AdamW give the CPU's values (within a few F32 ulps: the GPU rule takes
//                    1 − β in F32, the CPU in double)
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "cuda/ops/optim.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"

using namespace hg;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

Tensor param(const std::vector<float>& v) {
  Tensor p = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
  p.requires_grad_(true);
  return p;
}

void set_grad(Tensor& p, const std::vector<float>& g) {
  p.set_grad(Tensor::from_vector(g, {static_cast<int64_t>(g.size())}));
}

cuda::AdamScalars adam_scalars(const optim::AdamOptions& o, bool decoupled, int64_t step) {
  cuda::AdamScalars s;
  s.beta1 = float(o.beta1);
  s.beta2 = float(o.beta2);
  s.eps = float(o.eps);
  s.weight_decay = float(o.weight_decay);
  s.step_size = float(o.lr / (1.0 - std::pow(o.beta1, double(step))));
  s.bc2_sqrt = float(std::sqrt(1.0 - std::pow(o.beta2, double(step))));
  s.decay = float(1.0 - o.lr * o.weight_decay);
  s.decoupled = decoupled;
  return s;
}

}  // namespace

TEST_CASE("GPU SGD rule: weight decay 0 adds nothing, so inf stays inf as on the CPU") {
  float buf = 0.0f;
  const float p = cuda::sgd_update(kInf, 1.0f, buf, 0.1f, 0.0f, 0.0f, /*weight_decay=*/0.0f, false, true);
  CHECK(std::isinf(p));
  Tensor cpu = param({kInf, -kInf});
  optim::SGDOptions o;
  o.lr = 0.1;
  optim::SGD opt({cpu}, o);
  set_grad(cpu, {1.0f, 1.0f});
  opt.step();
  CHECK(std::isinf(cpu.to_vector()[0]));
  CHECK(std::isinf(cpu.to_vector()[1]));
  float buf2 = 0.0f;
  CHECK(cuda::sgd_update(-kInf, 1.0f, buf2, 0.1f, 0.0f, 0.0f, 0.0f, false, true) == cpu.to_vector()[1]);
}

TEST_CASE("GPU Adam rule: weight decay 0 adds nothing, so inf stays inf as on the CPU") {
  optim::AdamOptions o;
  o.lr = 0.01;
  float m = 0.0f, v = 0.0f;
  const float p = cuda::adam_update(kInf, 0.5f, m, v, adam_scalars(o, false, 1));
  CHECK(std::isinf(p));
  Tensor cpu = param({kInf});
  optim::Adam opt({cpu}, o);
  set_grad(cpu, {0.5f});
  opt.step();
  CHECK(std::isinf(cpu.to_vector()[0]));
}

TEST_CASE("GPU SGD rule gives the CPU optimizer's values, step after step") {
  struct Case { double momentum, dampening, weight_decay; bool nesterov; };
  for (Case c : {Case{0, 0, 0, false}, Case{0.9, 0, 0, false}, Case{0.9, 0.1, 1e-2, false}, Case{0.9, 0, 5e-4, true}}) {
    CAPTURE(c.momentum);
    CAPTURE(c.nesterov);
    const std::vector<float> p0 = {1.0f, -2.0f, 0.25f, 3.5f};
    Tensor cpu = param(p0);
    optim::SGDOptions o;
    o.lr = 0.05;
    o.momentum = c.momentum;
    o.dampening = c.dampening;
    o.weight_decay = c.weight_decay;
    o.nesterov = c.nesterov;
    optim::SGD opt({cpu}, o);
    std::vector<float> gpu = p0, buf(p0.size(), 0.0f);
    for (int step = 0; step < 4; ++step) {
      const std::vector<float> g = {0.5f - step * 0.1f, 1.0f, -0.75f, 0.125f * step};
      set_grad(cpu, g);
      opt.step();
      for (size_t k = 0; k < gpu.size(); ++k)
        gpu[k] = cuda::sgd_update(gpu[k], g[k], buf[k], float(o.lr), float(o.momentum), float(o.dampening),
                                  float(o.weight_decay), o.nesterov, step == 0);
      const std::vector<float> want = cpu.to_vector();
      for (size_t k = 0; k < gpu.size(); ++k) CHECK(gpu[k] == doctest::Approx(want[k]).epsilon(1e-6));
    }
  }
}

TEST_CASE("GPU Adam and AdamW rules give the CPU optimizer's values, step after step") {
  for (bool decoupled : {false, true}) {
    for (double wd : {0.0, 0.01}) {
      CAPTURE(decoupled);
      CAPTURE(wd);
      const std::vector<float> p0 = {1.0f, -2.0f, 0.25f, 3.5f};
      Tensor cpu = param(p0);
      optim::AdamOptions o;
      o.lr = 0.01;
      o.weight_decay = wd;
      optim::Adam opt({cpu}, o, decoupled);
      std::vector<float> gpu = p0, m(p0.size(), 0.0f), v(p0.size(), 0.0f);
      for (int step = 1; step <= 4; ++step) {
        const std::vector<float> g = {0.5f - step * 0.1f, 1.0f, -0.75f, 0.125f * step};
        set_grad(cpu, g);
        opt.step();
        const cuda::AdamScalars s = adam_scalars(o, decoupled, step);
        for (size_t k = 0; k < gpu.size(); ++k) gpu[k] = cuda::adam_update(gpu[k], g[k], m[k], v[k], s);
        const std::vector<float> want = cpu.to_vector();
        for (size_t k = 0; k < gpu.size(); ++k) CHECK(gpu[k] == doctest::Approx(want[k]).epsilon(1e-6));
      }
    }
  }
}
