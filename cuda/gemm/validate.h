#pragma once
// Host-side helpers to validate a GEMM result before it is timed (driver and GPU tests).
//
// Two kinds of input:
//   small integers in [-2, 2]: exact in F16 and F32, every product is exact, and every partial
//     sum is an integer below 4K <= 2^24 in magnitude, so *any* summation order gives the exact
//     result: GPU, cuBLAS and the CPU must agree bit for bit.
//   uniform in [-1, 1]: rounding happens; each entry is checked against the F64 reference with
//     the worst-case bound for summing K exact products in F32 (Higham, "Accuracy and Stability
//     of Numerical Algorithms", eq. 3.5):  |computed - exact| <= gamma_K * sum_k |a_k b_k|,
//     gamma_K = K u / (1 - K u), u = 2^-24. Products of F16 (or F32 * F32 with an FMA) are
//     formed exactly or with one rounding; we use gamma_{K+1} to cover the latter.
//     Tensor cores: the reference is the F64 sum of the products of the operands *as the
//     format sees them* (F16/BF16 values, or F32 rounded to TF32), and u = 2^-23: measurements
//     on V100, T4 and A100 (Fasi, Higham, Mikaitis, Pranesh, "Numerical behavior of NVIDIA
//     tensor cores", PeerJ CS 2021) found that the tensor cores' adder truncates instead of
//     rounding to nearest, which can cost a whole unit in the last place per addition.
#include <cmath>
#include <cstdint>
#include <vector>

namespace hg::cuda::gemm {

// A small deterministic generator (SplitMix64), so runs and machines see the same inputs.
struct SplitMix64 {
  uint64_t s;
  explicit SplitMix64(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform01() { return (next() >> 11) * (1.0 / 9007199254740992.0); }
};

inline void fill_small_integers(std::vector<float>& x, uint64_t seed) {
  SplitMix64 g(seed);
  for (float& v : x) v = static_cast<float>(static_cast<int>(g.next() % 5) - 2);  // -2..2
}

inline void fill_uniform(std::vector<float>& x, uint64_t seed) {
  SplitMix64 g(seed);
  for (float& v : x) v = static_cast<float>(2.0 * g.uniform01() - 1.0);
}

struct EntryRef {
  double value;    // sum_k a[m][k] b[k][n], in F64 (exact for small integers)
  double abs_sum;  // sum_k |a[m][k] b[k][n]|, for the error bound
};

inline EntryRef reference_entry(const float* A, const float* B, int N, int K, int m, int n) {
  EntryRef r{0.0, 0.0};
  for (int k = 0; k < K; ++k) {
    const double p = double(A[size_t(m) * K + k]) * double(B[size_t(k) * N + n]);
    r.value += p;
    r.abs_sum += std::fabs(p);
  }
  return r;
}

// Worst-case error of a dot product of length K summed in F32 with unit roundoff u.
inline double dot_error_bound(int K, double abs_sum, double u) {
  const double n = K + 1.0;
  return n * u / (1.0 - n * u) * abs_sum;
}
// ... rounding to nearest (SIMT F32 code, the CPU): u = 2^-24.
inline double f32_dot_error_bound(int K, double abs_sum) { return dot_error_bound(K, abs_sum, 0x1p-24); }
// ... on the tensor cores (see the top of this file): u = 2^-23.
inline double tensor_core_dot_error_bound(int K, double abs_sum) { return dot_error_bound(K, abs_sum, 0x1p-23); }
// ... on the FP8 tensor cores, whose accumulator is not documented at all. DeepSeek-V3 measured
// about 14 significant bits on Hopper's FP8 path when partial sums are not promoted to F32. The
// bound assumes such an accumulator, truncating once per instruction (every 32 products along
// K): each time it loses less than 2^-13 of a partial sum no larger than sum_k |a_k b_k|. An F32
// accumulator (rung 09 on sm_90, which goes through the F16 tensor cores) is far inside it.
inline double fp8_dot_error_bound(int K, double abs_sum) { return std::ceil(K / 32.0) * 0x1p-13 * abs_sum; }
// cuBLAS's TF32 mode rounds the F32 operands to TF32 in a way it does not document (to nearest,
// or by dropping bits): each operand is then within 2^-10 of itself (relative), and a product
// of two within 2^-9 + 2^-20. Added to the bound when the reference uses the unrounded F32 values.
inline double tf32_operand_rounding_bound(double abs_sum) { return (0x1p-9 + 0x1p-20) * abs_sum; }

}  // namespace hg::cuda::gemm
