#include "framework/memory/formulas.h"

#include <fmt/format.h>

#include <stdexcept>

namespace hg::memory {

BytesPerParam bytes_per_param(OptimizerKind optimizer, Precision precision) {
  // The optimizer's own state, kept in FP32 whatever the model's precision.
  const int state = optimizer == OptimizerKind::SGD ? 0 : optimizer == OptimizerKind::SGDMomentum ? 4 : 8;
  if (precision == Precision::FP32) return {4, 4, state};
  return {2, 2, 4 + state};  // + the FP32 master copy of every parameter
}

double activation_bytes_per_layer(int64_t seq, int64_t batch, int64_t hidden, int64_t heads) {
  if (seq <= 0 || batch <= 0 || hidden <= 0 || heads <= 0)
    throw std::invalid_argument("activation_bytes_per_layer: seq, batch, hidden and heads must be positive");
  if (hidden % heads != 0)
    throw std::invalid_argument(fmt::format("activation_bytes_per_layer: hidden {} is not a multiple of heads {}",
                                            hidden, heads));
  const double s = double(seq), b = double(batch), h = double(hidden), a = double(heads);
  // sbh·34 (the layer's inputs, Q K V, the MLP's 4h, norms, dropout masks) + 5·a·s²·b (the
  // attention scores, their softmax and its dropout mask), written so every term is whole.
  return 34 * s * b * h + 5 * a * s * s * b;
}

std::vector<ZeroRow> zero_table(double psi, int64_t n, double k) {
  const double N = double(n);
  return {
      {"baseline (data parallel)", "(2+2+K)Ψ", (2 + 2 + k) * psi},
      {"stage 1: P_os", "2Ψ+2Ψ+KΨ/N", 2 * psi + 2 * psi + k * psi / N},
      {"stage 2: P_os+g", "2Ψ+(2+K)Ψ/N", 2 * psi + (2 + k) * psi / N},
      {"stage 3: P_os+g+p", "(2+2+K)Ψ/N", (2 + 2 + k) * psi / N},
  };
}

namespace {

void check_plan(const PlanConfig& c) {
  if (!(c.params >= 1 && c.params <= kMaxPlanParams))
    throw std::invalid_argument(
        fmt::format("--params must be a number of parameters from 1 to {:g} (got {})", kMaxPlanParams, c.params));
  if (c.ranks < 1) throw std::invalid_argument(fmt::format("--ranks must be >= 1 (got {})", c.ranks));
  const int64_t sizes[] = {c.layers, c.hidden, c.heads, c.seq, c.batch};
  const char* flags[] = {"--layers", "--hidden", "--heads", "--seq", "--batch"};
  bool any = false, all = true;
  for (int i = 0; i < 5; ++i) {
    if (sizes[i] < 0) throw std::invalid_argument(fmt::format("{} must be >= 1 (got {})", flags[i], sizes[i]));
    any = any || sizes[i] > 0;
    all = all && sizes[i] > 0;
  }
  if (any && !all)
    throw std::invalid_argument("the activation term needs all of --layers --hidden --heads --seq --batch");
  if (all && c.hidden % c.heads != 0)
    throw std::invalid_argument(fmt::format("--hidden {} is not a multiple of --heads {}", c.hidden, c.heads));
  // The activation column must describe the model the memory column counts: a transformer
  // layer holds 12·h² parameters (the attention's 4h² and the MLP's 8h²), so L layers of width
  // h cannot fit in fewer than 12·L·h² parameters.
  const double in_layers = all ? 12.0 * double(c.layers) * double(c.hidden) * double(c.hidden) : 0;
  if (in_layers > c.params)
    throw std::invalid_argument(fmt::format(
        "--layers {} --hidden {}: the layers alone hold 12·L·h² = {:.3g} parameters, more than --params {:.3g}; "
        "give the shape of the model Ψ counts",
        c.layers, c.hidden, in_layers, c.params));
}

// One decimal up to a petabyte; past it, a mantissa and an exponent (16 · 10^18 bytes is
// "1.6e+10 GB", not eleven digits).
std::string gb(double bytes) {
  const double g = bytes / 1e9;
  return g < 1e6 ? fmt::format("{:.1f} GB", g) : fmt::format("{:.1e} GB", g);
}

}  // namespace

std::string plan_table(const PlanConfig& c) {
  check_plan(c);
  const bool with_activations = c.layers > 0;
  const double act = with_activations
                         ? double(c.layers) * activation_bytes_per_layer(c.seq, c.batch, c.hidden, c.heads)
                         : 0;
  std::string out = fmt::format(
      "memory per data-parallel rank, mixed-precision Adam (K = 12), Ψ = {:.3g} parameters, N = {} ranks\n"
      "(ZeRO, Rajbhandari et al. 2020, figure 1; GB = 10^9 bytes)\n",
      c.params, c.ranks);
  if (with_activations)
    out += fmt::format("activations: {} layers · sbh(34 + 5as/h), s = {}, b = {}, h = {}, a = {}: {} per rank\n"
                       "(Korthikanti et al. 2022; no ZeRO stage partitions them)\n",
                       c.layers, c.seq, c.batch, c.hidden, c.heads, gb(act));
  out += fmt::format("{:<26}{:<15}{:>14}", "stage", "formula", "model states");
  out += with_activations ? fmt::format("{:>14}{:>14}\n", "+ activations", "total") : "\n";
  for (const ZeroRow& r : zero_table(c.params, c.ranks)) {
    // fmt pads by code points; the formula's Ψ is one.
    out += fmt::format("{:<26}{:<15}{:>14}", r.stage, r.formula, gb(r.bytes));
    out += with_activations ? fmt::format("{:>14}{:>14}\n", gb(act), gb(r.bytes + act)) : "\n";
  }
  return out;
}

}  // namespace hg::memory
