// One SmallCNN training step under F16 autocast + loss scaling against the same step in
// FP32 (same weights, same batch), parameter by parameter. Chapter 10 found SmallCNN with
// F16 AMP behind FP32 after one short epoch; these tests pin down what is and is not the
// cause (lessons/10_autocast_amp/README.md, "Why SmallCNN F16 trails FP32 after 40 steps"):
//   - the unscaled AMP gradients do not depend on the loss scale (no factor S left over),
//     come back to the F32 weights as F32, and match FP32 to F16 rounding in the linear
//     layers; the convolutions differ by a few percent, all of it from the handful of
//     2x2 max-pool windows (and ReLUs) whose winner changes when conv outputs are rounded
//     to F16 — counted below;
//   - a gradient larger than 65504 / S overflows in F16, so the scaler skips that step:
//     the mechanism behind chapter 10's two skipped steps.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/nn/models/small_cnn.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"

using hg::DType;
using hg::Tensor;

namespace {

constexpr int64_t kBatch = 32;

struct Step {
  std::vector<std::string> names;
  std::vector<std::vector<double>> grads;  // unscaled, one vector per parameter
  std::vector<DType> dtypes;
};

Tensor batch_images() {
  hg::Generator gx(11);
  return Tensor::randn({kBatch, 1, 28, 28}, gx);  // (N, 1, 28, 28)
}
std::vector<int32_t> batch_labels() {
  std::vector<int32_t> y(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) y[size_t(i)] = int32_t(i % 10);
  return y;
}

// The gradients of one step from the same initial weights (seed 7): FP32 when amp is
// false, else F16 autocast with the loss multiplied by S and the gradients divided by S.
Step one_step(bool amp, double S) {
  hg::Generator gen(7);
  hg::nn::SmallCNN model(gen);
  Tensor loss;
  {
    hg::amp::Autocast ac(DType::F16, amp);
    loss = hg::cross_entropy(model(batch_images()), batch_labels());
  }
  hg::mul(loss, Tensor::scalar(S)).backward();
  Step s;
  for (const auto& [name, p] : model.named_parameters()) {
    s.names.push_back(name);
    s.dtypes.push_back(p.grad().dtype());
    std::vector<double> g = p.grad().to_double_vector();
    for (double& v : g) v /= S;
    s.grads.push_back(std::move(g));
  }
  return s;
}

// ||a − b|| / ||b||
double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    num += (a[i] - b[i]) * (a[i] - b[i]);
    den += b[i] * b[i];
  }
  return std::sqrt(num / den);
}

}  // namespace

TEST_CASE("SmallCNN: unscaled F16-autocast gradients match FP32's and do not depend on S") {
  const Step fp32 = one_step(false, 1.0);
  const Step s1 = one_step(true, 1.0), s16 = one_step(true, 65536.0), s10 = one_step(true, 1024.0);
  for (size_t k = 0; k < fp32.names.size(); ++k) {
    const std::string& n = fp32.names[k];
    INFO(n);
    CHECK(s16.dtypes[k] == DType::F32);  // back through the cast to the F32 weight
    // Scaling by a power of two is exact in F16 while nothing under- or overflows: S = 2^10
    // and 2^16 give the same bits; S = 1 differs only where tiny gradients lose bits.
    const double d_scale = rel_l2(s16.grads[k], s10.grads[k]);
    const double d_one = rel_l2(s16.grads[k], s1.grads[k]);
    const double d_fp32 = rel_l2(s16.grads[k], fp32.grads[k]);
    INFO("rel L2: S=2^16 vs 2^10 " << d_scale << ", vs S=1 " << d_one << ", AMP vs FP32 "
                                   << d_fp32);
    CHECK(d_scale <= 1e-6);
    CHECK(d_one <= 2e-3);
    // Linear layers: F16 rounding level (measured 7e-4 .. 1.2e-3). Convolutions: a few
    // percent (measured 1.2e-2 .. 3.7e-2), from the max-pool windows whose
    // winner changes (next test); a wrong factor or a wrong-dtype gradient would be O(1).
    const bool conv = n.rfind("conv", 0) == 0;
    CHECK(d_fp32 <= (conv ? 0.08 : 3e-3));
  }
}

