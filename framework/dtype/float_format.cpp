#include "framework/dtype/float_format.h"

#include <cmath>

namespace hg {

double FloatFormat::decimal_digits() const {
  // A p-bit significand (p = M + 1 with the implicit bit) distinguishes 2^p values per
  // binade, about p·log10(2) decimal digits.
  return (mantissa_bits + 1) * std::log10(2.0);
}

const std::vector<const FloatFormat*>& all_formats() {
  static const std::vector<const FloatFormat*> formats = {&kFP32, &kTF32, &kFP16,
                                                         &kBF16, &kE4M3, &kE5M2};
  return formats;
}

const FloatFormat* find_format(std::string_view id) {
  for (const FloatFormat* f : all_formats())
    if (id == f->id) return f;
  return nullptr;
}

std::string format_ids() {
  std::string s;
  for (const FloatFormat* f : all_formats()) {
    if (!s.empty()) s += ", ";
    s += f->id;
  }
  return s;
}

}  // namespace hg
