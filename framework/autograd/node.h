#pragma once
// framework/autograd/node.h — one recorded operation in the graph.
//
// Define-by-run: every op, as it computes its output, records a Node that remembers
//   - which tensors went in (the edges of the graph, walked by backward()),
//   - a backward function: given dL/d(output), return dL/d(input) for every input.
// The backward function is a lambda written in the op's own file, right under the forward
// math; it captures what it needs (saved inputs, masks, indices). The Node only records —
// the math lives in framework/ops/.
//
//   Tensor y = compute(...);                                   // forward
//   return record("relu", y, {x}, [x](const Tensor& dy, const NeedsGrad&) {
//     return grads{ dy * (x > 0) };                            // backward
//   });
//
// A backward function must not capture its op's output handle (y holds the node, the node
// would hold y: a reference cycle that never frees). Capture y.detach() instead.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg {

using NeedsGrad = std::vector<bool>;  // per input: must a gradient be computed for it?
// dL/d(output) -> dL/d(input) for each input (an undefined Tensor where not needed).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output, const NeedsGrad&)>;

struct Node {
  std::string op;               // "matmul", "relu", ...
  std::vector<Tensor> inputs;   // in the op's argument order
  NeedsGrad needs_grad;         // inputs[i].requires_grad() when recorded
  BackwardFn backward;
  Shape out_shape;              // the output's shape and dtype, for checks and printing
  DType out_dtype = DType::F32;
  uint64_t sequence = 0;        // creation order: later nodes have larger numbers
};

// True when grad mode is on and at least one input requires a gradient.
bool should_record(const std::vector<Tensor>& inputs);

// What every op calls last: when should_record(inputs), attach a Node to `out` (making it
// require grad); otherwise return `out` unchanged. Undefined inputs (an absent bias) are
// allowed and get no gradient.
Tensor record(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward);

// record() without the check: attaches the Node whatever the inputs. For an op whose
// gradient may reach tensors that are not among its inputs (recompute(): the parameters
// used inside the recomputed function).
Tensor attach_node(const char* op, Tensor out, std::vector<Tensor> inputs, BackwardFn backward);

}  // namespace hg
