// GPU tests of the kernels under chapter 12's ops (cuda/ops/): layer norm, the causal mask and
// causal softmax, the embedding gather and its scatter-add, and strided views gathered and
// scattered (contiguous(), narrow's backward), each through its launcher against a CPU loop,
// in F32, F16 and BF16. Sizes that divide no warp or chunk (C = 37, 70 keys, 130 rows), one
// element, empty, odd strides; copies are checked bit for bit with inf, NaN, F16's largest
// value and subnormals among the inputs. (The engine's ops over the same kernels:
// test_cuda_gpt.cpp.)
#include "tests/gpu/typed_buffer.h"

#include "cuda/ops/attention.h"
#include "cuda/ops/embedding.h"
#include "cuda/ops/layernorm.h"
#include "cuda/ops/strided.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

using namespace hg::cuda;
using hg::test::DeviceBuffer;
using hg::test::Typed;
using hg::test::round_to;
using hg::test::storage_rtol;
using hg::test::uniform;

namespace {

std::string tag(const std::string& what, DType dt) { return what + " " + dtype_name(dt); }

// Copies: the same bits (-0 is not +0), NaN where the reference has NaN.
void same_bits(hg::test::Checker& t, const std::string& what, const std::vector<float>& got,
               const std::vector<float>& want) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(want[i]);
    if (!both_nan && std::memcmp(&got[i], &want[i], sizeof(float)) != 0 && bad++ == 0) first = i;
  }
  std::string detail;
  if (bad > 0)
    detail = std::to_string(bad) + " of " + std::to_string(want.size()) + " differ; first [" + std::to_string(first) +
             "] got " + std::to_string(got[first]) + " want " + std::to_string(want[first]);
  t.expect(what + " [same bits]", bad == 0 && got.size() == want.size(), detail);
}

// Values for the copies: random, with F16's largest value, its smallest subnormal, -0, ±inf
// and NaN among them (each rounded to the storage type by the caller).
std::vector<float> with_specials(size_t n, uint64_t seed) {
  std::vector<float> v = uniform(n, -3, 3, seed);
  const float specials[] = {65504.0f, -65504.0f, 0x1p-24f, -0.0f, INFINITY, -INFINITY, NAN, 1e-30f};
  for (size_t k = 0; k < sizeof(specials) / sizeof(float) && 3 * k < n; ++k) v[3 * k] = specials[k];
  return v;
}

