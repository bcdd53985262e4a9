// Chapter 13 — data parallelism: N processes (ranks) train one model together.
//
// Every rank holds the whole model, trains on its share of each global batch, and the ranks
// average their gradients before the (identical) optimizer step. MPI starts the processes
// and carries the CPU tensors; NCCL carries GPU tensors (framework/dist/communicator.h).
//
//   ./lab lesson 13 --ranks 2           (or: mpirun -np 2 build/lessons/lesson_13)
//
//   1. the job: who is who
//   2. allreduce by hand: the ring, its traffic 2(N−1)/N, against MPI_Allreduce; the bits
//   3. checked: N ranks = one process (bit for bit in rank order), ZeRO-1 = DP, the scaler
//   4. training: DDP (or ZeRO-1 with --zero) on FashionMNIST, buckets, no_sync, time in
//      communication, per-rank run logs, checkpoints by rank 0
//   5. memory: the optimizer state per rank, DP against ZeRO-1 (12Ψ/N)
//   6. tensor parallel: a Linear split by columns and by rows
//   7. pipeline parallel: the bubble of a simulated GPipe schedule
//
// Rank 0 prints; the other ranks compute and send their lines to it. A rank that fails
// prints why and ends the whole job (MPI_Abort): the others would otherwise wait forever in
// their next allreduce.
//
// What changed from chapter 11: no new number format; the training loop gains a sampler, a
// DDP wrapper whose backward() averages the gradients, and a communicator.
//
// Sections: 0. flags   1. job   2. ring   3. checks   4. train   5. memory   6. tensor parallel
//           7. pipeline   8. main
#include <CLI/CLI.hpp>

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/autograd/grad_mode.h"
#include "framework/dist/communicator.h"
#include "framework/dist/ddp.h"
#include "framework/dist/parallel_layers.h"
#include "framework/dist/ring_allreduce.h"
#include "framework/dist/sampler.h"
#include "framework/dist/zero.h"
#include "framework/io/run_log.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"
#include "framework/train/cli.h"
#include "framework/train/guard.h"
#include "framework/train/resume.h"
#include "framework/train/run_folder.h"
#include "framework/train/step.h"

using hg::DType;
using hg::Tensor;
using hg::dist::Communicator;

