// The parts of data parallelism that need no second process: the ring's schedule (simulated
// with every rank's buffer in this process), the sampler's split of an epoch (and of a
// global batch of text windows), the buckets,
// the pipeline's bubble, and the two hooks data parallelism adds to the engine (autograd's
// grad-ready hook, the GradScaler's found-inf reducer).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "framework/amp/grad_scaler.h"
#include "framework/autograd/backward.h"
#include "framework/data/loader.h"
#include "framework/dist/communicator.h"
#include "framework/dist/ddp.h"
#include "framework/dist/parallel_layers.h"
#include "framework/dist/ring_allreduce.h"
#include "framework/dist/sampler.h"
#include "framework/ops/ops.h"
#include "framework/optim/sgd.h"

using namespace hg;
using hg::dist::block_range;

// ---- the ring -----------------------------------------------------------------------------

TEST_CASE("ring schedule: every rank ends with the exact sum, for 1 to 8 ranks and lengths not divisible by N") {
  for (int N = 1; N <= 8; ++N)
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(64), int64_t(1001)}) {
      // Small integers: every order of addition gives the exact sum, so any mistake shows.
      std::vector<std::vector<float>> buffers(static_cast<size_t>(N), std::vector<float>(static_cast<size_t>(n)));
      std::vector<float> want(size_t(n), 0.0f);
      for (int k = 0; k < N; ++k)
        for (int64_t i = 0; i < n; ++i) {
          buffers[size_t(k)][size_t(i)] = float((k + 1) * 100 + i % 13);
          want[size_t(i)] += buffers[size_t(k)][size_t(i)];
        }
      const dist::RingTraffic t = dist::simulate_ring_allreduce(buffers);
      INFO("N = " << N << ", n = " << n);
      CHECK(t.steps == 2 * (N - 1));
      for (int k = 0; k < N; ++k) CHECK(buffers[size_t(k)] == want);
    }
}

TEST_CASE("ring schedule: each rank sends 2(N-1)/N of the buffer") {
  for (int N = 2; N <= 8; ++N) {
    const int64_t n = 840;  // divisible by 2..8: every chunk the same size
    std::vector<std::vector<float>> buffers(size_t(N), std::vector<float>(size_t(n), 1.0f));
    const dist::RingTraffic t = dist::simulate_ring_allreduce(buffers);
    INFO("N = " << N << ": sent " << t.bytes_sent << " of " << t.buffer_bytes);
    CHECK(t.bytes_sent * N == 2 * (N - 1) * t.buffer_bytes);
  }
}

TEST_CASE("ring schedule: with random floats every rank holds the same bits, and chunk j is summed from rank j on") {
  const int N = 4;
  const int64_t n = 4;  // one element per chunk
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::vector<float>> buffers(static_cast<size_t>(N), std::vector<float>(static_cast<size_t>(n)));
  for (auto& b : buffers)
    for (float& x : b) x = u(rng) * std::pow(2.0f, float(int(rng() % 20) - 10));
  const auto x = buffers;  // the inputs
  dist::simulate_ring_allreduce(buffers);
  for (int k = 1; k < N; ++k) CHECK(buffers[size_t(k)] == buffers[0]);
  for (int j = 0; j < N; ++j) {  // x_{j+3} + (x_{j+2} + (x_{j+1} + x_j)), ranks mod 4
    float s = x[size_t(j)][size_t(j)];
    for (int r = 1; r < N; ++r) s = x[size_t((j + r) % N)][size_t(j)] + s;
    CHECK(buffers[0][size_t(j)] == s);
  }
}

TEST_CASE("ring schedule: a schedule whose neighbours disagree is refused, naming the step and ranks") {
  std::vector<std::vector<float>> buffers(3, std::vector<float>(6, 1.0f));
  auto off_by_one = [](int rank, int N, int step) {
    dist::RingStep s = dist::ring_step(rank, N, step);
    s.recv_chunk = (s.recv_chunk + 1) % N;
    return s;
  };
  CHECK_THROWS_WITH(dist::simulate_ring_allreduce(buffers, off_by_one),
                    doctest::Contains("step 0: rank 0 expects chunk 0 from rank 2, which sends chunk 2"));
}

TEST_CASE("block_range: near-equal blocks that tile 0 .. n") {
  CHECK(block_range(10, 4, 0).begin == 0);
  CHECK(block_range(10, 4, 0).end == 3);
  CHECK(block_range(10, 4, 1).end == 6);
  CHECK(block_range(10, 4, 2).end == 8);
  CHECK(block_range(10, 4, 3).end == 10);
  CHECK(block_range(2, 4, 3).size() == 0);
}

// ---- the sampler ----------------------------------------------------------------------------

