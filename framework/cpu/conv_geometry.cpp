// framework/cpu/conv_geometry.cpp — the checks of a convolution's geometry (conv_geometry.h).
#include "framework/cpu/conv_geometry.h"

#include <stdexcept>
#include <string>

namespace hg {

void ConvGeometry::check() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("conv geometry: " + what);
  };
  need(C > 0 && H > 0 && W > 0, "input (C, H, W) must be positive");
  need(KH > 0 && KW > 0, "kernel size must be positive");
  need(stride_h > 0 && stride_w > 0, "stride must be positive");
  need(pad_h >= 0 && pad_w >= 0, "padding must be >= 0");
  need(H + 2 * pad_h >= KH && W + 2 * pad_w >= KW,
       "kernel " + std::to_string(KH) + "x" + std::to_string(KW) + " is larger than the padded input " +
           std::to_string(H + 2 * pad_h) + "x" + std::to_string(W + 2 * pad_w));
}

}  // namespace hg
