#include "framework/autograd/topo.h"

#include <unordered_set>
#include <utility>

namespace hg {

std::vector<Node*> topological_order(const Tensor& root) {
  std::vector<Node*> order;
  if (!root.defined() || !root.grad_fn()) return order;
  // Iterative DFS (a ResNet-50 graph is deep enough to worry a recursive one).
  // Each stack entry is (node, index of the next input to visit).
  std::unordered_set<Node*> visited;
  std::vector<std::pair<Node*, size_t>> stack;
  stack.emplace_back(root.grad_fn().get(), 0);
  visited.insert(root.grad_fn().get());
  while (!stack.empty()) {
    auto& [node, next] = stack.back();
    if (next < node->inputs.size()) {
      const Tensor& in = node->inputs[next++];
      if (in.defined() && in.grad_fn()) {
        Node* child = in.grad_fn().get();
        if (visited.insert(child).second) stack.emplace_back(child, 0);
      }
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace hg
