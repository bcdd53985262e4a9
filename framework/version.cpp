#include "framework/version.h"

namespace hg {

const char* version() { return "0.1"; }

bool built_with_cuda() { return HG_WITH_CUDA != 0; }

std::string build_summary() {
  std::string s = std::string("halfgrad ") + version();
  s += built_with_cuda() ? ", CPU + CUDA backend" : ", CPU only (built without CUDA)";
  return s;
}

}  // namespace hg
