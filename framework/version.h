#pragma once
// What this build of halfgrad contains: printed by lessons and recorded in run.json.
#include <string>

namespace hg {

const char* version();          // "0.1"
bool built_with_cuda();         // compiled with the CUDA backend (HG_WITH_CUDA)
std::string build_summary();    // "halfgrad 0.1, CPU + CUDA 13.0" — one line for logs

}  // namespace hg
