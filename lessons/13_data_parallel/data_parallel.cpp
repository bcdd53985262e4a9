// Chapter 13's replica and its step (data_parallel.h): what makes N ranks one training run.
#include "lessons/13_data_parallel/data_parallel.h"

#include <csignal>
#include <cstdarg>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "framework/amp/autocast.h"
#include "framework/amp/unscale.h"
#include "framework/memory/accountant.h"
#include "framework/ops/ops.h"
#include "framework/train/run_folder.h"

namespace ch13 {

// ---- rank 0 prints ------------------------------------------------------------------------------
namespace {
bool g_print = true;  // whether this rank prints: rank 0's (main() sets it once, first thing)
}  // namespace

void set_printing(bool on) { g_print = on; }
bool printing() { return g_print; }

void say(const char* format, ...) {
  if (!g_print) return;
  va_list ap;
  va_start(ap, format);
  std::vprintf(format, ap);
  va_end(ap);
}

std::string fmt_line(const char* format, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, format);
  std::vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  return buf;
}

std::string share_text(int64_t B, int N) {
  return B % N == 0 ? fmt_line("%lld", (long long)(B / N))
                    : fmt_line("%lld or %lld", (long long)(B / N), (long long)(B / N + 1));
}

std::vector<float> values(const std::vector<Tensor>& ts) {
  std::vector<float> v;
  for (const Tensor& t : ts) {
    const auto x = t.to(hg::Device::CPU).to_vector();
    v.insert(v.end(), x.begin(), x.end());
  }
  return v;
}

std::string compare(const std::vector<float>& got, const std::vector<float>& want) {
  int64_t differ = 0;
  double worst = 0, big = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) ++differ;
    worst = std::max(worst, std::fabs(double(got[i]) - double(want[i])));
    big = std::max(big, std::fabs(double(want[i])));
  }
  if (differ == 0) return fmt_line("bit-identical (all %zu values)", want.size());
  return fmt_line("%lld of %zu values differ, max |diff| = %.2e x max |value|", (long long)differ, want.size(),
                  worst / big);
}

std::vector<int64_t> gather_bytes(Communicator& comm, int64_t bytes) {
  std::vector<int64_t> out;
  for (const std::string& line : comm.gather_text(std::to_string(bytes))) out.push_back(std::stoll(line));
  return out;
}

// ---- what a rank trains ------------------------------------------------------------------------

Tensor share_loss(hg::nn::Module& model, const Share& share, double scale, DType autocast) {
  if (!share.inputs.defined()) return Tensor();
  hg::amp::Autocast ac(autocast, autocast != DType::F32);
  const Tensor logits = model(share.inputs);                 // (b_k, 10) or (b_k, T, V)
  const Tensor loss = hg::cross_entropy(hg::reshape(logits, {-1, logits.size(-1)}), share.targets);
  const double w = share.weight * scale;
  return w == 1.0 ? loss : hg::mul(loss, w);
}

// ---- a rank's replica, and the step -------------------------------------------------------------

std::unique_ptr<hg::optim::Optimizer> plain_optimizer(const OptimizerSpec& spec, std::vector<Tensor> params) {
  if (spec.kind == "sgd") return std::make_unique<hg::optim::SGD>(std::move(params), spec.sgd);
  return std::make_unique<hg::optim::AdamW>(std::move(params), spec.adam);
}

RankOptimizer::RankOptimizer(const OptimizerSpec& spec, std::vector<Tensor> params, Communicator& comm) {
  if (spec.kind == "zero1") zero1_ = std::make_unique<hg::dist::ZeroAdamW>(std::move(params), comm, spec.adam);
  else plain_ = plain_optimizer(spec, std::move(params));
}

void RankOptimizer::zero_grad() {
  if (zero1_) zero1_->zero_grad();
  else plain_->zero_grad();
}

void RankOptimizer::sync_gradients() {
  if (zero1_) zero1_->reduce_gradients();
}

double RankOptimizer::clip_grad_norm_(double max) {
  return zero1_ ? zero1_->clip_grad_norm_(max) : hg::amp::clip_grad_norm_(plain_->params(), max);
}

hg::optim::Optimizer& RankOptimizer::inner() { return zero1_ ? zero1_->optimizer() : *plain_; }

void RankOptimizer::gather_parameters() {
  if (zero1_) zero1_->gather_parameters();
}

hg::optim::OptimizerState RankOptimizer::state_dict() { return zero1_ ? zero1_->state_dict() : plain_->state_dict(); }

void RankOptimizer::load_state_dict(const hg::optim::OptimizerState& state) {
  if (zero1_) zero1_->load_state_dict(state);
  else plain_->load_state_dict(state);
}

int64_t optimizer_state_bytes() {
  const int tag = int(hg::memory::Tag::OptimizerState);
  return hg::memory::usage(hg::Device::CPU).current[tag] + hg::memory::usage(hg::Device::CUDA).current[tag];
}

