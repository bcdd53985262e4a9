// Chapter 10 exercise — the reference solution.
#include "lessons/10_autocast_amp/exercise.h"

#include <stdexcept>
#include <string>

hg::amp::CastPolicy student_policy_for(std::string_view op_name) {
  for (const auto& e : hg::amp::policy_table())
    if (op_name == e.op) return e.policy;
  throw std::invalid_argument("no autocast policy for op '" + std::string(op_name) + "'");
}

hg::DType student_cast_dtype(hg::amp::CastPolicy policy, hg::DType input, hg::DType region) {
  if (input == hg::DType::F64) return input;
  switch (policy) {
    case hg::amp::CastPolicy::LowerPrecision: return region;
    case hg::amp::CastPolicy::FP32: return hg::DType::F32;
    case hg::amp::CastPolicy::Promote:
    case hg::amp::CastPolicy::None: return input;
  }
  return input;
}
