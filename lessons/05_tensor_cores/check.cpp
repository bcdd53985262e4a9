// Grades the chapter 05 exercise (mma_16x16x16 and tiled_gemm in exercise.cpp).
//
// The reference is written here: per tile, each D[i][j] starts from C[i][j] and adds the 16
// exact F16 × F16 products in k order, in F32; the GEMM carries each tile's F32 accumulator
// through the K/16 tiles in order. Small-integer inputs make every order exact (so they
// also agree with hg::cpu::gemm_f16); random inputs pin the order, bit for bit. A mismatch
// is compared with the usual wrong turns to name it: an F16 accumulator, products rounded
// to F16, C added at the end, an F64 accumulator, an accumulator restarted for every tile
// along K.
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "framework/cpu/gemm.h"
#include "framework/dtype/half.h"
#include "lessons/05_tensor_cores/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::half;

namespace {

using Tile = std::vector<float>;  // 16 x 16, row-major

// One way of computing a tile's D[i][j]; the right one and the usual mistakes.
using Accumulate = std::function<float(const half* A, const half* B, const float* C, int i, int j)>;

float right(const half* A, const half* B, const float* C, int i, int j) {
  float acc = C[i * 16 + j];
  for (int k = 0; k < 16; ++k) acc += float(A[i * 16 + k]) * float(B[k * 16 + j]);
  return acc;
}
float f16_accumulator(const half* A, const half* B, const float* C, int i, int j) {
  float acc = float(half(C[i * 16 + j]));
  for (int k = 0; k < 16; ++k) acc = float(half(acc + float(A[i * 16 + k]) * float(B[k * 16 + j])));
  return acc;
}
float f16_products(const half* A, const half* B, const float* C, int i, int j) {
  float acc = C[i * 16 + j];
  for (int k = 0; k < 16; ++k) acc += float(half(float(A[i * 16 + k]) * float(B[k * 16 + j])));
  return acc;
}
float c_last(const half* A, const half* B, const float* C, int i, int j) {
  float acc = 0;
  for (int k = 0; k < 16; ++k) acc += float(A[i * 16 + k]) * float(B[k * 16 + j]);
  return acc + C[i * 16 + j];
}
float f64_accumulator(const half* A, const half* B, const float* C, int i, int j) {
  double acc = C[i * 16 + j];
  for (int k = 0; k < 16; ++k) acc += double(float(A[i * 16 + k])) * double(float(B[k * 16 + j]));
  return float(acc);
}

Tile tile_by(const Accumulate& f, const std::vector<half>& A, const std::vector<half>& B, const Tile& C) {
  Tile D(256);
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) D[i * 16 + j] = f(A.data(), B.data(), C.data(), i, j);
  return D;
}

const struct {
  Accumulate f;
  const char* why;
} kMistakes[] = {
    {f16_accumulator, "Your sum was rounded to F16 along the way. A tensor core accumulates in F32: in F16, "
                      "once the sum passes 2048 every +1 is lost (the spacing there is 2), which is why F16 "
                      "inputs are usable for training at all."},
    {f16_products, "Your products were rounded to F16. They need not be: two 11-bit significands multiply to "
                   "at most 22 bits, which F32 (24 bits) holds exactly; the tensor core keeps them exact."},
    {c_last, "You added C after the 16 products. C is where the accumulator starts (D = A·B + C with the "
             "accumulator fragment as C): the additions then happen in a different order, and F32 addition is "
             "not associative, so the bits differ."},
    {f64_accumulator, "You accumulated in F64. That is more accurate than the hardware, and so it gives "
                      "different bits: the accumulator is F32, rounded after every addition."},
};

std::string compare_tile(const Tile& got, const Tile& want, const std::vector<half>& A, const std::vector<half>& B,
                         const Tile& C, bool name_mistake) {
  for (int e = 0; e < 256; ++e)
    if (!(got[e] == want[e])) {
      std::string why = format("D[%d][%d] is %.9g; the F32 k-order accumulation from C gives %.9g.\n", e / 16, e % 16,
                               double(got[e]), double(want[e]));
      if (name_mistake)
        for (const auto& m : kMistakes) {
          const Tile alt = tile_by(m.f, A, B, C);
          bool same = true;
          for (int k = 0; k < 256 && same; ++k) same = alt[k] == got[k];
          if (same) return why + m.why;
        }
      return why + "Each D[i][j] starts from C[i][j] and adds A[i][k]·B[k][j] for k = 0..15 in turn, the products "
                   "exact, every sum rounded to F32. " + see("## What a tensor core computes");
    }
  return "";
}

