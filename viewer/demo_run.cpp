// SYNTHETIC DEMO DATA generator: see demo_run.h for the model. Nothing is trained here.
#include "viewer/demo_run.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include "framework/dtype/float_format.h"
#include "framework/fp8/scaling.h"  // DelayedScaling: the fp8_delayed demo's scales are the recipe's

namespace hg::viewer {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& demo_modes() {
  static const std::vector<std::string> modes = {"fp32",          "fp16_naive", "static_scale",
                                                 "dynamic_scale", "amp_f16",    "amp_bf16"};
  return modes;
}

const std::vector<std::string>& extra_demo_modes() {
  static const std::vector<std::string> modes = {"fp8_delayed"};
  return modes;
}

namespace {

// ---- atomic file writing: temp file, fsync, rename ------------------------------------

class AtomicFile {
 public:
  explicit AtomicFile(fs::path path) : path_(std::move(path)), tmp_(path_.string() + ".tmp") {
    f_ = std::fopen(tmp_.c_str(), "wb");
    if (!f_) throw std::runtime_error(tmp_.string() + ": cannot write: " + std::strerror(errno));
  }
  ~AtomicFile() {
    if (f_) {  // not committed: leave no half-written file behind
      std::fclose(f_);
      fs::remove(tmp_);
    }
  }
  void write(const std::string& s) {
    if (std::fwrite(s.data(), 1, s.size(), f_) != s.size())
      throw std::runtime_error(tmp_.string() + ": write failed: " + std::strerror(errno));
  }
  void commit() {
    bool ok = std::fflush(f_) == 0 && ::fsync(fileno(f_)) == 0;
    ok = (std::fclose(f_) == 0) && ok;
    f_ = nullptr;
    if (!ok) throw std::runtime_error(tmp_.string() + ": write failed: " + std::strerror(errno));
    fs::rename(tmp_, path_);
  }

