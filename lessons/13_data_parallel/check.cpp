// Grades the chapter 13 exercise: student_ring_step, the schedule of the ring allreduce.
//
// The learner's schedule runs on N simulated ranks in this process. First the grader follows,
// for every chunk of every rank, whose numbers it holds (a count per contributing rank), so a
// wrong schedule is explained by what happened: a chunk received that the left neighbour did
// not send, a rank's numbers added twice, a rank's own numbers overwritten, a sum left
// incomplete. Then the same schedule sums real numbers (hg::dist::simulate_ring_allreduce):
// exact sums of small integers, and the same bits on every rank for random floats.
//
// Every check runs on inputs drawn from this grading's seed beside the hand-picked ones: the
// numbers summed, the buffer lengths and, from 4 ranks on, rings larger than 8 ranks. Each
// rank's step is asked in an order drawn from the seed, so a schedule recorded from one
// grading's calls, or answered in the order they came, fits no other.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "framework/dist/ring_allreduce.h"
#include "lessons/13_data_parallel/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;

namespace {

int mod(int x, int n) { return ((x % n) + n) % n; }

std::string ranks_list(const std::vector<int>& counts, int want) {
  std::string s;
  for (size_t r = 0; r < counts.size(); ++r)
    if (counts[r] == want) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s.empty() ? "none" : s;
}

// Follows whose numbers each chunk holds. "" when every rank ends with every chunk's
// complete sum, each rank's numbers counted once.
// The schedule is asked rank by rank and step by step in an order drawn from stream `stream`.
std::string follow(grader::Grader& g, int N, uint64_t stream) {
  using Counts = std::vector<int>;  // per contributing rank: how often its numbers are in
  std::vector<std::vector<Counts>> chunk(size_t(N), std::vector<Counts>(size_t(N), Counts(size_t(N), 0)));
  for (int k = 0; k < N; ++k)
    for (int c = 0; c < N; ++c) chunk[size_t(k)][size_t(c)][size_t(k)] = 1;  // rank k's own numbers
  const int steps = 2 * (N - 1);
  std::vector<std::pair<int, int>> asked;  // (step, rank), step by step
  for (int step = 0; step < steps; ++step)
    for (int k = 0; k < N; ++k) asked.emplace_back(step, k);
  const std::vector<hg::dist::RingStep> schedule =
      g.answers(asked, stream, [N](const std::pair<int, int>& a) { return student_ring_step(a.second, N, a.first); });
  for (int step = 0; step < steps; ++step) {
    const std::string at = format("%d ranks, step %d (%s): ", N, step,
                                  step < N - 1 ? "phase 1, reduce-scatter" : "phase 2, all-gather");
    std::vector<hg::dist::RingStep> plan;
    for (int k = 0; k < N; ++k) {
      plan.push_back(schedule[size_t(step) * N + k]);
      const hg::dist::RingStep& p = plan.back();
      if (p.send_chunk < 0 || p.send_chunk >= N || p.recv_chunk < 0 || p.recv_chunk >= N)
        return at + format("rank %d sends chunk %d and receives chunk %d, but the chunks are 0 to %d. "
                           "Take chunk numbers mod N.", k, p.send_chunk, p.recv_chunk, N - 1);
    }
    for (int k = 0; k < N; ++k) {
      const int left = mod(k - 1, N);
      if (plan[size_t(k)].recv_chunk != plan[size_t(left)].send_chunk)
        return at + format("rank %d expects chunk %d from rank %d, but rank %d sends chunk %d. Every rank "
                           "receives, in the same step, exactly what its left neighbour sends: rank k's "
                           "receive is rank k−1's send. ", k, plan[size_t(k)].recv_chunk, left, left,
                           plan[size_t(left)].send_chunk) + see("## 2. The ring");
    }
    std::vector<Counts> in_flight;
    for (int k = 0; k < N; ++k) in_flight.push_back(chunk[size_t(k)][size_t(plan[size_t(k)].send_chunk)]);
    for (int k = 0; k < N; ++k) {
      const int left = mod(k - 1, N), c = plan[size_t(k)].recv_chunk;
      Counts& mine = chunk[size_t(k)][size_t(c)];
      const Counts& got = in_flight[size_t(left)];
      if (plan[size_t(k)].accumulate) {
        for (int r = 0; r < N; ++r)
          if (mine[size_t(r)] > 0 && got[size_t(r)] > 0)
            return at + format("rank %d adds the chunk %d it receives to its own, but both already hold rank "
                               "%d's numbers: they would be counted twice. %s ", k, c, r,
                               step < N - 1 ? "In phase 1 a chunk must pick up each rank's numbers once: "
                                              "does rank k send the chunk it last added to?"
                                            : "In phase 2 the received chunk is a complete sum: it "
                                              "replaces the rank's own (accumulate = false).") +
                 see("## 2. The ring");
        for (int r = 0; r < N; ++r) mine[size_t(r)] += got[size_t(r)];
      } else {
        if (mine[size_t(k)] > 0 && got[size_t(k)] == 0)
          return at + format("rank %d replaces its chunk %d with the one from rank %d, which does not hold "
                             "rank %d's numbers: they are lost. %s ", k, c, left, k,
                             step < N - 1 ? "In phase 1 the received chunk is added to the rank's own "
                                            "(accumulate = true)."
                                          : "In phase 2 a rank must send only a chunk whose sum is "
                                            "complete.") +
               see("## 2. The ring");
        mine = got;
      }
    }
  }
  for (int k = 0; k < N; ++k)
    for (int c = 0; c < N; ++c) {
      const Counts& h = chunk[size_t(k)][size_t(c)];
      bool complete = true;
      for (int x : h) complete = complete && x == 1;
      if (!complete)
        return format("%d ranks: after the 2(N−1) = %d steps, rank %d's chunk %d holds the numbers of ranks "
                      "{%s} (missing: {%s}). After phase 1 each rank must hold one complete chunk, and "
                      "phase 2 must bring every complete chunk to every rank. ", N, steps, k, c,
                      ranks_list(h, 1).c_str(), ranks_list(h, 0).c_str()) +
               see("## 2. The ring");
    }
  return "";
}

// The buffers after halfgrad's simulated ring ran the learner's schedule (in a child).
std::vector<std::vector<float>> after_ring(grader::Grader& g, const std::vector<std::vector<float>>& buffers) {
  std::vector<std::vector<float>> out = grader::sized(g.run([&] {
    std::vector<std::vector<float>> b = buffers;
    hg::dist::simulate_ring_allreduce(b, student_ring_step);
    return b;
  }), buffers.size());
  for (size_t k = 0; k < out.size(); ++k) out[k] = grader::sized(std::move(out[k]), buffers[k].size());
  return out;
}

// The same schedule on numbers drawn from stream `stream`. Small integers (|x| < 2^12, at most
// 40 ranks: every partial sum stays below 2^24, where floats hold every integer): every order
// gives the exact sum.
std::string sums(grader::Grader& g, int N, int64_t n, uint64_t stream) {
  std::mt19937_64 rng = g.rng(stream);
  std::vector<std::vector<float>> buffers(static_cast<size_t>(N), std::vector<float>(static_cast<size_t>(n)));
  std::vector<float> want(size_t(n), 0.0f);
  for (int k = 0; k < N; ++k)
    for (int64_t i = 0; i < n; ++i) {
      buffers[size_t(k)][size_t(i)] = float(int64_t(rng() % 8191) - 4095);
      want[size_t(i)] += buffers[size_t(k)][size_t(i)];
    }
  buffers = after_ring(g, buffers);
  for (int k = 0; k < N; ++k)
    for (int64_t i = 0; i < n; ++i)
      if (buffers[size_t(k)][size_t(i)] != want[size_t(i)])
        return format("%d ranks, %lld numbers each: rank %d ends with %g at index %lld, the sum is %g.", N,
                      (long long)n, k, double(buffers[size_t(k)][size_t(i)]), (long long)i, double(want[size_t(i)]));
  return "";
}

// One ring of N ranks and n numbers each: the order of its calls is drawn from stream
// `stream`, its numbers from stream `stream` + 1000.
std::string ring(grader::Grader& g, int N, int64_t n, uint64_t stream) {
  const std::string why = follow(g, N, stream);
  return why.empty() ? sums(g, N, n, stream + 1000) : why;
}

// The first wrong of several rings, (N, n) each, drawn from streams `stream`, `stream` + 1, ...
std::string rings(grader::Grader& g, const std::vector<std::pair<int, int64_t>>& sizes, uint64_t stream) {
  for (const auto& [N, n] : sizes) {
    const std::string why = ring(g, N, n, stream++);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"13", "the ring allreduce's send/receive schedule", "13_data_parallel", "2. The ring"}, argc,
                   argv);
  g.own_code_only({{"hg::dist::ring_step", "halfgrad's ring schedule, which is what you are writing"},
                   {"hg::dist::ring_allreduce", "halfgrad's ring over MPI"},
                   {"hg::dist::simulate_ring_allreduce", "halfgrad's simulated ring"}});
  // The hand-picked sizes first (2 and 3 ranks, n = N, lengths that do not split evenly), then
  // sizes drawn from this grading's seed (a stream per check): buffer lengths from 1 (chunks
  // left empty) to 2000, and rings of 9 to 40 ranks.
  auto length = [](std::mt19937_64& rng) { return int64_t(1 + rng() % 2000); };
  g.check("2 ranks: both end with the sum", [&] {
    std::mt19937_64 rng = g.rng(1);
    return rings(g, {{2, 10}, {2, length(rng)}}, 100);
  });
  g.check("3 ranks: every chunk goes round the ring once to be summed, once to be shared", [&] {
    std::mt19937_64 rng = g.rng(2);
    return rings(g, {{3, 30}, {3, length(rng)}}, 200);
  });
  g.check("4 to 8 ranks and two rings of 9 to 40, buffer lengths that do not split evenly", [&] {
    std::mt19937_64 rng = g.rng(3);
    std::vector<std::pair<int, int64_t>> sizes;
    for (int N : {4, 5, 6, 7, 8, int(9 + rng() % 32), int(9 + rng() % 32)})
      for (int64_t n : {int64_t(N), int64_t(1001), length(rng)}) sizes.emplace_back(N, n);
    return rings(g, sizes, 300);
  });
  g.check("random floats on 5 ranks: every rank ends with the same bits", [&] {
    const std::string why = follow(g, 5, 400);
    if (!why.empty()) return why;
    std::mt19937_64 rng = g.rng(4);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<std::vector<float>> buffers(5, std::vector<float>(size_t(5 + rng() % 200)));
    for (auto& b : buffers)
      for (float& x : b) x = u(rng) * std::ldexp(1.0f, int(rng() % 20) - 10);
    buffers = after_ring(g, buffers);
    for (int k = 1; k < 5; ++k)
      for (size_t i = 0; i < buffers[0].size(); ++i)
        if (std::memcmp(&buffers[size_t(k)][i], &buffers[0][i], sizeof(float)) != 0)
          return format("rank %d ends with %s at index %zu, rank 0 with %s: each chunk's sum must be formed "
                        "once and then copied, so that every rank holds the same bits.", k,
                        grader::show_float(buffers[size_t(k)][i]).c_str(), i,
                        grader::show_float(buffers[0][i]).c_str());
    return std::string();
  });
  g.note("Each chunk is summed in ring order, starting at a different rank: x(j+N-1) + ... + (x(j+1) + x(j)) "
         "for chunk j. That is why a ring, MPI_Allreduce and a rank-order sum give different last bits "
         "(./lab lesson 13 --ranks 4, section 2).");
  return g.finish();
}
