#pragma once
// The autocast policy: which precision each op runs in inside an Autocast region.
// The ONE table lives in policy.cpp; everything else (autocast_cast, the chapter-10 table,
// the tests) asks policy_for().
//
//   LowerPrecision  matmul, linear, conv2d: the ops tensor cores make fast. Their inputs
//                   are cast to the region's dtype (F16 or BF16); they accumulate in F32.
//   FP32            ops whose result is spoiled by F16's 10-bit mantissa or 65504 range:
//                   exp/log/pow/square (range: x² overflows F16 from |x| = 256), sums (a
//                   sum of many elements outgrows its inputs and its rounding error grows
//                   with the count), softmax/log_softmax/losses (exp + sum), norms (mean and
//                   variance are sums). Inputs are cast up to F32.
//   Promote         elementwise ops with several inputs (add, sub, mul, div, cat): when the
//                   inputs differ, all are cast to the widest, so F16 + F32 -> F32.
//   None            everything else (relu, pooling, mean, reshape, ...): runs in the dtype it
//                   receives. relu(F16) is exact in F16, so there is nothing to gain; a mean
//                   lies within its inputs' range and accumulates in F32 inside anyway.
//
// The table follows PyTorch 1.13's autocast (its CUDA op lists, which PyTorch applies to F16
// and BF16 alike; halfgrad uses them on every device). Where halfgrad deliberately does
// otherwise, the entry says so: what PyTorch does and why halfgrad differs.
// policy_differences() lists those entries (chapter 10 prints them).
#include <string>
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
  // Set only where halfgrad differs from PyTorch 1.13 on purpose ("differs from PyTorch"):
  const char* pytorch = nullptr;  // what PyTorch does instead
  const char* why = nullptr;      // why halfgrad does otherwise
};
// The whole table, in the order it is written (for printing it in chapter 10 and for tests).
const std::vector<PolicyEntry>& policy_table();

struct PolicyDifference {
  std::string op;
  std::string halfgrad;  // to_string() of halfgrad's policy
  std::string pytorch;   // what PyTorch 1.13 does
  std::string reason;    // why halfgrad differs
};
// The entries of the table marked "differs from PyTorch", in table order.
std::vector<PolicyDifference> policy_differences();

}  // namespace hg::amp
