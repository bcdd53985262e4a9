#include "framework/train/live.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <thread>

#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/grad_stats_logger.h"
#include "framework/amp/master_weights.h"
#include "framework/amp/unscale.h"
#include "framework/data/loader.h"
#include "framework/eval/metrics.h"
#include "framework/fp8/mlp.h"
#include "framework/memory/report.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"
#include "framework/train/f16_sgd.h"
#include "framework/train/guard.h"
#include "framework/train/lm.h"
#include "framework/train/run_folder.h"
#include "framework/train/step.h"

namespace hg::train {

namespace {

enum class Scaling { None, Static, Dynamic };

// The table of live.h, one row per recipe.
struct Recipe {
  DType model_dtype = DType::F32;
  bool master = false;       // F32 master weights for an F16 model
  Scaling scaling = Scaling::None;
  bool autocast = false;
  DType low = DType::F16;    // the autocast dtype
  bool f16_sgd = false;      // chapter 06's all-F16 update
  bool fp8 = false;          // chapter 14's FP8 Linear layers (fp8/mlp.h)
  fp8::Recipe fp8_recipe = fp8::Recipe::Delayed;
};

bool is_fp8(const std::string& r) { return r.rfind("fp8_", 0) == 0; }

Recipe recipe_of(const std::string& r) {
  Recipe p;
  if (r == "fp16_naive") p.model_dtype = DType::F16, p.f16_sgd = true;
  if (r == "master_weights" || r == "static_scale" || r == "dynamic_scale") p.model_dtype = DType::F16, p.master = true;
  if (r == "static_scale") p.scaling = Scaling::Static;
  if (r == "dynamic_scale" || r == "amp_f16") p.scaling = Scaling::Dynamic;
  if (r == "amp_f16" || r == "amp_bf16") p.autocast = true;
  if (r == "amp_bf16") p.low = DType::BF16;
  if (is_fp8(r)) p.fp8 = true, p.fp8_recipe = fp8::parse_recipe(r.substr(4));
  return p;
}

std::string folder_name(const std::string& dir) {
  const size_t slash = dir.find_last_of('/');
  return slash == std::string::npos ? dir : dir.substr(slash + 1);
}

// The SGD momentum of every parameter, in the model's parameter order (undefined where a
// parameter has had no step yet), as `opt` keeps it: F32 whatever the parameter's dtype.
std::vector<Tensor> momentum_of(const optim::Optimizer& opt) {
  std::vector<Tensor> m(opt.params().size());
  for (const nn::NamedTensor& t : opt.state_dict().tensors) {  // "<index>.momentum_buffer"
    const size_t dot = t.name.find('.');
    if (t.name.substr(dot + 1) == "momentum_buffer") m[std::stoul(t.name.substr(0, dot))] = t.tensor;
  }
  return m;
}

// Gives `opt` that momentum (copied, in F32 on its parameters' device), so its next step goes
// on from it (b = μ·b + g) rather than starting the buffer at g.
void set_momentum(optim::Optimizer& opt, const std::vector<Tensor>& m) {
  optim::OptimizerState state = opt.state_dict();
  for (size_t i = 0; i < m.size(); ++i)
    if (m[i].defined()) state.tensors.push_back({std::to_string(i) + ".momentum_buffer", m[i]});
  opt.load_state_dict(state);
}

}  // namespace

// The GPT's optimizer, as chapter 12 trains it.
std::unique_ptr<optim::Optimizer> gpt_adamw(const nn::Module& model, double lr) {
  return std::make_unique<optim::AdamW>(model.parameters(), lm_adamw(lr, /*weight_decay=*/0.1));
}

constexpr double kGptGradClip = 1.0;     // chapter 12's --grad-clip
constexpr int64_t kGptEvalBatches = 4;   // validation batches per evaluation

nn::GPTConfig live_gpt_config(int64_t vocab_size) {
  nn::GPTConfig c;  // chapter 14's small GPT: a hundred steps a second on 2 cores (docs/viewer.md)
  c.n_layer = 2;
  c.n_head = 2;
  c.n_embd = 64;
  c.block_size = 32;
  c.vocab_size = vocab_size;
  return c;
}

std::string live_recipe_problem(const LiveConfig& cfg, const std::string& recipe) {
  if (cfg.model == "gpt" && recipe != "fp32" && recipe != "amp_f16" && recipe != "amp_bf16")
    return recipe + ": chapter 12's GPT trains in fp32, amp_f16 or amp_bf16 (an F32 model, autocast with or "
           "without a GradScaler)";
  if (is_fp8(recipe) && cfg.model != "mlp")
    return recipe + ": the FP8 recipes are chapter 14's FP8 Linear layers of the MLP; this run trains the " +
           cfg.model;
  if (is_fp8(recipe) && cfg.device != Device::CPU)
    return recipe + ": the FP8 recipes run on the CPU only (chapter 14's FP8 GEMM is an emulation)";
  return "";
}

struct LiveTrainer::State {
  State(const FashionMnist* images, const data::TextCorpus* text, const LiveConfig& cfg)
      : gen(cfg.seed), stats(cfg.stats_every) {
    if (text) {
      gpt = std::make_shared<nn::GPT>(live_gpt_config(int64_t(text->vocab.size())), gen);
      model = gpt;
    } else {
      model = nn::make_model(cfg.model, gen);
      loader.emplace(images->train, DataLoaderOptions{cfg.batch_size, /*shuffle=*/true, /*drop_last=*/false, cfg.seed});
    }
  }
  Generator gen;
  nn::ModulePtr model;
  std::shared_ptr<fp8::Fp8Mlp> fp8;           // the model, under an FP8 recipe (its casts' records)
  std::shared_ptr<nn::GPT> gpt;               // the model, when it is the GPT
  std::optional<DataLoader> loader;           // the image models' batches
  amp::GradStatsLogger stats;
  Recipe recipe;
  std::unique_ptr<amp::MasterWeights> mw;
  std::vector<nn::NamedTensor> master_named;  // the masters under the model's names
  std::unique_ptr<optim::Optimizer> opt;      // SGD; the GPT's AdamW
  std::vector<Tensor> bufs16;                 // fp16_naive's F16 momentum
  std::unique_ptr<amp::GradScaler> scaler;    // disabled unless the recipe scales dynamically
  int64_t steps_run = 0;
  double seconds = 0;

