#include "framework/tensor/dtype.h"

#include <algorithm>
#include <stdexcept>

namespace hg {

DType parse_dtype(const std::string& name) {
  std::string s = name;
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "f32" || s == "fp32" || s == "float32") return DType::F32;
  if (s == "f16" || s == "fp16" || s == "float16" || s == "half") return DType::F16;
  if (s == "bf16" || s == "bfloat16") return DType::BF16;
  if (s == "f64" || s == "fp64" || s == "float64") return DType::F64;
  throw std::invalid_argument("unknown dtype '" + name + "' (expected f32, f16, bf16 or f64)");
}

}  // namespace hg
