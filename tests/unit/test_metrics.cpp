// Metrics against small cases computed by hand (the arithmetic is in the comments), and
// against a direct count of TP / FP / FN on random labels.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "framework/eval/metrics.h"

using hg::eval::Report;

TEST_CASE("metrics: a 3-class case worked by hand") {
  // labels      0 0 0 1 1 2 2 2 2 2
  // predictions 0 1 0 1 2 2 2 0 2 1
  // confusion (row true, column predicted):  [2 1 0]  [0 1 1]  [1 1 3]
  //   class 0: TP 2, column 3, row 3 → P 2/3, R 2/3, F1 2/3
  //   class 1: TP 1, column 3, row 2 → P 1/3, R 1/2, F1 2·(1/6)/(5/6) = 2/5
  //   class 2: TP 3, column 4, row 5 → P 3/4, R 3/5, F1 2·(9/20)/(27/20) = 2/3
  //   accuracy 6/10; macro P (2/3+1/3+3/4)/3 = 7/12; macro R (2/3+1/2+3/5)/3 = 53/90;
  //   macro F1 (2/3+2/5+2/3)/3 = 26/45
  const std::vector<int32_t> y = {0, 0, 0, 1, 1, 2, 2, 2, 2, 2};
  const std::vector<int32_t> p = {0, 1, 0, 1, 2, 2, 2, 0, 2, 1};
  const Report r = hg::eval::classification_report(y, p, 3);
  CHECK(r.confusion.counts == std::vector<int64_t>{2, 1, 0, 0, 1, 1, 1, 1, 3});
  CHECK(r.total == 10);
  CHECK(r.accuracy == doctest::Approx(0.6));
  CHECK(hg::eval::accuracy(y, p) == doctest::Approx(0.6));
  CHECK(r.per_class[0].precision == doctest::Approx(2.0 / 3));
  CHECK(r.per_class[0].recall == doctest::Approx(2.0 / 3));
  CHECK(r.per_class[1].precision == doctest::Approx(1.0 / 3));
  CHECK(r.per_class[1].recall == doctest::Approx(0.5));
  CHECK(r.per_class[1].f1 == doctest::Approx(0.4));
  CHECK(r.per_class[2].precision == doctest::Approx(0.75));
  CHECK(r.per_class[2].recall == doctest::Approx(0.6));
  CHECK(r.per_class[2].f1 == doctest::Approx(2.0 / 3));
  CHECK(r.per_class[2].support == 5);
  CHECK(r.macro_precision == doctest::Approx(7.0 / 12));
  CHECK(r.macro_recall == doctest::Approx(53.0 / 90));
  CHECK(r.macro_f1 == doctest::Approx(26.0 / 45));
}

TEST_CASE("metrics: a class never predicted or never present scores 0, not NaN") {
  // labels 0 0 1 1, predictions 0 0 0 0: class 1 is never predicted (P = 0/0 → 0),
  // class 2 never occurs at all (everything 0, support 0).
  const Report r = hg::eval::classification_report({0, 0, 1, 1}, {0, 0, 0, 0}, 3);
  CHECK(r.per_class[0].precision == doctest::Approx(0.5));
  CHECK(r.per_class[0].recall == doctest::Approx(1.0));
  CHECK(r.per_class[0].f1 == doctest::Approx(2.0 / 3));
  CHECK(r.per_class[1].precision == 0.0);
  CHECK(r.per_class[1].recall == 0.0);
  CHECK(r.per_class[1].f1 == 0.0);
  CHECK(r.per_class[2].support == 0);
  CHECK(r.macro_f1 == doctest::Approx((2.0 / 3) / 3));
}

TEST_CASE("metrics: random labels agree with a direct count of TP, FP and FN") {
  std::mt19937 gen(42);
  std::uniform_int_distribution<int> cls(0, 4);
  std::vector<int32_t> y(1000), p(1000);
  for (size_t i = 0; i < y.size(); ++i) {
    y[i] = cls(gen);
    p[i] = gen() % 3 == 0 ? cls(gen) : y[i];  // right about 2/3 + 1/15 of the time
  }
  const Report r = hg::eval::classification_report(y, p, 5);
  double max_diff = 0;
  for (int k = 0; k < 5; ++k) {
    int tp = 0, fp = 0, fn = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      tp += y[i] == k && p[i] == k;
      fp += y[i] != k && p[i] == k;
      fn += y[i] == k && p[i] != k;
    }
    const double P = double(tp) / (tp + fp), R = double(tp) / (tp + fn), F = 2 * P * R / (P + R);
    max_diff = std::max({max_diff, std::abs(P - r.per_class[size_t(k)].precision),
                         std::abs(R - r.per_class[size_t(k)].recall), std::abs(F - r.per_class[size_t(k)].f1)});
    CHECK(r.per_class[size_t(k)].support == tp + fn);
  }
  INFO("max difference to the direct count: ", max_diff);
  CHECK(max_diff < 1e-12);
}

TEST_CASE("metrics: argmax, bad input, and the printed tables") {
  const float scores[] = {0.1f, 0.7f, 0.2f,   // → 1
                          3.0f, 3.0f, -1.0f,  // tie → first, 0
                          -5.f, -4.f, -3.f};  // → 2
  CHECK(hg::eval::argmax_rows(scores, 3, 3) == std::vector<int32_t>{1, 0, 2});
  CHECK_THROWS_AS(hg::eval::confusion_matrix({0, 1}, {0}, 2), std::invalid_argument);
  CHECK_THROWS_AS(hg::eval::confusion_matrix({0, 3}, {0, 1}, 3), std::invalid_argument);
  CHECK(hg::eval::accuracy({}, {}) == 0.0);

  const Report r = hg::eval::classification_report({0, 0, 0, 1, 1, 2, 2, 2, 2, 2},
                                                   {0, 1, 0, 1, 2, 2, 2, 0, 2, 1}, 3);
  const std::string table = hg::eval::format_report(r, {"T-shirt/top", "Trouser", "Ankle boot"});
  MESSAGE("\n" << table);
  std::istringstream in(table);
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  REQUIRE(lines.size() == 6);  // header, 3 classes, accuracy, macro avg
  CHECK(lines[0].find("precision") != std::string::npos);
  CHECK(lines[2].find("Trouser") == 0);
  CHECK(lines[2].find("0.333") != std::string::npos);  // P 1/3
  CHECK(lines[2].find("0.500") != std::string::npos);  // R 1/2
  CHECK(lines[2].find("0.400") != std::string::npos);  // F1 2/5
  CHECK(lines[4].find("0.6000") != std::string::npos);
  CHECK(lines[5].find("0.578") != std::string::npos);  // macro F1 26/45 = 0.5778
  for (size_t i = 1; i < lines.size(); ++i) CHECK(lines[i].size() == lines[0].size());  // aligned

  const std::string cm = hg::eval::format_confusion(r.confusion, {"T-shirt/top", "Trouser", "Ankle boot"});
  MESSAGE("\n" << cm);
  CHECK(cm.find("Ankle boot ") != std::string::npos);
  CHECK(cm.find("    1     1     3") != std::string::npos);  // the last row's counts
}
