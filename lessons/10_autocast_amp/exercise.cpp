// Chapter 10 exercise — autocast for five new ops (see exercise.h).
//
// 1. Decide. For each op ask what the table's principles ask (framework/amp/policy.h):
//    is it an op tensor cores run, and so worth running in 16 bits? Can its result leave
//    F16's range (65504 at the top), or does it add up many numbers whose rounding errors
//    pile up in 11 bits? Does it combine inputs that may come in different dtypes? Or is
//    it exact enough in whatever arrives?
// 2. Apply. hg::amp::autocast_enabled() and hg::amp::autocast_dtype() tell you about the
//    region; t.to(dtype) (or hg::cast) casts and is recorded by autograd; t.dtype() is a
//    tensor's dtype. The table's own lookup (policy_for, autocast_cast, autocast_promote)
//    knows nothing about these ops, and the checker refuses it.
// Run: ./lab check 10
#include "lessons/10_autocast_amp/exercise.h"

#include <stdexcept>

#include "framework/amp/autocast.h"

using hg::amp::CastPolicy;

CastPolicy student_policy(NewOp op) {
  // TODO: one decision per op.
  throw std::logic_error("student_policy: not decided yet");
}

std::vector<hg::Tensor> student_autocast(CastPolicy policy, std::vector<hg::Tensor> inputs) {
  // TODO: cast the inputs by the policy, inside a region only; F64 never.
  throw std::logic_error("student_autocast: not written yet");
}