TEST_CASE("SmallCNN: F16 rounding moves a few max-pool winners, that is the conv gradient gap") {
  hg::Generator gen(7);
  hg::nn::SmallCNN model(gen);
  const Tensor x = batch_images();
  std::vector<double> c[2];  // conv2's output (N, 64, 14, 14) in FP32 and under autocast
  for (int amp = 0; amp < 2; ++amp) {
    hg::amp::Autocast ac(DType::F16, amp == 1);
    Tensor h = hg::max_pool2d(hg::relu(model.conv1->forward(x)), 2, 2);
    c[amp] = model.conv2->forward(h).to_double_vector();
  }
  CHECK(rel_l2(c[1], c[0]) <= 2e-3);  // the values themselves: F16 rounding
  // A window whose winner changes sends its whole gradient to another pixel: with m such
  // windows out of M live ones, the gradient reaching conv2 moves by about sqrt(2m/M).
  int64_t live = 0, moved = 0;
  for (int64_t plane = 0; plane < kBatch * 64; ++plane)
    for (int64_t oh = 0; oh < 7; ++oh)
      for (int64_t ow = 0; ow < 7; ++ow) {
        const int64_t i0 = plane * 196 + 2 * oh * 14 + 2 * ow;
        const int64_t idx[4] = {i0, i0 + 1, i0 + 14, i0 + 15};
        int win[2] = {0, 0};
        double best[2] = {0, 0};
        for (int m = 0; m < 2; ++m) {
          best[m] = std::max(0.0, c[m][size_t(idx[0])]);
          for (int k = 1; k < 4; ++k) {
            const double v = std::max(0.0, c[m][size_t(idx[k])]);  // after the ReLU
            if (v > best[m]) best[m] = v, win[m] = k;
          }
        }
        if (best[0] > 0) ++live, moved += win[0] != win[1];
      }
  const double predicted = std::sqrt(2.0 * double(moved) / double(live));
  INFO(moved << " of " << live << " live windows change winner: predicted gradient move "
             << predicted);
  CHECK(moved > 0);                    // it does happen in F16 ...
  CHECK(double(moved) / live < 2e-3);  // ... to a tiny fraction of the windows,
  CHECK(predicted > 0.005);            // yet enough for a percent-level gradient change
  CHECK(predicted < 0.08);
}

TEST_CASE("SmallCNN: a gradient above 65504 / S overflows F16 and the scaler skips the step") {
  const Step fp32 = one_step(false, 1.0);
  double gmax = 0;
  for (const auto& g : fp32.grads)
    for (double v : g) gmax = std::max(gmax, std::fabs(v));
  REQUIRE(gmax > 0);
  // S a power of two: just above 65504 / gmax (overflow) and 4x below it (no overflow).
  const double s_over = std::exp2(std::ceil(std::log2(65504.0 / gmax)) + 1);
  const double s_fine = std::exp2(std::floor(std::log2(65504.0 / gmax)) - 2);
  INFO("largest FP32 gradient " << gmax << "; S over " << s_over << ", S fine " << s_fine);
  for (const double S : {s_over, s_fine}) {
    hg::Generator gen(7);
    hg::nn::SmallCNN model(gen);
    hg::optim::SGD opt(model.parameters(), {.lr = 0.05, .momentum = 0.9});
    hg::amp::ScaleRule rule;
    rule.init_scale = float(S);
    hg::amp::GradScaler scaler(rule);
    Tensor loss;
    {
      hg::amp::Autocast ac(DType::F16);
      loss = hg::cross_entropy(model(batch_images()), batch_labels());
    }
    scaler.scale(loss).backward();
    const bool stepped = scaler.step(opt);
    scaler.update();
    CHECK(stepped == (S == s_fine));
    CHECK(scaler.get_scale() == float(S == s_fine ? S : S / 2));
  }
}