std::vector<half> halves(int n, double lo, double hi, bool integers, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<half> v(n);
  for (half& h : v) h = half(float(integers ? std::round(u(rng)) : u(rng)));
  return v;
}

std::vector<float> floats(int n, double lo, double hi, bool integers, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = float(integers ? std::round(u(rng)) : u(rng));
  return v;
}

// The learner's D for one tile; with `alias`, C and D are the same array (D starts as C).
Tile learner_tile(grader::Grader& g, const std::vector<half>& A, const std::vector<half>& B, const Tile& C,
                  bool alias) {
  return g.run([&] {
    Tile D(256, -1.0f);
    if (alias) {
      D = C;
      mma_16x16x16(A.data(), B.data(), D.data(), D.data());
    } else {
      mma_16x16x16(A.data(), B.data(), C.data(), D.data());
    }
    return D;
  });
}

std::string one_tile(grader::Grader& g, bool integers, uint32_t seed, bool alias) {
  const auto A = halves(256, -2, 2, integers, seed), B = halves(256, -2, 2, integers, seed + 1);
  const Tile C = floats(256, -8, 8, integers, seed + 2);
  const Tile D = grader::sized(learner_tile(g, A, B, C, alias), 256);
  const Tile want = tile_by(right, A, B, C);
  std::string why = compare_tile(D, want, A, B, C, !integers);
  if (!why.empty() && alias) {
    const Tile D2 = grader::sized(learner_tile(g, A, B, C, false), 256);
    if (compare_tile(D2, want, A, B, C, false).empty())
      return why + "\nWith separate C and D it is right: your code writes D before it has read all of C it "
                   "needs. acc = a·b + acc is how every mma along K is called.";
  }
  return why;
}

// The GEMM reference: per tile of C, an F32 accumulator carried through K/16 tile products.
std::vector<float> reference_gemm(int M, int N, int K, const std::vector<half>& A, const std::vector<half>& B,
                                  bool restart_each_k_tile) {
  std::vector<float> C(size_t(M) * N);
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      float acc = 0, total = 0;
      for (int tk = 0; tk < K; tk += 16) {
        if (restart_each_k_tile) acc = 0;
        for (int k = tk; k < tk + 16; ++k) acc += float(A[size_t(i) * K + k]) * float(B[size_t(k) * N + j]);
        if (restart_each_k_tile) total += acc;
      }
      C[size_t(i) * N + j] = restart_each_k_tile ? total : acc;
    }
  return C;
}