 private:
  fs::path path_, tmp_;
  std::FILE* f_ = nullptr;
};

// ---- the statistical model ------------------------------------------------------------

struct Param {
  std::string name;
  int64_t numel;
  double depth;  // 0 = first layer, 1 = last layer
  bool bias;
};

// A small CNN's parameters (chapter 02's SmallCNN shapes); more than 8 become a deep stack.
std::vector<Param> make_params(int n) {
  std::vector<Param> cnn = {
      {"conv1.weight", 32 * 1 * 3 * 3, 0.0, false}, {"conv1.bias", 32, 0.0, true},
      {"conv2.weight", 64 * 32 * 3 * 3, 0.33, false}, {"conv2.bias", 64, 0.33, true},
      {"fc1.weight", 3136 * 128, 0.67, false},      {"fc1.bias", 128, 0.67, true},
      {"fc2.weight", 128 * 10, 1.0, false},         {"fc2.bias", 10, 1.0, true}};
  if (n <= static_cast<int>(cnn.size())) return {cnn.begin(), cnn.begin() + std::max(n, 1)};
  std::vector<Param> out;
  int layers = (n + 1) / 2;
  for (int i = 0; static_cast<int>(out.size()) < n; ++i) {
    double d = layers > 1 ? static_cast<double>(i) / (layers - 1) : 1.0;
    out.push_back({"layers." + std::to_string(i) + ".weight", 256 * 256, d, false});
    if (static_cast<int>(out.size()) < n)
      out.push_back({"layers." + std::to_string(i) + ".bias", 256, d, true});
  }
  return out;
}

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

constexpr double kSigma = 2.5;  // spread of log2|g| within one parameter

// Centre of log2|g| (the true, unscaled gradient) for a parameter at step t.
double grad_mu(const Param& p, double t, double tau) {
  double mu0 = -17.0 + 12.0 * p.depth + (p.bias ? 1.5 : 0.0);
  return mu0 - 4.0 * (1.0 - std::exp(-t / tau));
}

struct Mode {
  double loss_floor, acc_ceiling, tau_factor;
  enum Scaler { None, Static, Dynamic } scaler;
  bool fp16_weights;  // updates round away in FP16 weights (fp16_naive only)
  const char* lesson;
  bool fp8 = false;   // FP8 casts (fp8_scale events) instead of gradient histograms and memory
};

Mode mode_for(const std::string& m) {
  if (m == "fp32") return {0.25, 0.915, 1.0, Mode::None, false, "02_fp32_training"};
  if (m == "fp16_naive") return {0.62, 0.80, 1.6, Mode::None, true, "06_fp16_naive"};
  if (m == "static_scale") return {0.27, 0.905, 1.05, Mode::Static, false, "08_loss_scaling"};
  if (m == "dynamic_scale")
    return {0.25, 0.913, 1.0, Mode::Dynamic, false, "09_dynamic_loss_scaling"};
  if (m == "amp_f16") return {0.25, 0.914, 1.0, Mode::Dynamic, false, "10_autocast_amp"};
  if (m == "amp_bf16") return {0.265, 0.91, 1.02, Mode::None, false, "11_bfloat16"};
  if (m == "fp8_delayed") return {0.27, 0.905, 1.05, Mode::None, false, "14_fp8", true};
  throw std::runtime_error("unknown demo mode '" + m +
                           "' (known: fp32 fp16_naive static_scale dynamic_scale amp_f16 amp_bf16 fp8_delayed)");
}

// One memory event (docs/run-log.md): each category's bytes at the step's peak. The model's
// states per parameter follow the mode (framework/memory/formulas.h): FP32 4 + 4 + 4 (SGD
// with momentum), FP16 weights 2 + 2 + 4, F16 weights with an F32 master 2 + (2 + 4) + (4 + 4),
// autocast 4 + 4 + 4 with F16 copies of the weights kept for backward. Activations: the small
// CNN's ~78,700 values per image for a batch of 128, in F32 or 2-byte. The optimizer's state
// is made by the first step, after step 0's peak.
json memory_event(int64_t step, const std::string& precision, int64_t n_params, double jitter) {
  const bool f16_model = precision == "fp16_naive" || precision == "static_scale" || precision == "dynamic_scale";
  const bool master = precision == "static_scale" || precision == "dynamic_scale";
  const bool autocast = precision == "amp_f16" || precision == "amp_bf16";
  const int64_t P = n_params;
  const int64_t values = 78656 * 128;
  const int64_t param = (f16_model ? 2 : 4) * P;
  const int64_t grad = (f16_model ? 2 : 4) * P + (master ? 4 * P : 0);
  const int64_t state = step == 0 ? 0 : 4 * P + (master ? 4 * P : 0);
  const int64_t act = (f16_model || autocast ? 2 : 4) * values + (autocast ? 2 * P : 0);
  const int64_t temp = static_cast<int64_t>(double(act) * (0.12 + 0.02 * jitter));
  return {{"type", "memory"},     {"step", step},       {"device", "cpu"},
          {"parameters", param},  {"gradients", grad},  {"optimizer_state", state},
          {"activations", act},   {"temporaries", temp}, {"peak", param + grad + state + act + temp},
          {"live", param + grad + 4 * P + (master ? 4 * P : 0)}};
}

// ---- FP8 casts (fp8_delayed) ----------------------------------------------------------
// Chapter 14's MLP (fc1 784->512, fc2 512->256, fc3 256->10, batch 128) in HYBRID formats: x
// and w in E4M3, dy in E5M2. Each tensor's amax follows a model fitted by eye to a real
// chapter-14 run; its scale comes from the real recipe (DelayedScaling, history 16, margin 0),
// which casts step t with the max of the amaxes before t: the scale lags the amax by a step,
// and a tensor whose amax grows past its history saturates.
struct Fp8DemoTensor {
  std::string name;
  fp8::Format format;
  double numel;
  double amax0;   // the amax at step 0
  double growth;  // binades the amax moves by the end of training (weights grow)
  double noise;   // binades of noise per step (gradients vary batch to batch)
  double spikes;  // chance per step that a bad batch multiplies the amax by 2 .. 8
  double sigma;   // spread of log2|value| within the tensor, in binades
  fp8::DelayedScaling scaling;
};

std::vector<Fp8DemoTensor> fp8_tensors() {
  using fp8::Format;
  auto t = [](const char* name, Format f, double numel, double amax0, double growth, double noise, double spikes,
              double sigma) {
    return Fp8DemoTensor{name, f, numel, amax0, growth, noise, spikes, sigma, fp8::DelayedScaling(f, 16, 0)};
  };
  // The inputs' largest pixel is the same in every batch (fc1.x is flat); ReLU outputs and
  // weights grow as the network learns; output gradients are noisy, with now and then a spike.
  return {t("fc1.x", Format::E4M3, 128 * 784, 2.02, 0.0, 0.0, 0.0, 1.2),
          t("fc1.w", Format::E4M3, 512 * 784, 0.036, 0.8, 0.0, 0.0, 0.8),
          t("fc1.dy", Format::E5M2, 128 * 512, 0.0011, 2.4, 0.25, 0.01, 1.0),
          t("fc2.x", Format::E4M3, 128 * 512, 2.5, 1.0, 0.08, 0.0, 1.2),
          t("fc2.w", Format::E4M3, 256 * 512, 0.044, 1.4, 0.0, 0.0, 0.8),
          t("fc2.dy", Format::E5M2, 128 * 256, 0.0026, 2.0, 0.2, 0.01, 1.0),
          t("fc3.x", Format::E4M3, 128 * 256, 1.1, 1.5, 0.08, 0.0, 1.2),
          t("fc3.w", Format::E4M3, 10 * 256, 0.088, 1.5, 0.0, 0.0, 0.8),
          t("fc3.dy", Format::E5M2, 128 * 10, 0.0286, -0.3, 0.03, 0.0, 1.0)};
}

// One fp8_scale event per tensor at step t (`decay` runs from 1 to 0 as training goes). The
// values of a tensor: log2|v| ~ Normal(log2(amax) - 5·sigma, sigma), its largest sample 5 sigma
// above the centre (the largest of 10^5 .. 10^6 samples). Cast with scale s: underflow is the share below half of the format's
// smallest subnormal, / s; saturated the values above its max, / s (at least the amax itself
// when amax · s passes the max, none otherwise: amax is the largest).
void fp8_events(std::vector<Fp8DemoTensor>& tensors, int64_t step, double decay, std::mt19937_64& rng,
                const std::function<void(const json&)>& emit) {
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  for (Fp8DemoTensor& x : tensors) {
    double log2_amax = std::log2(x.amax0) + x.growth * (1.0 - decay) + x.noise * gauss(rng);
    if (unif(rng) < x.spikes) log2_amax += 1.0 + 2.0 * unif(rng);
    const float amax = float(std::exp2(log2_amax));  // as the cast computes it, in F32
    const float scale = x.scaling.scale();           // from the steps before this one
    const FloatFormat& f = fp8::float_format(x.format);
    const double mu = log2_amax - 5.0 * x.sigma, log2_scale = std::log2(double(scale));
    const double under = normal_cdf((std::log2(f.min_subnormal() / 2) - log2_scale - mu) / x.sigma);
    const double above = 1.0 - normal_cdf((std::log2(f.max_finite()) - log2_scale - mu) / x.sigma);
    const bool saturates = amax * scale > float(f.max_finite());  // in F32, as fp8::cast_stats counts
    const int64_t saturated = saturates ? std::max<int64_t>(1, std::llround(x.numel * above)) : 0;
    x.scaling.update(amax);  // this step's amax joins the history: the next step's scale
    emit({{"type", "fp8_scale"}, {"step", step}, {"tensor", x.name}, {"format", fp8::format_name(x.format)},
          {"amax", amax}, {"scale", scale}, {"scale_max", scale}, {"history_amax", x.scaling.history_amax()},
          {"underflow", std::round(under * 1e6) / 1e6}, {"saturated", saturated}});
  }
}

std::string now_iso8601() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// One grad_hist event: the Normal(mu, sigma) mass of log2|g·scale| binned by floor(log2).
json grad_hist_event(int64_t step, const Param& p, double mu_true, double scale, int64_t infs,
                     double lost_update) {
  const int exp_min = -40, exp_max = 16;
  // FP16's zones come from its one description in framework/dtype (never typed in here).
  const int e_sub = std::ilogb(kFP16.min_subnormal());  // -24: below it FP16 rounds to 0 or 2^-24
  const int e_norm = std::ilogb(kFP16.min_normal());    // -14: below it FP16 is subnormal
  const int e_max = std::ilogb(kFP16.max_finite());     //  15: above it FP16 overflows
  double mu = mu_true + std::log2(scale);
  int64_t zeros = p.bias ? 0 : p.numel / 50;  // dead ReLUs give exact zeros
  int64_t nonzero = p.numel - zeros - infs;
  // Each bin is rounded on its own, so "total" is the sum of the parts (about p.numel).
  auto mass = [&](double lo, double hi) {  // share of log2|g| in [lo, hi)
    return normal_cdf((hi - mu) / kSigma) - normal_cdf((lo - mu) / kSigma);
  };
  std::vector<int64_t> counts(exp_max - exp_min + 1);
  int64_t below = std::llround(nonzero * normal_cdf((exp_min - mu) / kSigma));
  int64_t above = std::llround(nonzero * (1.0 - normal_cdf((exp_max + 1 - mu) / kSigma)));
  int64_t under = below, sub = 0, over = above, sum = 0;
  for (int e = exp_min; e <= exp_max; ++e) {
    int64_t c = std::llround(nonzero * mass(e, e + 1));
    counts[e - exp_min] = c;
    sum += c;
    if (e < e_sub) under += c;
    else if (e < e_norm) sub += c;
    else if (e > e_max) over += c;
  }
  json j = {{"type", "grad_hist"},      {"step", step},         {"param", p.name},
            {"scale", scale},           {"exp_min", exp_min},   {"exp_max", exp_max},
            {"counts", counts},         {"below", below},       {"above", above},
            {"zeros", zeros},           {"fp16_underflow", under}, {"fp16_subnormal", sub},
            {"fp16_overflow", over},    {"inf", infs},          {"nan", 0},
            {"total", zeros + infs + below + above + sum}};
  j["lost_update_fraction"] = std::round(lost_update * 1e4) / 1e4;
  return j;
}

}  // namespace

// ---- one run --------------------------------------------------------------------------

void make_demo_run(const std::string& dir, const std::string& precision, const DemoOptions& opt) {
  const Mode mode = mode_for(precision);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create folder: " + ec.message());

  const std::string name = fs::path(dir).lexically_normal().filename().string();
  json run = {{"format", "halfgrad-run"},
              {"version", 1},
              {"name", name},
              {"lesson", mode.lesson},
              {"model", mode.fp8 || opt.params > 8 ? "mlp" : "smallcnn"},
              {"precision", precision},
              {"device", "cpu"},
              {"seed", opt.seed},
              {"started", now_iso8601()},
              {"args",
               {{"steps", opt.steps}, {"params", opt.params}, {"hist_every", opt.hist_every}}},
              {"status", opt.live_steps_per_second > 0 ? "running" : "finished"},
              {"halfgrad", "SYNTHETIC DEMO DATA from halfgrad-viewer --make-demo-runs"},
              {"synthetic", true}};
  if (mode.fp8) {  // chapter 14's recipe flags, as its run.json records them
    run["args"]["formats"] = "hybrid";
    run["args"]["history"] = 16;
    run["args"]["margin"] = 0;
  }
  AtomicFile run_file(fs::path(dir) / "run.json");
  run_file.write(run.dump(2) + "\n");
  run_file.commit();

  std::mt19937_64 rng(opt.seed * 7919 + std::hash<std::string>{}(precision));
  std::normal_distribution<double> gauss(0.0, 1.0);
  std::uniform_real_distribution<double> unif(0.0, 1.0);
  const auto params = make_params(opt.params);
  int64_t n_params = 0;
  for (const auto& p : params) n_params += p.numel;
  std::mt19937_64 memory_rng(opt.seed + 1);  // its own stream: the other curves stay as they were
  std::mt19937_64 fp8_rng(opt.seed + 2);
  std::vector<Fp8DemoTensor> fp8_state = mode.fp8 ? fp8_tensors() : std::vector<Fp8DemoTensor>{};
  const double tau = std::max<double>(200.0, opt.steps / 8.0) * mode.tau_factor;
  const int hist_every = std::max(1, opt.hist_every);

  // Normally the whole file is written at once (atomically). Live, it is appended and flushed
  // step by step like a real training run, so the viewer can be watched following it.
  const bool live = opt.live_steps_per_second > 0;
  std::optional<AtomicFile> events;
  std::FILE* live_file = nullptr;
  const fs::path events_path = fs::path(dir) / "events.jsonl";
  if (live) {
    live_file = std::fopen(events_path.c_str(), "wb");
    if (!live_file) throw std::runtime_error(events_path.string() + ": cannot write: " + std::strerror(errno));
  } else {
    events.emplace(events_path);
  }
  std::string buf;
  auto flush = [&]() {
    if (live) {
      if (std::fwrite(buf.data(), 1, buf.size(), live_file) != buf.size() || std::fflush(live_file) != 0)
        throw std::runtime_error(events_path.string() + ": write failed");
    } else {
      events->write(buf);
    }
    buf.clear();
  };
  auto emit = [&](const json& j) {
    buf += j.dump();
    buf += '\n';
    if (buf.size() > (1 << 20)) flush();
  };
  emit({{"type", "note"},
        {"step", 0},
        {"text", "SYNTHETIC DEMO DATA: made by halfgrad-viewer --make-demo-runs from a small "
                 "statistical model; no network was trained."}});
  emit({{"type", "scalar"}, {"step", 0}, {"name", "lr"}, {"value", 0.05}});

  // Loss scaler state (PyTorch GradScaler defaults for the dynamic one).
  // The static one is 2^8: a chapter 08 scale picked with headroom, which this model's largest
  // gradients (spikes included) never push past 65504. A static scaler does not look for inf
  // and never skips: in a real run an overflow would end training (chapter 08).
  double scale = mode.scaler == Mode::Dynamic ? 65536.0 : mode.scaler == Mode::Static ? 256.0 : 1.0;
  int64_t good_steps = 0;
  double acc_sum = 0;
  int64_t acc_n = 0;
  for (int64_t step = 0; step < opt.steps; ++step) {
    const double t = static_cast<double>(step);
    const double decay = std::exp(-t / tau);

    // Does the largest scaled gradient overflow FP16 this step? The largest of ~10^5 samples
    // sits about 4 sigma above the centre; now and then a bad batch adds a spike.
    double top = -1e9;
    for (const auto& p : params) top = std::max(top, grad_mu(p, t, tau));
    top += 4.0 * kSigma + 0.3 * gauss(rng);
    if (unif(rng) < 0.0003) top += 2.0 + 3.0 * unif(rng);
    const bool found_inf = mode.scaler != Mode::None && top + std::log2(scale) >=
                                                            std::ilogb(kFP16.max_finite()) + 1;
    const double step_scale = scale;

    double loss = mode.loss_floor + (2.30 - mode.loss_floor) * decay;
    loss *= std::exp(0.06 * (0.4 + decay) * gauss(rng));
    emit({{"type", "scalar"}, {"step", step}, {"name", "train/loss"}, {"value", loss}});
    if (mode.scaler != Mode::None)
      emit({{"type", "loss_scale"},
            {"step", step},
            {"scale", step_scale},
            {"found_inf", found_inf},
            {"skipped", found_inf && mode.scaler == Mode::Dynamic}});

    if (mode.fp8) fp8_events(fp8_state, step, decay, fp8_rng, emit);  // chapter 14 logs no histograms
    if (!mode.fp8 && step % hist_every == 0) {
      for (size_t i = 0; i < params.size(); ++i) {
        const auto& p = params[i];
        double mu = grad_mu(p, t, tau) + 0.15 * gauss(rng);
        double lost = mode.fp16_weights ? (0.05 + 0.5 * (1.0 - decay)) * (1.0 - 0.4 * p.depth)
                                        : 1e-4 * (1.0 - decay);
        int64_t infs = (found_inf && i + 2 == params.size()) ? 3 : 0;
        emit(grad_hist_event(step, p, mu, step_scale, infs, lost));
      }
    }

    if (!mode.fp8 && (step <= 1 || step % hist_every == 0))
      emit(memory_event(step, precision, n_params, unif(memory_rng)));

    double acc = mode.acc_ceiling - (mode.acc_ceiling - 0.10) * decay + 0.01 * gauss(rng);
    acc_sum += acc;
    acc_n++;
    if ((step + 1) % hist_every == 0) {
      emit({{"type", "scalar"}, {"step", step}, {"name", "train/accuracy"}, {"value", acc_sum / acc_n}});
      acc_sum = 0;
      acc_n = 0;
    }
    if ((step + 1) % opt.steps_per_epoch == 0 || step + 1 == opt.steps) {
      int64_t epoch = (step + 1 + opt.steps_per_epoch - 1) / opt.steps_per_epoch;
      double test_acc = mode.acc_ceiling - 0.012 - (mode.acc_ceiling - 0.10) * decay;
      emit({{"type", "scalar"}, {"step", step}, {"epoch", epoch}, {"name", "test/accuracy"},
            {"value", test_acc + 0.003 * gauss(rng)}});
      emit({{"type", "scalar"}, {"step", step}, {"epoch", epoch}, {"name", "test/loss"},
            {"value", (mode.loss_floor + 0.03) + (2.30 - mode.loss_floor) * decay}});
    }

    // The scaler's update rule (dynamic only): backoff x0.5 on inf, growth x2 after 2000 good.
    if (mode.scaler == Mode::Dynamic) {
      if (found_inf) {
        scale *= 0.5;
        good_steps = 0;
      } else if (++good_steps == 2000) {
        scale *= 2.0;
        good_steps = 0;
      }
    }
    if (live) {
      flush();
      std::this_thread::sleep_for(std::chrono::duration<double>(1.0 / opt.live_steps_per_second));
    }
  }
  emit({{"type", "end"}, {"step", opt.steps > 0 ? opt.steps - 1 : 0}, {"status", "finished"}});
  flush();
  if (live) {
    std::fclose(live_file);
    run["status"] = "finished";  // rewritten at the end, as framework/io does
    AtomicFile again(fs::path(dir) / "run.json");
    again.write(run.dump(2) + "\n");
    again.commit();
  } else {
    events->commit();
  }
}

std::vector<std::string> make_demo_runs(const std::string& root, const DemoOptions& opt,
                                        const std::vector<std::string>& modes) {
  std::vector<std::string> out;
  for (const auto& m : modes) {
    std::string dir = (fs::path(root) / ("demo_" + m)).string();
    make_demo_run(dir, m, opt);
    out.push_back(dir);
  }
  return out;
}

}  // namespace hg::viewer