  // The weights at full precision: the F32 masters when there are some, else the model's.
  std::vector<nn::NamedTensor> weights() const { return mw ? master_named : model->named_parameters(); }
  // The momentum in F32 (fp16_naive's F16 buffers widened: exact), in parameter order.
  std::vector<Tensor> momentum() const {
    if (!recipe.f16_sgd) return opt ? momentum_of(*opt) : std::vector<Tensor>{};
    std::vector<Tensor> m(bufs16.size());
    for (size_t i = 0; i < m.size(); ++i)
      if (bufs16[i].defined()) m[i] = bufs16[i].to(DType::F32);
    return m;
  }
};

LiveTrainer::LiveTrainer(const FashionMnist& data, LiveConfig cfg, io::RunLog& log, const std::string& from)
    : LiveTrainer(&data, nullptr, std::move(cfg), log, from) {}

LiveTrainer::LiveTrainer(const data::TextCorpus& text, LiveConfig cfg, io::RunLog& log, const std::string& from)
    : LiveTrainer(nullptr, &text, std::move(cfg), log, from) {}

LiveTrainer::LiveTrainer(const FashionMnist* images, const data::TextCorpus* text, LiveConfig cfg, io::RunLog& log,
                         const std::string& from)
    : images_(images), text_(text), cfg_(std::move(cfg)), log_(log) {
  if ((cfg_.model == "gpt") != (text_ != nullptr))
    throw std::invalid_argument(cfg_.model == "gpt" ? "the GPT trains on text, not on images"
                                                    : "the " + cfg_.model + " trains on images, not on text");
  st_ = std::make_unique<State>(images_, text_, cfg_);
  paused_ = cfg_.paused;
  if (const std::string why = live_recipe_problem(cfg_, cfg_.recipe); !why.empty()) throw std::invalid_argument(why);
  if (!from.empty()) {  // a branch: the weights, the data's position and the settings of its parent
    const io::Checkpoint ckpt = io::load_checkpoint(from);
    const nlohmann::json train = ckpt.meta.value("train", nlohmann::json::object());
    const std::string saved = train.value("extra", nlohmann::json::object()).value("model", "mlp");
    if (saved != cfg_.model)  // the shapes would say so too, in words a learner must decode
      throw std::runtime_error(from + ": a checkpoint of the " + saved + ", not of the " + cfg_.model +
                               " (--model " + saved + ")");
    // As the state of an fp32 run (an F32 model, its optimizer, the scaler the parent had),
    // which set_recipe below carries into the branch's recipe like any recipe change.
    State& s = *st_;
    if (s.gpt) s.opt = gpt_adamw(*s.model, cfg_.lr);
    else s.opt = std::make_unique<optim::SGD>(s.model->parameters(), optim::SGDOptions{.momentum = cfg_.momentum});
    const TrainingState t = restore_checkpoint(ckpt, *s.model, s.opt.get(), s.loader ? &*s.loader : nullptr);
    step_ = t.step;
    const nlohmann::json& e = t.extra;
    cfg_.lr = e.value("lr", cfg_.lr);
    cfg_.momentum = e.value("momentum", cfg_.momentum);
    cfg_.log2_scale = e.value("log2_scale", cfg_.log2_scale);
    cfg_.growth_interval = e.value("growth_interval", cfg_.growth_interval);
    if (e.contains("grad_scaler")) {
      s.scaler = std::make_unique<amp::GradScaler>(amp::ScaleRule{}, /*enabled=*/true);
      s.scaler->load_state_dict(e["grad_scaler"]);
    }
    log_.note(step_, "branched from " + from + " at step " + std::to_string(step_) + " with recipe " + cfg_.recipe);
  }
  set_recipe(cfg_.recipe);
  memory::reset_peak();                 // the model exists: from here, what training holds,
  (void)memory::take_window(cfg_.device);  // and the first memory event's window starts now
}

LiveTrainer::~LiveTrainer() = default;

double LiveTrainer::steps_per_second() const {
  return st_->seconds > 0 ? double(st_->steps_run) / st_->seconds : 0;
}

// The model in the recipe's dtype with the weights it had (F32 masters carried over exactly),
// a new optimizer that goes on with the momentum (F32; rounded to F16 for fp16_naive's F16
// buffers), and a new scaler at the run's loss scale, or where the last one stood when both
// recipes have a GradScaler (its count of good steps too).
void LiveTrainer::set_recipe(const std::string& name) {
  State& s = *st_;
  nlohmann::json scaler_state;  // null: no GradScaler before
  if (s.scaler && s.scaler->is_enabled()) {
    cfg_.log2_scale = std::ilogb(s.scaler->get_scale());
    scaler_state = s.scaler->state_dict();
  }
  // Handles: the momentum outlives the optimizer, the weights outlive to() below.
  const std::vector<Tensor> momentum = s.gpt ? std::vector<Tensor>{} : s.momentum();
  const std::vector<nn::NamedTensor> before = s.weights();
  const Recipe r = recipe_of(name);
  if (r.fp8 || s.recipe.fp8) {  // another class of model: built afresh, then given the weights
    Generator unused(cfg_.seed);  // its initial values are replaced below
    s.fp8 = r.fp8 ? std::make_shared<fp8::Fp8Mlp>(unused, fp8::RecipeConfig{r.fp8_recipe}) : nullptr;
    s.model = r.fp8 ? nn::ModulePtr(s.fp8) : nn::make_model(cfg_.model, unused);
  }
  s.model->to(r.model_dtype);
  s.model->to(cfg_.device);
  s.model->load_state(before);  // rounded to F16 for an F16 model, as copy_master_to_model does
  s.mw.reset();
  s.master_named.clear();
  if (r.master) {
    s.mw = std::make_unique<amp::MasterWeights>(s.model->parameters());
    for (size_t i = 0; i < before.size(); ++i) {
      Tensor m = s.mw->master_params()[i];
      copy_(m, before[i].tensor.to(cfg_.device));  // the F32 values themselves, not their F16 rounding
      s.master_named.push_back({before[i].name, m});
    }
  }
  if (s.gpt) {  // F32 in each of its recipes: the same parameters, so the same AdamW goes on
    if (!s.opt) s.opt = gpt_adamw(*s.model, cfg_.lr);
  } else {
    s.opt = std::make_unique<optim::SGD>(r.master ? s.mw->master_params() : s.model->parameters(),
                                         optim::SGDOptions{.lr = cfg_.lr, .momentum = cfg_.momentum});
    s.bufs16.assign(momentum.size(), Tensor());
    if (!r.f16_sgd) set_momentum(*s.opt, momentum);
    for (size_t i = 0; r.f16_sgd && i < momentum.size(); ++i)
      if (momentum[i].defined()) s.bufs16[i] = momentum[i].to(DType::F16).to(cfg_.device);
  }
  amp::ScaleRule rule;
  rule.init_scale = float(std::ldexp(1.0, cfg_.log2_scale));
  rule.growth_interval = cfg_.growth_interval;
  s.scaler = std::make_unique<amp::GradScaler>(rule, /*enabled=*/r.scaling == Scaling::Dynamic);
  if (r.scaling == Scaling::Dynamic && !scaler_state.is_null()) s.scaler->load_state_dict(scaler_state);
  s.recipe = r;
  cfg_.recipe = name;
}

bool LiveTrainer::train_step() {
  State& s = *st_;
  const Recipe& r = s.recipe;
  const auto t0 = std::chrono::steady_clock::now();
  s.model->zero_grad();
  Tensor loss;
  {
    amp::Autocast region(r.low, r.autocast);  // enabled = false: no region
    loss = forward_loss();
  }
  const float scale = r.scaling == Scaling::Static    ? float(std::ldexp(1.0, cfg_.log2_scale))
                      : r.scaling == Scaling::Dynamic ? s.scaler->get_scale()
                                                      : 1.0f;
  if (r.scaling == Scaling::Static) amp::StaticScaler(scale).scale(loss).backward();
  else s.scaler->scale(loss).backward();  // a disabled scaler hands the loss back as it is
  // Master weights get the F16 gradients in F32: S·g / S for a static scale (an overflow is
  // inf there, and goes into the weights: a static scaler never skips); S·g for the GradScaler,
  // which unscales them itself and skips the step on inf/NaN.
  bool found_inf = false;
  if (r.master) found_inf = s.mw->copy_grads_to_master(r.scaling == Scaling::Static ? 1.0f / scale : 1.0f);
  // The log keeps the gradients as backward made them (S·g, in the model's dtype) with S;
  // the lost updates are measured on what the optimizer moves (the masters when there are some).
  const bool due = s.stats.due(step_);
  const std::vector<nn::NamedTensor> updated = s.weights();
  std::vector<amp::GradHistogram> logged;
  if (due) {
    s.stats.capture(step_, updated, 1.0);
    logged = amp::grad_histograms(s.model->named_parameters(), scale);
  }
  if (s.gpt) {  // chapter 12 clips the true gradients: unscaled first (the scaler then steps)
    s.scaler->unscale_(*s.opt);
    amp::clip_grad_norm_(s.opt->params(), kGptGradClip);
  }
  bool stepped = true;
  if (r.f16_sgd) sgd_step_f16(s.model->parameters(), s.bufs16, float(cfg_.lr), float(cfg_.momentum));
  else stepped = s.scaler->step(*s.opt);  // disabled: a plain step
  if (r.master) s.mw->copy_master_to_model();  // F32 -> F16, rounded once
  s.scaler->update();
  if (r.scaling == Scaling::Dynamic) found_inf = !stepped;
  if (due) {
    const std::vector<amp::GradHistogram> captured = s.stats.finish(updated, stepped);
    for (size_t i = 0; i < logged.size(); ++i) {
      if (i < captured.size() && captured[i].param == logged[i].param)
        logged[i].lost_update_fraction = captured[i].lost_update_fraction;
      log_.grad_hist(step_, logged[i].to_event(step_));
    }
    memory::log_memory(log_, step_, cfg_.device);
  }
  if (r.scaling != Scaling::None) log_.loss_scale(step_, scale, found_inf, !stepped);
  if (s.fp8) fp8::log_fp8_scales(log_, step_, s.fp8->records());  // also at a divergence: the evidence
  const double loss_value = loss.item();
  log_.scalar(step_, "train/loss", loss_value, s.loader ? std::optional<int64_t>(s.loader->epoch()) : std::nullopt);
  s.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++s.steps_run;
  const Divergence d = check_finite_step(step_, loss_value, s.model->named_parameters());
  if (d) {
    report_divergence(log_, "halfgrad-live: " + cfg_.recipe, d);
    return false;
  }
  ++step_;
  if (cfg_.eval_every > 0 && step_ % cfg_.eval_every == 0) evaluate();
  return true;
}

// The images of this step through the model (an epoch that ended starts the next), or the
// GPT's batch of this step: the mean cross entropy, ().
Tensor LiveTrainer::forward_loss() {
  State& s = *st_;
  if (s.gpt) {
    const int64_t T = s.gpt->config.block_size;
    const data::TokenBatch b = data::random_batch(text_->train, cfg_.batch_size, T, cfg_.seed, step_);  // (B·T)
    return nn::GPT::loss(s.gpt->forward(b.x, b.B, b.T), b.y);
  }
  Batch batch;
  if (!s.loader->next(batch)) s.loader->next(batch);
  const Tensor x = batch.images.to(s.recipe.model_dtype).to(cfg_.device);  // (B, 1, 28, 28)
  return cross_entropy((*s.model)(x), batch.labels);
}

void LiveTrainer::evaluate() {
  const Recipe& r = st_->recipe;
  if (st_->gpt) {
    const int64_t T = st_->gpt->config.block_size;
    log_.scalar(step_, "val/loss", validation_loss(*st_->gpt, text_->val, cfg_.batch_size, T, 1, kGptEvalBatches,
                                                   r.autocast ? r.low : DType::F32));
    return;
  }
  const PredictOptions how{
      .input_dtype = r.model_dtype, .autocast = r.autocast, .autocast_dtype = r.low, .device = cfg_.device};
  const std::vector<int32_t> pred = predict(*st_->model, images_->test, how);
  const eval::Report rep = eval::classification_report(images_->test.labels, pred, images_->test.num_classes);
  log_.scalar(step_, "test/accuracy", rep.accuracy);
}

std::string LiveTrainer::branch(const Command& c, nlohmann::json& effect) {
  if (const std::string why = live_recipe_problem(cfg_, c.recipe); !why.empty()) return "branch: " + why;
  if (!branch_) return "branch: this program cannot start a second run";
  const std::string name = folder_name(log_.dir()) + "_b" + std::to_string(step_);
  std::string why = run_name_problem(name);
  if (why.empty() && ::access(run_path(name).c_str(), F_OK) == 0) why = run_path(name) + " exists";
  if (!why.empty()) return "branch: the run " + name + ": " + why;
  const std::string path = log_.dir() + "/branch_" + std::to_string(step_) + ".ckpt";
  // The weights at full precision, in an F32 model of the same shape, with the momentum in
  // F32, and where the data stands. The GPT is F32 already: itself and its AdamW.
  Generator gen(cfg_.seed);
  nn::ModulePtr f32 = st_->model;
  std::unique_ptr<optim::Optimizer> sgd;
  if (!st_->gpt) {
    f32 = nn::make_model(cfg_.model, gen);
    f32->load_state(st_->weights());
    sgd = std::make_unique<optim::SGD>(f32->parameters(), optim::SGDOptions{.lr = cfg_.lr, .momentum = cfg_.momentum});
    set_momentum(*sgd, st_->momentum());
  }
  TrainingState t;
  t.step = step_;
  if (st_->loader) t.epoch = st_->loader->epoch(), t.loader = st_->loader->state_json();
  t.extra = {{"lr", cfg_.lr}, {"momentum", cfg_.momentum}, {"log2_scale", cfg_.log2_scale},
             {"growth_interval", cfg_.growth_interval}, {"recipe", cfg_.recipe}, {"model", cfg_.model}};
  if (st_->scaler->is_enabled()) {
    t.extra["log2_scale"] = std::ilogb(st_->scaler->get_scale());
    t.extra["grad_scaler"] = st_->scaler->state_dict();  // its count of good steps too
  }
  try {
    save_training_checkpoint(path, *f32, sgd ? sgd.get() : st_->opt.get(), t);
  } catch (const std::exception& e) {
    return std::string("branch: ") + e.what();
  }
  why = branch_(path, c.recipe, name);
  if (!why.empty()) return "branch: " + why;
  effect = {{"checkpoint", path}, {"run", name}};
  return "";
}

std::string LiveTrainer::apply(const Command& c, const std::string& source) {
  std::string why;
  nlohmann::json effect = nlohmann::json::object();
  State& s = *st_;
  // A stop whose step has passed stops now: a parent ending its branches at its own last step
  // finds a branch that is ahead of it (docs/run-log.md). Every other command is refused.
  if (c.at >= 0 && c.at < step_ && c.kind != CommandKind::Stop) {
    why = "at " + std::to_string(c.at) + ": that step has passed (the run is at step " + std::to_string(step_) + ")";
  } else {
    switch (c.kind) {
      case CommandKind::Pause:
        if (paused_) why = "pause: the run is paused already";
        else paused_ = true, steps_granted_ = 0;
        break;
      case CommandKind::Resume:
        if (!paused_) why = "resume: the run is not paused";
        else paused_ = false, steps_granted_ = 0;
        break;
      case CommandKind::Stop:
        stop_ = true;
        break;
      case CommandKind::Step:
        if (!paused_) why = "step: the run is not paused (pause it first)";
        else steps_granted_ += c.count;
        break;
      case CommandKind::SetLossScale: {
        const int log2 = std::ilogb(c.value);
        effect["before_log2"] = s.scaler->is_enabled() ? std::ilogb(s.scaler->get_scale()) : cfg_.log2_scale;
        cfg_.log2_scale = log2;
        if (s.scaler->is_enabled()) {  // the GradScaler goes on from the new scale
          nlohmann::json state = s.scaler->state_dict();
          state["scale"] = float(c.value);
          state["growth_tracker"] = 0;
          s.scaler->load_state_dict(state);
        }
        if (s.recipe.scaling == Scaling::None) effect["used"] = false;  // kept for a recipe that scales
        break;
      }
      case CommandKind::SetGrowthInterval:
        effect["before"] = cfg_.growth_interval;
        cfg_.growth_interval = c.count;
        if (s.scaler->is_enabled()) {
          nlohmann::json state = s.scaler->state_dict();
          state["growth_interval"] = c.count;
          s.scaler->load_state_dict(state);
        }
        break;
      case CommandKind::SetLr:
        effect["before"] = cfg_.lr;
        cfg_.lr = c.value;
        s.opt->set_lr(c.value);
        break;
      case CommandKind::SetRecipe:
        if (c.recipe == cfg_.recipe) {
          why = "set recipe: the run is " + c.recipe + " already";
          break;
        }
        why = live_recipe_problem(cfg_, c.recipe);
        if (!why.empty()) {
          why = "set recipe: " + why;
          break;
        }
        effect["before"] = cfg_.recipe;
        set_recipe(c.recipe);
        break;
      case CommandKind::Branch:
        why = branch(c, effect);
        break;
    }
  }
  nlohmann::json fields = {{"source", source}, {"command", c.json}, {"applied", why.empty()}};
  if (!why.empty()) fields["reason"] = why;
  if (!effect.empty()) fields["effect"] = effect;
  log_.event("command", step_, fields);
  return why;
}

void LiveTrainer::refuse_line(const std::string& text, const std::string& why, const std::string& source) {
  log_.event("command", step_, {{"source", source}, {"text", text.substr(0, 200)}, {"applied", false}, {"reason", why}});
}

int LiveTrainer::run(const std::vector<Command>& script, ControlChannel& control, const BranchStarter& branch,
                     const std::function<bool()>& keep_going) {
  branch_ = branch;
  struct Due {
    Command command;
    std::string source;
  };
  std::vector<Due> pending;  // sorted by step, stable: the script's order within a step
  for (const Command& c : script) pending.push_back({c, "script"});
  auto take_due = [&] {
    size_t n = 0;
    while (n < pending.size() && pending[n].command.at <= step_) apply(pending[n].command, pending[n].source), ++n;
    pending.erase(pending.begin(), pending.begin() + int64_t(n));
  };
  for (;;) {
    take_due();
    for (const ControlChannel::Line& line : control.read_new_lines()) {
      const std::string source = "control.jsonl line " + std::to_string(line.number);
      if (line.too_long) {
        refuse_line("", "longer than " + std::to_string(kMaxControlLineBytes) + " bytes", source);
        continue;
      }
      if (line.text.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank
      const ParsedCommand p = parse_command_line(line.text);
      if (!p.command) refuse_line(line.text, p.refusal, source);
      else if (p.command->at > step_) {  // later: in order among the commands of that step
        auto at = std::upper_bound(pending.begin(), pending.end(), p.command->at,
                                   [](int64_t a, const Due& d) { return a < d.command.at; });
        pending.insert(at, {*p.command, source});
      } else apply(*p.command, source);
    }
    take_due();
    if (stop_ || (keep_going && !keep_going())) break;
    if (cfg_.max_steps > 0 && step_ >= cfg_.max_steps) break;
    if (paused_ && steps_granted_ == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    if (!train_step()) return kExitDiverged;
    if (steps_granted_ > 0) --steps_granted_;
  }
  log_.end("finished");
  return 0;
}

}  // namespace hg::train
