#include "framework/train/comparison.h"

#include <cmath>
#include <cstdio>

#include "framework/eval/metrics.h"

namespace hg::train {

void GradTally::add(const amp::GradHistogram& h) {
  values += h.total;
  underflow += h.fp16_underflow;
  zeros += h.zeros;
  if (h.lost_update_fraction >= 0) {  // < 0: not measured (a skipped step moves no weight)
    lost_sum += h.lost_update_fraction;
    ++lost_samples;
  }
}

GradientPlace where_gradients_sit(const std::vector<std::vector<amp::GradHistogram>>& logged) {
  std::vector<int64_t> counts;
  int exp_min = -40;
  int64_t total = 0, under = 0, over = 0, zeros = 0, nonfinite = 0;
  for (const auto& step : logged)
    for (const auto& h : step) {
      if (counts.empty()) counts.assign(h.counts.size(), 0);
      exp_min = h.exp_min;
      for (size_t i = 0; i < h.counts.size() && i < counts.size(); ++i) counts[i] += h.counts[i];
      total += h.total;
      under += h.fp16_underflow;
      over += h.fp16_overflow;
      zeros += h.zeros;
      nonfinite += h.inf + h.nan;
    }
  GradientPlace w;
  if (total == 0) return w;
  int64_t in_bins = 0, seen = 0;
  for (auto c : counts) in_bins += c;
  for (size_t i = 0; i < counts.size() && in_bins > 0; ++i) {  // no finite non-zero value: no median
    seen += counts[i];
    if (2 * seen >= in_bins) {
      w.has_median = true;
      w.median_exp = exp_min + int(i);
      break;
    }
  }
  w.underflow = double(under) / double(total);
  w.overflow = double(over + nonfinite) / double(total);
  w.zeros = double(zeros) / double(total);
  return w;
}

void end_of_epoch(ComparisonRun& r, nn::Module& model, const data::ImageDataset& test, const PredictOptions& how,
                  io::RunLog& log, int64_t step, int epoch, double seconds_per_epoch) {
  const eval::Report rep = eval::classification_report(test.labels, predict(model, test, how), test.num_classes);
  r.test_accuracy = rep.accuracy;
  r.macro_f1 = rep.macro_f1;
  log.scalar(step, "test/accuracy", rep.accuracy, epoch);
  log.scalar(step, "time/epoch_s", seconds_per_epoch, epoch);
  std::printf("  %-10s epoch %d  loss %.4f  test accuracy %.4f  (%.1f s)\n", r.precision.c_str(), epoch + 1,
              r.last_loss, rep.accuracy, seconds_per_epoch);
}

void print_comparison(const std::vector<ComparisonRun>& runs) {
  std::printf("\n== 3. comparison ==\n");
  std::printf("%-15s %9s %9s %10s %11s %10s %12s %9s\n", "precision", "test acc", "macro F1", "last loss",
              "grad<2^-24", "grad==0", "lost updates", "s/epoch");
  for (const auto& r : runs)
    if (r.diverged) std::printf("%-15s %s\n", r.precision.c_str(), r.diverged.message().c_str());
    else std::printf("%-15s %9.4f %9.4f %10.4f %10.3f%% %9.3f%% %11.1f%% %9.2f\n", r.precision.c_str(),
                     r.test_accuracy, r.macro_f1, r.last_loss, 100 * r.grads.underflow_fraction(),
                     100 * r.grads.zero_fraction(), 100 * r.grads.lost_updates(), r.seconds_per_epoch);
}

void print_gradient_place(const std::vector<ComparisonRun>& runs) {
  std::printf("\nwhere the F16 gradients sit (as backward produced them, i.e. times S):\n");
  std::printf("%-15s %10s %10s %15s %11s %11s %10s %8s %7s\n", "precision", "first S", "last S",
              "median log2|g|", "==0 in F16", ">65504/inf", "overflowed", "skipped", "finite");
  bool no_median = false;
  for (const auto& r : runs) {
    const GradientPlace w = where_gradients_sit(r.hist_scaled);
    const std::string median = w.has_median ? std::to_string(w.median_exp) : "none";
    no_median = no_median || !w.has_median;
    std::printf("%-15s %10g %10g %15s %10.3f%% %10.4f%% %10lld %8lld %7s\n", r.precision.c_str(),
                r.scales.empty() ? 1.0 : r.scales.front(), r.scales.empty() ? 1.0 : r.scales.back(),
                median.c_str(), 100 * w.zeros, 100 * w.overflow, (long long)r.overflow_steps,
                (long long)r.skipped_steps, r.diverged ? "NO" : "yes");
  }
  if (no_median)
    std::printf("median none: no logged gradient value was finite and non-zero (all were 0, inf or "
                "NaN, or none was logged)\n");
}

void print_scale_changes(const ComparisonRun& r) {
  std::printf("\nthe scale over time (every change; log2 S):\n");
  for (size_t i = 0; i < r.scales.size(); ++i)
    if (i == 0 || r.scales[i] != r.scales[i - 1])
      std::printf("  step %5lld  S = 2^%-4.0f %s\n", (long long)(r.first_step + int64_t(i)), std::log2(r.scales[i]),
                  i > 0 && r.scales[i] < r.scales[i - 1] ? "(halved: the step before overflowed and was skipped)"
                  : i > 0                                ? "(doubled: growth interval of finite steps)"
                                                         : "");
}

int print_footer(const std::string& model, int epochs, const std::vector<ComparisonRun>& runs) {
  std::printf("\ngrad<2^-24: gradient values below F16's smallest subnormal, 2^-24 (in F16 those up to "
              "2^-25 round to 0, the others up to 2^-24)\n"
              "lost updates: elements with a non-zero gradient whose weight did not change\n"
              "run logs: ");
  for (const auto& r : runs) std::printf("%s/  ", r.dir.c_str());
  std::printf("(./lab view)\n");
  bool diverged = false;
  for (const auto& r : runs) {
    diverged = diverged || r.diverged;
    if (!r.diverged)
      std::printf("RESULT model=%s precision=%s epochs=%d seconds_per_epoch=%.2f test_accuracy=%.4f "
                  "lost_updates=%.4f\n", model.c_str(), r.precision.c_str(), epochs, r.seconds_per_epoch,
                  r.test_accuracy, r.grads.lost_updates());
  }
  return diverged ? kExitDiverged : 0;  // the table above says which run and why
}

}  // namespace hg::train
