#include "framework/autograd/graph_print.h"

#include <fmt/format.h>

#include <unordered_map>

#include "framework/autograd/topo.h"

namespace hg {

namespace {

// Names for everything in the graph: leaves by their name (or leafN), ops by #N.
struct GraphNames {
  std::unordered_map<const TensorImpl*, std::string> leaf;
  std::vector<const TensorImpl*> leaf_order;
  std::unordered_map<const Node*, std::string> op;
  std::vector<Node*> order;

  explicit GraphNames(const Tensor& root) {
    order = topological_order(root);
    int op_count = 0, leaf_count = 0;
    for (Node* n : order) {
      for (const Tensor& in : n->inputs)
        if (in.defined() && !in.grad_fn() && !leaf.count(in.impl_ptr().get())) {
          std::string name = in.name().empty() ? fmt::format("leaf{}", ++leaf_count) : in.name();
          leaf[in.impl_ptr().get()] = name;
          leaf_order.push_back(in.impl_ptr().get());
        }
      op[n] = fmt::format("#{}", ++op_count);
    }
  }
  std::string of(const Tensor& t) const {
    if (!t.defined()) return "none";
    if (t.grad_fn()) return op.at(t.grad_fn().get());
    return leaf.at(t.impl_ptr().get());
  }
};

}  // namespace

std::string graph_to_text(const Tensor& root) {
  if (!root.grad_fn())
    return fmt::format("leaf {} {} {} (no graph: not computed from tensors that require grad)\n",
                       root.name().empty() ? "tensor" : root.name(), shape_str(root.shape()),
                       dtype_name(root.dtype()));
  GraphNames names(root);
  std::string out;
  for (const TensorImpl* t : names.leaf_order)
    out += fmt::format("leaf {:<8} {} {}{}\n", names.leaf.at(t), shape_str(t->shape),
                       dtype_name(t->dtype), t->requires_grad ? " requires_grad" : "");
  for (Node* n : names.order) {
    std::string args;
    for (size_t i = 0; i < n->inputs.size(); ++i)
      args += (i ? ", " : "") + names.of(n->inputs[i]);
    std::string call = fmt::format("{} {}({})", names.op.at(n), n->op, args);
    out += fmt::format("{:<28} -> {} {}{}\n", call, shape_str(n->out_shape),
                       dtype_name(n->out_dtype),
                       n == root.grad_fn().get()
                           ? (root.name().empty() ? "   <- root" : "   <- " + root.name())
                           : "");
  }
  return out;
}

std::string graph_to_dot(const Tensor& root) {
  GraphNames names(root);
  std::string out = "digraph halfgrad {\n  rankdir=LR;\n  node [fontname=\"monospace\"];\n";
  auto id = [](const void* p) { return fmt::format("n{}", reinterpret_cast<uintptr_t>(p)); };
  for (const TensorImpl* t : names.leaf_order)
    out += fmt::format("  {} [shape=ellipse, label=\"{}\\n{} {}\"{}];\n", id(t), names.leaf.at(t),
                       shape_str(t->shape), dtype_name(t->dtype),
                       t->requires_grad ? ", style=filled, fillcolor=\"#cfe8ff\"" : "");
  for (Node* n : names.order) {
    out += fmt::format("  {} [shape=box, label=\"{} {}\\n{} {}\"];\n", id(n), names.op.at(n), n->op,
                       shape_str(n->out_shape), dtype_name(n->out_dtype));
    for (const Tensor& in : n->inputs) {
      if (!in.defined()) continue;
      const void* src = in.grad_fn() ? static_cast<const void*>(in.grad_fn().get())
                                     : static_cast<const void*>(in.impl_ptr().get());
      out += fmt::format("  {} -> {};\n", id(src), id(n));
    }
  }
  out += "}\n";
  return out;
}

}  // namespace hg
