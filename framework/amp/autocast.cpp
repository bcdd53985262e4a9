#include "framework/amp/autocast.h"

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace hg::amp {

namespace {
// ---- the thread-local autocast state (see autocast.h: the one deliberate global) ----
struct AutocastState {
  bool enabled = false;
  DType dtype = DType::F16;
  int depth = 0;  // nesting depth of Autocast objects
  // (source tensor, target dtype) -> its cast. The weak_ptr detects a source that died
  // and whose address was reused by a new tensor within the same region.
  struct Entry {
    std::weak_ptr<TensorImpl> source;
    Tensor cast;
  };
  std::map<std::pair<const TensorImpl*, DType>, Entry> cache;
  CastCacheStats stats;
};
thread_local AutocastState state;

// Wider = more exponent and mantissa bits: F16 < F32, BF16 < F32, F32 < F64; F16 vs BF16
// has no winner, so both go to F32.
DType wider(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::F64 || b == DType::F64) return DType::F64;
  return DType::F32;
}

bool is_float_to_manage(const Tensor& t) {
  return t.defined() && t.dtype() != DType::F64;
}

Tensor cast_cached(const Tensor& t, DType to) {
  if (t.dtype() == to) return t;
  const bool cacheable = t.is_leaf() && t.requires_grad();  // a parameter
  if (!cacheable) {
    ++state.stats.casts;
    return t.to(to);
  }
  auto key = std::make_pair(t.impl_ptr().get(), to);
  auto it = state.cache.find(key);
  if (it != state.cache.end() && it->second.source.lock() == t.impl_ptr()) {
    ++state.stats.hits;
    return it->second.cast;
  }
  ++state.stats.casts;
  Tensor c = t.to(to);  // recorded by autograd: the gradient flows back to the F32 weight
  state.cache[key] = AutocastState::Entry{t.impl_ptr(), c};
  state.stats.entries = int64_t(state.cache.size());
  return c;
}
}  // namespace

Autocast::Autocast(DType dtype, bool enabled)
    : prev_enabled_(state.enabled), prev_dtype_(state.dtype) {
  if (enabled && dtype != DType::F16 && dtype != DType::BF16)
    throw std::invalid_argument(std::string("Autocast: dtype must be F16 or BF16, got ") +
                                dtype_name(dtype));
  state.enabled = enabled;
  if (enabled) state.dtype = dtype;
  ++state.depth;
}

Autocast::~Autocast() {
  state.enabled = prev_enabled_;
  state.dtype = prev_dtype_;
  // Leaving the outermost region: the weights will change before the next one.
  if (--state.depth == 0) {
    state.cache.clear();
    state.stats.entries = 0;
  }
}

bool autocast_enabled() { return state.enabled; }
DType autocast_dtype() { return state.dtype; }

Tensor autocast_cast(const Tensor& t, std::string_view op_name) {
  if (!state.enabled) return t;
  const CastPolicy p = policy_for(op_name);
  if (!is_float_to_manage(t)) return t;
  switch (p) {
    case CastPolicy::LowerPrecision: return cast_cached(t, state.dtype);
    case CastPolicy::FP32: return cast_cached(t, DType::F32);
    case CastPolicy::Promote:
    case CastPolicy::None: return t;
  }
  return t;
}

void autocast_promote(Tensor& a, Tensor& b, std::string_view op_name) {
  if (!state.enabled) return;
  if (policy_for(op_name) != CastPolicy::Promote)
    throw std::invalid_argument("autocast_promote: op '" + std::string(op_name) +
                                "' is not a Promote op in the policy table");
  if (!a.defined() || !b.defined() || a.dtype() == b.dtype()) return;
  const DType to = wider(a.dtype(), b.dtype());
  a = cast_cached(a, to);
  b = cast_cached(b, to);
}

CastCacheStats cast_cache_stats() { return state.stats; }
void reset_cast_cache_stats() {
  state.stats = CastCacheStats{};
  state.stats.entries = int64_t(state.cache.size());
}

}  // namespace hg::amp
