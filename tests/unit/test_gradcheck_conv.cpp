// Finite-difference gradient checks in F64 for conv2d, pooling, batch norm and dropout.
#include "gradcheck.h"

using namespace hg;
using hg::test::gradcheck;
using hg::test::test_input;
using V = std::vector<Tensor>;

TEST_CASE("gradcheck: conv2d (stride, padding, bias or not)") {
  Tensor x = test_input({2, 3, 5, 6}, 31), w = test_input({4, 3, 3, 3}, 32), b = test_input({4}, 33);
  gradcheck("conv2d s1 p1", [](const V& v) { return conv2d(v[0], v[1], v[2], 1, 1); }, {x, w, b});
  gradcheck("conv2d s2 p0", [](const V& v) { return conv2d(v[0], v[1], v[2], 2, 0); }, {x, w, b});
  gradcheck("conv2d s2 p2 no bias", [](const V& v) { return conv2d(v[0], v[1], Tensor(), 2, 2); }, {x, w});
  Tensor w1 = test_input({2, 3, 1, 1}, 34);
  gradcheck("conv2d 1x1", [](const V& v) { return conv2d(v[0], v[1]); }, {x, w1});
}

// Distinct values with gaps, so that no max-pool window has a tie (ties make max
// non-differentiable and finite differences meaningless).
static Tensor distinct_input(Shape s, uint64_t seed) {
  int64_t n = shape_numel(s);
  std::vector<double> v(n);
  Generator g(seed);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>(i) * 0.01;
  for (int64_t i = n - 1; i > 0; --i) std::swap(v[i], v[g.randint(i + 1)]);
  return Tensor::from_vector(v, s);
}

TEST_CASE("gradcheck: max_pool2d, avg_pool2d, global_avg_pool2d") {
  Tensor x = distinct_input({2, 2, 6, 5}, 35);
  gradcheck("max_pool2d k2", [](const V& v) { return max_pool2d(v[0], 2); }, {x});
  gradcheck("max_pool2d k3 s2 p1", [](const V& v) { return max_pool2d(v[0], 3, 2, 1); }, {x});
  gradcheck("max_pool2d k3 s1 (overlapping)", [](const V& v) { return max_pool2d(v[0], 3, 1); }, {x});
  Tensor y = test_input({2, 2, 6, 5}, 36);
  gradcheck("avg_pool2d k2", [](const V& v) { return avg_pool2d(v[0], 2); }, {y});
  gradcheck("avg_pool2d k3 s1 p1", [](const V& v) { return avg_pool2d(v[0], 3, 1, 1); }, {y});
  gradcheck("global_avg_pool2d", [](const V& v) { return global_avg_pool2d(v[0]); }, {y});
}

TEST_CASE("gradcheck: batch_norm2d in training and eval mode") {
  Tensor x = test_input({3, 2, 3, 4}, 37, -2, 3), g = test_input({2}, 38, 0.5, 1.5), b = test_input({2}, 39);
  gradcheck("batch_norm2d train", [](const V& v) {
    Tensor rm = Tensor::zeros({2}, DType::F64), rv = Tensor::ones({2}, DType::F64);
    return batch_norm2d(v[0], v[1], v[2], rm, rv, true);
  }, {x, g, b});
  gradcheck("batch_norm2d eval", [](const V& v) {
    Tensor rm = Tensor::from_vector(std::vector<double>{0.3, -0.2}, {2});
    Tensor rv = Tensor::from_vector(std::vector<double>{1.5, 0.7}, {2});
    return batch_norm2d(v[0], v[1], v[2], rm, rv, false);
  }, {x, g, b});
  gradcheck("batch_norm2d train, no affine", [](const V& v) {
    return batch_norm2d(v[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
  }, {x});
}

TEST_CASE("gradcheck: dropout with a fixed mask") {
  Tensor x = test_input({4, 5}, 40);
  // the mask must be the same in every evaluation: re-seed the generator each time
  gradcheck("dropout p=0.3", [](const V& v) {
    Generator gen(99);
    return dropout(v[0], 0.3, true, gen);
  }, {x});
}
