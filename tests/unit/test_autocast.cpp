// Autocast regions: what autocast_cast does to each dtype under each policy, inside and
// outside F16 and BF16 regions, and the per-region cast cache.
#include <doctest/doctest.h>

#include <vector>

#include "framework/amp/autocast.h"
#include "framework/ops/elementwise.h"

using hg::DType;
using hg::Tensor;
using hg::amp::Autocast;
using hg::amp::autocast_cast;

namespace {
Tensor t_of(DType d) { return Tensor::from_vector(std::vector<float>{1.5f, -2.0f}, {2}, d); }
}  // namespace

TEST_CASE("outside a region nothing is cast") {
  CHECK_FALSE(hg::amp::autocast_enabled());
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::F64})
    for (const char* op : {"linear", "softmax", "add", "relu"}) {
      INFO(std::string(hg::dtype_name(d)) << " " << op);
      CHECK(autocast_cast(t_of(d), op).dtype() == d);
    }
}

TEST_CASE("inside F16 and BF16 regions each policy gives its dtype") {
  struct Row { const char* op; DType in; DType out_f16; DType out_bf16; };
  const std::vector<Row> table = {
      // op           input       F16 region    BF16 region
      {"linear",      DType::F32,  DType::F16,  DType::BF16},
      {"matmul",      DType::F32,  DType::F16,  DType::BF16},
      {"conv2d",      DType::F32,  DType::F16,  DType::BF16},
      {"linear",      DType::BF16, DType::F16,  DType::BF16},
      {"linear",      DType::F64,  DType::F64,  DType::F64},   // F64 is never touched
      {"softmax",     DType::F16,  DType::F32,  DType::F32},
      {"cross_entropy", DType::BF16, DType::F32, DType::F32},
      {"batch_norm2d", DType::F16, DType::F16,  DType::F16},   // statistics in F32 inside
      {"sum",         DType::F32,  DType::F32,  DType::F32},
      {"relu",        DType::F16,  DType::F16,  DType::F16},
      {"relu",        DType::F32,  DType::F32,  DType::F32},
      {"add",         DType::F16,  DType::F16,  DType::F16},   // one input alone: unchanged
  };
  for (const Row& r : table) {
    INFO(r.op << " on " << hg::dtype_name(r.in));
    {
      Autocast ac(DType::F16);
      CHECK(hg::amp::autocast_enabled());
      CHECK(autocast_cast(t_of(r.in), r.op).dtype() == r.out_f16);
    }
    {
      Autocast ac(DType::BF16);
      CHECK(autocast_cast(t_of(r.in), r.op).dtype() == r.out_bf16);
    }
  }
  CHECK_FALSE(hg::amp::autocast_enabled());
}

TEST_CASE("promote casts the narrower input to the wider one") {
  Autocast ac(DType::F16);
  Tensor a = t_of(DType::F16), b = t_of(DType::F32);
  hg::amp::autocast_promote(a, b, "add");
  CHECK(a.dtype() == DType::F32);
  CHECK(b.dtype() == DType::F32);
  Tensor c = t_of(DType::F16), d = t_of(DType::BF16);
  hg::amp::autocast_promote(c, d, "mul");
  CHECK(c.dtype() == DType::F32);  // F16 vs BF16: neither holds the other, so F32
  CHECK(d.dtype() == DType::F32);
  CHECK_THROWS_AS(hg::amp::autocast_promote(c, d, "linear"), std::invalid_argument);
}

TEST_CASE("regions nest, a disabled region turns autocast off, and the state comes back") {
  Autocast outer(DType::BF16);
  CHECK(hg::amp::autocast_dtype() == DType::BF16);
  {
    Autocast off(DType::F16, /*enabled=*/false);
    CHECK_FALSE(hg::amp::autocast_enabled());
    CHECK(autocast_cast(t_of(DType::F32), "linear").dtype() == DType::F32);
  }
  CHECK(hg::amp::autocast_enabled());
  CHECK(autocast_cast(t_of(DType::F32), "linear").dtype() == DType::BF16);
  CHECK_THROWS_AS(Autocast(DType::F32), std::invalid_argument);
}

TEST_CASE("an unknown op name inside a region is an error") {
  Autocast ac(DType::F16);
  CHECK_THROWS_WITH_AS(autocast_cast(t_of(DType::F32), "lienar"), doctest::Contains("lienar"),
                       std::invalid_argument);
}

TEST_CASE("the cast cache: one cast per parameter per region, cleared at region exit") {
  Tensor w = Tensor::from_vector(std::vector<float>{0.5f, 0.25f}, {2});
  w.requires_grad_(true);
  hg::amp::reset_cast_cache_stats();
  {
    Autocast ac(DType::F16);
    Tensor c1 = autocast_cast(w, "linear");
    Tensor c2 = autocast_cast(w, "matmul");  // same target dtype: the cached cast
    CHECK(c1.same(c2));
    auto s = hg::amp::cast_cache_stats();
    CHECK(s.casts == 1);
    CHECK(s.hits == 1);
    CHECK(s.entries == 1);
    // An activation (not a leaf) is cast each time, never cached.
    Tensor act = hg::mul(w, 2.0);
    autocast_cast(act, "linear");
    autocast_cast(act, "linear");
    s = hg::amp::cast_cache_stats();
    CHECK(s.casts == 3);
    CHECK(s.entries == 1);
  }
  CHECK(hg::amp::cast_cache_stats().entries == 0);
  {
    Autocast ac(DType::F16);
    autocast_cast(w, "linear");
    CHECK(hg::amp::cast_cache_stats().casts == 4);  // a new region casts afresh
    CHECK(hg::amp::cast_cache_stats().hits == 1);
  }
}

TEST_CASE("the gradient flows through the cached cast back to the F32 parameter") {
  Tensor w = Tensor::from_vector(std::vector<float>{0.5f, 0.25f}, {2});
  w.requires_grad_(true);
  Tensor x = Tensor::from_vector(std::vector<float>{3.0f, -1.0f}, {2}, DType::F16);
  Tensor y;
  {
    Autocast ac(DType::F16);
    // y = w·x + w·x through one cached F16 cast of w; dy/dw = 2x
    Tensor c1 = autocast_cast(w, "linear");
    Tensor c2 = autocast_cast(w, "linear");
    y = hg::add(hg::mul(c1, x), hg::mul(c2, x));
  }
  CHECK(y.dtype() == DType::F16);
  y.backward(Tensor::ones({2}, DType::F16));
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == DType::F32);
  CHECK(w.grad().to_vector() == std::vector<float>{6.0f, -2.0f});
}
