#include "framework/amp/policy.h"

#include <stdexcept>
#include <string>

namespace hg::amp {

// ---- THE autocast policy table -------------------------------------------------------
// One line per op. To put a new op under autocast: add a line here, and one line at the
// entry of the op (`x = amp::autocast_cast(x, "name");`).
//
// Checked against PyTorch 1.13: aten/src/ATen/autocast_mode.cpp (TORCH_LIBRARY_IMPL(aten,
// Autocast, m), the CUDA lists) and its docs (docs/source/amp.rst, "Autocast Op Reference").
//   lower_precision_fp  conv2d, matmul, mm, linear, bmm, ...
//   fp32                exp, log, pow (Tensor_Scalar, Tensor_Tensor, Scalar), layer_norm,
//                       mse_loss, nll_loss, ...; cross_entropy through log_softmax + nll_loss
//   fp32_set_opt_dtype  softmax, log_softmax, sum, prod, cumsum (an F32 result)
//   fp32_append_dtype   norm
//   promote             addcdiv, addcmul, atan2, bilinear, cross, dot, index_put, ...
// Not on any list, so they run in the dtype they receive: mean, relu, gelu, sigmoid, tanh,
// batch_norm, the poolings, dropout, reshape. torch.square is pow(x, 2)
// (aten/src/ATen/native/UnaryOps.cpp), so it runs in F32 like pow. add/sub/mul/div and cat
// are not autocast ops; ordinary type promotion widens their mixed inputs.
namespace {
constexpr const char* kBinaryPyTorch =
    "no autocast entry: type promotion widens F16 + F32 to F32, except that a 0-dim F32 tensor "
    "leaves a dimensioned F16 tensor F16";
constexpr const char* kBinaryWhy =
    "one rule to state: mixed inputs go to the wider dtype whatever their shapes. PyTorch's 0-dim "
    "exception is for Python numbers; here a number is its own overload (mul(x, 2.0)), which "
    "keeps x's dtype";
}  // namespace

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
      {"exp", P::FP32},
      {"log", P::FP32},
      {"pow", P::FP32},
      {"square", P::FP32},  // PyTorch's square is pow(x, 2)
      {"layer_norm", P::FP32},
      {"norm", P::FP32},
      {"causal_softmax", P::FP32},
      // Promote to the widest input dtype.
      {"add", P::Promote, kBinaryPyTorch, kBinaryWhy},
      {"sub", P::Promote, kBinaryPyTorch, kBinaryWhy},
      {"mul", P::Promote, kBinaryPyTorch, kBinaryWhy},
      {"div", P::Promote, kBinaryPyTorch, kBinaryWhy},
      {"cat", P::Promote},
      // Run in whatever dtype arrives.
      {"mean", P::None},  // within its inputs' range; F32 accumulation inside the op
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

std::vector<PolicyDifference> policy_differences() {
  std::vector<PolicyDifference> out;
  for (const PolicyEntry& e : policy_table())
    if (e.pytorch) out.push_back({e.op, to_string(e.policy), e.pytorch, e.why ? e.why : ""});
  return out;
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
