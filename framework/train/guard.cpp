#include "framework/train/guard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "framework/tensor/dtype.h"
#include "framework/cuda/amp.h"

namespace hg::train {

namespace {

struct NonFinite {
  int64_t nan = 0, inf = 0;
};

// Counts the NaNs and infinities of a CPU tensor (any float dtype, in its stored values).
NonFinite count_nonfinite(const Tensor& t) {
  const Tensor c = t.contiguous();
  NonFinite n;
  visit_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* d = c.data<T>();
    for (int64_t i = 0, size = c.numel(); i < size; ++i) {
      const auto v = load(d[i]);
      if (std::isnan(v)) ++n.nan;
      else if (std::isinf(v)) ++n.inf;
    }
  });
  return n;
}

// True when every value of every tensor is finite. On the CPU a scan that stops at the
// first bad value; on the GPU one check kernel per tensor and one flag read back.
bool all_finite(const std::vector<nn::NamedTensor>& params) {
  std::vector<Tensor> gpu;
  for (const auto& p : params) {
    if (p.tensor.device() == Device::CUDA) {
      gpu.push_back(p.tensor);
      continue;
    }
    const Tensor c = p.tensor.contiguous();
    bool finite = true;
    visit_dtype(c.dtype(), [&](auto tag) {
      using T = decltype(tag);
      const T* d = c.data<T>();
      // x - x is 0 for a finite x and NaN for inf or NaN. A loop with no early exit
      // vectorises: it runs over blocks of 4096 values and stops between blocks.
      constexpr int64_t kBlock = 4096;
      for (int64_t i0 = 0, size = c.numel(); i0 < size && finite; i0 += kBlock) {
        const int64_t end = std::min(size, i0 + kBlock);
        int bad = 0;
        for (int64_t i = i0; i < end; ++i) {
          const auto v = load(d[i]);
          bad |= !(v - v == 0);
        }
        finite = bad == 0;
      }
    });
    if (!finite) return false;
  }
  if (gpu.empty()) return true;
  return !cuda::unscale_and_check(gpu, 1.0f, /*check_only=*/true);
}

std::string describe(double loss) {
  return std::isnan(loss) ? "NaN" : loss > 0 ? "inf" : "-inf";
}

}  // namespace

std::string Divergence::message() const {
  return "diverged at step " + std::to_string(step) + ": " + cause;
}

std::string nonfinite_parameter(const std::vector<nn::NamedTensor>& params) {
  if (all_finite(params)) return "";
  // Something is not finite: find and count it (on the CPU, so the message has numbers).
  for (const auto& p : params) {
    const NonFinite n = count_nonfinite(p.tensor.device() == Device::CPU ? p.tensor : p.tensor.to(Device::CPU));
    if (n.nan == 0 && n.inf == 0) continue;
    std::string what = n.nan && n.inf ? std::to_string(n.nan) + " NaN and " + std::to_string(n.inf) + " inf"
                       : n.nan        ? std::to_string(n.nan) + " NaN"
                                      : std::to_string(n.inf) + " inf";
    return "parameter " + p.name + " holds " + what + " (of " + std::to_string(p.tensor.numel()) + " values)";
  }
  return "a parameter holds inf or NaN";  // the GPU check saw one the copy did not: still diverged
}

Divergence check_finite_step(int64_t step, double loss, const std::vector<nn::NamedTensor>& params) {
  Divergence d;
  d.step = step;
  if (!std::isfinite(loss)) d.cause = "loss is " + describe(loss);
  else d.cause = nonfinite_parameter(params);
  return d;
}

void report_divergence(io::RunLog& log, const std::string& who, const Divergence& d) {
  std::fprintf(stderr, "%s %s; run stopped (%s: status diverged)\n", who.c_str(), d.message().c_str(),
               log.dir().c_str());
  std::fflush(stderr);
  log.note(d.step, d.message());
  log.end("diverged");
}

}  // namespace hg::train
