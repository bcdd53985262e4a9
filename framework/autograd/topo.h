#pragma once
// framework/autograd/topo.h — the nodes reachable from a tensor, in the order they ran.
#include <memory>
#include <vector>

#include "framework/autograd/node.h"

namespace hg {

// Depth-first post-order from root's grad_fn: every node comes after the nodes that made
// its inputs. Reversed, it is the order backward() visits them. Empty for a leaf.
std::vector<Node*> topological_order(const Tensor& root);

}  // namespace hg
