// Grades the chapter 03 exercise (coalesced_element, warp_sum, block_sum in exercise.cpp).
//
// The grid is emulated: blocks and threads become loops, and the learner's map is asked for
// the element of every thread. Each check runs on hand-picked inputs first (what a wrong
// answer is explained with), then on inputs drawn from this grading's seed: a C of another
// size, other warps, other values. Coverage (each element of C exactly once) and coalescing
// (128-byte lines touched by one warp's store) are counted. The warp sum runs on the
// emulated shuffle of exercise.h, which counts its calls; sums of small integers must be
// exact, sums of random floats within the F32 bound γ_n·Σ|x| of the exact sum, and the
// same in every lane.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "lessons/03_cuda_kernels/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;

namespace {

constexpr int kBdx = 32, kBdy = 8;

// Calls fn(bx, by, tx, ty) for every thread of a grid of gx x gy blocks, in this order.
template <class Fn>
void every_thread(int gx, int gy, Fn fn) {
  for (int by = 0; by < gy; ++by)
    for (int bx = 0; bx < gx; ++bx)
      for (int ty = 0; ty < kBdy; ++ty)
        for (int tx = 0; tx < kBdx; ++tx) fn(bx, by, tx, ty);
}

std::string coverage(grader::Grader& g, int M, int N) {
  std::vector<int> count(size_t(M) * N, 0);
  const int gx = (N + kBdx - 1) / kBdx, gy = (M + kBdy - 1) / kBdy;
  const std::vector<Element> mapped = grader::sized(g.run([&] {
    std::vector<Element> out;
    every_thread(gx, gy, [&](int bx, int by, int tx, int ty) {
      out.push_back(coalesced_element(bx, by, tx, ty, kBdx, kBdy));
    });
    return out;
  }), size_t(gx) * gy * kBdx * kBdy);
  size_t next = 0;
  for (int by = 0; by < gy; ++by)
    for (int bx = 0; bx < gx; ++bx)
      for (int ty = 0; ty < kBdy; ++ty)
        for (int tx = 0; tx < kBdx; ++tx) {
          const Element e = mapped[next++];
          if (e.row < 0 || e.col < 0) return format("thread (%d, %d) of block (%d, %d) got C[%d][%d]: outside C.", tx, ty, bx, by, e.row, e.col);
          if (e.row < M && e.col < N) ++count[size_t(e.row) * N + e.col];
        }
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      if (count[size_t(r) * N + c] != 1)
        return format("C is %d x %d, launched as a grid of %d x %d blocks of %d x %d threads: C[%d][%d] is "
                      "computed by %d threads, not exactly 1. blockIdx and blockDim place the block in C, "
                      "threadIdx places the thread inside the block. ",
                      M, N, gx, gy, kBdx, kBdy, r, c, count[size_t(r) * N + c]) + see("## 1. Threads, blocks, warps");
  return "";
}

// The warps ty of blocks (bx, by), bx in bxs, by in bys, ty in tys: 8 warps.
std::string coalescing(grader::Grader& g, const int (&bxs)[2], const int (&bys)[2], const int (&tys)[2]) {
  const int N = 1024;
  // The learner's map for the 32 lanes of each warp, lane by lane.
  const std::vector<Element> mapped = grader::sized(g.run([&] {
    std::vector<Element> out;
    for (int by : bys)
      for (int bx : bxs)
        for (int ty : tys)
          for (int tx = 0; tx < 32; ++tx) out.push_back(coalesced_element(bx, by, tx, ty, kBdx, kBdy));
    return out;
  }), 8 * 32);
  size_t warp = 0;
  for (int by : bys)
    for (int bx : bxs)
      for (int ty : tys) {
        const Element* lane = &mapped[32 * warp++];
        std::vector<long> lines;
        Element first = lane[0];
        for (int tx = 0; tx < 32; ++tx) {
          const Element e = lane[tx];
          if (e.row != first.row || e.col != first.col + tx) {
            for (int t = 0; t < 32; ++t) {
              const Element f = lane[t];
              lines.push_back((long(f.row) * N + f.col) / 32);  // 32 floats per 128-byte line
            }
            std::sort(lines.begin(), lines.end());
            const long count = std::unique(lines.begin(), lines.end()) - lines.begin();
            if (e.row == first.row && e.col == first.col)
              return format("Block (%d, %d), ty = %d: lanes 0 and %d both compute C[%d][%d]: every thread of the "
                            "warp must get an element of its own.", bx, by, ty, tx, e.row, e.col);
            return format("Block (%d, %d), ty = %d: lane 0 stores C[%d][%d], lane %d stores C[%d][%d]. The warp's "
                          "32 stores touch %ld different 128-byte lines of C (1024 x 1024 floats); 32 consecutive "
                          "floats of one row would be 1 line, one memory transaction instead of %ld. Consecutive "
                          "lanes (tx) should take consecutive columns. ",
                          bx, by, ty, first.row, first.col, tx, e.row, e.col, count, count) +
                   see("## 3. Rung 01 → 02: coalescing");
          }
        }
      }
  return "";
}

Warp lanes(const std::vector<float>& v, int offset = 0) {
  Warp w;
  for (int l = 0; l < 32; ++l) w.lane[l] = v[offset + l];
  return w;
}

std::string check_warp(grader::Grader& g, const std::vector<float>& v, bool exact) {
  const auto [out, shuffles] = g.run([&] {
    g_shuffles = 0;  // exercise.h's shuffle counts its calls
    const Warp w = warp_sum(lanes(v));
    return std::make_pair(w, g_shuffles);
  });
  double sum = 0, bound = 0;
  for (int l = 0; l < 32; ++l) sum += v[l], bound += std::fabs(v[l]);
  bound *= 32 * std::ldexp(1.0, -24) / (1 - 32 * std::ldexp(1.0, -24));
  if (shuffles == 0 && out.lane[0] != v[0])
    return "No shuffle was used. A warp's lanes cannot read each other's registers: values move between "
           "lanes only through shuffles (shfl_xor here, __shfl_xor_sync on the GPU). " + see("## 2. Reduction");
  for (int l = 0; l < 32; ++l) {
    const double got = out.lane[l];
    if (exact ? got != sum : !(std::fabs(got - sum) <= bound)) {
      std::string why = format("lane %d holds %.9g; the sum of the 32 values is %.9g.%s\n", l, got, sum,
                               l == 0 ? "" : " (lane 0 may be right: every lane must hold the sum.)");
      if (shuffles == 0)
        return why + "Still the TODO? Values move between lanes only through shuffles (shfl_xor here, "
                     "__shfl_xor_sync on the GPU). " + see("## 2. Reduction");
      if (shuffles < 5)
        return why + format("%d shuffle steps: each step doubles the number of values a lane's sum covers, so "
                            "32 values need 5 (masks 16, 8, 4, 2, 1). ", shuffles) + see("## 2. Reduction");
      return why + "Each step adds to every lane the value of its partner lane l ^ mask, with a different mask "
                   "each time, so that the partners cover all 32 lanes. " + see("## 2. Reduction");
    }
    if (out.lane[l] != out.lane[0])
      return format("lane %d holds %.9g but lane 0 holds %.9g: with the butterfly every lane adds the same two "
                    "numbers at every step, so all lanes end with the same bits.", l, double(out.lane[l]),
                    double(out.lane[0]));
  }
  if (shuffles != 5)
    return format("The sum is right, with %d shuffles; the butterfly needs exactly 5 (log2 32): every shuffle is "
                  "an instruction every lane of the warp executes.", shuffles);
  return "";
}

std::string check_block(grader::Grader& g, const std::vector<float>& x, bool exact) {
  const auto [sum_of_block, shuffles] = g.run([&] {
    g_shuffles = 0;
    const float s = block_sum(x.data());
    return std::make_pair(s, g_shuffles);
  });
  const double got = sum_of_block;
  double sum = 0, bound = 0;
  for (float v : x) sum += v, bound += std::fabs(v);
  bound *= 256 * std::ldexp(1.0, -24) / (1 - 256 * std::ldexp(1.0, -24));
  if (exact ? got != sum : !(std::fabs(got - sum) <= bound))
    return format("block_sum gave %.9g; the sum of the 256 values is %.9g. Each of the 8 warps sums its 32 "
                  "values and writes the result to its slot of shared memory; then one warp sums the 8 slots.",
                  got, sum);
  if (shuffles < 40)
    return format("The sum is right, but only %d shuffles were made: 8 warps of 32 threads each reduce their "
                  "own values with warp_sum (5 shuffles each) before meeting in shared memory.", shuffles);
  return "";
}

std::vector<float> small_integers(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(int(rng() % 9) - 4);
  return v;
}

std::vector<float> random_floats(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1000.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"03", "a thread map and a warp-shuffle reduction", "03_cuda_kernels", "1. Threads, blocks, warps"}, argc, argv);
  g.own_code_only({{"hg::cuda::gemm::coalesced_coord", "the ladder's own rung-02 map (cuda/gemm/layout.h)"},
                   {"hg::cuda::gemm::naive_coord", "the ladder's own rung-01 map (cuda/gemm/layout.h)"},
                   {"hg::", "a function of halfgrad: this exercise is index arithmetic and additions"}});
  // Each check: the hand-picked inputs, then the drawn ones (the first wrong answer is said).
  using grader::first_wrong;
  auto drawn = [&](uint64_t stream) { return uint32_t(g.seed_for(stream)); };
  g.check("every element of C (100 x 70, and 1024 x 1024) is computed by exactly one thread", [&] {
    std::mt19937_64 rng = g.rng(1);
    const int M = 60 + int(rng() % 81), N = 40 + int(rng() % 61);  // edges that cut blocks, mostly
    return first_wrong({[&] { return coverage(g, 100, 70); }, [&] { return coverage(g, M, N); },
                        [&] { return coverage(g, 1024, 1024); }});
  });
  g.check("a warp's 32 lanes store 32 consecutive floats of one row (one 128-byte line)", [&] {
    std::mt19937_64 rng = g.rng(2);
    const int bxs[2] = {1 + int(rng() % 31), 1 + int(rng() % 31)};
    const int bys[2] = {1 + int(rng() % 127), 1 + int(rng() % 127)};
    const int tys[2] = {int(rng() % 4), 4 + int(rng() % 4)};
    return first_wrong({[&] { return coalescing(g, {0, 7}, {0, 5}, {0, 3}); },
                        [&] { return coalescing(g, bxs, bys, tys); }});
  });
  g.check("warp_sum of small integers: every lane holds the exact sum", [&] {
    return first_wrong({[&] { return check_warp(g, small_integers(32, 1), true); },
                        [&] { return check_warp(g, small_integers(32, drawn(3)), true); }});
  });
  g.check("warp_sum of random floats: every lane the same bits, within the F32 bound", [&] {
    return first_wrong({[&] { return check_warp(g, random_floats(32, 2), false); },
                        [&] { return check_warp(g, random_floats(32, drawn(4)), false); }});
  });
  g.check("block_sum of 256 values (small integers exact; random floats within the F32 bound)", [&] {
    return first_wrong({[&] { return check_block(g, small_integers(256, 3), true); },
                        [&] { return check_block(g, random_floats(256, 4), false); },
                        [&] { return check_block(g, small_integers(256, drawn(5)), true); },
                        [&] { return check_block(g, random_floats(256, drawn(6)), false); }});
  });
  return g.finish();
}
