#include "framework/amp/grad_stats_logger.h"

#include <cctype>
#include <stdexcept>
#include <string>

#include "framework/autograd/grad_mode.h"

namespace hg::amp {

namespace {
// The values of t as F32 in a CPU buffer (from the GPU: one download).
std::vector<float> as_floats(const Tensor& t) { return t.to_vector(); }

// The name a grad_hist event gives the format (docs/run-log.md): "f16", "bf16", "f32", "f64".
std::string event_dtype(DType t) {
  std::string s = dtype_name(t);
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::vector<GradHistogram> grad_histograms(const std::vector<nn::NamedTensor>& params,
                                           double scale) {
  std::vector<GradHistogram> out;
  for (const auto& p : params) {
    Tensor g = p.tensor.grad();
    if (!g.defined()) continue;
    GradHistogram h(p.name, scale);
    h.dtype = event_dtype(g.dtype());  // widened to F32 below, but counted as held
    if (g.dtype() == DType::F32 && g.device() == Device::CPU && g.is_contiguous()) {
      h.add(g.data<float>(), g.numel());
    } else {
      const std::vector<float> v = as_floats(g);  // F16/BF16 widen exactly to F32
      h.add(v.data(), int64_t(v.size()));
    }
    out.push_back(std::move(h));
  }
  return out;
}

GradStatsLogger::GradStatsLogger(int64_t every_n_steps) : every_(every_n_steps) {
  if (every_n_steps < 0) throw std::invalid_argument("GradStatsLogger: N must be >= 0");
}

void GradStatsLogger::capture(int64_t step, const std::vector<nn::NamedTensor>& params,
                              double scale) {
  NoGradGuard no_grad;
  hist_.clear();
  before_.clear();
  for (const auto& p : params) {
    if (!p.tensor.grad().defined()) continue;
    before_.push_back(p.tensor.detach().clone());  // the weights before the step
  }
  hist_ = grad_histograms(params, scale);
}

std::vector<GradHistogram> GradStatsLogger::finish(const std::vector<nn::NamedTensor>& params,
                                                   bool stepped) {
  std::vector<GradHistogram> out = std::move(hist_);
  hist_.clear();
  if (stepped) {
    size_t k = 0;
    for (const auto& p : params) {
      if (!p.tensor.grad().defined()) continue;
      if (k >= out.size()) break;
      // The .grad is still there after the step (optimizers do not clear it); an unscale
      // or a clip multiplied it, which keeps its zeros zero.
      const Tensor& w = p.tensor;
      const Tensor g = w.grad();
      int64_t moved = 0, lost = 0;
      if (w.dtype() == DType::F32 && g.dtype() == DType::F32 && w.device() == Device::CPU &&
          w.is_contiguous() && g.is_contiguous()) {
        const float* after = w.data<float>();  // fast path: no copies
        const float* before = before_[k].data<float>();
        const float* gd = g.data<float>();
        for (int64_t i = 0, n = w.numel(); i < n; ++i) {
          if (gd[i] == 0.0f) continue;  // nothing asked to move
          ++moved;
          lost += after[i] == before[i];
        }
      } else {
        const std::vector<float> after = w.to_vector(), before = before_[k].to_vector(),
                                 gv = g.to_vector();
        for (size_t i = 0; i < after.size(); ++i) {
          if (gv[i] == 0.0f) continue;
          ++moved;
          lost += after[i] == before[i];
        }
      }
      out[k].lost_update_fraction = moved ? double(lost) / double(moved) : 0.0;
      ++k;
    }
  }
  before_.clear();
  return out;
}

}  // namespace hg::amp
