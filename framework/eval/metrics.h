#pragma once
// Classification metrics: accuracy, confusion matrix, per-class precision / recall / F1,
// macro averages, and tables a student can read.
//
// For class k, counting over the N examples (true label t, predicted label p):
//   TP_k = #(t = k and p = k)     FP_k = #(t ≠ k and p = k)     FN_k = #(t = k and p ≠ k)
//   precision_k = TP / (TP + FP)  "of what I called k, how much was k"
//   recall_k    = TP / (TP + FN)  "of the real k, how much did I find"
//   F1_k        = 2·P·R / (P + R) the harmonic mean: high only when both are
// A ratio whose denominator is 0 (a class never predicted, or never present) is 0, as
// scikit-learn's default does. Macro averages are plain means over the classes, so a rare
// class counts as much as a common one; accuracy = Σ TP_k / N.
#include <cstdint>
#include <string>
#include <vector>

namespace hg::eval {

// (K, K) counts, row = true class, column = predicted class.
struct ConfusionMatrix {
  int num_classes = 0;
  std::vector<int64_t> counts;  // (K, K) row-major
  int64_t at(int true_class, int predicted) const { return counts[size_t(true_class * num_classes + predicted)]; }
};

struct ClassMetrics {
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;  // how many examples truly are this class
};

struct Report {
  int64_t total = 0;
  double accuracy = 0;
  std::vector<ClassMetrics> per_class;  // (K)
  double macro_precision = 0, macro_recall = 0, macro_f1 = 0;
  ConfusionMatrix confusion;
};

// Throws std::invalid_argument when the sizes differ or a label is outside [0, K).
ConfusionMatrix confusion_matrix(const std::vector<int32_t>& labels,
                                 const std::vector<int32_t>& predictions, int num_classes);
double accuracy(const std::vector<int32_t>& labels, const std::vector<int32_t>& predictions);
Report classification_report(const std::vector<int32_t>& labels,
                             const std::vector<int32_t>& predictions, int num_classes);
Report report_from_confusion(const ConfusionMatrix& cm);

// Index of the largest value in each row of (N, K) scores (the first one on ties).
std::vector<int32_t> argmax_rows(const float* scores, int64_t n, int64_t k);

// The per-class table, then accuracy and macro averages, e.g.
//   class           precision  recall      f1  support
//   T-shirt/top         0.812   0.861   0.836     1000
//   ...
//   accuracy                                0.8812    10000
//   macro avg           0.881   0.881   0.880    10000
// `class_names` may be empty (then classes print as 0, 1, ...).
std::string format_report(const Report& r, const std::vector<std::string>& class_names);
// The confusion matrix with row and column headers (names shortened to fit).
std::string format_confusion(const ConfusionMatrix& cm, const std::vector<std::string>& class_names);

}  // namespace hg::eval