TEST_CASE("sampler: N ranks use every example exactly once per epoch, in the single-process global batches") {
  for (int N : {1, 2, 3, 4})
    for (int64_t n : {int64_t(64), int64_t(100), int64_t(101)}) {
      const int64_t B = 16;
      const uint64_t seed = 5;
      for (int64_t epoch : {0, 1}) {
        const std::vector<int64_t> order = shuffled_order(n, seed, epoch);  // what one process reads
        std::vector<int> used(size_t(n), 0);
        const dist::DistributedSampler s0(n, B, 0, N, seed);
        for (int64_t step = 0; step < s0.steps_per_epoch(); ++step) {
          std::set<int64_t> global(order.begin() + step * B, order.begin() + std::min(n, (step + 1) * B));
          std::set<int64_t> union_of_ranks;
          // The ranks' mean losses, weighted by loss_weight and averaged over ranks, are the
          // global batch's mean loss. With loss ℓ_i = i: (1/N) Σ_k w_k · mean_k = Σ ℓ_i / B_s.
          double weighted = 0, global_sum = 0;
          for (int64_t i : global) global_sum += double(i);
          for (int k = 0; k < N; ++k) {
            const dist::DistributedSampler s(n, B, k, N, seed);
            const std::vector<int64_t> mine = s.indices(epoch, step);
            double sum = 0;
            for (int64_t i : mine) {
              ++used[size_t(i)];
              union_of_ranks.insert(i);
              sum += double(i);
            }
            if (!mine.empty()) weighted += s.loss_weight(epoch, step) * (sum / double(mine.size())) / N;
          }
          INFO("N " << N << " n " << n << " epoch " << epoch << " step " << step);
          CHECK(union_of_ranks == global);
          CHECK(weighted == doctest::Approx(global_sum / double(global.size())).epsilon(1e-12));
        }
        for (int64_t i = 0; i < n; ++i) CHECK(used[size_t(i)] == 1);
      }
    }
}

TEST_CASE("sampler: bad arguments are refused with a message") {
  CHECK_THROWS_WITH(dist::DistributedSampler(0, 8, 0, 2, 0), doctest::Contains("no examples"));
  CHECK_THROWS_WITH(dist::DistributedSampler(10, 8, 2, 2, 0), doctest::Contains("rank 2 of 2 is not a rank"));
  CHECK_THROWS_WITH(dist::DistributedSampler(10, 3, 0, 4, 0), doctest::Contains("at least one example per rank"));
}

TEST_CASE("text sampler: every window of a global batch on exactly one rank, weights that give the global mean") {
  std::vector<int32_t> tokens(500);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = int32_t((i * 7) % 13);
  const int64_t T = 9;
  for (int N : {1, 2, 3, 4})
    for (int64_t B : {int64_t(4), int64_t(7), int64_t(12)}) {
      if (B < N) continue;
      for (int64_t step : {0, 1, 5}) {
        const data::TokenBatch global = data::random_batch(tokens, B, T, 3, step);  // what one process reads
        std::vector<int> used(size_t(B), 0);
        // Mean-loss bookkeeping as for the images: with loss ℓ_i = i for window i,
        // (1/N) Σ_k w_k · mean_k must be the global mean Σ ℓ_i / B.
        double weighted = 0;
        for (int k = 0; k < N; ++k) {
          const dist::DistributedTextSampler s(tokens, B, T, k, N, 3);
          const data::TokenBatch mine = s.batch(step);
          INFO("N " << N << " B " << B << " step " << step << " rank " << k);
          REQUIRE(mine.B == s.rank_batch_size());
          REQUIRE(mine.T == T);
          REQUIRE(int64_t(mine.x.size()) == mine.B * T);
          double sum = 0;
          for (int64_t j = 0; j < mine.B; ++j) {
            // rank k's j-th window is window k + j·N of the global batch, the same tokens
            const int64_t i = k + j * N;
            REQUIRE(i < B);
            ++used[size_t(i)];
            sum += double(i);
            CHECK(mine.starts[size_t(j)] == global.starts[size_t(i)]);
            CHECK(std::equal(mine.x.begin() + j * T, mine.x.begin() + (j + 1) * T, global.x.begin() + i * T));
            CHECK(std::equal(mine.y.begin() + j * T, mine.y.begin() + (j + 1) * T, global.y.begin() + i * T));
          }
          weighted += s.loss_weight() * (sum / double(mine.B)) / N;
        }
        for (int64_t i = 0; i < B; ++i) CHECK(used[size_t(i)] == 1);
        CHECK(weighted == doctest::Approx(double(B - 1) / 2).epsilon(1e-12));
      }
    }
  const std::vector<int32_t> few(5, 0);
  CHECK_THROWS_WITH(dist::DistributedTextSampler(tokens, 3, T, 0, 4, 0), doctest::Contains("at least one sequence per rank"));
  CHECK_THROWS_WITH(dist::DistributedTextSampler(tokens, 8, T, 2, 2, 0), doctest::Contains("rank 2 of 2 is not a rank"));
  CHECK_THROWS_WITH(dist::DistributedTextSampler(few, 8, T, 0, 2, 0), doctest::Contains("5 tokens cannot hold a window"));
}

