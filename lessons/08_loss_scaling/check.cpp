// Grades the chapter 08 exercise (unscale_to_master in exercise.cpp).
//
// Cases, each against a reference computed here in double:
//   1. small gradients scaled by S = 1024 and 65536 come back exactly (S is a power of two)
//   2. a scale that is not a power of two (1000): within one F32 rounding
//   3. an inf among finite values is reported; a NaN is reported; all finite is not
// Prints what is right and wrong in words, exits 0 only when everything passes.
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "lessons/08_loss_scaling/exercise.h"

namespace {
int failures = 0;
void verdict(bool ok, const char* what, const char* hint) {
  std::printf("  [%s] %s\n", ok ? "ok" : "WRONG", what);
  if (!ok) {
    std::printf("         %s\n", hint);
    ++failures;
  }
}

// Scaled F16 gradients S·g for random true gradients g.
std::vector<hg::half> scaled_grads(float scale, std::vector<double>& truth, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> expo(-20.0, -2.0);
  std::vector<hg::half> out;
  truth.clear();
  for (int i = 0; i < n; ++i) {
    const double g = std::exp2(expo(rng)) * (rng() % 2 ? 1 : -1);
    const hg::half h(float(g * scale));
    out.push_back(h);
    truth.push_back(double(float(h)) / scale);  // what an exact unscale gives
  }
  return out;
}
}  // namespace

int main() {
  std::printf("Chapter 08 exercise: the unscale step\n");
  for (float scale : {1024.0f, 65536.0f, 1000.0f}) {
    std::vector<double> truth;
    auto h = scaled_grads(scale, truth, 4096, unsigned(scale));
    std::vector<float> master(h.size(), -7.0f);
    const bool inf = unscale_to_master(h.data(), master.data(), int64_t(h.size()), scale);
    double max_rel = 0;
    for (size_t i = 0; i < h.size(); ++i)
      max_rel = std::max(max_rel, std::fabs(master[i] - truth[i]) / std::fabs(truth[i]));
    const double tol = std::exp2(-23);  // one F32 rounding
    char what[160];
    std::snprintf(what, sizeof what, "S = %g: master gradients equal F16(S·g)/S (max relative "
                  "error %.2e, allowed %.2e)", scale, max_rel, tol);
    verdict(max_rel <= tol, what, "master_grad[i] should be float(scaled_grad[i]) divided by S "
                                  "(multiplied by 1/S).");
    verdict(!inf, "all gradients finite: returns false", "return true only when an inf or NaN is seen.");
  }
  {
    std::vector<hg::half> h = {hg::half(1.0f), hg::half(70000.0f), hg::half(-2.0f)};  // 70000 -> inf
    std::vector<float> master(3);
    const bool inf = unscale_to_master(h.data(), master.data(), 3, 4.0f);
    verdict(inf, "an overflowed gradient (inf) is reported",
            "check every value with std::isfinite(float(scaled_grad[i])).");
    verdict(master[0] == 0.25f && master[2] == -0.5f,
            "the finite gradients next to the inf are still unscaled",
            "do not stop at the first inf: fill every master gradient.");
  }
  {
    std::vector<hg::half> h = {hg::half(std::numeric_limits<float>::quiet_NaN()), hg::half(1.0f)};
    std::vector<float> master(2);
    verdict(unscale_to_master(h.data(), master.data(), 2, 2.0f), "a NaN gradient is reported",
            "NaN is not finite either: std::isfinite(NaN) is false.");
  }
  if (failures == 0) std::printf("All checks passed. The unscale step is right.\n");
  else std::printf("%d check(s) failed. Edit lessons/08_loss_scaling/exercise.cpp and run "
                   "./lab check 08 again.\n", failures);
  return failures == 0 ? 0 : 1;
}
