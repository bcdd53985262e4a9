#pragma once
// Reading the PyTorch fixtures of tests/reference/nn (written by make_fixtures.py) and
// comparing tensors against them with atol + rtol·|ref|.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "framework/tensor/tensor.h"

namespace hg::testing {

inline nlohmann::json read_nn_fixture(const std::string& file) {
  const std::string path = std::string(HG_SOURCE_DIR) + "/tests/reference/nn/" + file;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open fixture " + path +
                                    " (regenerate: /usr/bin/python3 tests/reference/nn/make_fixtures.py)");
  return nlohmann::json::parse(in);
}

// {"shape": [...], "data": [...]} -> an F32 tensor.
inline Tensor fixture_tensor(const nlohmann::json& j) {
  Shape shape = j.at("shape").get<Shape>();
  std::vector<float> data;
  for (const auto& v : j.at("data")) data.push_back(static_cast<float>(v.get<double>()));
  return Tensor::from_vector(data, shape);
}

struct Closeness {
  double max_abs_diff = 0;  // max |got − ref|
  double worst_ratio = 0;   // max |got − ref| / (atol + rtol·|ref|): ≤ 1 passes
  int64_t worst_index = -1;
};

inline Closeness compare(const std::vector<float>& got, const std::vector<float>& ref, double atol,
                         double rtol) {
  Closeness c;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = std::fabs(static_cast<double>(got[i]) - static_cast<double>(ref[i]));
    const double r = d / (atol + rtol * std::fabs(static_cast<double>(ref[i])));
    c.max_abs_diff = std::max(c.max_abs_diff, d);
    if (!(r <= c.worst_ratio)) {  // also catches NaN
      c.worst_ratio = r;
      c.worst_index = static_cast<int64_t>(i);
    }
  }
  return c;
}

// CHECKs that `got` matches `ref` elementwise; on failure prints the max difference and the
// worst element.
// scale_atol > 0 adds scale_atol · max|ref| to atol: for tensors whose rounding error is set
// by their largest entries (sums through a badly conditioned op such as BatchNorm over a
// handful of values), not by each element's own size.
inline void check_close(const std::string& what, const Tensor& got, const Tensor& ref, double atol,
                        double rtol, double scale_atol = 0) {
  INFO(what);
  REQUIRE(got.shape() == ref.shape());
  const std::vector<float> g = got.to_vector(), r = ref.to_vector();
  if (scale_atol > 0) {
    double m = 0;
    for (float v : r) m = std::max(m, std::fabs(static_cast<double>(v)));
    atol += scale_atol * m;
  }
  const Closeness c = compare(g, r, atol, rtol);
  INFO("max |diff| = " << c.max_abs_diff << ", worst element " << c.worst_index << ": got "
                       << (c.worst_index >= 0 ? g[c.worst_index] : 0.f) << " ref "
                       << (c.worst_index >= 0 ? r[c.worst_index] : 0.f) << " (atol " << atol
                       << ", rtol " << rtol << ")");
  CHECK(c.worst_ratio <= 1.0);
}

}  // namespace hg::testing