// ---- buckets and the pipeline ----------------------------------------------------------------

TEST_CASE("buckets: last parameter first, a new bucket when the cap would be passed, big ones alone") {
  // The MLP's sizes in bytes: fc1.weight fc1.bias fc2.weight fc2.bias fc3.weight fc3.bias
  const std::vector<int64_t> mlp = {784 * 512 * 4, 512 * 4, 512 * 256 * 4, 256 * 4, 256 * 10 * 4, 10 * 4};
  const auto one_mb = dist::assign_buckets(mlp, 1 << 20);
  REQUIRE(one_mb.size() == 2);
  CHECK(one_mb[0] == std::vector<size_t>{5, 4, 3, 2, 1});
  CHECK(one_mb[1] == std::vector<size_t>{0});
  const auto tiny = dist::assign_buckets(mlp, 1);
  CHECK(tiny.size() == 6);  // every parameter alone
  const auto huge = dist::assign_buckets(mlp, int64_t(1) << 40);
  CHECK(huge.size() == 1);
}

TEST_CASE("pipeline: the simulated GPipe bubble is (p-1)/(m+p-1)") {
  for (int p : {1, 2, 4, 8})
    for (int m : {1, 2, 4, 8, 32}) {
      const dist::PipelineSchedule s = dist::simulate_gpipe(p, m);
      INFO("p " << p << " m " << m);
      CHECK(s.busy == 2 * int64_t(p) * m);
      CHECK(s.ticks == 2 * (m + p - 1));
      CHECK(s.bubble() == doctest::Approx(dist::gpipe_bubble_formula(p, m)));
    }
  const dist::PipelineSchedule s = dist::simulate_gpipe(3, 2);
  CHECK(s.rows[0] == "F0F1........B1B0");
  CHECK(s.rows[2] == "....F0F1B1B0....");
}

// ---- the hooks --------------------------------------------------------------------------------

TEST_CASE("grad-ready hook: once per parameter, after its last gradient, last layer first") {
  Generator gen(1);
  Tensor w1 = Tensor::randn({3, 4}, gen).requires_grad_(true);
  Tensor w2 = Tensor::randn({2, 3}, gen).requires_grad_(true);
  Tensor x = Tensor::randn({5, 4}, gen);
  // w2 is used twice: its hook must wait for both gradients.
  Tensor h = relu(linear(x, w1));                   // (5, 3)
  Tensor y = add(linear(h, w2), linear(h, w2));     // (5, 2)
  Tensor loss = sum(y);
  std::vector<std::string> fired;
  std::vector<float> w2_grad_when_fired;
  run_backward(loss, Tensor::ones({}), [&](const Tensor& leaf) {
    fired.push_back(leaf.same(w1) ? "w1" : leaf.same(w2) ? "w2" : "?");
    if (leaf.same(w2)) w2_grad_when_fired = leaf.grad().to_vector();
  });
  CHECK(fired == std::vector<std::string>{"w2", "w1"});
  CHECK(w2_grad_when_fired == w2.grad().to_vector());  // complete when the hook ran
  // Without a hook: the same gradients.
  Tensor w1_grad = w1.grad().clone();
  w1.zero_grad();
  w2.zero_grad();
  loss.backward();
  CHECK(w1.grad().to_vector() == w1_grad.to_vector());
}

TEST_CASE("grad-ready hook: a leaf the loss does not depend on through a gradient still fires once") {
  Generator gen(2);
  Tensor a = Tensor::randn({4}, gen).requires_grad_(true);
  Tensor b = Tensor::randn({4}, gen).requires_grad_(true);
  Tensor loss = sum(mul(a, b));
  int count = 0;
  run_backward(loss, Tensor::ones({}), [&](const Tensor&) { ++count; });
  CHECK(count == 2);
  int root_count = 0;  // backward on a leaf itself
  run_backward(a, Tensor::ones({4}), [&](const Tensor&) { ++root_count; });
  CHECK(root_count == 1);
}

TEST_CASE("GradScaler found-inf reducer: the job's answer decides, every unscale asks once") {
  Generator gen(3);
  Tensor p = Tensor::randn({4}, gen).requires_grad_(true);
  optim::SGD opt({p}, {.lr = 0.1});
  amp::GradScaler scaler;
  int calls = 0;
  bool another_rank_overflowed = true;
  scaler.set_found_inf_reducer([&](bool here) {
    ++calls;
    return here || another_rank_overflowed;
  });
  const std::vector<float> before = p.to_vector();
  p.set_grad(Tensor::ones({4}));  // finite here
  CHECK_FALSE(scaler.step(opt));  // but another rank found an inf: skip
  scaler.update();
  CHECK(p.to_vector() == before);
  CHECK(scaler.get_scale() == 32768.0f);  // backed off
  another_rank_overflowed = false;
  p.set_grad(Tensor::ones({4}));
  CHECK(scaler.step(opt));
  scaler.update();
  CHECK(calls == 2);
}