void check_layer_norm(hg::test::Checker& t, DType dt, int64_t R, int64_t C, float offset) {
  const float eps = 1e-5f;
  const std::string shape = "(" + std::to_string(R) + "," + std::to_string(C) + ")" +
                            (offset != 0 ? " rows around " + std::to_string(int(offset)) : "");
  const auto x = round_to(dt, uniform(R * C, offset - 1, offset + 1, 11 + C));
  const auto dy = round_to(dt, uniform(R * C, -1, 1, 12 + C));
  const auto w = uniform(C, 0.5f, 1.5f, 13), b = uniform(C, -0.5f, 0.5f, 14);
  Typed dx_in(dt, x), ddy(dt, dy), y(dt, R * C), dx(dt, R * C);
  DeviceBuffer<float> dw_in(w), db_in(b), mean_rel(R), rstd(R), dw(C), db(C);
  launch_layer_norm_forward(dt, dx_in.ptr(), dw_in.ptr, db_in.ptr, R, C, eps, y.ptr(), mean_rel.ptr, rstd.ptr);
  launch_layer_norm_backward(dt, dx_in.ptr(), ddy.ptr(), dw_in.ptr, mean_rel.ptr, rstd.ptr, R, C, dx.ptr(), dw.ptr,
                             db.ptr);
  // The recipe of layernorm.h in F64 on the stored inputs.
  std::vector<float> want_y(R * C), want_dx(R * C), want_rstd(R), want_dw(C, 0.0f), want_db(C, 0.0f);
  std::vector<double> sum_dw(C, 0.0), sum_db(C, 0.0);
  for (int64_t r = 0; r < R; ++r) {
    const float* xr = &x[r * C];
    double mu = 0, var = 0;
    for (int64_t c = 0; c < C; ++c) mu += double(xr[c]) - xr[0];
    mu /= double(C);
    for (int64_t c = 0; c < C; ++c) var += (double(xr[c]) - xr[0] - mu) * (double(xr[c]) - xr[0] - mu);
    const double rs = 1 / std::sqrt(var / double(C) + eps);
    want_rstd[r] = float(rs);
    double mean_g = 0, mean_gx = 0;
    std::vector<double> xhat(C);
    for (int64_t c = 0; c < C; ++c) {
      xhat[c] = (double(xr[c]) - xr[0] - mu) * rs;
      want_y[r * C + c] = round_to(dt, float(w[c] * xhat[c] + b[c]));
      const double g = double(dy[r * C + c]) * w[c];
      mean_g += g / double(C);
      mean_gx += g * xhat[c] / double(C);
      sum_dw[c] += double(dy[r * C + c]) * xhat[c];
      sum_db[c] += dy[r * C + c];
    }
    for (int64_t c = 0; c < C; ++c)
      want_dx[r * C + c] = round_to(dt, float(rs * (double(dy[r * C + c]) * w[c] - mean_g - xhat[c] * mean_gx)));
  }
  for (int64_t c = 0; c < C; ++c) { want_dw[c] = float(sum_dw[c]); want_db[c] = float(sum_db[c]); }
  const double rtol = storage_rtol(dt) + 1e-5;
  t.close(tag("layer_norm forward " + shape, dt), y.to_host(), want_y, 1e-5, rtol, size_t(C));
  t.close(tag("layer_norm rstd " + shape, dt), rstd.to_host(), want_rstd, 0, 1e-5);
  t.close(tag("layer_norm backward dx " + shape, dt), dx.to_host(), want_dx, 1e-4, rtol, size_t(C));
  t.close(tag("layer_norm backward dweight " + shape, dt), dw.to_host(), want_dw, 1e-4, 1e-4);
  t.close(tag("layer_norm backward dbias " + shape, dt), db.to_host(), want_db, 1e-4, 1e-4);
}

void test_layer_norm(hg::test::Checker& t) {
  for (DType dt : hg::test::kAllDtypes) {
    check_layer_norm(t, dt, 5, 37, 0);    // C not a multiple of the warp
    check_layer_norm(t, dt, 3, 1, 0);     // one feature: x̂ = 0, y = bias, dx = 0
    check_layer_norm(t, dt, 130, 70, 0);  // two chunks of 64 rows and a part for the weight gradients
  }
  // |μ| ≫ σ: rows of 3000 ± 1 in F32 (an E[x²] − E[x]² variance would lose every digit)
  check_layer_norm(t, DType::F32, 4, 50, 3000.0f);
}

