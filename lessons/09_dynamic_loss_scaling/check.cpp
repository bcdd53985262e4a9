// Grades the chapter 09 exercise (student_next_scale in exercise.cpp).
//
//   1. scripted sequences with the expected scale and tracker written out by hand
//   2. 2000 good steps double the scale; an inf at step 1999 halves it and resets the count
//   3. bounds and an overflowing growth
//   4. 20000 random steps against framework/amp's rule
// Prints what is right and wrong in words; exits 0 only when everything passes.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "lessons/09_dynamic_loss_scaling/exercise.h"

using hg::amp::ScaleRule;
using hg::amp::ScaleState;

namespace {
int failures = 0;
void verdict(bool ok, const std::string& what, const char* hint) {
  std::printf("  [%s] %s\n", ok ? "ok" : "WRONG", what.c_str());
  if (!ok) {
    std::printf("         %s\n", hint);
    ++failures;
  }
}
}  // namespace

int main() {
  std::printf("Chapter 09 exercise: the loss scaler's update rule\n");
  {
    ScaleRule r;
    r.init_scale = 8.0f;
    r.growth_interval = 3;
    // script F F F F I I F F F: scale 8 8 16 16 8 4 4 4 8, tracker 1 2 0 1 0 0 1 2 0
    const char* script = "FFFFIIFFF";
    const float want_s[] = {8, 8, 16, 16, 8, 4, 4, 4, 8};
    const int64_t want_t[] = {1, 2, 0, 1, 0, 0, 1, 2, 0};
    ScaleState s{8.0f, 0};
    bool ok = true;
    std::string first_bad;
    for (int i = 0; script[i]; ++i) {
      s = student_next_scale(s, script[i] == 'I', r);
      if ((s.scale != want_s[i] || s.growth_tracker != want_t[i]) && ok) {
        ok = false;
        first_bad = " (first wrong at step " + std::to_string(i + 1) + ": got scale " +
                    std::to_string(s.scale) + " tracker " + std::to_string(s.growth_tracker) +
                    ", expected " + std::to_string(want_s[i]) + " / " + std::to_string(want_t[i]) + ")";
      }
    }
    verdict(ok, "the script FFFFIIFFF with growth interval 3" + first_bad,
            "finite: tracker+1, and at growth_interval double S and reset; inf: halve S, reset.");
  }
  {
    ScaleRule r;  // 2^16, 2000
    ScaleState s{65536.0f, 0};
    for (int i = 0; i < 2000; ++i) s = student_next_scale(s, false, r);
    verdict(s.scale == 131072.0f && s.growth_tracker == 0, "2000 finite steps double 2^16 to 2^17",
            "grow exactly when tracker + 1 reaches growth_interval.");
    s = ScaleState{65536.0f, 0};
    for (int i = 0; i < 1998; ++i) s = student_next_scale(s, false, r);
    s = student_next_scale(s, true, r);
    verdict(s.scale == 32768.0f && s.growth_tracker == 0,
            "an inf at step 1999 halves the scale and resets the count",
            "on inf: S times backoff_factor, tracker back to 0.");
  }
  {
    ScaleRule r;
    r.growth_interval = 1;
    r.min_scale = 1.0f;
    r.max_scale = 16.0f;
    ScaleState s{16.0f, 0};
    s = student_next_scale(s, false, r);
    verdict(s.scale == 16.0f, "growth stops at max_scale", "clamp S to [min_scale, max_scale].");
    s = ScaleState{1.0f, 0};
    s = student_next_scale(s, true, r);
    verdict(s.scale == 1.0f, "backoff stops at min_scale", "clamp S to [min_scale, max_scale].");
    ScaleRule big;
    big.growth_interval = 1;
    s = student_next_scale(ScaleState{3.0e38f, 0}, false, big);
    verdict(std::isfinite(s.scale) && s.scale == 3.0e38f && s.growth_tracker == 0,
            "a growth that would overflow F32 is not applied",
            "compute S·growth_factor and keep it only if std::isfinite.");
  }
  {
    std::mt19937 rng(9);
    ScaleRule r;
    r.growth_interval = 5;
    r.min_scale = 1.0f;
    ScaleState a{1024.0f, 0}, b{1024.0f, 0};
    int64_t bad_at = -1;
    for (int64_t i = 0; i < 20000 && bad_at < 0; ++i) {
      const bool inf = rng() % 7 == 0;
      a = student_next_scale(a, inf, r);
      b = hg::amp::next_scale(b, inf, r);
      if (a.scale != b.scale || a.growth_tracker != b.growth_tracker) bad_at = i;
    }
    verdict(bad_at < 0, bad_at < 0 ? "20000 random steps agree with framework/amp/scale_rule.cpp"
                                   : "random steps disagree with the framework from step " + std::to_string(bad_at),
            "compare your rule with exercise.h line by line.");
  }
  if (failures == 0) std::printf("All checks passed. That is GradScaler's update rule.\n");
  else std::printf("%d check(s) failed. Edit lessons/09_dynamic_loss_scaling/exercise.cpp and run "
                   "./lab check 09 again.\n", failures);
  return failures == 0 ? 0 : 1;
}
