#include "framework/amp/activation_memory.h"

#include <unordered_set>

#include "framework/autograd/topo.h"

namespace hg::amp {

namespace {
bool is_parameter(const Tensor& t) { return t.is_leaf() && t.requires_grad(); }

// A cast of a parameter: what autocast makes of an F32 weight inside a region.
bool is_weight_copy(const Tensor& t) {
  const auto& fn = t.grad_fn();
  return fn && fn->op == "cast" && fn->inputs.size() == 1 && is_parameter(fn->inputs[0]);
}
}  // namespace

GraphMemory graph_memory(const Tensor& loss) {
  std::unordered_set<const Storage*> seen;
  GraphMemory m;
  for (const Node* node : topological_order(loss)) {
    for (const Tensor& t : node->inputs) {
      // Parameters live anyway; everything else a node holds lives only for backward.
      if (!t.defined() || is_parameter(t)) continue;
      const Storage* s = t.impl().storage.get();
      if (!s || !seen.insert(s).second) continue;
      (is_weight_copy(t) ? m.weight_copies : m.activations) += int64_t(s->bytes);
    }
  }
  return m;
}

}  // namespace hg::amp
