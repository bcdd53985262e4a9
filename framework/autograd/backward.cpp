#include "framework/autograd/backward.h"

#include <unordered_map>

#include "framework/autograd/grad_mode.h"
#include "framework/autograd/topo.h"
#include "framework/memory/accountant.h"
#include "framework/ops/elementwise.h"

namespace hg {

// leaf.grad += g, in the leaf's dtype. The first gradient is copied (never aliased: the same
// upstream tensor may flow to several leaves, e.g. both inputs of an add).
static void accumulate_into_leaf(TensorImpl& leaf, const Tensor& g) {
  Tensor gd = g.to(leaf.dtype).contiguous();
  if (!leaf.grad) {
    leaf.grad = gd.clone().impl_ptr();
    memory::retag(Tensor(leaf.grad), memory::Tag::Gradient);
    return;
  }
  Tensor acc(leaf.grad);
  add_(acc, gd);
}

// For the hook: how many gradients each leaf will still receive in this pass (one per edge
// from a node of the graph to the leaf).
static std::unordered_map<TensorImpl*, int> edges_into_leaves(const std::vector<Node*>& order) {
  std::unordered_map<TensorImpl*, int> remaining;
  for (Node* node : order)
    for (size_t i = 0; i < node->inputs.size(); ++i)
      if (node->needs_grad[i] && !node->inputs[i].grad_fn()) ++remaining[&node->inputs[i].impl()];
  return remaining;
}

void run_backward(const Tensor& root, const Tensor& seed, const GradReadyHook& on_grad_ready) {
  if (!root.requires_grad())
    op_error("backward", "this tensor does not require grad: no input of the computation that "
                         "made it has requires_grad_() set (or it was computed under NoGradGuard)");
  if (seed.shape() != root.shape())
    op_error("backward", "the gradient has shape " + shape_str(seed.shape()) +
                             " but the tensor has shape " + shape_str(root.shape()));
  NoGradGuard no_grad;
  if (root.is_leaf()) {  // backward() on a parameter itself: d(x)/dx = 1
    accumulate_into_leaf(root.impl(), seed);
    if (on_grad_ready) on_grad_ready(root);
    return;
  }
  std::vector<Node*> order = topological_order(root);
  std::unordered_map<Node*, Tensor> pending;  // dL/d(output of node), summed over its uses
  pending[root.grad_fn().get()] = seed.to(root.dtype());
  std::unordered_map<TensorImpl*, int> remaining;  // the hook's countdown per leaf
  if (on_grad_ready) remaining = edges_into_leaves(order);
  // One edge into a leaf is done (its gradient added, or none came): the last one fires the hook.
  auto edge_done = [&](const Tensor& leaf) {
    if (on_grad_ready && --remaining.at(&leaf.impl()) == 0) on_grad_ready(leaf);
  };

  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = *it;
    auto found = pending.find(node);
    if (found == pending.end()) {  // no gradient reached it: its leaves get nothing from it
      for (size_t i = 0; i < node->inputs.size(); ++i)
        if (node->needs_grad[i] && !node->inputs[i].grad_fn()) edge_done(node->inputs[i]);
      continue;
    }
    Tensor grad_out = found->second;
    pending.erase(found);  // free it as soon as it is used

    std::vector<Tensor> grads = node->backward(grad_out, node->needs_grad);
    if (grads.size() != node->inputs.size())
      op_error(node->op, "backward returned " + std::to_string(grads.size()) +
                             " gradients for " + std::to_string(node->inputs.size()) + " inputs");
    for (size_t i = 0; i < grads.size(); ++i) {
      if (!node->needs_grad[i]) continue;
      const Tensor& input = node->inputs[i];
      if (!grads[i].defined()) {
        if (!input.grad_fn()) edge_done(input);
        continue;
      }
      if (grads[i].shape() != input.shape())
        op_error(node->op, "backward produced a gradient of shape " + shape_str(grads[i].shape()) +
                               " for input " + std::to_string(i) + " of shape " +
                               shape_str(input.shape()));
      if (input.grad_fn()) {
        Node* producer = input.grad_fn().get();
        auto p = pending.find(producer);
        if (p == pending.end()) pending.emplace(producer, grads[i]);
        else p->second = add(p->second, grads[i]);
      } else {
        accumulate_into_leaf(input.impl(), grads[i]);
        edge_done(input);
      }
    }
  }
}

}  // namespace hg
