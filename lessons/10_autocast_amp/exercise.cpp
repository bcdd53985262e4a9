// Chapter 10 exercise — write the policy lookup (see exercise.h).
//
// hg::amp::policy_table() is a std::vector of {const char* op, CastPolicy policy}.
// Compare names with `op_name == entry.op` (std::string_view compares the characters).
// Run: ./lab check 10
#include "lessons/10_autocast_amp/exercise.h"

#include <stdexcept>
#include <string>

hg::amp::CastPolicy student_policy_for(std::string_view op_name) {
  // TODO: find op_name in hg::amp::policy_table() and return its policy;
  //       throw std::invalid_argument naming the op when it is not in the table.
  return hg::amp::CastPolicy::None;
}

hg::DType student_cast_dtype(hg::amp::CastPolicy policy, hg::DType input, hg::DType region) {
  // TODO: the dtype this input has after autocast_cast (F64 is never touched).
  return input;
}
