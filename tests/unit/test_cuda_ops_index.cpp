// CPU tests of the CUDA ops' index helpers (cuda/ops/broadcast.h, cuda/ops/conv_index.h, cuda/ops/strided.h,
// cuda/ops/embedding.h), against independent references: a nested-loop broadcast, the CPU
// engine's hg::cpu::im2col, a brute-force search for the windows covering a pixel, and a scan
// of the ids for each id's positions.
#include <doctest/doctest.h>

#include "cuda/ops/broadcast.h"
#include "cuda/ops/conv_index.h"
#include "cuda/ops/embedding.h"
#include "cuda/ops/strided.h"
#include "framework/cpu/im2col.h"

#include <string>
#include <vector>

using namespace hg::cuda;
using hg::ConvGeometry;

TEST_CASE("broadcast offsets match the nested-loop definition") {
  // out (2, 3, 4) from a (2, 1, 4) and b (3, 1)
  const Broadcast bc = make_broadcast({2, 1, 4}, {3, 1});
  REQUIRE(bc.ndim == 3);
  CHECK(bc.out_shape[0] == 2);
  CHECK(bc.out_shape[1] == 3);
  CHECK(bc.out_shape[2] == 4);
  int64_t i = 0;
  for (int64_t x = 0; x < 2; ++x)
    for (int64_t y = 0; y < 3; ++y)
      for (int64_t z = 0; z < 4; ++z, ++i) {
        int64_t ia, ib;
        broadcast_offsets(bc, i, ia, ib);
        CHECK(ia == x * 4 + z);   // a (2, 1, 4): y repeats
        CHECK(ib == y);           // b (3, 1) aligned right: (1, 3, 1), x and z repeat
      }
  CHECK(bc.numel() == 24);
}

TEST_CASE("broadcast: same shapes, scalars, and shapes that do not broadcast") {
  const Broadcast same = make_broadcast({5, 7}, {5, 7});
  for (int64_t i = 0; i < 35; ++i) {
    int64_t ia, ib;
    broadcast_offsets(same, i, ia, ib);
    CHECK(ia == i);
    CHECK(ib == i);
  }
  const Broadcast scalar = make_broadcast({4, 2}, {});
  int64_t ia, ib;
  broadcast_offsets(scalar, 7, ia, ib);
  CHECK(ia == 7);
  CHECK(ib == 0);
  CHECK_THROWS_WITH_AS(make_broadcast({2, 3}, {4}), "broadcast: shapes (2, 3) and (4) do not broadcast",
                       std::invalid_argument);
}

TEST_CASE("im2col_source reproduces hg::cpu::im2col for strides and padding") {
  struct G { int64_t C, H, W, K, s, p; };
  for (G t : {G{2, 5, 6, 3, 1, 1}, G{3, 7, 7, 3, 2, 0}, G{1, 8, 5, 2, 2, 1}, G{2, 4, 4, 1, 1, 0}}) {
    const ConvGeometry g = ConvGeometry::of(t.C, t.H, t.W, t.K, t.K, t.s, t.p);  // the CPU's and the GPU's
    std::vector<float> x(size_t(t.C * t.H * t.W));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i + 1);  // every pixel distinct and non-zero
    std::vector<float> want(size_t(g.patch() * g.positions()));
    hg::cpu::im2col(x.data(), g, want.data(), g.positions());
    int mismatches = 0;
    for (int64_t r = 0; r < g.patch(); ++r)
      for (int64_t q = 0; q < g.positions(); ++q) {
        int64_t c, h, w;
        const float got = im2col_source(g, r, q, c, h, w) ? x[size_t((c * g.H + h) * g.W + w)] : 0.0f;
        if (got != want[size_t(r * g.positions() + q)]) ++mismatches;
      }
    CHECK(mismatches == 0);
  }
}

