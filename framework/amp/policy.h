#pragma once
// The autocast policy: which precision each op runs in inside an Autocast region.
// The ONE table lives in policy.cpp; everything else (autocast_cast, the chapter-10 table,
// the tests) asks policy_for().
//
//   LowerPrecision  matmul, linear, conv2d: the ops tensor cores make fast. Their inputs
//                   are cast to the region's dtype (F16 or BF16); they accumulate in F32.
//   FP32            ops whose result is spoiled by F16's 10-bit mantissa or 65504 range:
//                   exp/log/pow (range), sums and means over many elements (rounding error
//                   grows with the count), softmax/log_softmax/losses (exp + sum), norms
//                   (mean and variance are sums). Inputs are cast up to F32.
//   Promote         elementwise ops with several inputs (add, sub, mul, div, cat): when the
//                   inputs differ, all are cast to the widest, so F16 + F32 -> F32.
//   None            everything else (relu, pooling, reshape, ...): runs in the dtype it
//                   receives. relu(F16) is exact in F16, so there is nothing to gain.
#include <string_view>
#include <vector>

namespace hg::amp {

enum class CastPolicy { LowerPrecision, FP32, Promote, None };

// The policy of an op by its name ("linear", "softmax", ...). An unknown name throws
// std::invalid_argument: a typo in an op's autocast line must not silently mean "None".
CastPolicy policy_for(std::string_view op_name);

const char* to_string(CastPolicy);

struct PolicyEntry {
  const char* op;
  CastPolicy policy;
};
// The whole table, in the order it is written (for printing it in chapter 10 and for tests).
const std::vector<PolicyEntry>& policy_table();

}  // namespace hg::amp
