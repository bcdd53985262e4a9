#pragma once
// framework/autograd/backward.h — the backward pass.
//
// run_backward(root, seed) computes dL/dx for every leaf x that requires grad, where L is
// the sum of root ⊙ seed (seed = 1 for a scalar loss), and adds it to x.grad:
//
//   1. Topological sort of the nodes reachable from root (depth-first, post-order).
//   2. Walk them in reverse: a node runs only after every node that used its output has
//      handed it its gradient, so dL/d(output) is complete when its backward runs.
//   3. Gradients of a tensor used twice are summed (the multivariate chain rule).
//   4. Leaves accumulate: x.grad += dL/dx, in x's own dtype (a parameter's gradient has the
//      parameter's dtype). zero_grad() resets.
//
// The pass itself records no graph (no higher-order gradients).
//
// The hook. Data-parallel training (framework/dist/ddp.h) sends each parameter's gradient to
// the other ranks as soon as it is complete, while backward still computes the earlier
// layers' gradients. `on_grad_ready(leaf)` is called once per leaf that requires grad, right
// after the LAST gradient this pass adds into leaf.grad (a leaf used twice receives two).
// It is PyTorch's register_post_accumulate_grad_hook, given to one pass instead of stored
// on the tensor.
#include <functional>

#include "framework/tensor/tensor.h"

namespace hg {

using GradReadyHook = std::function<void(const Tensor& leaf)>;

void run_backward(const Tensor& root, const Tensor& seed, const GradReadyHook& on_grad_ready = nullptr);

}  // namespace hg
