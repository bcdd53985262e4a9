// The memory formulas (framework/memory/formulas.h) against the papers' own numbers.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "framework/memory/formulas.h"

using hg::memory::OptimizerKind;
using hg::memory::Precision;

TEST_CASE("formulas: bytes per parameter for SGD and Adam, FP32 and mixed precision") {
  struct Row { OptimizerKind o; Precision p; int params, grads, state, total; };
  const Row rows[] = {
      {OptimizerKind::SGD, Precision::FP32, 4, 4, 0, 8},
      {OptimizerKind::SGDMomentum, Precision::FP32, 4, 4, 4, 12},
      {OptimizerKind::Adam, Precision::FP32, 4, 4, 8, 16},
      {OptimizerKind::SGD, Precision::Mixed, 2, 2, 4, 8},
      {OptimizerKind::SGDMomentum, Precision::Mixed, 2, 2, 8, 12},
      {OptimizerKind::Adam, Precision::Mixed, 2, 2, 12, 16},  // ZeRO's 2 + 2 + K, K = 12
  };
  for (const Row& r : rows) {
    const auto b = hg::memory::bytes_per_param(r.o, r.p);
    INFO("optimizer " << int(r.o) << " precision " << int(r.p));
    CHECK(b.parameters == r.params);
    CHECK(b.gradients == r.grads);
    CHECK(b.optimizer_state == r.state);
    CHECK(b.total() == r.total);
  }
}

TEST_CASE("formulas: activation bytes per transformer layer, sbh(34 + 5as/h)") {
  // s = 4, b = 2, h = 8, a = 2: sbh = 64, 5as/h = 5, so 64 · 39 = 2496 bytes.
  CHECK(hg::memory::activation_bytes_per_layer(4, 2, 8, 2) == 2496.0);
  // GPT-3 175B's layer (Korthikanti et al. table 2: h = 12288, a = 96, s = 2048), b = 1:
  // sbh = 25,165,824; 34 + 5·96·2048/12288 = 34 + 80 = 114 -> 2,868,903,936 bytes.
  CHECK(hg::memory::activation_bytes_per_layer(2048, 1, 12288, 96) == 2868903936.0);
  // 5as/h need not be whole: s = 3, h = 4, a = 2 -> 5·2·3/4 = 7.5; sbh = 12 (b = 1): 12 · 41.5 = 498.
  CHECK(hg::memory::activation_bytes_per_layer(3, 1, 4, 2) == 498.0);
  CHECK_THROWS_AS(hg::memory::activation_bytes_per_layer(4, 2, 8, 3), std::invalid_argument);
  CHECK_THROWS_AS(hg::memory::activation_bytes_per_layer(0, 2, 8, 2), std::invalid_argument);
}

TEST_CASE("formulas: ZeRO figure 1, Ψ = 7.5B, N = 64: 120 / 31.4 / 16.6 / 1.9 GB") {
  const auto rows = hg::memory::zero_table(7.5e9, 64);
  REQUIRE(rows.size() == 4);
  const double want_gb[] = {120.0, 31.4, 16.6, 1.9};  // the paper's figure, one decimal
  for (int i = 0; i < 4; ++i) {
    INFO(rows[i].stage << " " << rows[i].bytes);
    CHECK(std::round(rows[i].bytes / 1e8) / 10 == doctest::Approx(want_gb[i]).epsilon(1e-12));
  }
  // The exact values: 16Ψ, 4Ψ + 12Ψ/64, 2Ψ + 14Ψ/64, 16Ψ/64.
  CHECK(rows[0].bytes == 120e9);
  CHECK(rows[1].bytes == 30e9 + 1.40625e9);
  CHECK(rows[2].bytes == 15e9 + 1.640625e9);
  CHECK(rows[3].bytes == 1.875e9);

  const std::string table = hg::memory::plan_table({.params = 7.5e9, .ranks = 64});
  INFO(table);
  for (const char* gb : {"120.0 GB", "31.4 GB", "16.6 GB", "1.9 GB"}) CHECK(table.find(gb) != std::string::npos);
  CHECK(table.find("activations") == std::string::npos);
}

TEST_CASE("formulas: the plan adds the activation term to every stage") {
  // A shape of about 7.5B parameters: 36 layers of width 4096 hold 12·36·4096² = 7.25e9, the
  // rest is the embeddings. s = 2048, b = 1: 36 · 2048·4096·(34 + 5·32·2048/4096) = 36 ·
  // 956,301,312 = 34.43 GB per rank.
  const std::string table =
      hg::memory::plan_table({.params = 7.5e9, .ranks = 64, .layers = 36, .hidden = 4096, .heads = 32,
                              .seq = 2048, .batch = 1});
  INFO(table);
  CHECK(table.find("34.4 GB") != std::string::npos);          // the activation column
  CHECK(table.find("154.4 GB") != std::string::npos);         // baseline 120 + 34.43
  CHECK(table.find("36.3 GB") != std::string::npos);          // stage 3: 1.875 + 34.43
}

TEST_CASE("formulas: the plan refuses a shape that is another model than --params") {
  // GPT-3 175B's width with Ψ = 7.5B: 12·24·12288² = 4.35e10 parameters in the layers alone.
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 7.5e9, .ranks = 64, .layers = 24, .hidden = 12288, .heads = 96,
                                            .seq = 2048, .batch = 1}),
                    doctest::Contains("12·L·h² = 4.35e+10 parameters, more than --params 7.5e+09"));
}

TEST_CASE("formulas: the plan refuses bad sizes, naming the flag") {
  using hg::memory::PlanConfig;
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 0, .ranks = 64}), doctest::Contains("--params"));
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = NAN, .ranks = 64}), doctest::Contains("--params"));
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 1e9, .ranks = 0}), doctest::Contains("--ranks"));
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 1e9, .ranks = 8, .layers = 2}),
                    doctest::Contains("--layers --hidden --heads --seq --batch"));
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 1e9, .ranks = 8, .layers = 2, .hidden = 10, .heads = 3,
                                            .seq = 4, .batch = 1}),
                    doctest::Contains("--heads"));
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 1e9, .ranks = 8, .layers = -1}), doctest::Contains("--layers"));
}

TEST_CASE("formulas: the plan prints a number on every row, or refuses the sizes that would overflow") {
  // 16 · 5e307 bytes is past a double's range: refused, naming --params and its limit.
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 5e307, .ranks = 64}), doctest::Contains("--params"));
  CHECK_THROWS_WITH(hg::memory::plan_table({.params = 1e19, .ranks = 64}), doctest::Contains("1e+18"));
  // The largest sizes accepted print finite numbers in every column (the shape's layers must
  // fit in Ψ: 12·1·(2^28)² = 8.6e17 <= 1e18).
  const int64_t most = std::numeric_limits<int64_t>::max();
  const std::string table = hg::memory::plan_table(
      {.params = 1e18, .ranks = most, .layers = 1, .hidden = int64_t(1) << 28, .heads = 1, .seq = most, .batch = most});
  INFO(table);
  CHECK(table.find("inf") == std::string::npos);
  CHECK(table.find("nan") == std::string::npos);
  CHECK(table.find("1.6e+10 GB") != std::string::npos);  // baseline model states: 16 · 10^18 bytes
}
