#include "framework/eval/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace hg::eval {

ConfusionMatrix confusion_matrix(const std::vector<int32_t>& labels,
                                 const std::vector<int32_t>& predictions, int num_classes) {
  if (labels.size() != predictions.size())
    throw std::invalid_argument(fmt::format("confusion_matrix: {} labels but {} predictions",
                                            labels.size(), predictions.size()));
  if (num_classes <= 0) throw std::invalid_argument("confusion_matrix: num_classes must be > 0");
  ConfusionMatrix cm;
  cm.num_classes = num_classes;
  cm.counts.assign(size_t(num_classes) * num_classes, 0);
  for (size_t i = 0; i < labels.size(); ++i) {
    const int t = labels[i], p = predictions[i];
    if (t < 0 || t >= num_classes || p < 0 || p >= num_classes)
      throw std::invalid_argument(fmt::format("confusion_matrix: example {} has label {} and prediction "
                                              "{}; both must be in [0, {})", i, t, p, num_classes));
    ++cm.counts[size_t(t * num_classes + p)];
  }
  return cm;
}

double accuracy(const std::vector<int32_t>& labels, const std::vector<int32_t>& predictions) {
  if (labels.size() != predictions.size())
    throw std::invalid_argument(fmt::format("accuracy: {} labels but {} predictions", labels.size(),
                                            predictions.size()));
  if (labels.empty()) return 0.0;
  int64_t right = 0;
  for (size_t i = 0; i < labels.size(); ++i) right += labels[i] == predictions[i];
  return double(right) / double(labels.size());
}

static double ratio(int64_t num, int64_t den) { return den == 0 ? 0.0 : double(num) / double(den); }

Report report_from_confusion(const ConfusionMatrix& cm) {
  const int K = cm.num_classes;
  Report r;
  r.confusion = cm;
  r.per_class.resize(size_t(K));
  int64_t correct = 0;
  for (int k = 0; k < K; ++k) {
    int64_t tp = cm.at(k, k), predicted_k = 0, true_k = 0;
    for (int j = 0; j < K; ++j) {
      predicted_k += cm.at(j, k);  // column sum: TP + FP
      true_k += cm.at(k, j);       // row sum:    TP + FN
    }
    ClassMetrics& m = r.per_class[size_t(k)];
    m.precision = ratio(tp, predicted_k);
    m.recall = ratio(tp, true_k);
    m.f1 = m.precision + m.recall == 0 ? 0.0 : 2 * m.precision * m.recall / (m.precision + m.recall);
    m.support = true_k;
    correct += tp;
    r.total += true_k;
    r.macro_precision += m.precision / K;
    r.macro_recall += m.recall / K;
    r.macro_f1 += m.f1 / K;
  }
  r.accuracy = ratio(correct, r.total);
  return r;
}

Report classification_report(const std::vector<int32_t>& labels,
                             const std::vector<int32_t>& predictions, int num_classes) {
  return report_from_confusion(confusion_matrix(labels, predictions, num_classes));
}

std::vector<int32_t> argmax_rows(const float* scores, int64_t n, int64_t k) {
  std::vector<int32_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const float* row = scores + i * k;
    out[size_t(i)] = int32_t(std::max_element(row, row + k) - row);
  }
  return out;
}

static std::string class_label(const std::vector<std::string>& names, int k) {
  return k < int(names.size()) ? names[size_t(k)] : std::to_string(k);
}

std::string format_report(const Report& r, const std::vector<std::string>& names) {
  size_t w = 12;  // width of the class column: the longest name
  for (int k = 0; k < int(r.per_class.size()); ++k) w = std::max(w, class_label(names, k).size());
  std::string s = fmt::format("{:<{}}  {:>9}  {:>6}  {:>6}  {:>7}\n", "class", w, "precision", "recall", "f1", "support");
  for (int k = 0; k < int(r.per_class.size()); ++k) {
    const ClassMetrics& m = r.per_class[size_t(k)];
    s += fmt::format("{:<{}}  {:>9.3f}  {:>6.3f}  {:>6.3f}  {:>7}\n", class_label(names, k), w, m.precision,
                     m.recall, m.f1, m.support);
  }
  s += fmt::format("{:<{}}  {:>9}  {:>6}  {:>6.4f}  {:>7}\n", "accuracy", w, "", "", r.accuracy, r.total);
  s += fmt::format("{:<{}}  {:>9.3f}  {:>6.3f}  {:>6.3f}  {:>7}\n", "macro avg", w, r.macro_precision,
                   r.macro_recall, r.macro_f1, r.total);
  return s;
}

std::string format_confusion(const ConfusionMatrix& cm, const std::vector<std::string>& names) {
  const int K = cm.num_classes;
  int64_t biggest = 0;
  for (int64_t c : cm.counts) biggest = std::max(biggest, c);
  // Columns are as wide as the biggest count (and at least 5), headed by shortened names.
  const size_t cw = std::max<size_t>(5, std::to_string(biggest).size());
  size_t rw = 11;  // at least as wide as the "true \\ pred" corner
  for (int k = 0; k < K; ++k) rw = std::max(rw, class_label(names, k).size());
  std::string s = fmt::format("{:<{}} ", "true \\ pred", rw);
  for (int k = 0; k < K; ++k) s += fmt::format(" {:>{}}", class_label(names, k).substr(0, cw), cw);
  s += "\n";
  for (int t = 0; t < K; ++t) {
    s += fmt::format("{:<{}} ", class_label(names, t), rw);
    for (int p = 0; p < K; ++p) s += fmt::format(" {:>{}}", cm.at(t, p), cw);
    s += "\n";
  }
  return s;
}

}  // namespace hg::eval