void test_causal(hg::test::Checker& t) {
  for (DType dt : hg::test::kAllDtypes)
    for (int64_t T : {1, 33, 70}) {
      const int64_t rows = 2 * T, n = rows * T;  // two (T, T) score matrices
      const std::string shape = " (2," + std::to_string(T) + "," + std::to_string(T) + ")";
      // the mask: a copy below the diagonal, -inf (forward) or 0 (backward) above it
      const auto x = round_to(dt, with_specials(n, 20 + T));
      Typed dx_in(dt, x), y(dt, n);
      std::vector<float> want_fwd(n), want_bwd(n);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < T; ++j) {
          const bool above = j > r % T;
          want_fwd[r * T + j] = above ? -INFINITY : x[r * T + j];
          want_bwd[r * T + j] = above ? 0.0f : x[r * T + j];
        }
      launch_causal_mask(dt, dx_in.ptr(), y.ptr(), rows, T, -INFINITY);
      same_bits(t, tag("causal_mask forward" + shape, dt), y.to_host(), want_fwd);
      launch_causal_mask(dt, dx_in.ptr(), y.ptr(), rows, T, 0.0f);
      same_bits(t, tag("causal_mask backward" + shape, dt), y.to_host(), want_bwd);

      // causal softmax, forward and backward (from the stored y), scale 1/√8
      const float s = 0.35355339f;
      const auto z = round_to(dt, uniform(n, -8, 8, 30 + T)), dy = round_to(dt, uniform(n, -1, 1, 40 + T));
      Typed dz(dt, z), ddy(dt, dy), p(dt, n), dx(dt, n);
      launch_causal_softmax_forward(dt, dz.ptr(), p.ptr(), rows, T, s);
      const std::vector<float> got_p = p.to_host();
      std::vector<float> want_p(n, 0.0f), want_dx(n, 0.0f);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = r % T;
        double m = -INFINITY, sum = 0, dot = 0;
        for (int64_t j = 0; j <= i; ++j) m = std::max(m, double(s) * z[r * T + j]);
        for (int64_t j = 0; j <= i; ++j) sum += std::exp(double(s) * z[r * T + j] - m);
        for (int64_t j = 0; j <= i; ++j) {
          want_p[r * T + j] = round_to(dt, float(std::exp(double(s) * z[r * T + j] - m) / sum));
          dot += double(dy[r * T + j]) * got_p[r * T + j];
        }
        for (int64_t j = 0; j <= i; ++j)
          want_dx[r * T + j] = round_to(dt, float(s * got_p[r * T + j] * (dy[r * T + j] - dot)));
      }
      t.close(tag("causal_softmax forward" + shape, dt), got_p, want_p, 1e-6, storage_rtol(dt) + 1e-5, size_t(T));
      launch_causal_softmax_backward(dt, p.ptr(), ddy.ptr(), dx.ptr(), rows, T, s);
      t.close(tag("causal_softmax backward" + shape, dt), dx.to_host(), want_dx, dt == DType::F32 ? 1e-6 : 1e-3,
              storage_rtol(dt) + 1e-5, size_t(T));
    }
  // Scores up to ±10^4 in F32: e^(s·x) alone would overflow; the kernel subtracts the row's max.
  const int64_t T = 40, rows = T, n = rows * T;
  const auto z = uniform(n, -1e4f, 1e4f, 50);
  Typed dz(DType::F32, z), p(DType::F32, n);
  launch_causal_softmax_forward(DType::F32, dz.ptr(), p.ptr(), rows, T, 1.0f);
  std::vector<float> want(n, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j <= i; ++j) m = std::max(m, double(z[i * T + j]));
    for (int64_t j = 0; j <= i; ++j) sum += std::exp(z[i * T + j] - m);
    for (int64_t j = 0; j <= i; ++j) want[i * T + j] = float(std::exp(z[i * T + j] - m) / sum);
  }
  t.close("causal_softmax forward, scores up to 1e4 F32", p.to_host(), want, 1e-6, 1e-5, size_t(T));
}

