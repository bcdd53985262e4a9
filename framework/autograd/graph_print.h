#pragma once
// framework/autograd/graph_print.h — show the graph that produced a tensor.
//
// graph_to_text prints one line per op in the order they ran, e.g.
//
//   leaf x   (4, 3) F32
//   leaf w   (3, 2) F32 requires_grad
//   #1 matmul(x, w)            -> (4, 2) F32
//   #2 relu(#1)                -> (4, 2) F32
//   #3 sum(#2)                 -> () F32     <- loss
//
// graph_to_dot writes the same graph for Graphviz (`dot -Tpng graph.dot -o graph.png`):
// ellipses for leaves, boxes for ops, arrows in the forward direction.
// Leaves are named by Tensor::set_name when given, else "leaf1", "leaf2", ...
#include <string>

#include "framework/tensor/tensor.h"

namespace hg {

std::string graph_to_text(const Tensor& root);
std::string graph_to_dot(const Tensor& root);

}  // namespace hg
