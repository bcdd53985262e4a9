#pragma once
// The two gradient passes every loss scaler needs, written once:
//   unscale_grads_   g <- g · (1/S) for every parameter's .grad, in place, while looking for
//                    inf/NaN (one pass over memory, as PyTorch's _amp_foreach_non_finite_
//                    check_and_unscale_ does)
//   clip_grad_norm_  the global L2 norm of all gradients, and g <- g · max_norm/norm when it
//                    exceeds max_norm. Clipping must see the TRUE gradients: call it after
//                    unscaling, or the threshold would be compared with S·‖g‖.
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::amp {

// Multiplies each defined .grad of `params` by inv_scale (computed in F32, rounded back to
// the gradient's dtype). Returns true when any unscaled value, as stored, is inf or NaN:
// the check looks at what the optimizer would use, so neither 0 · inf = NaN (an inf
// inv_scale) nor a finite value that overflows when multiplied can slip past it.
bool unscale_grads_(const std::vector<Tensor>& params, float inv_scale);

// True when any .grad of `params` holds inf or NaN (no change to the values).
bool grads_have_inf_or_nan(const std::vector<Tensor>& params);

// Returns the total L2 norm over every .grad (computed in double); when it is above
// max_norm, scales every .grad by max_norm / (norm + 1e-6) (PyTorch's formula).
// A non-finite norm leaves the gradients unchanged and is returned as is.
double clip_grad_norm_(const std::vector<Tensor>& params, double max_norm);

// The largest finite |g| over every .grad of `params` (0 when there is none). After
// unscaling, a value above 65504 / S tells that g overflowed F16 while it was scaled by S.
double max_abs_grad(const std::vector<Tensor>& params);

}  // namespace hg::amp