std::string gemm(grader::Grader& g, int M, int N, int K, bool integers, uint32_t seed) {
  const auto A = halves(M * K, -2, 2, integers, seed), B = halves(K * N, -2, 2, integers, seed + 1);
  const std::vector<float> got = grader::sized(g.run([&] {
    std::vector<float> C(size_t(M) * N, -1.0f);
    tiled_gemm(M, N, K, A.data(), B.data(), C.data());
    return C;
  }), size_t(M) * N);
  const std::vector<float> want = reference_gemm(M, N, K, A, B, false);
  if (integers) {  // exact in any order: also what halfgrad's CPU GEMM (and a GPU) gives
    std::vector<float> lib(size_t(M) * N);
    hg::cpu::gemm_f16(false, false, M, N, K, 1.0f, A.data(), K, B.data(), N, 0.0f, lib.data(), N);
    for (size_t e = 0; e < lib.size(); ++e)
      if (lib[e] != want[e]) return "internal: the reference disagrees with hg::cpu::gemm_f16 on integers";
  }
  for (size_t e = 0; e < want.size(); ++e)
    if (!(got[e] == want[e])) {
      std::string why = format("%d x %d x %d: C[%zu][%zu] is %.9g, expected %.9g.\n", M, N, K, e / N, e % N,
                               double(got[e]), double(want[e]));
      const std::vector<float> restarted = reference_gemm(M, N, K, A, B, true);
      if (got == restarted)
        return why + "Each tile along K got an accumulator of its own and the results were added at the end: the "
                     "accumulator fragment is filled with zeros once per tile of C and carried through all K/16 "
                     "mma calls (acc = a·b + acc), so the additions happen in one order.";
      bool only_last = true;
      for (size_t k = 0; k < want.size() && only_last; ++k) {
        float acc = 0;
        const size_t i = k / N, j = k % N;
        for (int kk = K - 16; kk < K; ++kk) acc += float(A[i * K + kk]) * float(B[size_t(kk) * N + j]);
        only_last = got[k] == acc;
      }
      if (only_last)
        return why + "Only the last tile along K is in the result: the accumulator was reset (or overwritten) "
                     "for every step along K instead of carried through.";
      return why + "One tile of C at a time: its accumulator starts at zero and goes through the K/16 tiles of "
                   "A's rows and B's columns in order, mma_16x16x16(a, b, acc, acc) for each. " +
             see("## The rungs");
    }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"05", "one tensor-core tile, and a GEMM of tiles", "05_tensor_cores", "What a tensor core computes"}, argc, argv);
  g.own_code_only({{"hg::cpu::gemm_f16", "halfgrad's emulation of tensor-core GEMMs"},
                   {"hg::cpu::gemm_bf16", "halfgrad's emulation of tensor-core GEMMs"},
                   {"hg::cpu::sgemm", "halfgrad's F32 GEMM"},
                   {"hg::matmul", "the engine's matmul"},
                   {"hg::linear", "the engine's linear op"},
                   {"hg::cpu::", "halfgrad's CPU kernels, among them its GEMMs"},
                   {"hg::cuda::", "halfgrad's GPU kernels, among them its GEMMs"},
                   {"hg::Tensor", "the engine's tensors, whose matmul is a GEMM already written"}});
  // Each check: the hand-picked inputs (fixed seeds, what the README shows), then inputs
  // drawn from this grading's seed.
  using grader::first_wrong;
  auto drawn = [&](uint64_t stream) { return uint32_t(g.seed_for(stream)); };
  g.check("one tile of small integers: exact", [&] {
    return first_wrong({[&] { return one_tile(g, true, 1, false); }, [&] { return one_tile(g, true, drawn(1), false); }});
  });
  g.check("one tile of random values: bit for bit the F32 k-order sum from C", [&] {
    return first_wrong({[&] { return one_tile(g, false, 4, false); }, [&] { return one_tile(g, false, drawn(2), false); }});
  });
  g.check("2048 + fifteen 1s: the accumulator is F32", [&] {
    // Row i of A: fifteen 1s and one 0 (at `gap`), B all 1s, C = ±2^e with e from `exponents`:
    // D = C ± 15 exactly in F32, where an F16 accumulator keeps C (1 is below half its spacing).
    auto tile = [&](const std::vector<int>& gap, const std::vector<int>& exponents) {
      std::vector<half> A(256, half(1.0f)), B(256, half(1.0f));
      Tile C(256);
      for (int i = 0; i < 16; ++i) A[size_t(i * 16 + gap[size_t(i)])] = half(0.0f);
      for (size_t e = 0; e < 256; ++e) C[e] = std::ldexp(exponents[e] < 0 ? -1.0f : 1.0f, std::abs(exponents[e]));
      const Tile D = grader::sized(learner_tile(g, A, B, C, false), 256);
      return compare_tile(D, tile_by(right, A, B, C), A, B, C, true);
    };
    std::mt19937_64 rng = g.rng(3);
    std::vector<int> gaps(16), exponents(256);
    for (int& k : gaps) k = int(rng() % 16);
    for (int& e : exponents) e = (rng() % 2 ? 1 : -1) * (11 + int(rng() % 3));
    return first_wrong({[&] { return tile(std::vector<int>(16, 15), std::vector<int>(256, 11)); },
                        [&] { return tile(gaps, exponents); }});
  });
  g.check("C and D the same array (acc = a·b + acc)", [&] {
    return first_wrong({[&] { return one_tile(g, false, 7, true); }, [&] { return one_tile(g, false, drawn(4), true); }});
  });
  g.check("tiled_gemm 48 x 32 x 64 of small integers: exact", [&] {
    return first_wrong({[&] { return gemm(g, 48, 32, 64, true, 10); }, [&] { return gemm(g, 48, 32, 64, true, drawn(5)); }});
  });
  g.check("tiled_gemm 32 x 48 x 256 of random values: one F32 accumulator per tile, through all of K", [&] {
    return first_wrong({[&] { return gemm(g, 32, 48, 256, false, 20); },
                        [&] { return gemm(g, 32, 48, 256, false, drawn(6)); }});
  });
  return g.finish();
}
