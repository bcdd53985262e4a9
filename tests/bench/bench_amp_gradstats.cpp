// The cost of gradient statistics: MLP training steps on FashionMNIST-sized batches with
// GradStatsLogger every N steps vs without, same seed, same batches. Prints the overhead
// as a percentage of step time (goal: < 5% at N = 50).
//
//   bench_amp_gradstats [--steps 200] [--every 50] [--batch-size 128]
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <vector>

#include "framework/amp/grad_stats_logger.h"
#include "framework/nn/models/mlp.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"

using hg::Tensor;

namespace {
double run(int steps, int64_t every, int64_t batch, int64_t* events) {
  hg::Generator gen(0);
  hg::nn::MLP model(gen);
  hg::optim::SGD opt(model.parameters(), {.lr = 0.01, .momentum = 0.9});
  Tensor x = Tensor::randn({batch, 1, 28, 28}, gen);  // (B, 1, 28, 28)
  std::vector<int32_t> y(static_cast<size_t>(batch));
  for (size_t i = 0; i < y.size(); ++i) y[i] = int32_t(i % 10);
  hg::amp::GradStatsLogger stats(every);
  *events = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    hg::cross_entropy(model(x), y).backward();
    const auto named = model.named_parameters();
    if (stats.due(s)) stats.capture(s, named, 1.0);
    opt.step();
    if (stats.due(s)) *events += int64_t(stats.finish(named, true).size());
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"GradStats overhead: MLP steps with and without gradient histograms"};
  int steps = 200;
  int64_t every = 50, batch = 128;
  app.add_option("--steps", steps)->capture_default_str();
  app.add_option("--every", every)->capture_default_str();
  app.add_option("--batch-size", batch)->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  int64_t ev0 = 0, ev1 = 0;
  run(10, 0, batch, &ev0);  // warm-up
  // Alternate the two a few times and keep the best of each: the machine is shared.
  double best_off = 1e9, best_on = 1e9;
  for (int rep = 0; rep < 3; ++rep) {
    best_off = std::min(best_off, run(steps, 0, batch, &ev0));
    best_on = std::min(best_on, run(steps, every, batch, &ev1));
  }
  std::printf("MLP step (batch %lld): %.2f ms without stats, %.2f ms with stats every %lld steps "
              "(%lld histograms per run)\n", (long long)batch, 1e3 * best_off, 1e3 * best_on,
              (long long)every, (long long)ev1);
  std::printf("RESULT gradstats_overhead_percent=%.2f every=%lld\n",
              100.0 * (best_on - best_off) / best_off, (long long)every);
  return 0;
}
