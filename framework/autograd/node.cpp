#include "framework/autograd/node.h"

#include <atomic>

#include "framework/autograd/grad_mode.h"
#include "framework/memory/accountant.h"

namespace hg {

static std::atomic<uint64_t> g_node_sequence{0};

bool should_record(const std::vector<Tensor>& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward) {
  if (!should_record(inputs)) return out;
  return attach_node(op, std::move(out), std::move(inputs), std::move(backward));
}

Tensor attach_node(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->needs_grad.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    node->needs_grad.push_back(t.defined() && t.requires_grad());
    memory::mark_saved(t);  // the node keeps it alive until backward: an activation
  }
  node->inputs = std::move(inputs);
  node->backward = std::move(backward);
  node->out_shape = out.shape();
  node->out_dtype = out.dtype();
  node->sequence = ++g_node_sequence;
  out.impl().grad_fn = std::move(node);
  out.impl().requires_grad = true;
  return out;
}

}  // namespace hg
