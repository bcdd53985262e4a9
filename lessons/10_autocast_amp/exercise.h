#pragma once
// Chapter 10 exercise: the autocast policy lookup.
//
// Inside an Autocast region every op entry asks: what is my policy, and so what dtype
// must this input be cast to? You write both halves:
//   student_policy_for(op)      look the op up in hg::amp::policy_table(); an op that is
//                               not there is an error (throw std::invalid_argument)
//   student_cast_dtype(...)     the dtype autocast_cast gives an input:
//       LowerPrecision -> the region's dtype (F16 or BF16)
//       FP32           -> F32
//       Promote, None  -> unchanged
//     and F64 inputs are never changed (they are for gradient checks).
//
// exercise.cpp is yours; `./lab check 10` grades it.
#include <string_view>

#include "framework/amp/policy.h"
#include "framework/tensor/dtype.h"

hg::amp::CastPolicy student_policy_for(std::string_view op_name);
hg::DType student_cast_dtype(hg::amp::CastPolicy policy, hg::DType input, hg::DType region);
