#include "framework/autograd/recompute.h"

#include <optional>

#include "framework/amp/autocast.h"
#include "framework/autograd/backward.h"
#include "framework/autograd/grad_mode.h"
#include "framework/autograd/node.h"
#include "framework/memory/accountant.h"

namespace hg {

namespace {
// RAII: graph recording on until the end of the scope (backward runs with it off).
struct EnableGradGuard {
  bool previous = grad_enabled();
  EnableGradGuard() { set_grad_enabled(true); }
  ~EnableGradGuard() { set_grad_enabled(previous); }
};
}  // namespace

Tensor recompute(const RecomputeFn& fn, const std::vector<Tensor>& inputs, Generator* rng) {
  if (!grad_enabled()) return fn(inputs);
  const uint64_t rng_before = rng ? rng->state() : 0;  // the masks fn is about to draw
  Tensor out;
  {
    NoGradGuard no_grad;  // the point: no node inside fn, so nothing inside fn is kept
    out = fn(inputs);
  }
  // A fresh handle: fn may return one of its inputs, whose own grad_fn must stay.
  out = out.view_of(out.shape(), out.strides(), out.impl().offset);
  // The forward's autocast state, so the recomputation casts exactly as the forward did.
  const bool autocast_on = amp::autocast_enabled();
  const DType region_dtype = amp::autocast_dtype();

  // Recorded even when no input requires a gradient: the parameters inside fn do.
  return attach_node("recompute", out, inputs,
                     [fn, inputs, autocast_on, region_dtype, rng, rng_before](const Tensor& dy,
                                                                             const NeedsGrad& needs) {
    // Leaves for the recomputation: same storage, no history; their .grad collects dL/dx.
    std::vector<Tensor> leaves(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) continue;
      leaves[i] = inputs[i].detach();
      if (needs[i]) leaves[i].requires_grad_(true);
    }
    Tensor y;
    {
      EnableGradGuard grad_on;
      std::optional<amp::Autocast> region;
      if (autocast_on) region.emplace(region_dtype);
      // Rewind the generator so fn draws the forward's masks again, then put it back where
      // the rest of the program left it.
      const uint64_t rng_now = rng ? rng->state() : 0;
      if (rng) rng->set_state(rng_before);
      y = fn(leaves);
      if (rng) rng->set_state(rng_now);
    }
    if (y.requires_grad()) run_backward(y, dy);  // parameters inside fn accumulate here
    std::vector<Tensor> grads(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!needs[i] || !leaves[i].grad().defined()) continue;
      grads[i] = leaves[i].grad();
      // Counted as a gradient when it landed in the leaf's .grad; it is an intermediate one.
      memory::retag(grads[i], memory::Tag::Temporary);
    }
    return grads;
  });
}

}  // namespace hg