TEST_CASE("covering_windows finds exactly the windows that contain a pixel") {
  int checked = 0;
  for (int64_t K = 1; K <= 4; ++K)
    for (int64_t s = 1; s <= 3; ++s)
      for (int64_t p = 0; p < K; ++p)
        for (int64_t H = K; H <= 9; ++H) {
          const int64_t out = (H + 2 * p - K) / s + 1;
          if (out < 1) continue;
          for (int64_t h = 0; h < H; ++h) {
            int64_t first, last;
            covering_windows(h, K, s, p, out, first, last);
            for (int64_t oh = 0; oh < out; ++oh) {
              const bool covers = oh * s - p <= h && h <= oh * s - p + K - 1;  // brute force
              const bool listed = first <= oh && oh <= last;
              if (covers != listed) {
                INFO("K=", K, " s=", s, " p=", p, " H=", H, " h=", h, " oh=", oh);
                CHECK(covers == listed);
              }
              ++checked;
            }
          }
        }
  CHECK(checked > 1000);  // the sweep ran (every mismatch above is a failed CHECK)
}

TEST_CASE("strided_offset walks a view the way the CPU engine does") {
  // x (2, 3) row-major; its transpose is the view shape (3, 2), strides (1, 3).
  const StridedView t = make_strided_view({3, 2}, {1, 3});
  const int64_t want_t[6] = {0, 3, 1, 4, 2, 5};  // x^T read row by row
  for (int64_t i = 0; i < 6; ++i) CHECK(strided_offset(t, i) == want_t[i]);
  // An expand (stride 0) repeats; a 3-d permutation against nested loops.
  const StridedView e = make_strided_view({4, 3}, {0, 1});
  for (int64_t i = 0; i < 12; ++i) CHECK(strided_offset(e, i) == i % 3);
  const StridedView p = make_strided_view({4, 2, 3}, {1, 12, 4});  // (2, 3, 4) permuted (2, 0, 1)
  int64_t i = 0;
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t c = 0; c < 3; ++c, ++i) CHECK(strided_offset(p, i) == b * 12 + c * 4 + a);
  CHECK_THROWS_AS(make_strided_view({2, 2}, {1}), std::invalid_argument);
  CHECK_THROWS_AS(make_strided_view(std::vector<int64_t>(9, 1), std::vector<int64_t>(9, 1)),
                  std::invalid_argument);
}

TEST_CASE("group_positions_by_id lists each id's positions in increasing order") {
  // the example of the header
  const IdGroups ex = group_positions_by_id({2, 0, 2, 1}, 4);
  CHECK(ex.offsets == std::vector<int32_t>{0, 1, 2, 4, 4});
  CHECK(ex.positions == std::vector<int32_t>{1, 3, 0, 2});
  // a text-like batch: a frequent id, ids that never occur, the last id, every position once
  const int64_t V = 11;
  std::vector<int32_t> ids;
  for (int32_t p = 0; p < 200; ++p) ids.push_back(p % 3 == 0 ? 4 : (p * 7 + p / 5) % int32_t(V));
  const IdGroups g = group_positions_by_id(ids, V);
  REQUIRE(g.offsets.size() == size_t(V + 1));
  REQUIRE(g.positions.size() == ids.size());
  CHECK(g.offsets.front() == 0);
  CHECK(g.offsets.back() == int32_t(ids.size()));
  for (int64_t v = 0; v < V; ++v) {
    std::vector<int32_t> want;  // brute force: scan the ids for v
    for (int32_t p = 0; p < int32_t(ids.size()); ++p)
      if (ids[size_t(p)] == v) want.push_back(p);
    const std::vector<int32_t> got(g.positions.begin() + g.offsets[size_t(v)],
                                   g.positions.begin() + g.offsets[size_t(v + 1)]);
    INFO("id ", v);
    CHECK(got == want);
  }
  // no ids: every group empty; an id outside [0, V) is refused, naming it and its position
  CHECK(group_positions_by_id({}, 3).offsets == std::vector<int32_t>{0, 0, 0, 0});
  CHECK_THROWS_WITH_AS(group_positions_by_id({0, 3}, 3), "embedding: id 3 at position 1 is not in [0, 3)",
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(group_positions_by_id({-1}, 3), "embedding: id -1 at position 0 is not in [0, 3)",
                       std::invalid_argument);
}