namespace {
Model on_device(Model m, hg::Device device) {
  m.net->to(device);
  return m;
}
}  // namespace

Replica::Replica(const Task& task, uint64_t seed, Communicator& comm, hg::Device device, double bucket_mb,
                 const OptimizerSpec& spec)
    : comm(comm),
      model(on_device(task.fresh_model(seed), device)),
      ddp(*model.net, comm, {.bucket_mb = bucket_mb}),  // rank 0's weights everywhere
      state0(optimizer_state_bytes()),
      opt(spec, model.net->parameters(), comm) {}

void StepClock::start(const Communicator& comm) {
  t0 = std::chrono::steady_clock::now();
  comm0 = comm.stats().seconds;
}

void StepClock::lap(const Communicator& comm) {
  const auto now = std::chrono::steady_clock::now();
  const double wall = std::chrono::duration<double>(now - t0).count(), in_mpi = comm.stats().seconds - comm0;
  t0 = now;
  comm0 = comm.stats().seconds;
  laps_ms.push_back(float(1e3 * (wall - in_mpi)));
}

namespace {
// DDP's backward: with `sync` it averages the gradients over the ranks before it returns
// (its buckets' allreduces start while backward runs); without, it only adds into .grad.
void backward(hg::dist::DistributedDataParallel& ddp, const Tensor& loss, bool sync) {
  if (sync) return ddp.backward(loss);
  auto quiet = ddp.no_sync();
  ddp.backward(loss);
}
}  // namespace

StepResult dp_step(Replica& r, hg::amp::GradScaler& scaler, const std::function<Share(int64_t j)>& micro, int64_t K,
                   double clip, DType autocast, StepClock& clock) {
  StepResult s;
  r.opt.zero_grad();
  for (int64_t j = 0; j < K; ++j) {
    const Tensor loss = share_loss(r.net(), micro(j), 1.0 / double(K), autocast);
    if (loss.defined()) s.loss += loss.item();
    // The one toggle: the gradients travel once a step, after the last micro-batch; ZeRO-1's
    // travel after backward (sync_gradients), so its backward never syncs.
    const bool sync = j + 1 == K && !r.opt.sharded();
    backward(r.ddp, loss.defined() ? scaler.scale(loss) : loss, sync);
  }
  r.opt.sync_gradients();
  clock.lap(r.comm);  // up to the gradients' allreduce
  scaler.unscale_(r.opt.inner());  // clipping must see the true gradients
  if (clip > 0) r.opt.clip_grad_norm_(clip);
  s.stepped = scaler.step(r.opt.inner());
  scaler.update();
  r.opt.gather_parameters();
  return s;
}

bool diverged(Communicator& comm, hg::io::RunLog& log, const std::string& model_name, int64_t step, double loss,
              hg::nn::Module& model, hg::train::Divergence& out) {
  hg::train::Divergence d = hg::train::check_finite_step(step, loss, model.named_parameters());
  if (comm.allreduce_sum(d ? 1.0 : 0.0) == 0) return false;
  if (!d) d = {step, "another rank's loss or weights became inf or NaN"};
  hg::train::report_divergence(log, fmt_line("lesson_13: %s, rank %d", model_name.c_str(), comm.rank()), d);
  out = d;
  return true;
}

void maybe_fail(const Flags& flags, int rank, int64_t step) {
  if (step != flags.fail_at_step || rank != flags.fail_rank) return;
  if (flags.fail_how == "kill") std::raise(SIGKILL);
  throw std::runtime_error(fmt_line("failing on purpose at step %lld (--fail-at-step)", (long long)step));
}

std::string run_name(const Flags& flags, int world_size) {
  const hg::train::CommonFlags& common = flags.common;
  return common.run_name.empty() ? "13_" + common.model + "_" + std::to_string(world_size) + "ranks" : common.run_name;
}

// Rank 0 claims runs/<name> (main() checked it was free), then every rank opens its own
// folder in it.
hg::io::RunLog open_rank_log(Communicator& comm, const Flags& flags, hg::Device device, const nlohmann::json& args) {
  const hg::train::CommonFlags& common = flags.common;
  const int k = comm.rank();
  const std::string name = run_name(flags, comm.world_size());
  const bool resuming = !common.resume.empty();
  std::string folder = hg::train::run_path(name);
  if (k == 0) folder = hg::train::claim_run_folder(name, common.overwrite, resuming);
  comm.barrier();
  return hg::io::RunLog(folder + "/rank" + std::to_string(k),
                        {{"lesson", "13_data_parallel"}, {"model", common.model}, {"precision", flags.precision},
                         {"device", hg::device_name(device)}, {"seed", common.seed}, {"rank", k},
                         {"world_size", comm.world_size()}, {"args", args}},
                        /*append=*/resuming);
}

}  // namespace ch13
