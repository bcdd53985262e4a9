#pragma once
// Device query for the CUDA backend.
namespace hg::cuda {

// Number of usable GPUs; 0 when there is no GPU or no driver (never throws).
int device_count();

}  // namespace hg::cuda
