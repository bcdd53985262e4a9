#pragma once
// Autocast: a region of code in which ops choose their own precision by the policy table
// (policy.h). The region is an RAII object, as in PyTorch's `with torch.autocast(...)`:
//
//   { hg::amp::Autocast ac(hg::DType::F16);      // matmul/linear/conv2d in F16,
//     loss = hg::cross_entropy(model(x), y); }    // softmax/losses/norms in F32
//
// What an op does at entry (one line per tensor input, in framework/ops):
//   x = amp::autocast_cast(x, "linear");
// Outside a region autocast_cast returns its input unchanged, so the ops pay one
// thread-local load and nothing else.
//
// GLOBAL STATE, deliberately: whether autocast is on, its dtype and the cast cache are
// thread-local variables. This is the one piece of hidden global state in halfgrad. It is
// what lets `model(x)` change precision without threading a flag through every layer's
// forward(), exactly as PyTorch does. Thread-local means two threads never see each
// other's regions.
//
// The cast cache: inside a region a model's F32 weight is cast to F16 the first time an op
// uses it and the cast tensor is reused by every later use in the same region (a weight
// shared by several layers, or a forward run twice). The cache is emptied when the
// outermost region ends, so the next iteration, after the optimizer changed the F32
// weights, casts them afresh. Only leaves that require a gradient (parameters) are cached:
// activations are new every time anyway.
#include <cstdint>
#include <string_view>

#include "framework/amp/policy.h"
#include "framework/tensor/tensor.h"

namespace hg::amp {

class Autocast {
 public:
  // dtype: F16 or BF16 (anything else throws). enabled = false makes a region that turns
  // autocast off inside an enclosing one (e.g. to run one piece in F32 on purpose).
  explicit Autocast(DType dtype = DType::F16, bool enabled = true);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool prev_enabled_;
  DType prev_dtype_;
};

bool autocast_enabled();
DType autocast_dtype();  // the dtype of the innermost region (F16 when none)

// What an op calls at entry for each floating-point input. Returns t cast per the op's
// policy: LowerPrecision -> the region dtype; FP32 -> F32; Promote and None -> unchanged
// (Promote needs all inputs: autocast_promote). F64 tensors are never touched (they are
// for gradient checks). Undefined tensors (an absent bias) pass through.
Tensor autocast_cast(const Tensor& t, std::string_view op_name);

// For Promote ops: when a and b have different floating dtypes inside a region, the
// narrower one is cast to the wider (F16 + F32 -> F32; F16 + BF16 -> F32).
void autocast_promote(Tensor& a, Tensor& b, std::string_view op_name);

// Counters of this thread's cast cache, for tests and for chapter 10's printout.
struct CastCacheStats {
  int64_t casts = 0;    // casts performed (cache misses included)
  int64_t hits = 0;     // times a cached cast was reused
  int64_t entries = 0;  // tensors in the cache now
};
CastCacheStats cast_cache_stats();
void reset_cast_cache_stats();

}  // namespace hg::amp
