#include "framework/fp8/fp8_gemm.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>

#include "framework/cpu/gemm.h"

namespace hg::fp8 {

namespace {

// The 256 values of a format, so a GEMM decodes with one load.
std::array<float, 256> decode_table(Format f) {
  std::array<float, 256> t{};
  for (int c = 0; c < 256; ++c) t[size_t(c)] = decode(uint8_t(c), f);
  return t;
}

// The decoded codes of an operand, without their scales: (rows, K) F32, every value exact.
std::vector<float> decoded(const Fp8Tensor& x) {
  const std::array<float, 256> t = decode_table(x.format);
  std::vector<float> v(x.codes.size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = t[x.codes[i]];
  return v;
}

// The length of the K segments: no segment may straddle a scale tile of A or B, nor (in
// Promoted mode) a promotion. A tile along K as long as K itself never needs a cut.
int64_t segment_length(const Fp8Tensor& a, const Fp8Tensor& b, const Accumulator& acc) {
  const int64_t K = a.cols();
  std::vector<int64_t> cuts;
  for (int64_t t : {a.grid.cols, b.grid.cols})
    if (t < K) cuts.push_back(t);
  if (acc.mode == Accumulate::Promoted) {
    if (acc.promote_every < 1)
      throw std::invalid_argument(fmt::format("fp8::gemm_tn: promote_every must be >= 1, got {}", acc.promote_every));
    if (acc.promote_every < K) cuts.push_back(acc.promote_every);
  }
  if (cuts.empty()) return std::max<int64_t>(K, 1);
  const int64_t seg = *std::min_element(cuts.begin(), cuts.end());
  for (int64_t c : cuts)
    if (c % seg != 0)
      throw std::invalid_argument(fmt::format(
          "fp8::gemm_tn: the scale tiles along K ({} for A, {} for B){} must be multiples of each other",
          a.grid.cols, b.grid.cols,
          acc.mode == Accumulate::Promoted ? fmt::format(" and of promote_every ({})", acc.promote_every) : ""));
  return seg;
}

void check_operands(const Fp8Tensor& a, const Fp8Tensor& b, const Accumulator& acc) {
  if (a.cols() != b.cols())
    throw std::invalid_argument(fmt::format("fp8::gemm_tn: A is ({}, {}) and B is ({}, {}); both are stored "
                                            "(rows, K) and their K must be equal",
                                            a.rows(), a.cols(), b.rows(), b.cols()));
  if (acc.mode != Accumulate::F32 && (acc.bits < 1 || acc.bits > 24))
    throw std::invalid_argument(fmt::format("fp8::gemm_tn: the accumulator keeps 1..24 bits, got {}", acc.bits));
}

// The scale of output (m, n) for the segment starting at k: scale_inv of A's tile times B's.
float segment_scale(const Fp8Tensor& a, const Fp8Tensor& b, int64_t m, int64_t n, int64_t k) {
  return a.scale_inv[size_t(a.grid.index(m, k))] * b.scale_inv[size_t(b.grid.index(n, k))];
}

}  // namespace

double keep_significant_bits(double x, int bits) {
  if (x == 0 || !std::isfinite(x)) return x;
  int e;
  std::frexp(x, &e);                            // |x| in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, e - bits);  // the value of the last kept bit
  return std::trunc(x / quantum) * quantum;     // exact: a power-of-two division
}

Tensor gemm_tn_reference(const Fp8Tensor& a, const Fp8Tensor& b, const Accumulator& acc) {
  check_operands(a, b, acc);
  const int64_t M = a.rows(), N = b.rows(), K = a.cols(), seg = segment_length(a, b, acc);
  const std::vector<float> av = decoded(a), bv = decoded(b);  // (M, K), (N, K)
  Tensor c = Tensor::zeros({M, N});
  float* C = c.data<float>();
#pragma omp parallel for if (M * N * K > (1 << 20))
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const float* x = &av[size_t(m * K)];
      const float* y = &bv[size_t(n * K)];
      float total = 0;  // the F32 accumulator
      for (int64_t k0 = 0; k0 < K; k0 += seg) {
        const int64_t k1 = std::min(K, k0 + seg);
        float partial = 0;  // the tensor core's accumulator for this segment
        for (int64_t k = k0; k < k1; ++k) {
          const float p = x[k] * y[k];  // exact
          partial = acc.mode == Accumulate::F32
                        ? partial + p
                        : float(keep_significant_bits(double(partial) + double(p), acc.bits));
        }
        total += partial * segment_scale(a, b, m, n, k0);
      }
      C[m * N + n] = total;
    }
  return c;
}

Tensor gemm_tn(const Fp8Tensor& a, const Fp8Tensor& b, const Accumulator& acc) {
  check_operands(a, b, acc);
  const int64_t M = a.rows(), N = b.rows(), K = a.cols(), seg = segment_length(a, b, acc);
  if (acc.mode != Accumulate::F32 || seg < 16) return gemm_tn_reference(a, b, acc);
  // F32 accumulation: the F32 GEMM over each segment of the decoded (exact) values, then the
  // segment's scales, added into C in F32.
  const std::vector<float> av = decoded(a), bv = decoded(b);  // (M, K), (N, K)
  Tensor c = Tensor::zeros({M, N});
  float* C = c.data<float>();
  std::vector<float> part(size_t(M * N));  // (M, N): one segment's partial sums
  for (int64_t k0 = 0; k0 < K; k0 += seg) {
    const int64_t len = std::min(K, k0 + seg) - k0;
    cpu::sgemm(false, true, M, N, len, 1.0f, av.data() + k0, K, bv.data() + k0, K, 0.0f, part.data(), N);
#pragma omp parallel for if (M * N > (1 << 15))
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) C[m * N + n] += part[size_t(m * N + n)] * segment_scale(a, b, m, n, k0);
  }
  return c;
}

}  // namespace hg::fp8
