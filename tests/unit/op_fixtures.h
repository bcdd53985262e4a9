#pragma once
// tests/unit/op_fixtures.h — run an op on PyTorch's inputs and compare with PyTorch.
//
// The fixtures (tests/reference/ops/*.json, written by make_fixtures.py) hold, per case, the
// inputs, an upstream gradient u, PyTorch's output y and dL/dinput for L = Σ u ⊙ y. Here the
// same op runs in our engine in `dtype`, y.backward(u) gives our gradients, and both are
// compared with atol + rtol·|ref|, printing the max difference.
#include <doctest/doctest.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "framework/halfgrad.h"
#include "gradcheck.h"

namespace hg::test {

using json = nlohmann::json;
using OpFn = std::function<Tensor(const json& args, const std::vector<Tensor>& inputs)>;

inline json load_fixture(const std::string& file) {
  std::string path = std::string(HG_SOURCE_DIR) + "/tests/reference/ops/" + file;
  std::ifstream f(path);
  REQUIRE_MESSAGE(f.good(), "missing fixture " << path
                                               << " (regenerate: /usr/bin/python3 "
                                                  "tests/reference/ops/make_fixtures.py)");
  return json::parse(f);
}

inline Tensor tensor_of(const json& j, DType dtype) {
  Shape shape = j.at("shape").get<Shape>();
  return Tensor::from_vector(j.at("data").get<std::vector<double>>(), shape, dtype);
}

// Runs every case of `file` whose op is in `ops` (and fails on a case it cannot run).
inline void check_fixture_file(const std::string& file, const std::map<std::string, OpFn>& ops,
                               DType dtype, double atol, double rtol) {
  json fx = load_fixture(file);
  int ran = 0;
  for (const json& c : fx.at("cases")) {
    std::string name = c.at("name"), op = c.at("op");
    auto it = ops.find(op);
    if (it == ops.end()) {
      FAIL_CHECK(file << ": no runner for op " << op);
      continue;
    }
    std::vector<Tensor> in;
    for (const json& j : c.at("inputs")) in.push_back(tensor_of(j, dtype).requires_grad_());
    Tensor y = it->second(c.at("args"), in);
    Compare out = compare(y.to_double_vector(), c.at("output").at("data").get<std::vector<double>>(),
                          atol, rtol);
    CHECK_MESSAGE(y.shape() == c.at("output").at("shape").get<Shape>(),
                  name << ": shape " << shape_str(y.shape()));
    CHECK_MESSAGE(out.ok, name << " [" << std::string(dtype_name(dtype)) << "] forward: max diff " << out.max_diff);
    y.backward(tensor_of(c.at("upstream"), dtype));
    double worst = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const json& g = c.at("grads").at(i);
      if (g.is_null()) continue;
      REQUIRE_MESSAGE(in[i].grad().defined(), name << ": no gradient for input " << i);
      Compare gc = compare(in[i].grad().to_double_vector(), g.at("data").get<std::vector<double>>(),
                           atol, rtol);
      worst = std::max(worst, gc.max_diff);
      CHECK_MESSAGE(gc.ok, name << " [" << std::string(dtype_name(dtype)) << "] grad of input " << i
                                << ": max diff " << gc.max_diff);
    }
    MESSAGE(name << " [" << std::string(dtype_name(dtype)) << "]: forward max diff " << out.max_diff
                 << ", backward max diff " << worst);
    ++ran;
  }
  CHECK(ran > 0);
}

}  // namespace hg::test
