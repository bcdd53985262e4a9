#include "framework/amp/activation_memory.h"

#include <unordered_set>

#include "framework/autograd/topo.h"

namespace hg::amp {

int64_t activation_bytes(const Tensor& loss) {
  std::unordered_set<const Storage*> seen;
  int64_t bytes = 0;
  for (const Node* node : topological_order(loss)) {
    for (const Tensor& t : node->inputs) {
      // Parameters (leaves that require a gradient) live anyway; everything else a node
      // holds — the input batch or its cast, layer outputs, cast weight copies — is kept
      // alive only for backward.
      if (!t.defined() || (t.is_leaf() && t.requires_grad())) continue;
      const Storage* s = t.impl().storage.get();
      if (s && seen.insert(s).second) bytes += int64_t(s->bytes);
    }
  }
  return bytes;
}

}  // namespace hg::amp
