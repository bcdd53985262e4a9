// A wrong answer: F64 inputs are cast like the others.
// expect: F64 inputs are never cast
#include "lessons/10_autocast_amp/exercise.h"

#include <stdexcept>

#include "framework/amp/autocast.h"

using hg::DType;
using hg::amp::CastPolicy;

CastPolicy student_policy(NewOp op) {
  switch (op) {
    case NewOp::AttentionScores: return CastPolicy::LowerPrecision;
    case NewOp::LogSumExp: return CastPolicy::FP32;
    case NewOp::Softplus: return CastPolicy::FP32;
    case NewOp::SiLU: return CastPolicy::None;
    case NewOp::Lerp: return CastPolicy::Promote;
  }
  throw std::invalid_argument("student_policy: unknown op");
}

namespace {

// The wider of two floating dtypes; F16 and BF16 meet in F32 (neither holds the other).
DType wider(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  return DType::F32;
}
}  // namespace

std::vector<hg::Tensor> student_autocast(CastPolicy policy, std::vector<hg::Tensor> inputs) {
  if (!hg::amp::autocast_enabled()) return inputs;  // outside a region nothing changes
  DType target = DType::F64;                        // F64: "leave it"
  switch (policy) {
    case CastPolicy::LowerPrecision: target = hg::amp::autocast_dtype(); break;
    case CastPolicy::FP32: target = DType::F32; break;
    case CastPolicy::Promote: {
      bool first = true;
      for (const hg::Tensor& t : inputs)
        if (t.defined()) target = first ? t.dtype() : wider(target, t.dtype()), first = false;
      break;
    }
    case CastPolicy::None: return inputs;
  }
  for (hg::Tensor& t : inputs)
    if (t.defined() && target != DType::F64) t = t.to(target);  // (F64 too)
  return inputs;
}
