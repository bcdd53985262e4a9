#include "framework/tensor/generator.h"

#include <cmath>

namespace hg {

double Generator::normal() {
  // u1 in (0, 1] so that log(u1) is finite.
  double u1 = 1.0 - uniform();
  double u2 = uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace hg