namespace {

// ---- 0. flags ---------------------------------------------------------------------------
struct Flags {
  hg::train::CommonFlags common;
  std::string optimizer = "sgd";   // sgd | adamw (ZeRO-1 is AdamW)
  bool zero = false;               // ZeRO-1 instead of plain DP
  bool deterministic = false;      // Reduction::FixedOrder
  double bucket_mb = 1.0;
  int accumulate = 1;              // micro-batches per optimizer step (no_sync on all but the last)
  std::string precision = "fp32";  // fp32 | amp_f16 | amp_bf16
  int check_steps = 8;             // steps of section 3's comparisons (0: skip them)
  double ring_mb = 4.0;            // section 2's buffer
  // Failure injection for the tests: rank `fail_rank` fails at optimizer step `fail_at_step`.
  int fail_rank = -1;
  int64_t fail_at_step = -1;
  std::string fail_how = "throw";  // throw | kill
};

// What a checkpoint records and --resume checks (framework/train/resume.h): the flags that
// decide which batches the run sees and what each step does. The number of ranks is not one
// of them: every world size sees the same global batches and takes the same steps.
nlohmann::json recorded_flags(const Flags& fl) {
  const hg::train::CommonFlags& f = fl.common;
  return {{"--model", f.model}, {"--seed", f.seed}, {"--batch-size", f.batch_size}, {"--lr", f.lr},
          {"--momentum", f.momentum}, {"--weight-decay", f.weight_decay}, {"--limit-train", f.limit_train},
          {"--optimizer", fl.optimizer}, {"--accumulate", fl.accumulate}, {"--precision", fl.precision}};
}

std::string run_name(const Flags& fl, int world_size) {
  const hg::train::CommonFlags& f = fl.common;
  return f.run_name.empty() ? "13_" + f.model + "_" + std::to_string(world_size) + "ranks" : f.run_name;
}

// Rank 0 prints; the other ranks send it their own lines through gather_text.
bool g_print = true;
void say(const char* f, ...) __attribute__((format(printf, 1, 2)));
void say(const char* f, ...) {
  if (!g_print) return;
  va_list ap;
  va_start(ap, f);
  std::vprintf(f, ap);
  va_end(ap);
}

std::string fmt_line(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt_line(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::vector<float> values(const std::vector<Tensor>& ts) {
  std::vector<float> v;
  for (const Tensor& t : ts) {
    const auto x = t.to(hg::Device::CPU).to_vector();
    v.insert(v.end(), x.begin(), x.end());
  }
  return v;
}

// "bit-identical", or how many values differ and by how much (relative to max|reference|).
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

// ---- 1. the job ---------------------------------------------------------------------------
void show_job(Communicator& comm) {
  say("== 1. the job: %d rank(s) ==\n", comm.world_size());
  const auto lines = comm.gather_text(fmt_line("  rank %d: host %s, local rank %d, pid %d, %d OpenMP thread(s)",
                                               comm.rank(), comm.host().c_str(), comm.local_rank(), int(getpid()),
                                               omp_get_max_threads()));
  for (const auto& l : lines) say("%s\n", l.c_str());
  if (comm.world_size() == 1) say("  (one rank: start several with ./lab lesson 13 --ranks 2, or mpirun -np 2)\n");
  say("\n");
}

// ---- 2. allreduce by hand: the ring ---------------------------------------------------------
void show_ring(Communicator& comm, double mb) {
  const int N = comm.world_size(), k = comm.rank();
  const int64_t n = std::max<int64_t>(1, int64_t(mb * 1024 * 1024 / 4));
  say("== 2. allreduce by hand: the ring (%lld floats = %.1f MiB per rank) ==\n", (long long)n, n * 4 / 1048576.0);
  // Correctness on small integers, where every order of addition gives the exact sum.
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float((i * 7 + k * 13) % 201 - 100);
  Tensor ring = Tensor::from_vector(v, {n}), lib = ring.clone();
  hg::dist::RingTraffic traffic = hg::dist::ring_allreduce(comm, ring);
  comm.allreduce(lib);
  const bool same = ring.to_vector() == lib.to_vector();
  // Time: the better of 5 runs of each (the first touches fresh memory).
  double t_ring = 1e30, t_mpi = 1e30;
  for (int rep = 0; rep < 5; ++rep) {
    Tensor a = Tensor::from_vector(v, {n}), b = a.clone();
    comm.barrier();
    t_ring = std::min(t_ring, hg::dist::ring_allreduce(comm, a).seconds);
    comm.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    comm.allreduce(b);
    t_mpi = std::min(t_mpi, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  say("  ring: %d steps, this rank sent %lld bytes = %.3f x the buffer (2(N-1)/N = %.3f)\n", traffic.steps,
      (long long)traffic.bytes_sent, double(traffic.bytes_sent) / double(traffic.buffer_bytes),
      2.0 * (N - 1) / N);
  say("  ring = MPI_Allreduce on small integers (exact sums): %s\n", same ? "yes" : "NO");
  say("  time: ring %.2f ms, MPI_Allreduce %.2f ms (best of 5)\n", t_ring * 1e3, t_mpi * 1e3);
  // The bits: random floats of many magnitudes, summed by three algorithms.
  std::mt19937 rng(1234 + uint32_t(k));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = u(rng) * std::ldexp(1.0f, int(rng() % 24) - 12);
  Tensor r = Tensor::from_vector(v, {n}), m = r.clone(), f = r.clone();
  hg::dist::ring_allreduce(comm, r);
  comm.allreduce(m);
  comm.set_reduction(hg::dist::Reduction::FixedOrder);
  comm.allreduce(f);
  comm.set_reduction(hg::dist::Reduction::Library);
  say("  random floats, the same inputs summed three ways:\n");
  say("    ring vs MPI_Allreduce:         %s\n", compare(r.to_vector(), m.to_vector()).c_str());
  say("    rank order vs MPI_Allreduce:   %s\n", compare(f.to_vector(), m.to_vector()).c_str());
  say("    ring vs rank order:            %s\n", compare(r.to_vector(), f.to_vector()).c_str());
  if (N <= 2) say("  (two ranks add the same two numbers whatever the algorithm: run with --ranks 4 to see orders differ)\n");
  say("\n");
}

// ---- 3. checks: N ranks against one process ---------------------------------------------------
// The same few steps trained four ways; every rank runs the data-parallel ones, rank 0 also the
// single-process references (its ranks' micro-batches are the same images the others use).
struct CheckSetup {
  std::string model;
  const hg::data::ImageDataset* ds = nullptr;
  int64_t batch = 64;
  int steps = 8;
  uint64_t seed = 0;
  double bucket_mb = 1.0;
};

enum class Opt { SGD, AdamW };

std::unique_ptr<hg::optim::Optimizer> make_optimizer(Opt o, const std::vector<Tensor>& params) {
  if (o == Opt::SGD) return std::make_unique<hg::optim::SGD>(params, hg::optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  return std::make_unique<hg::optim::AdamW>(params, hg::optim::AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
}

hg::nn::ModulePtr fresh_model(const std::string& name, uint64_t seed) {
  hg::Generator gen(seed);
  return hg::nn::make_model(name, gen);
}

// One rank's share of a step: its mean loss times the sampler's weight (undefined: no example).
Tensor rank_loss(hg::nn::Module& model, const hg::data::ImageDataset& ds, const hg::dist::DistributedSampler& s,
                 int64_t epoch, int64_t step, double scale = 1.0, DType autocast = DType::F32,
                 hg::Device device = hg::Device::CPU) {
  const hg::Batch b = hg::dist::make_batch(ds, s.indices(epoch, step));
  if (b.size() == 0) return Tensor();
  hg::amp::Autocast ac(autocast, autocast != DType::F32);
  Tensor loss = hg::cross_entropy(model(b.images.to(device)), b.labels);
  const double w = s.loss_weight(epoch, step) * scale;
  return w == 1.0 ? loss : hg::mul(loss, w);
}

// One process: each step runs the N ranks' micro-batches in rank order, adds their gradients
// (backward accumulates) and divides by N — what N-rank DP computes, in one fixed order.
std::vector<float> one_process_accumulating(const CheckSetup& c, int N, Opt o) {
  hg::nn::ModulePtr model = fresh_model(c.model, c.seed);
  auto opt = make_optimizer(o, model->parameters());
  std::vector<hg::dist::DistributedSampler> ranks;
  for (int k = 0; k < N; ++k) ranks.emplace_back(c.ds->n, c.batch, k, N, c.seed);
  for (int step = 0; step < c.steps; ++step) {
    opt->zero_grad();
    for (int k = 0; k < N; ++k) {
      Tensor loss = rank_loss(*model, *c.ds, ranks[size_t(k)], 0, step);
      if (loss.defined()) loss.backward();
    }
    for (const Tensor& p : model->parameters()) {
      Tensor g = p.grad();
      hg::mul_(g, 1.0 / N);
    }
    opt->step();
  }
  return values(model->parameters());
}

// One process, each global batch in one piece: ordinary training.
std::vector<float> one_process_whole_batch(const CheckSetup& c) {
  hg::nn::ModulePtr model = fresh_model(c.model, c.seed);
  auto opt = make_optimizer(Opt::SGD, model->parameters());
  const hg::dist::DistributedSampler all(c.ds->n, c.batch, 0, 1, c.seed);
  for (int step = 0; step < c.steps; ++step) {
    opt->zero_grad();
    rank_loss(*model, *c.ds, all, 0, step).backward();
    opt->step();
  }
  return values(model->parameters());
}

struct DPResult {
  std::vector<float> params;
  hg::dist::OptimizerMemory memory;
};

// N ranks, DDP (the optimizer on every rank) or ZeRO-1 (AdamW on this rank's shard).
DPResult data_parallel(Communicator& comm, const CheckSetup& c, Opt o, bool zero) {
  hg::nn::ModulePtr model = fresh_model(c.model, c.seed);
  hg::dist::DistributedDataParallel ddp(*model, comm, {.bucket_mb = c.bucket_mb});
  const hg::dist::DistributedSampler s(c.ds->n, c.batch, comm.rank(), comm.world_size(), c.seed);
  std::unique_ptr<hg::optim::Optimizer> opt;
  std::unique_ptr<hg::dist::ZeroAdamW> z;
  if (zero) z = std::make_unique<hg::dist::ZeroAdamW>(model->parameters(), comm, hg::optim::AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
  else opt = make_optimizer(o, model->parameters());
  for (int step = 0; step < c.steps; ++step) {
    if (zero) {
      z->zero_grad();
      Tensor loss = rank_loss(*model, *c.ds, s, 0, step);
      if (loss.defined()) loss.backward();
      z->step();
    } else {
      opt->zero_grad();
      ddp.backward(rank_loss(*model, *c.ds, s, 0, step));
      opt->step();
    }
  }
  DPResult r{values(model->parameters()), {}};
  r.memory = zero ? z->memory() : hg::dist::optimizer_memory(*opt);
  return r;
}

// ZeRO-1 with a GradScaler; rank N−1 finds an inf in its gradients at step 2, in an element of
// rank 0's shard. Returns this rank's "stepped / scale" per step.
std::string scaler_run(Communicator& comm, const CheckSetup& c, bool agree) {
  hg::nn::ModulePtr model = fresh_model(c.model, c.seed);
  hg::dist::DistributedDataParallel ddp(*model, comm);  // for the broadcast
  const hg::dist::DistributedSampler s(c.ds->n, c.batch, comm.rank(), comm.world_size(), c.seed);
  hg::dist::ZeroAdamW zero(model->parameters(), comm, {.lr = 1e-3});
  hg::amp::GradScaler scaler;
  if (agree) hg::dist::agree_found_inf(scaler, comm);
  std::string line;
  for (int step = 0; step < 4; ++step) {
    zero.zero_grad();
    scaler.scale(rank_loss(*model, *c.ds, s, 0, step)).backward();
    if (step == 2 && comm.rank() == comm.world_size() - 1) {
      Tensor g = model->parameters()[0].grad();
      g.data<float>()[0] = INFINITY;  // an overflow on this rank only
    }
    zero.reduce_gradients();
    const bool stepped = scaler.step(zero.optimizer());
    scaler.update();
    zero.gather_parameters();
    line += fmt_line(" %s/%-6g", stepped ? "step" : "SKIP", double(scaler.get_scale()));
  }
  return line;
}

struct Memory {
  int64_t params = 0;
  hg::dist::OptimizerMemory dp, zero;
};

Memory run_checks(Communicator& comm, const CheckSetup& c) {
  const int N = comm.world_size();
  say("== 3. checked: %d rank(s) against one process (%s, %d steps, global batch %lld = %d x %lld) ==\n", N,
      c.model.c_str(), c.steps, (long long)c.batch, N, (long long)(c.batch / N));
  std::vector<float> acc, whole;
  if (comm.rank() == 0) {
    acc = one_process_accumulating(c, N, Opt::SGD);
    whole = one_process_whole_batch(c);
  }
  comm.set_reduction(hg::dist::Reduction::Library);
  const DPResult lib = data_parallel(comm, c, Opt::SGD, false);
  comm.set_reduction(hg::dist::Reduction::FixedOrder);
  const DPResult fixed = data_parallel(comm, c, Opt::SGD, false);
  say("  against one process that adds the %d ranks' gradients in rank order (SGD, momentum 0.9):\n", N);
  say("    DP, MPI's allreduce      %s\n", g_print ? compare(lib.params, acc).c_str() : "");
  say("    DP, rank order           %s\n", g_print ? compare(fixed.params, acc).c_str() : "");
  say("  against one process training each global batch of %lld whole:\n", (long long)c.batch);
  say("    DP, MPI's allreduce      %s\n", g_print ? compare(lib.params, whole).c_str() : "");
  // ZeRO-1 against DP, both AdamW. Two ranks: any order adds the same two numbers; more: the
  // allreduce and the reduce-scatter may add in different orders, so compare in rank order.
  comm.set_reduction(N <= 2 ? hg::dist::Reduction::Library : hg::dist::Reduction::FixedOrder);
  const DPResult dp = data_parallel(comm, c, Opt::AdamW, false);
  const DPResult z = data_parallel(comm, c, Opt::AdamW, true);
  say("  ZeRO-1 against DP (AdamW, %s):\n", N <= 2 ? "MPI's order" : "rank order");
  say("    ZeRO-1                   %s\n", compare(z.params, dp.params).c_str());
  comm.set_reduction(hg::dist::Reduction::Library);
  // The GradScaler across ranks.
  say("  GradScaler with ZeRO-1, an inf on rank %d at step 2 (step/skip and scale after each of 4 steps):\n", N - 1);
  for (bool agree : {false, true}) {
    const auto lines = comm.gather_text(scaler_run(comm, c, agree));
    say("    %s\n", agree ? "found-inf agreed (max over ranks):" : "each rank decides alone:");
    for (int k = 0; k < N; ++k) say("      rank %d:%s\n", k, lines[size_t(k)].c_str());
  }
  say("\n");
  Memory m;
  m.params = fresh_model(c.model, c.seed)->num_parameters();
  m.dp = dp.memory;
  m.zero = z.memory;
  return m;
}

// ---- 4. training ---------------------------------------------------------------------------------
struct TrainResult {
  double seconds = 0, comm_seconds = 0, accuracy = 0, loss = 0;
  int64_t images = 0, steps = 0, skipped = 0, overlapped = 0, buckets = 0;
  hg::train::Divergence diverged;  // set on every rank when any rank's loss or weights became inf/NaN
};

// Accuracy over the test set, each rank evaluating its block of it; the counts are summed.
double sharded_accuracy(Communicator& comm, hg::nn::Module& model, const hg::data::ImageDataset& test,
                        hg::Device device) {
  hg::NoGradGuard no_grad;
  model.eval();
  const hg::dist::Range mine = hg::dist::block_range(test.n, comm.world_size(), comm.rank());
  int64_t correct = 0;
  for (int64_t begin = mine.begin; begin < mine.end; begin += 1000) {
    std::vector<int64_t> idx;
    for (int64_t i = begin; i < std::min(mine.end, begin + 1000); ++i) idx.push_back(i);
    const hg::Batch b = hg::dist::make_batch(test, idx);
    const auto pred = hg::train::argmax_classes(model(b.images.to(device)));
    for (size_t i = 0; i < pred.size(); ++i) correct += pred[i] == b.labels[i];
  }
  model.train();
  return comm.allreduce_sum(double(correct)) / double(test.n);
}

TrainResult train(Communicator& comm, const Flags& fl, hg::Device device, int epochs,
                  const hg::data::ImageDataset& train_ds, const hg::data::ImageDataset& test_ds) {
  const hg::train::CommonFlags& f = fl.common;
  const int N = comm.world_size(), k = comm.rank();
  hg::nn::ModulePtr model = fresh_model(f.model, f.seed);
  model->to(device);
  hg::dist::DistributedDataParallel ddp(*model, comm, {.bucket_mb = fl.bucket_mb});  // rank 0's weights everywhere
  std::unique_ptr<hg::optim::Optimizer> opt;
  std::unique_ptr<hg::dist::ZeroAdamW> zero;
  if (fl.zero) {
    zero = std::make_unique<hg::dist::ZeroAdamW>(model->parameters(), comm,
                                                 hg::optim::AdamOptions{.lr = f.lr, .weight_decay = f.weight_decay});
  } else if (fl.optimizer == "adamw") {
    opt = std::make_unique<hg::optim::AdamW>(model->parameters(), hg::optim::AdamOptions{.lr = f.lr, .weight_decay = f.weight_decay});
  } else {
    opt = std::make_unique<hg::optim::SGD>(model->parameters(),
                                           hg::optim::SGDOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
  }
  hg::optim::Optimizer& stepper = fl.zero ? zero->optimizer() : *opt;  // what the scaler steps
  const DType low = fl.precision == "amp_bf16" ? DType::BF16 : fl.precision == "amp_f16" ? DType::F16 : DType::F32;
  hg::amp::GradScaler scaler({}, /*enabled=*/fl.precision == "amp_f16");
  hg::dist::agree_found_inf(scaler, comm);  // every rank skips together

  hg::train::TrainingState resumed;
  if (!f.resume.empty()) {  // every rank reads the same file (on several machines: a shared path)
    resumed = hg::train::load_training_checkpoint(f.resume, *model, opt.get());
    if (resumed.extra.contains("grad_scaler")) scaler.load_state_dict(resumed.extra.at("grad_scaler"));
    say("  resumed from %s: epoch %lld, step %lld\n", f.resume.c_str(), (long long)resumed.epoch + 1,
        (long long)resumed.step);
  }

  // One run log per rank: runs/<name>/rank<k>/, so the viewer overlays the ranks. Rank 0
  // claims runs/<name> (main() checked it was free), then every rank opens its own folder in it.
  const std::string name = run_name(fl, N);
  const bool resuming = !f.resume.empty();
  std::string folder = hg::train::run_folder(name);
  if (k == 0) folder = hg::train::claim_run_folder(name, f.overwrite, resuming);
  comm.barrier();
  hg::io::RunLog log(folder + "/rank" + std::to_string(k),
                     {{"lesson", "13_data_parallel"}, {"model", f.model}, {"precision", fl.precision},
                      {"device", hg::device_name(device)}, {"seed", f.seed}, {"rank", k}, {"world_size", N},
                      {"args", {{"epochs", epochs}, {"batch_size", f.batch_size}, {"lr", f.lr},
                                {"optimizer", fl.zero ? "zero1_adamw" : fl.optimizer}, {"bucket_mb", fl.bucket_mb},
                                {"accumulate", fl.accumulate}, {"deterministic", fl.deterministic},
                                {"limit_train", f.limit_train}}}},
                     /*append=*/!f.resume.empty());
  const hg::dist::DistributedSampler sampler(train_ds.n, f.batch_size, k, N, f.seed);
  const int64_t per_epoch = sampler.steps_per_epoch();
  TrainResult r;
  int64_t step = resumed.step;
  for (int64_t epoch = resumed.epoch; epoch < epochs; ++epoch) {
    const double comm0 = comm.stats().seconds;
    const int64_t during0 = ddp.started_during_backward();
    const auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    // K sampler steps (global batches) make one optimizer step: the first K−1 under no_sync.
    for (int64_t first = 0; first < per_epoch; first += fl.accumulate, ++step) {
      if (step == fl.fail_at_step && k == fl.fail_rank) {  // for the tests: a rank that dies
        if (fl.fail_how == "kill") std::raise(SIGKILL);
        throw std::runtime_error(fmt_line("failing on purpose at step %lld (--fail-at-step)", (long long)step));
      }
      const int64_t K = std::min<int64_t>(fl.accumulate, per_epoch - first);
      if (fl.zero) zero->zero_grad();
      else opt->zero_grad();
      double step_loss = 0;
      for (int64_t j = 0; j < K; ++j) {
        Tensor loss = rank_loss(*model, train_ds, sampler, epoch, first + j, 1.0 / double(K), low, device);
        if (loss.defined()) step_loss += loss.item();
        Tensor scaled = loss.defined() ? scaler.scale(loss) : loss;
        if (fl.zero) {
          if (scaled.defined()) scaled.backward();  // ZeRO-1 reduces after backward, all at once
        } else if (j + 1 < K) {
          auto quiet = ddp.no_sync();  // accumulate: nothing to send yet
          ddp.backward(scaled);
        } else {
          ddp.backward(scaled);  // averages the sum of the K micro-batches' gradients
        }
      }
      if (fl.zero) zero->reduce_gradients();
      const bool stepped = scaler.step(stepper);
      scaler.update();
      if (fl.zero) zero->gather_parameters();
      // Divergence: the replicas are equal, but each rank's loss is its own share, so the ranks
      // agree (a sum of flags) and stop together, rather than leave one alone in an allreduce.
      hg::train::Divergence d = hg::train::check_finite_step(step, step_loss, model->named_parameters());
      if (comm.allreduce_sum(d ? 1.0 : 0.0) > 0) {
        if (!d) d = {step, "another rank's loss or weights became inf or NaN"};
        hg::train::report_divergence(log, fmt_line("lesson_13: %s, rank %d", f.model.c_str(), k), d);
        r.diverged = d;
        return r;
      }
      r.skipped += !stepped;
      loss_sum += step_loss;
      log.scalar(step, "train/loss", step_loss, epoch);  // this rank's share
      if (scaler.is_enabled()) log.loss_scale(step, scaler.get_scale(), !stepped, !stepped);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double comm_seconds = comm.stats().seconds - comm0;
    r.seconds += seconds;
    r.comm_seconds += comm_seconds;
    r.steps += (per_epoch + fl.accumulate - 1) / fl.accumulate;
    r.images += train_ds.n;
    r.overlapped += ddp.started_during_backward() - during0;
    r.loss = comm.allreduce_sum(loss_sum) / double(N) / double((per_epoch + fl.accumulate - 1) / fl.accumulate);
    r.accuracy = sharded_accuracy(comm, *model, test_ds, device);
    log.scalar(step, "test/accuracy", r.accuracy, epoch);
    log.scalar(step, "time/epoch_s", seconds, epoch);
    log.scalar(step, "dist/comm_share", comm_seconds / seconds, epoch);
    say("  epoch %lld  loss %.4f  test accuracy %.4f  %.2f s  (%.0f images/s, %.0f%% of it in communication)\n",
        (long long)epoch + 1, r.loss, r.accuracy, seconds, double(train_ds.n) / seconds, 100 * comm_seconds / seconds);
    if (!f.checkpoint.empty() && k == 0) {  // rank 0 alone writes; atomically (a crash keeps the last one)
      hg::train::TrainingState st;
      st.step = step;
      st.epoch = epoch + 1;
      st.extra["lesson"] = "13_data_parallel";
      st.extra["flags"] = recorded_flags(fl);
      if (scaler.is_enabled()) st.extra["grad_scaler"] = scaler.state_dict();
      hg::train::save_training_checkpoint(f.checkpoint, *model, opt.get(), st);
    }
    comm.barrier();  // nobody runs ahead of the checkpoint
  }
  r.buckets = int64_t(ddp.buckets().size());
  log.end("finished");
  say("  run logs: runs/%s/rank0 .. rank%d (./lab view runs/%s overlays them)\n", name.c_str(), N - 1, name.c_str());
  return r;
}

// ---- 5. memory --------------------------------------------------------------------------------------
void show_memory(const Memory& m, int N) {
  say("== 5. memory: optimizer state per rank (Psi = %lld parameters) ==\n", (long long)m.params);
  const double psi = double(m.params);
  say("  %-34s %14s %14s\n", "", "measured", "formula");
  say("  %-34s %11.2f MB %11.2f MB   8 Psi (m, v)\n", "DP, AdamW: m and v", m.dp.total() / 1e6, 8 * psi / 1e6);
  say("  %-34s %14s %11.2f MB   12 Psi\n", "  + F32 master copy (F16 model)", "", 12 * psi / 1e6);
  say("  %-34s %11.2f MB %11.2f MB   12 Psi / N\n", "ZeRO-1: master, m, v of the shard", m.zero.total() / 1e6,
      12 * psi / N / 1e6);
  say("  (ZeRO-1 keeps an F32 master shard even for this F32 model: with F16 or BF16 weights it is what\n"
      "   carries the update's precision; the shard is padded to N x ceil(Psi/N) elements)\n\n");
}

// ---- 6. tensor parallel ---------------------------------------------------------------------------
void show_tensor_parallel(Communicator& comm, const hg::data::ImageDataset& ds) {
  const int N = comm.world_size(), k = comm.rank();
  say("== 6. tensor parallel: Linear 784 -> 512 split over %d rank(s), 64 images ==\n", N);
  if (784 % N != 0 || 512 % N != 0) {
    say("  (784 and 512 do not split into %d equal blocks: skipped)\n\n", N);
    return;
  }
  hg::Generator gen(3);
  hg::nn::Linear fc(784, 512, gen);
  std::vector<int64_t> idx(64);
  for (int64_t i = 0; i < 64; ++i) idx[size_t(i)] = i;
  const Tensor x = hg::dist::make_batch(ds, idx).images.reshape({64, 784});
  const std::vector<float> whole = hg::linear(x, fc.weight, fc.bias).to_vector();
  const Tensor b_k = fc.bias.slice(k * (512 / N), (k + 1) * (512 / N)).contiguous();
  const Tensor col = hg::dist::column_parallel_linear(comm, x, hg::dist::row_block(fc.weight, N, k), b_k);
  const Tensor row = hg::dist::row_parallel_linear(comm, hg::dist::column_block(x, N, k),
                                                   hg::dist::column_block(fc.weight, N, k), fc.bias);
  say("  each rank holds %lld of the %lld weights\n", (long long)(784 * 512 / N), 784LL * 512);
  say("  by columns (outputs split, all_gather):   %s\n", compare(col.to_vector(), whole).c_str());
  say("  by rows (inputs split, allreduce of sums): %s\n\n", compare(row.to_vector(), whole).c_str());
}

// ---- 7. pipeline parallel -----------------------------------------------------------------------
void show_pipeline() {
  say("== 7. pipeline parallel: GPipe, p stages, m micro-batches, simulated ==\n");
  const hg::dist::PipelineSchedule s = hg::dist::simulate_gpipe(4, 4);
  say("  p = 4, m = 4 (F3: forward of micro-batch 3, B3 its backward, .. idle):\n");
  for (int j = 0; j < s.stages; ++j) say("    stage %d  %s\n", j, s.rows[size_t(j)].c_str());
  say("  %4s %4s %10s %16s\n", "p", "m", "bubble", "(p-1)/(m+p-1)");
  for (int p : {2, 4, 8})
    for (int m : {1, 4, 16, 64}) {
      const hg::dist::PipelineSchedule t = hg::dist::simulate_gpipe(p, m);
      say("  %4d %4d %9.1f%% %15.1f%%\n", p, m, 100 * t.bubble(), 100 * hg::dist::gpipe_bubble_formula(p, m));
    }
  say("\n");
}

}  // namespace

// ---- 8. main --------------------------------------------------------------------------------------
int main(int argc, char** argv) {
  std::unique_ptr<Communicator> comm;
  try {
    comm = std::make_unique<Communicator>(argc, argv);  // MPI first: every rank parses the same flags
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_13: %s\n", e.what());
    return 1;
  }
  g_print = comm->rank() == 0;
  CLI::App app{"Chapter 13: data-parallel training on MPI (and NCCL), ZeRO-1, the ring allreduce"};
  Flags fl;
  hg::train::CommonFlags& f = fl.common;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  hg::train::add_common_flags(app, f);
  // BatchNorm's running statistics would need their own synchronisation: no ResNets here.
  app.get_option("--model")->check(hg::train::OneOf({"mlp", "smallcnn"}));
  app.add_option("--optimizer", fl.optimizer, "sgd | adamw")->capture_default_str()->check(hg::train::OneOf({"sgd", "adamw"}));
  app.add_flag("--zero", fl.zero, "ZeRO-1: AdamW with the optimizer state sharded over the ranks");
  app.add_flag("--deterministic", fl.deterministic, "sum gradients in rank order (same bits as one process)");
  app.add_option("--bucket-mb", fl.bucket_mb, "gradient bucket size in MiB")->capture_default_str()->check(hg::train::Positive(1024));
  app.add_option("--accumulate", fl.accumulate, "global batches per optimizer step (no_sync on all but the last)")
      ->capture_default_str()->check(hg::train::WholeIn(1, 1024, "a number of global batches from 1 to 1024"));
  app.add_option("--precision", fl.precision, "fp32 | amp_f16 | amp_bf16")->capture_default_str()
      ->check(hg::train::OneOf({"fp32", "amp_f16", "amp_bf16"}));
  app.add_option("--check-steps", fl.check_steps, "steps of section 3's comparisons (0: skip)")
      ->capture_default_str()->check(hg::train::WholeIn(0, 10000, "a number of steps from 0 (skip) to 10000"));
  app.add_option("--ring-mb", fl.ring_mb, "section 2's buffer in MiB")->capture_default_str()->check(hg::train::Positive(1024));
  app.add_option("--fail-rank", fl.fail_rank)->group("");  // for the tests
  app.add_option("--fail-at-step", fl.fail_at_step)->group("");
  app.add_option("--fail-how", fl.fail_how)->group("")->check(hg::train::OneOf({"throw", "kill"}));
  // Every rank parses the same command line and finds the same errors: rank 0 says them.
  auto refuse = [&](const std::string& why) {
    if (comm->rank() == 0) hg::train::usage_error(app, why);
    return hg::train::kExitUsage;
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& help) {
    return comm->rank() == 0 ? app.exit(help) : 0;
  } catch (const CLI::ParseError& e) {
    return refuse(e.what());
  }
  const bool resuming = !f.resume.empty();
  int64_t epochs_done = 0;
  if (resuming) {  // the checkpoint's flags fill in what the command line left out
    const std::string why = hg::train::resume_flags(app, f.resume, "13_data_parallel", recorded_flags(fl), epochs_done);
    if (!why.empty()) return refuse(why);
  }
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  if (resuming && epochs_done >= epochs) {
    say("%s has done %lld epoch(s), --epochs is %d: nothing left to train (--epochs %lld trains further)\n",
        f.resume.c_str(), (long long)epochs_done, epochs, (long long)epochs_done + 1);
    return 0;
  }
  if (fl.zero && !f.checkpoint.empty())
    return refuse("--checkpoint with --zero: the optimizer state is sharded over the ranks; checkpoints are for plain DP");
  if (fl.zero && !f.resume.empty()) return refuse("--resume with --zero: see --checkpoint");
  if (f.lr_schedule != "constant") return refuse("--lr-schedule is not supported in this chapter");
  if ((fl.zero || fl.optimizer == "adamw") && app.count("--lr") == 0) f.lr = 1e-3;  // SGD's 0.05 is far too big for Adam
  // The run folder: checked by every rank before any work (on one machine they see the same
  // runs/; on several, each its own), and refused everywhere if any rank refuses it. Rank 0
  // says the first problem, once.
  const auto run_problems =
      comm->gather_text(hg::train::check_run_folders({run_name(fl, comm->world_size())}, f.overwrite, resuming));
  for (size_t r = 0; r < run_problems.size(); ++r)
    if (!run_problems[r].empty())
      return refuse(r == 0 ? run_problems[r] : fmt_line("rank %zu: %s", r, run_problems[r].c_str()));
  if (f.batch_size < comm->world_size())
    return refuse(fmt_line("--batch-size %lld is the global batch: it needs at least one example per rank (%d ranks)",
                           (long long)f.batch_size, comm->world_size()));
  // Threads: by default the cores this rank may use, shared with the other ranks on its machine
  // (mpirun binds each of 2 ranks to a core; with more ranks than cores it binds none).
  if (f.threads == 0) f.threads = std::max(1, omp_get_num_procs() / comm->local_size());
  hg::train::apply_threads(f.threads);
  hg::Device device = hg::Device::CPU;
  if (!hg::train::device_from_flag(f.device, "lesson_13", device)) return 2;

  try {
    if (device == hg::Device::CUDA) comm->use_gpus();  // NCCL; each rank takes the GPU of its local rank
    if (fl.deterministic) comm->set_reduction(hg::dist::Reduction::FixedOrder);
    show_job(*comm);
    show_ring(*comm, fl.ring_mb);
    const std::string dir = hg::data::fashion_mnist_dir(f.data);
    auto train_ds = hg::data::load_fashion_mnist(dir, true, f.limit_train);
    auto test_ds = hg::data::load_fashion_mnist(dir, false, f.limit_test);
    hg::data::normalize(train_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    hg::data::normalize(test_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
    Memory memory;
    if (fl.check_steps > 0) {
      const hg::dist::Reduction chosen = comm->reduction();
      memory = run_checks(*comm, {f.model, &train_ds, 64, fl.check_steps, f.seed, fl.bucket_mb});
      comm->set_reduction(chosen);
    }
    say("== 4. training %s on %d rank(s): %lld images, global batch %lld (%lld per rank)%s, %s, %s, %s ==\n",
        f.model.c_str(), comm->world_size(), (long long)train_ds.n, (long long)f.batch_size,
        (long long)(f.batch_size / comm->world_size()),
        fl.accumulate > 1 ? fmt_line(" x %d accumulated", fl.accumulate).c_str() : "",
        fl.zero ? "ZeRO-1 AdamW" : fl.optimizer.c_str(), fl.precision.c_str(),
        fl.deterministic ? "rank-order sums" : "MPI's own order");
    const TrainResult r = train(*comm, fl, device, epochs, train_ds, test_ds);
    if (r.diverged) return hg::train::kExitDiverged;  // every rank: each said why on stderr
    if (fl.zero)
      say("  gradients: one reduce-scatter after backward, parameters: one all-gather after the step\n\n");
    else
      say("  buckets: %lld of %.1f MiB; %lld allreduce(s) started while backward was running\n\n",
          (long long)r.buckets, fl.bucket_mb, (long long)r.overlapped);
    if (fl.check_steps > 0) show_memory(memory, comm->world_size());
    show_tensor_parallel(*comm, train_ds);
    show_pipeline();
    say("RESULT model=%s ranks=%d threads=%d precision=%s zero=%d steps=%lld seconds=%.3f step_ms=%.3f "
        "images_per_s=%.1f comm_share=%.3f test_accuracy=%.4f\n",
        f.model.c_str(), comm->world_size(), omp_get_max_threads(), fl.precision.c_str(), int(fl.zero),
        (long long)r.steps, r.seconds, 1e3 * r.seconds / double(std::max<int64_t>(1, r.steps)),
        double(r.images) / r.seconds, r.comm_seconds / r.seconds, r.accuracy);
  } catch (const std::exception& e) {
    comm->abort("lesson_13", e.what());  // prints, and ends every rank of the job
  }
  return 0;
}
