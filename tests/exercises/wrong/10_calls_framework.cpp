// A wrong answer: halfgrad's entry casts, reached through ops that are in the table.
// expect: exercise\.cpp calls hg::amp::autocast_cast
#include "lessons/10_autocast_amp/exercise.h"

#include <stdexcept>

#include "framework/amp/autocast.h"

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


std::vector<hg::Tensor> student_autocast(CastPolicy policy, std::vector<hg::Tensor> inputs) {
  // Borrow the table's behaviour through an op that has each policy.
  const char* op = policy == CastPolicy::LowerPrecision ? "linear" : policy == CastPolicy::FP32 ? "softmax" : "relu";
  if (policy == CastPolicy::Promote && inputs.size() == 2) {
    hg::amp::autocast_promote(inputs[0], inputs[1], "add");
    return inputs;
  }
  for (hg::Tensor& t : inputs) t = hg::amp::autocast_cast(t, op);
  return inputs;
}