void test_embedding(hg::test::Checker& t) {
  const int64_t V = 11, C = 37, n = 50;  // id 10 never occurs: its gradient row is 0
  std::vector<int32_t> ids(n);
  for (int64_t p = 0; p < n; ++p) ids[p] = int32_t((p * p + 3 * p) % 10);
  const IdGroups g = group_positions_by_id(ids, V);
  DeviceBuffer<int32_t> dids(ids), offsets(g.offsets), positions(g.positions);
  for (DType dt : hg::test::kAllDtypes) {
    const auto w = round_to(dt, with_specials(V * C, 60));
    Typed dw_in(dt, w), y(dt, n * C);
    launch_embedding_forward(dt, dw_in.ptr(), dids.ptr, n, C, y.ptr());
    std::vector<float> want_y(n * C);
    for (int64_t p = 0; p < n; ++p)
      for (int64_t c = 0; c < C; ++c) want_y[p * C + c] = w[ids[p] * C + c];
    same_bits(t, tag("embedding forward (11,37) x 50 ids", dt), y.to_host(), want_y);
    // The backward sums each id's rows of dy in position order in F32, rounded once: the
    // CPU's order, so the same bits. An inf in dy reaches its id's row, a NaN too.
    auto dy = round_to(dt, uniform(n * C, -1, 1, 61));
    dy[5 * C + 2] = INFINITY;
    dy[7 * C + 3] = NAN;
    Typed ddy(dt, dy), dw(dt, V * C);
    launch_embedding_backward(dt, ddy.ptr(), offsets.ptr, positions.ptr, V, C, dw.ptr());
    std::vector<float> want_dw(V * C, 0.0f);
    for (int64_t v = 0; v < V; ++v)
      for (int64_t c = 0; c < C; ++c) {
        float acc = 0.0f;
        for (int64_t p = 0; p < n; ++p)
          if (ids[p] == v) acc += dy[p * C + c];
        want_dw[v * C + c] = round_to(dt, acc);
      }
    same_bits(t, tag("embedding backward (11,37) x 50 ids", dt), dw.to_host(), want_dw);
  }
}

// A view of a row-major storage: element i (row-major over shape) reads storage[offset + Σ i_k·stride_k].
struct View {
  std::string name;
  std::vector<int64_t> shape, strides;
  int64_t offset;
};

void test_strided(hg::test::Checker& t) {
  const View views[] = {
      {"permute (4,5,6) -> (6,4,5)", {6, 4, 5}, {1, 30, 6}, 0},
      {"expand (5,1) -> (5,4)", {5, 4}, {1, 0}, 0},
      {"rows 1..3 of (4,30)", {2, 30}, {30, 1}, 30},
      {"every other column of (4,30)", {4, 15}, {30, 2}, 1},
      {"one element", {1}, {1}, 7},
      {"empty (0,5)", {0, 5}, {5, 1}, 0},
  };
  for (DType dt : hg::test::kAllDtypes)
    for (const View& v : views) {
      int64_t n = 1;
      for (int64_t d : v.shape) n *= d;
      const auto storage = round_to(dt, with_specials(120, 70));
      std::vector<float> want(n);
      for (int64_t i = 0; i < n; ++i) {
        int64_t rest = i, at = v.offset;
        for (int k = int(v.shape.size()) - 1; k >= 0; --k) {
          at += (rest % v.shape[k]) * v.strides[k];
          rest /= v.shape[k];
        }
        want[i] = storage[at];
      }
      Typed x(dt, storage), y(dt, std::vector<float>(n, 42.0f));
      const StridedView sv = make_strided_view(v.shape, v.strides);
      const size_t e = dtype_size(dt);
      launch_copy_strided(dt, static_cast<const char*>(x.ptr()) + v.offset * e, sv, y.ptr(), n);
      same_bits(t, tag("contiguous() of " + v.name, dt), y.to_host(), want);
      if (std::find(v.strides.begin(), v.strides.end(), 0) != v.strides.end()) continue;  // an expand: no scatter into it
      // the reverse: the row-major values written into the view of a zero storage
      Typed z(dt, std::vector<float>(120, 0.0f));
      const auto values = round_to(dt, with_specials(size_t(n), 71));
      Typed src(dt, values);
      launch_copy_into_strided(dt, src.ptr(), static_cast<char*>(z.ptr()) + v.offset * e, sv, n);
      std::vector<float> want_z(120, 0.0f);
      for (int64_t i = 0; i < n; ++i) {
        int64_t rest = i, at = v.offset;
        for (int k = int(v.shape.size()) - 1; k >= 0; --k) {
          at += (rest % v.shape[k]) * v.strides[k];
          rest /= v.shape[k];
        }
        want_z[at] = values[i];
      }
      same_bits(t, tag("written into the view " + v.name, dt), z.to_host(), want_z);
    }
}

void run(hg::test::Checker& t) {
  test_layer_norm(t);
  test_causal(t);
  test_embedding(t);
  test_strided(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
