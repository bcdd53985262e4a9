// CPU tests of the GPU tests' harness (tests/gpu/gpu_test.h): a failing check must bring back
// what it takes to fix it without a GPU — the first mismatching index (and (row, col)), its
// values, the worst one, the count — and head() takes the first n elements of one vector (the
// GPU elementwise test used to build it from iterators into two different temporaries).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/gpu/gpu_test.h"

namespace {

// Runs `check` with the checker writing into a temporary file, and returns what it wrote.
template <class F>
std::string captured(hg::test::Checker& c, F check) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f != nullptr);
  c.out = f;
  check();
  std::fflush(f);
  std::rewind(f);
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, f)) text += buf;
  std::fclose(f);
  c.out = stdout;
  return text;
}

}  // namespace

TEST_CASE("a passing check prints OK and counts") {
  hg::test::Checker c;
  const std::string text = captured(c, [&] { c.exact("matmul 2x2", {1, 2, 3, 4}, {1, 2, 3, 4}); });
  CHECK(text.rfind("OK ", 0) == 0);
  CHECK(c.checks == 1);
  CHECK(c.failures == 0);
  CHECK(c.finish() == 0);
}

TEST_CASE("a failing check names the first mismatch with (row, col), its values, the worst and the count") {
  hg::test::Checker c;
  const std::vector<float> want = {0, 1, 2, 3, 4, 5};
  const std::vector<float> got = {0, 1, 2.5f, 3, 9, 5};  // (rows 2, cols 3): [2] = (0, 2), [4] = (1, 1)
  const std::string text = captured(c, [&] { c.close("conv2d forward F16 (2,3)", got, want, 0.1, 0, 3); });
  INFO(text);
  CHECK(text.find("NOT OK conv2d forward F16 (2,3)") != std::string::npos);
  CHECK(text.find("2 of 6 off") != std::string::npos);
  CHECK(text.find("first [2] (0, 2) got 2.5 want 2") != std::string::npos);
  CHECK(text.find("worst [4] (1, 1) got 9 want 4") != std::string::npos);
  CHECK(text.find("mismatch [4] (1, 1)") != std::string::npos);
  CHECK(c.failures == 1);
  CHECK(c.finish() == 1);
}

TEST_CASE("NaN never passes, equal infinities do, and a size mismatch is reported") {
  hg::test::Checker c;
  captured(c, [&] { c.close("nan", {NAN}, {NAN}, 1, 1); });
  CHECK(c.failures == 1);
  captured(c, [&] { c.exact("inf", {INFINITY}, {INFINITY}); });
  CHECK(c.failures == 1);
  const std::string text = captured(c, [&] { c.exact("sizes", {1, 2}, {1, 2, 3}); });
  CHECK(text.find("size 2, want 3") != std::string::npos);
  CHECK(c.failures == 2);
}

TEST_CASE("within: a per-element bound, with the first element outside it") {
  hg::test::Checker c;
  const std::string ok = captured(c, [&] { c.within("gemm random", {1.0f, 2.0f}, {1.1f, 2.0f}, {0.2f, 0.0f}); });
  CHECK(ok.rfind("OK ", 0) == 0);
  const std::string bad =
      captured(c, [&] { c.within("gemm random 2x2", {1, 2, 3, 5}, {1, 2, 3, 4}, {0, 0, 0, 0.5f}, 2); });
  INFO(bad);
  CHECK(bad.find("1 of 4 outside the bound; first [3] (1, 1) got 5 want 4") != std::string::npos);
  CHECK(c.failures == 1);
}

TEST_CASE("head takes the first n elements of one vector") {
  const std::vector<float> v = {1, 2, 3, 4, 5};
  CHECK(hg::test::head(v, 3) == std::vector<float>{1, 2, 3});
  CHECK(hg::test::head(v, 9) == v);
  CHECK(hg::test::head(v, 0).empty());
}
