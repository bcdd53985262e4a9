#include "framework/amp/policy.h"

#include <stdexcept>
#include <string>

namespace hg::amp {

// ---- THE autocast policy table -------------------------------------------------------
// One line per op. To put a new op under autocast: add a line here, and one line at the
// entry of the op (`x = amp::autocast_cast(x, "name");`).
const std::vector<PolicyEntry>& policy_table() {
  using P = CastPolicy;
  static const std::vector<PolicyEntry> table = {
      // Run in F16/BF16 (tensor-core ops; F32 accumulation inside the GEMM).
      {"matmul", P::LowerPrecision},
      {"linear", P::LowerPrecision},
      {"conv2d", P::LowerPrecision},
      // Run in F32 (range or accumulated rounding error would hurt).
      {"softmax", P::FP32},
      {"log_softmax", P::FP32},
      {"cross_entropy", P::FP32},
      {"mse_loss", P::FP32},
      {"sum", P::FP32},
      {"mean", P::FP32},
      {"exp", P::FP32},
      {"log", P::FP32},
      {"pow", P::FP32},
      {"layer_norm", P::FP32},
      {"norm", P::FP32},
      {"causal_softmax", P::FP32},
      // Promote to the widest input dtype.
      {"add", P::Promote},
      {"sub", P::Promote},
      {"mul", P::Promote},
      {"div", P::Promote},
      {"cat", P::Promote},
      // Run in whatever dtype arrives.
      {"relu", P::None},
      {"gelu", P::None},
      {"sigmoid", P::None},
      {"tanh", P::None},
      // Batch norm takes the activation as it arrives and computes its statistics in F32
      // inside (as cuDNN does; PyTorch's autocast leaves it alone too). Casting its input to
      // F32 would keep an F32 copy of every conv output for backward: ResNet-50's activation
      // memory under AMP was 1.29x FP32's with that cast.
      {"batch_norm2d", P::None},
      {"max_pool2d", P::None},
      {"avg_pool2d", P::None},
      {"global_avg_pool2d", P::None},
      {"dropout", P::None},
      {"reshape", P::None},
      {"flatten", P::None},
      {"embedding", P::None},
      {"causal_mask", P::None},
  };
  return table;
}
// ---------------------------------------------------------------------------------------

CastPolicy policy_for(std::string_view op_name) {
  // A linear scan of 30 entries: clearer than a hash map and far cheaper than the op.
  for (const PolicyEntry& e : policy_table())
    if (op_name == e.op) return e.policy;
  throw std::invalid_argument("autocast: no policy for op '" + std::string(op_name) +
                              "'; add a line to the table in framework/amp/policy.cpp");
}

const char* to_string(CastPolicy p) {
  switch (p) {
    case CastPolicy::LowerPrecision: return "lower precision (F16/BF16)";
    case CastPolicy::FP32: return "F32";
    case CastPolicy::Promote: return "promote to widest input";
    case CastPolicy::None: return "none (input dtype)";
  }
  return "?";
}

}  // namespace hg::amp
