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
//      communication, per-rank run logs, checkpoints by rank 0; or (--model gpt) chapter 12's
//      GPT on text, each rank on its share of every global batch of sequences, AdamW with
//      warmup and cosine, clipping, and the validation loss at the end
//   5. memory: the optimizer state per rank as the memory accountant counts it, DP against
//      ZeRO-1 (12·⌈Ψ/N⌉)
//   6. tensor parallel: a Linear split by columns and by rows
//   7. pipeline parallel: the bubble of a simulated GPipe schedule
//
// Rank 0 prints; the other ranks compute and send their lines to it. A rank that fails
// prints why and ends the whole job (MPI_Abort): the others would otherwise wait forever in
// their next allreduce.
//
// What changed from chapter 11: no new number format; the training loop gains a sampler, a
// DDP wrapper whose backward() averages the gradients, and a communicator. Chapter 12's GPT
// (--model gpt) trains as chapter 12 trains it, with the same three additions.
//
// Sections: 0. flags   1. job   2. ring   3. checks   4. train (images)   4b. train (the GPT)
//           5. memory   6. tensor parallel   7. pipeline   8. main
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

#include "cuda/runtime/device.h"  // no_gpu_reason(), for --device auto
#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "datasets/text.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/unscale.h"
#include "framework/autograd/grad_mode.h"
#include "framework/dist/communicator.h"
#include "framework/dist/ddp.h"
#include "framework/dist/parallel_layers.h"
#include "framework/dist/ring_allreduce.h"
#include "framework/dist/sampler.h"
#include "framework/dist/zero.h"
#include "framework/io/run_log.h"
#include "framework/memory/accountant.h"
#include "framework/nn/models/gpt.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/lr_schedule.h"
#include "framework/optim/sgd.h"
#include "framework/tensor/device.h"
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
  // --model gpt: chapter 12's GPT, small enough for 2 ranks on 2 cores to train in seconds.
  hg::nn::GPTConfig gpt;           // set in main(): chapter 12's width and context, half its depth
  std::string text;                // a UTF-8 text file; "" = the fortunes corpus
  int64_t steps = 300;             // optimizer steps (the GPT has no epochs: random windows)
  int64_t warmup = 20;             // linear warmup, then cosine to lr / 10 (chapter 12's schedule)
  double grad_clip = 1.0;          // the global gradient norm's cap (0: none)
  int64_t eval_batches = 8;        // validation batches of --batch-size sequences at the end
};

// The validation batches are chapter 12's (the same seed), so the two chapters' validation
// losses are measured on the same text.
constexpr uint64_t kValSeed = 0x5eed0f7a1;

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

// A global batch of B over N ranks: "32" per rank, or "5 or 6" when N does not divide B.
std::string share_text(int64_t B, int N) {
  return B % N == 0 ? fmt_line("%lld", (long long)(B / N)) : fmt_line("%lld or %lld", (long long)(B / N), (long long)(B / N + 1));
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
  // MPI's own allreduce here, whatever order main() chose for training; the scope puts that
  // order back when the section ends.
  hg::dist::ReductionScope library(comm, hg::dist::Reduction::Library);
  // Correctness on small integers, where every order of addition gives the exact sum.
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float((i * 7 + k * 13) % 201 - 100);
  Tensor ring = Tensor::from_vector(v, {n}), lib = ring.clone();
  hg::dist::RingTraffic traffic = hg::dist::ring_allreduce(comm, ring);
  comm.allreduce(lib);
  const bool same = ring.to_vector() == lib.to_vector();
  // Time: the best of 20 runs of each (the first touches fresh memory). MPI's allreduce twice:
  // blocking, and non-blocking (MPI_Iallreduce) waited for at once, as DDP's buckets use it.
  double t_ring = 1e30, t_mpi = 1e30, t_async = 1e30;
  const auto since = [](std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int rep = 0; rep < 20; ++rep) {
    Tensor a = Tensor::from_vector(v, {n}), b = a.clone(), c = a.clone();
    comm.barrier();
    t_ring = std::min(t_ring, hg::dist::ring_allreduce(comm, a).seconds);
    comm.barrier();
    auto t0 = std::chrono::steady_clock::now();
    comm.allreduce(b);
    t_mpi = std::min(t_mpi, since(t0));
    comm.barrier();
    t0 = std::chrono::steady_clock::now();
    comm.allreduce_async(c, hg::dist::ReduceOp::Sum).wait();
    t_async = std::min(t_async, since(t0));
  }
  say("  ring: %d steps, this rank sent %lld bytes = %.3f x the buffer (2(N-1)/N = %.3f)\n", traffic.steps,
      (long long)traffic.bytes_sent, double(traffic.bytes_sent) / double(traffic.buffer_bytes),
      2.0 * (N - 1) / N);
  say("  ring = MPI_Allreduce on small integers (exact sums): %s\n", same ? "yes" : "NO");
  say("  time: ring %.2f ms, MPI_Allreduce %.2f ms, MPI_Iallreduce + wait %.2f ms (best of 20)\n", t_ring * 1e3,
      t_mpi * 1e3, t_async * 1e3);
  // The bits: random floats of many magnitudes, summed by three algorithms.
  std::mt19937 rng(1234 + uint32_t(k));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& x : v) x = u(rng) * std::ldexp(1.0f, int(rng() % 24) - 12);
  Tensor r = Tensor::from_vector(v, {n}), m = r.clone(), f = r.clone();
  hg::dist::ring_allreduce(comm, r);
  comm.allreduce(m);
  {
    hg::dist::ReductionScope rank_order(comm, hg::dist::Reduction::FixedOrder);
    comm.allreduce(f);
  }
  say("  random floats, the same inputs summed three ways:\n");
  say("    ring vs MPI_Allreduce:         %s\n", compare(r.to_vector(), m.to_vector()).c_str());
  say("    rank order vs MPI_Allreduce:   %s\n", compare(f.to_vector(), m.to_vector()).c_str());
  say("    ring vs rank order:            %s\n", compare(r.to_vector(), f.to_vector()).c_str());
  if (N <= 2) say("  (two ranks add the same two numbers whatever the algorithm: run with --ranks 4 to see orders differ)\n");
  say("\n");
}

// ---- 3. checks: N ranks against one process ---------------------------------------------------
// The same few steps trained four ways; every rank runs the data-parallel ones, rank 0 also the
// single-process references (its ranks' micro-batches are the same examples the others use).

// What the chapter trains: the MLP or SmallCNN on FashionMNIST images, or chapter 12's GPT on
// windows of text.
struct Task {
  std::string model;                               // mlp | smallcnn | gpt
  const hg::data::ImageDataset* images = nullptr;  // the image models' training set
  const hg::data::TextCorpus* text = nullptr;      // the GPT's corpus
  hg::nn::GPTConfig gpt;                           // the GPT's shape, vocabulary included
  bool is_gpt() const { return text != nullptr; }
};

// A model of the task, the same for the same seed. The GPT keeps a reference to the generator
// that made it (its dropout draws from it), so the generator lives beside it.
struct Model {
  std::unique_ptr<hg::Generator> gen;
  hg::nn::ModulePtr net;
  hg::nn::GPT* gpt = nullptr;  // net, when it is the GPT
};

Model fresh_model(const Task& t, uint64_t seed) {
  Model m;
  m.gen = std::make_unique<hg::Generator>(seed);
  if (t.is_gpt()) {
    auto gpt = std::make_shared<hg::nn::GPT>(t.gpt, *m.gen);
    m.gpt = gpt.get();
    m.net = gpt;
  } else {
    m.net = hg::nn::make_model(t.model, *m.gen);
  }
  return m;
}

// Deals the global batches to one rank (sampler.h): images by the DistributedSampler (an
// epoch's shuffled order), text windows by the DistributedTextSampler (global batch s is
// random_batch(train, B, T, seed, s); no epochs).
struct RankSampler {
  std::unique_ptr<hg::dist::DistributedSampler> images;
  std::unique_ptr<hg::dist::DistributedTextSampler> text;
};

RankSampler make_sampler(const Task& t, int64_t batch, int rank, int world_size, uint64_t seed) {
  RankSampler s;
  if (t.is_gpt())
    s.text = std::make_unique<hg::dist::DistributedTextSampler>(t.text->train, batch, t.gpt.block_size, rank,
                                                                 world_size, seed);
  else
    s.images = std::make_unique<hg::dist::DistributedSampler>(t.images->n, batch, rank, world_size, seed);
  return s;
}

// One rank's share of a step: its mean loss times the sampler's weight and `scale`
// (undefined: no example). `step` counts global batches; `epoch` is the images' only.
Tensor rank_loss(Model& m, const Task& t, const RankSampler& s, int64_t epoch, int64_t step, double scale = 1.0,
                 DType autocast = DType::F32, hg::Device device = hg::Device::CPU) {
  hg::amp::Autocast ac(autocast, autocast != DType::F32);
  Tensor loss;
  double w = 1.0;
  if (t.is_gpt()) {
    const hg::data::TokenBatch b = s.text->batch(step);  // (b_k, T) windows
    loss = hg::nn::GPT::loss(m.gpt->forward(b.x, b.B, b.T), b.y);
    w = s.text->loss_weight();
  } else {
    const hg::Batch b = hg::dist::make_batch(*t.images, s.images->indices(epoch, step));
    if (b.size() == 0) return Tensor();
    loss = hg::cross_entropy((*m.net)(b.images.to(device)), b.labels);
    w = s.images->loss_weight(epoch, step);
  }
  w *= scale;
  return w == 1.0 ? loss : hg::mul(loss, w);
}

struct CheckSetup {
  Task task;
  int64_t batch = 64;  // global: 64 images, or 8 sequences
  int steps = 8;
  uint64_t seed = 0;
  double bucket_mb = 1.0;
};

enum class Opt { SGD, AdamW };

std::unique_ptr<hg::optim::Optimizer> make_optimizer(Opt o, const std::vector<Tensor>& params) {
  if (o == Opt::SGD) return std::make_unique<hg::optim::SGD>(params, hg::optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  return std::make_unique<hg::optim::AdamW>(params, hg::optim::AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
}

// One process: each step computes the N ranks' gradients one after another, each alone (from
// zeroed .grad), adds them in rank order and divides by N — what N-rank DP computes, in one
// fixed order. (Letting backward accumulate the N micro-batches into .grad is the same sum
// for the MLP, not for the GPT: its tied weight wte receives two gradients per backward, the
// LM head's and the embedding's, and accumulation would add ((h0 + e0) + h1) + e1 where the
// allreduce adds (h0 + e0) + (h1 + e1).)
std::vector<float> one_process_accumulating(const CheckSetup& c, int N, Opt o) {
  Model m = fresh_model(c.task, c.seed);
  auto opt = make_optimizer(o, m.net->parameters());
  std::vector<RankSampler> ranks;
  for (int k = 0; k < N; ++k) ranks.push_back(make_sampler(c.task, c.batch, k, N, c.seed));
  const std::vector<Tensor> params = m.net->parameters();
  for (int step = 0; step < c.steps; ++step) {
    std::vector<Tensor> sum(params.size());  // Σ_k g_k, in rank order
    for (int k = 0; k < N; ++k) {
      opt->zero_grad();
      Tensor loss = rank_loss(m, c.task, ranks[size_t(k)], 0, step);
      if (loss.defined()) loss.backward();
      for (size_t i = 0; i < params.size(); ++i) {
        const Tensor g = params[i].grad().defined() ? params[i].grad() : Tensor::zeros(params[i].shape());
        if (k == 0) sum[i] = g.clone();
        else hg::add_(sum[i], g);
      }
    }
    for (size_t i = 0; i < params.size(); ++i) {
      hg::mul_(sum[i], 1.0 / N);
      Tensor p = params[i];
      p.set_grad(sum[i]);
    }
    opt->step();
  }
  return values(m.net->parameters());
}

// One process, each global batch in one piece: ordinary training.
std::vector<float> one_process_whole_batch(const CheckSetup& c) {
  Model m = fresh_model(c.task, c.seed);
  auto opt = make_optimizer(Opt::SGD, m.net->parameters());
  const RankSampler all = make_sampler(c.task, c.batch, 0, 1, c.seed);
  for (int step = 0; step < c.steps; ++step) {
    opt->zero_grad();
    rank_loss(m, c.task, all, 0, step).backward();
    opt->step();
  }
  return values(m.net->parameters());
}

// The bytes this process holds under the accountant's OptimizerState tag (on every device):
// momentum buffers, Adam's m and v, F32 master copies (framework/memory/accountant.h).
int64_t optimizer_state_bytes() {
  const int tag = int(hg::memory::Tag::OptimizerState);
  return hg::memory::usage(hg::Device::CPU).current[tag] + hg::memory::usage(hg::Device::CUDA).current[tag];
}

struct DPResult {
  std::vector<float> params;
  int64_t optimizer_bytes = 0;  // the optimizer's state on this rank, as the accountant counts it
};

// N ranks, DDP (the optimizer on every rank) or ZeRO-1 (AdamW on this rank's shard), the
// gradients added in `order`.
DPResult data_parallel(Communicator& comm, const CheckSetup& c, Opt o, bool zero, hg::dist::Reduction order) {
  hg::dist::ReductionScope scope(comm, order);
  Model m = fresh_model(c.task, c.seed);
  hg::dist::DistributedDataParallel ddp(*m.net, comm, {.bucket_mb = c.bucket_mb});
  const RankSampler s = make_sampler(c.task, c.batch, comm.rank(), comm.world_size(), c.seed);
  const int64_t state0 = optimizer_state_bytes();  // what is there before the optimizer
  std::unique_ptr<hg::optim::Optimizer> opt;
  std::unique_ptr<hg::dist::ZeroAdamW> z;
  if (zero) z = std::make_unique<hg::dist::ZeroAdamW>(m.net->parameters(), comm, hg::optim::AdamOptions{.lr = 1e-3, .weight_decay = 0.01});
  else opt = make_optimizer(o, m.net->parameters());
  for (int step = 0; step < c.steps; ++step) {
    if (zero) {
      z->zero_grad();
      Tensor loss = rank_loss(m, c.task, s, 0, step);
      if (loss.defined()) loss.backward();
      z->step();
    } else {
      opt->zero_grad();
      ddp.backward(rank_loss(m, c.task, s, 0, step));
      opt->step();
    }
  }
  return {values(m.net->parameters()), optimizer_state_bytes() - state0};
}

// ZeRO-1 with a GradScaler; rank N−1 finds an inf in its gradients at step 2, in an element of
// rank 0's shard. Returns this rank's "stepped / scale" per step.
std::string scaler_run(Communicator& comm, const CheckSetup& c, bool agree) {
  Model m = fresh_model(c.task, c.seed);
  hg::dist::DistributedDataParallel ddp(*m.net, comm);  // for the broadcast
  const RankSampler s = make_sampler(c.task, c.batch, comm.rank(), comm.world_size(), c.seed);
  hg::dist::ZeroAdamW zero(m.net->parameters(), comm, {.lr = 1e-3});
  hg::amp::GradScaler scaler;
  if (agree) hg::dist::agree_found_inf(scaler, comm);
  std::string line;
  for (int step = 0; step < 4; ++step) {
    zero.zero_grad();
    scaler.scale(rank_loss(m, c.task, s, 0, step)).backward();
    if (step == 2 && comm.rank() == comm.world_size() - 1) {
      Tensor g = m.net->parameters()[0].grad();
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

// Section 5's numbers from section 3's runs: every rank's optimizer state, DP's and ZeRO-1's.
struct Memory {
  std::vector<int64_t> dp, zero;  // bytes, per rank
};

std::vector<int64_t> gather_bytes(Communicator& comm, int64_t bytes) {
  std::vector<int64_t> out;
  for (const std::string& line : comm.gather_text(std::to_string(bytes))) out.push_back(std::stoll(line));
  return out;
}

Memory run_checks(Communicator& comm, const CheckSetup& c) {
  const int N = comm.world_size();
  say("== 3. checked: %d rank(s) against one process (%s, %d steps, global batch %lld%s = %d x %s) ==\n", N,
      c.task.model.c_str(), c.steps, (long long)c.batch, c.task.is_gpt() ? " sequences" : "", N,
      share_text(c.batch, N).c_str());
  std::vector<float> acc, whole;
  if (comm.rank() == 0) {
    acc = one_process_accumulating(c, N, Opt::SGD);
    whole = one_process_whole_batch(c);
  }
  using hg::dist::Reduction;
  const DPResult lib = data_parallel(comm, c, Opt::SGD, false, Reduction::Library);
  const DPResult fixed = data_parallel(comm, c, Opt::SGD, false, Reduction::FixedOrder);
  say("  against one process that adds the %d ranks' gradients in rank order (SGD, momentum 0.9):\n", N);
  say("    DP, MPI's allreduce      %s\n", g_print ? compare(lib.params, acc).c_str() : "");
  say("    DP, rank order           %s\n", g_print ? compare(fixed.params, acc).c_str() : "");
  say("  against one process training each global batch of %lld whole:\n", (long long)c.batch);
  say("    DP, MPI's allreduce      %s\n", g_print ? compare(lib.params, whole).c_str() : "");
  // ZeRO-1 against DP, both AdamW. Two ranks: any order adds the same two numbers; more: the
  // allreduce and the reduce-scatter may add in different orders, so compare in rank order.
  const Reduction order = N <= 2 ? Reduction::Library : Reduction::FixedOrder;
  const DPResult dp = data_parallel(comm, c, Opt::AdamW, false, order);
  const DPResult z = data_parallel(comm, c, Opt::AdamW, true, order);
  say("  ZeRO-1 against DP (AdamW, %s):\n", N <= 2 ? "MPI's order" : "rank order");
  say("    ZeRO-1                   %s\n", compare(z.params, dp.params).c_str());
  // The GradScaler across ranks: MPI's order (the decisions do not depend on it).
  hg::dist::ReductionScope library(comm, Reduction::Library);
  say("  GradScaler with ZeRO-1, an inf on rank %d at step 2 (step/skip and scale after each of 4 steps):\n", N - 1);
  for (bool agree : {false, true}) {
    const auto lines = comm.gather_text(scaler_run(comm, c, agree));
    say("    %s\n", agree ? "found-inf agreed (max over ranks):" : "each rank decides alone:");
    for (int k = 0; k < N; ++k) say("      rank %d:%s\n", k, lines[size_t(k)].c_str());
  }
  say("\n");
  Memory mem;
  mem.dp = gather_bytes(comm, dp.optimizer_bytes);
  mem.zero = gather_bytes(comm, z.optimizer_bytes);
  return mem;
}

// ---- 4. training ---------------------------------------------------------------------------------
struct TrainResult {
  double seconds = 0, comm_seconds = 0, accuracy = 0, loss = 0;
  int64_t images = 0, steps = 0, skipped = 0, overlapped = 0, buckets = 0;
  int64_t tokens = 0;            // the GPT: tokens trained on, all ranks together
  double val_loss = 0;           // the GPT: the validation loss at the end
  int64_t optimizer_bytes = 0;   // this rank's optimizer state, as the accountant counts it
  std::vector<float> compute_ms;   // this rank's time outside MPI, two laps a step (StepClock)
  hg::train::Divergence diverged;  // set on every rank when any rank's loss or weights became inf/NaN
};

// Time outside MPI: wall time less the time this rank spent in MPI calls (copying, adding, or
// waiting for the others). A step has two laps that end where the ranks synchronise: the
// gradients' allreduce (no rank leaves it before every rank has entered it), then the
// optimizer step up to the end-of-step agreement (`diverged` below). Each lap lasts as long as
// its slowest rank computes; the other ranks wait for it inside MPI. (ZeRO-1 and the GPT's
// clipping add collectives inside the second lap; there the wait measured is a lower bound.)
struct StepClock {
  std::chrono::steady_clock::time_point t0;
  double comm0 = 0;
  void start(const Communicator& comm) {
    t0 = std::chrono::steady_clock::now();
    comm0 = comm.stats().seconds;
  }
  float lap_ms(const Communicator& comm) {  // since start() or the last lap, and starts the next
    const auto now = std::chrono::steady_clock::now();
    const double wall = std::chrono::duration<double>(now - t0).count(), in_mpi = comm.stats().seconds - comm0;
    t0 = now;
    comm0 = comm.stats().seconds;
    return float(1e3 * (wall - in_mpi));
  }
};

// Every rank's laps, gathered: per step, the ranks' mean time outside MPI, and the sum over
// its laps of the slowest rank's. Their difference is what a step waits for its slowest rank.
// (Every rank runs the same laps: the collectives come in the same order on every rank.)
struct Waiting {
  double mean_ms = 0, slowest_ms = 0;  // per step
};
Waiting waiting_for_the_slowest(Communicator& comm, const std::vector<float>& laps, int64_t steps) {
  const int N = comm.world_size();
  const int64_t L = int64_t(laps.size());
  if (L == 0 || steps == 0) return {};
  Tensor all = Tensor::zeros({N * L});
  comm.all_gather(Tensor::from_vector(laps, {L}), all);
  const std::vector<float> t = all.to_vector();
  Waiting w;
  for (int64_t i = 0; i < L; ++i) {
    double slowest = 0;
    for (int j = 0; j < N; ++j) {
      w.mean_ms += t[size_t(j * L + i)] / double(N);
      slowest = std::max<double>(slowest, t[size_t(j * L + i)]);
    }
    w.slowest_ms += slowest;
  }
  w.mean_ms /= double(steps);
  w.slowest_ms /= double(steps);
  return w;
}

// The optimizer of section 4 (the scaler steps `stepper()`): ZeRO-1's AdamW on this rank's
// shard, or the plain-DP optimizer on every parameter.
struct Optimizers {
  std::unique_ptr<hg::optim::Optimizer> plain;
  std::unique_ptr<hg::dist::ZeroAdamW> zero;
  hg::optim::Optimizer& stepper() { return zero ? zero->optimizer() : *plain; }
  void zero_grad() {
    if (zero) zero->zero_grad();
    else plain->zero_grad();
  }
};

// One run log per rank: runs/<name>/rank<k>/, so the viewer overlays the ranks. Rank 0
// claims runs/<name> (main() checked it was free), then every rank opens its own folder in it.
hg::io::RunLog open_rank_log(Communicator& comm, const Flags& fl, hg::Device device, const nlohmann::json& args) {
  const hg::train::CommonFlags& f = fl.common;
  const int k = comm.rank();
  const std::string name = run_name(fl, comm.world_size());
  const bool resuming = !f.resume.empty();
  std::string folder = hg::train::run_path(name);
  if (k == 0) folder = hg::train::claim_run_folder(name, f.overwrite, resuming);
  comm.barrier();
  return hg::io::RunLog(folder + "/rank" + std::to_string(k),
                        {{"lesson", "13_data_parallel"}, {"model", f.model}, {"precision", fl.precision},
                         {"device", hg::device_name(device)}, {"seed", f.seed}, {"rank", k},
                         {"world_size", comm.world_size()}, {"args", args}},
                        /*append=*/resuming);
}

// For the tests: rank `fail_rank` dies at optimizer step `fail_at_step`.
void maybe_fail(const Flags& fl, int rank, int64_t step) {
  if (step != fl.fail_at_step || rank != fl.fail_rank) return;
  if (fl.fail_how == "kill") std::raise(SIGKILL);
  throw std::runtime_error(fmt_line("failing on purpose at step %lld (--fail-at-step)", (long long)step));
}

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

// Divergence: the replicas are equal, but each rank's loss is its own share, so the ranks
// agree (a sum of flags) and stop together, rather than leave one alone in an allreduce.
bool diverged(Communicator& comm, hg::io::RunLog& log, const std::string& model_name, int64_t step, double loss,
              hg::nn::Module& model, TrainResult& r) {
  hg::train::Divergence d = hg::train::check_finite_step(step, loss, model.named_parameters());
  if (comm.allreduce_sum(d ? 1.0 : 0.0) == 0) return false;
  if (!d) d = {step, "another rank's loss or weights became inf or NaN"};
  hg::train::report_divergence(log, fmt_line("lesson_13: %s, rank %d", model_name.c_str(), comm.rank()), d);
  r.diverged = d;
  return true;
}

TrainResult train(Communicator& comm, const Flags& fl, const Task& task, hg::Device device, int epochs,
                  const hg::data::ImageDataset& test_ds) {
  const hg::train::CommonFlags& f = fl.common;
  const hg::data::ImageDataset& train_ds = *task.images;
  const int N = comm.world_size(), k = comm.rank();
  Model m = fresh_model(task, f.seed);
  hg::nn::Module& model = *m.net;
  model.to(device);
  hg::dist::DistributedDataParallel ddp(model, comm, {.bucket_mb = fl.bucket_mb});  // rank 0's weights everywhere
  const int64_t state0 = optimizer_state_bytes();
  const hg::optim::AdamOptions ao{.lr = f.lr, .weight_decay = f.weight_decay};
  Optimizers opts;
  if (fl.zero) {
    opts.zero = std::make_unique<hg::dist::ZeroAdamW>(model.parameters(), comm, ao);
  } else if (fl.optimizer == "adamw") {
    opts.plain = std::make_unique<hg::optim::AdamW>(model.parameters(), ao);
  } else {
    opts.plain = std::make_unique<hg::optim::SGD>(model.parameters(),
                                                  hg::optim::SGDOptions{.lr = f.lr, .momentum = f.momentum, .weight_decay = f.weight_decay});
  }
  hg::optim::Optimizer* opt = opts.plain.get();      // plain DP's, checkpointed
  hg::dist::ZeroAdamW* zero = opts.zero.get();
  hg::optim::Optimizer& stepper = opts.stepper();    // what the scaler steps
  const DType low = fl.precision == "amp_bf16" ? DType::BF16 : fl.precision == "amp_f16" ? DType::F16 : DType::F32;
  hg::amp::GradScaler scaler({}, /*enabled=*/fl.precision == "amp_f16");
  hg::dist::agree_found_inf(scaler, comm);  // every rank skips together

  // ZeRO-1's checkpoint is plain AdamW's (zero.h): a plain AdamW over the whole model holds it
  // on its way into the file and out of it — gathered from the shards, and cut into them.
  hg::train::TrainingState resumed;
  if (!f.resume.empty()) {  // every rank reads the same file (on several machines: a shared path)
    std::unique_ptr<hg::optim::AdamW> whole = zero ? std::make_unique<hg::optim::AdamW>(model.parameters(), ao) : nullptr;
    resumed = hg::train::load_training_checkpoint(f.resume, model, zero ? whole.get() : opt);
    if (zero) zero->load_state_dict(whole->state_dict());
    if (resumed.extra.contains("grad_scaler")) scaler.load_state_dict(resumed.extra.at("grad_scaler"));
    say("  resumed from %s: epoch %lld, step %lld\n", f.resume.c_str(), (long long)resumed.epoch + 1,
        (long long)resumed.step);
  }

  const std::string name = run_name(fl, N);
  hg::io::RunLog log = open_rank_log(comm, fl, device,
                                     {{"epochs", epochs}, {"batch_size", f.batch_size}, {"lr", f.lr},
                                      {"optimizer", fl.zero ? "zero1_adamw" : fl.optimizer}, {"bucket_mb", fl.bucket_mb},
                                      {"accumulate", fl.accumulate}, {"deterministic", fl.deterministic},
                                      {"limit_train", f.limit_train}});
  const RankSampler sampler = make_sampler(task, f.batch_size, k, N, f.seed);
  const int64_t per_epoch = sampler.images->steps_per_epoch();
  TrainResult r;
  int64_t step = resumed.step;
  for (int64_t epoch = resumed.epoch; epoch < epochs; ++epoch) {
    const double comm0 = comm.stats().seconds;
    const int64_t during0 = ddp.started_during_backward();
    const auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    // K sampler steps (global batches) make one optimizer step: the first K−1 under no_sync.
    StepClock clock;
    for (int64_t first = 0; first < per_epoch; first += fl.accumulate, ++step) {
      clock.start(comm);
      maybe_fail(fl, k, step);
      const int64_t K = std::min<int64_t>(fl.accumulate, per_epoch - first);
      opts.zero_grad();
      double step_loss = 0;
      for (int64_t j = 0; j < K; ++j) {
        Tensor loss = rank_loss(m, task, sampler, epoch, first + j, 1.0 / double(K), low, device);
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
      r.compute_ms.push_back(clock.lap_ms(comm));  // up to the gradients' allreduce
      const bool stepped = scaler.step(stepper);
      scaler.update();
      if (fl.zero) zero->gather_parameters();
      if (diverged(comm, log, f.model, step, step_loss, model, r)) return r;
      r.skipped += !stepped;
      loss_sum += step_loss;
      log.scalar(step, "train/loss", step_loss, epoch);  // this rank's share
      if (scaler.is_enabled()) log.loss_scale(step, scaler.get_scale(), !stepped, !stepped);
      r.compute_ms.push_back(clock.lap_ms(comm));  // the optimizer step, the end-of-step agreement
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double comm_seconds = comm.stats().seconds - comm0;
    r.seconds += seconds;
    r.comm_seconds += comm_seconds;
    r.steps += (per_epoch + fl.accumulate - 1) / fl.accumulate;
    r.images += train_ds.n;
    r.overlapped += ddp.started_during_backward() - during0;
    r.loss = comm.allreduce_sum(loss_sum) / double(N) / double((per_epoch + fl.accumulate - 1) / fl.accumulate);
    r.accuracy = sharded_accuracy(comm, model, test_ds, device);
    log.scalar(step, "test/accuracy", r.accuracy, epoch);
    log.scalar(step, "time/epoch_s", seconds, epoch);
    log.scalar(step, "dist/comm_share", comm_seconds / seconds, epoch);
    say("  epoch %lld  loss %.4f  test accuracy %.4f  %.2f s  (%.0f images/s, %.0f%% of it in communication)\n",
        (long long)epoch + 1, r.loss, r.accuracy, seconds, double(train_ds.n) / seconds, 100 * comm_seconds / seconds);
    if (!f.checkpoint.empty()) {  // rank 0 alone writes; atomically (a crash keeps the last one)
      std::unique_ptr<hg::optim::AdamW> whole;
      if (zero) {
        const hg::optim::OptimizerState gathered = zero->state_dict();  // every rank takes part
        if (k == 0) {
          whole = std::make_unique<hg::optim::AdamW>(model.parameters(), ao);
          whole->load_state_dict(gathered);
        }
      }
      if (k == 0) {
        hg::train::TrainingState st;
        st.step = step;
        st.epoch = epoch + 1;
        st.extra["lesson"] = "13_data_parallel";
        st.extra["flags"] = recorded_flags(fl);
        if (scaler.is_enabled()) st.extra["grad_scaler"] = scaler.state_dict();
        hg::train::save_training_checkpoint(f.checkpoint, model, zero ? whole.get() : opt, st);
      }
    }
    comm.barrier();  // nobody runs ahead of the checkpoint
  }
  r.buckets = int64_t(ddp.buckets().size());
  r.optimizer_bytes = optimizer_state_bytes() - state0;
  log.end("finished");
  say("  run logs: runs/%s/rank0 .. rank%d (./lab view runs/%s overlays them)\n", name.c_str(), N - 1, name.c_str());
  return r;
}

// ---- 4b. training the GPT ---------------------------------------------------------------------------
// Chapter 12's loop, with the ranks. Global batch s is random_batch(train, B, T, seed, s), dealt
// to the ranks by the DistributedTextSampler (each window on exactly one rank); with
// --accumulate K an optimizer step takes K global batches (s = step·K + j), the first K−1 under
// no_sync. AdamW with chapter 12's β2 = 0.99, linear warmup then cosine to lr/10, and the
// global gradient norm clipped to --grad-clip: under DDP every rank holds the whole averaged
// gradient and clips it alone (the same numbers, the same result everywhere); under ZeRO-1 a
// rank holds only its shard, and the norm takes one more allreduce (ZeroAdamW::clip_grad_norm_).

// The two losses a model must beat (chapter 12): uniform over the vocabulary, ln V, and the
// unigram — each character with its add-one-smoothed training frequency — on the validation text.
double unigram_loss(const hg::data::TextCorpus& c) {
  std::vector<double> count(static_cast<size_t>(c.vocab_size()), 1.0);
  for (int32_t id : c.train) count[size_t(id)] += 1;
  const double n = double(c.train.size()) + double(c.vocab_size());
  double nll = 0;
  for (int32_t id : c.val) nll -= std::log(count[size_t(id)] / n);
  return nll / double(c.val.size());
}

// The mean loss over `batches` validation batches of B windows, chapter 12's (seed kValSeed):
// rank k evaluates batches k, k+N, ..., and the ranks' sums are added.
double sharded_validation_loss(Communicator& comm, hg::nn::GPT& model, const std::vector<int32_t>& val, int64_t B,
                               int64_t T, int64_t batches, DType autocast) {
  hg::NoGradGuard no_grad;
  model.eval();
  double sum = 0;
  for (int64_t i = comm.rank(); i < batches; i += comm.world_size()) {
    const hg::data::TokenBatch b = hg::data::random_batch(val, B, T, kValSeed, i);
    hg::amp::Autocast ac(autocast, autocast != DType::F32);
    sum += hg::nn::GPT::loss(model.forward(b.x, b.B, b.T), b.y).item();
  }
  model.train();
  return comm.allreduce_sum(sum) / double(batches);
}

TrainResult train_gpt(Communicator& comm, const Flags& fl, const Task& task, hg::Device device) {
  const hg::train::CommonFlags& f = fl.common;
  const int N = comm.world_size(), k = comm.rank();
  const int64_t B = f.batch_size, T = task.gpt.block_size, K = fl.accumulate;
  Model m = fresh_model(task, f.seed);
  hg::nn::GPT& model = *m.gpt;
  model.to(device);
  hg::dist::DistributedDataParallel ddp(model, comm, {.bucket_mb = fl.bucket_mb});  // rank 0's weights everywhere
  const int64_t state0 = optimizer_state_bytes();
  const hg::optim::AdamOptions ao{.lr = f.lr, .beta2 = 0.99, .weight_decay = f.weight_decay};  // chapter 12's
  Optimizers opts;
  if (fl.zero) opts.zero = std::make_unique<hg::dist::ZeroAdamW>(model.parameters(), comm, ao);
  else opts.plain = std::make_unique<hg::optim::AdamW>(model.parameters(), ao);
  hg::optim::Optimizer& stepper = opts.stepper();  // what the scaler steps
  const hg::optim::LRSchedule schedule =
      hg::optim::LRSchedule::cosine(f.lr, std::max<int64_t>(1, fl.steps - fl.warmup), f.lr * 0.1, fl.warmup);
  const DType low = fl.precision == "amp_bf16" ? DType::BF16 : fl.precision == "amp_f16" ? DType::F16 : DType::F32;
  hg::amp::GradScaler scaler({}, /*enabled=*/fl.precision == "amp_f16");
  hg::dist::agree_found_inf(scaler, comm);  // every rank skips together

  const std::string name = run_name(fl, N);
  hg::io::RunLog log = open_rank_log(
      comm, fl, device,
      {{"steps", fl.steps}, {"batch_size", B}, {"block_size", T}, {"n_layer", task.gpt.n_layer},
       {"n_head", task.gpt.n_head}, {"n_embd", task.gpt.n_embd}, {"lr", f.lr}, {"warmup", fl.warmup},
       {"weight_decay", f.weight_decay}, {"grad_clip", fl.grad_clip}, {"optimizer", fl.zero ? "zero1_adamw" : "adamw"},
       {"bucket_mb", fl.bucket_mb}, {"accumulate", K}, {"deterministic", fl.deterministic}});
  const RankSampler sampler = make_sampler(task, B, k, N, f.seed);
  const int64_t every = std::max<int64_t>(1, fl.steps / 5);
  say("  %6s %12s %10s\n", "step", "train loss", "lr");
  TrainResult r;
  const double comm0 = comm.stats().seconds;
  const auto t0 = std::chrono::steady_clock::now();
  double window_loss = 0;  // this rank's losses since the last printed line
  int64_t window_steps = 0;
  StepClock clock;
  for (int64_t step = 0; step < fl.steps; ++step) {
    clock.start(comm);
    maybe_fail(fl, k, step);
    stepper.set_lr(schedule.lr_at(step));
    opts.zero_grad();
    double step_loss = 0;  // this rank's share: its mean loss times N·b_k/B
    for (int64_t j = 0; j < K; ++j) {
      Tensor loss = rank_loss(m, task, sampler, 0, step * K + j, 1.0 / double(K), low, device);
      step_loss += loss.item();
      Tensor scaled = scaler.scale(loss);
      if (fl.zero) {
        scaled.backward();  // ZeRO-1 reduces after backward, all at once
      } else if (j + 1 < K) {
        auto quiet = ddp.no_sync();  // accumulate: nothing to send yet
        ddp.backward(scaled);
      } else {
        ddp.backward(scaled);  // averages the sum of the K global batches' gradients
      }
    }
    if (fl.zero) opts.zero->reduce_gradients();
    r.compute_ms.push_back(clock.lap_ms(comm));  // up to the gradients' allreduce
    scaler.unscale_(stepper);  // clipping must see the true gradients
    if (fl.grad_clip > 0) {
      if (fl.zero) opts.zero->clip_grad_norm_(fl.grad_clip);
      else hg::amp::clip_grad_norm_(model.parameters(), fl.grad_clip);
    }
    const bool stepped = scaler.step(stepper);
    scaler.update();
    if (fl.zero) opts.zero->gather_parameters();
    if (diverged(comm, log, f.model, step, step_loss, model, r)) return r;
    r.skipped += !stepped;
    log.scalar(step, "train/loss", step_loss);  // this rank's share
    if (scaler.is_enabled()) log.loss_scale(step, scaler.get_scale(), !stepped, !stepped);
    window_loss += step_loss;
    ++window_steps;
    if ((step + 1) % every == 0 || step + 1 == fl.steps) {
      // The ranks' weighted shares average to the global batch's mean loss (sampler.h).
      r.loss = comm.allreduce_sum(window_loss) / double(N) / double(window_steps);
      say("  %6lld %12.4f %10.3g\n", (long long)step + 1, r.loss, stepper.lr());
      window_loss = 0;
      window_steps = 0;
    }
    r.compute_ms.push_back(clock.lap_ms(comm));  // the optimizer step, the end-of-step agreement
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.comm_seconds = comm.stats().seconds - comm0;
  r.steps = fl.steps;
  r.tokens = fl.steps * K * B * T;
  r.overlapped = ddp.started_during_backward();
  r.buckets = int64_t(ddp.buckets().size());
  r.optimizer_bytes = optimizer_state_bytes() - state0;
  r.val_loss = sharded_validation_loss(comm, model, task.text->val, B, T, fl.eval_batches, low);
  log.scalar(fl.steps - 1, "val/loss", r.val_loss);
  log.scalar(fl.steps - 1, "time/tokens_per_s", double(r.tokens) / r.seconds);
  log.scalar(fl.steps - 1, "dist/comm_share", r.comm_seconds / r.seconds);
  log.end("finished");
  say("  %lld steps in %.2f s: %.0f tokens/s, %.0f%% of it in communication\n", (long long)r.steps, r.seconds,
      double(r.tokens) / r.seconds, 100 * r.comm_seconds / r.seconds);
  say("  validation loss %.4f nats/char over %lld batches of %lld (chapter 12's); unigram %.4f, uniform ln V %.4f\n",
      r.val_loss, (long long)fl.eval_batches, (long long)B, unigram_loss(*task.text),
      std::log(double(task.text->vocab_size())));
  say("  run logs: runs/%s/rank0 .. rank%d (./lab view runs/%s overlays them)\n", name.c_str(), N - 1, name.c_str());
  return r;
}

// ---- 5. memory --------------------------------------------------------------------------------------
// What each rank's optimizer holds, as the memory accountant counts it: the bytes under the
// OptimizerState tag (framework/memory/accountant.h) that appeared between the optimizer's
// construction and the end of its steps — Adam's m and v, SGD's momentum buffer, ZeRO-1's
// master shard — beside the formula. Ψ parameters, c = ⌈Ψ/N⌉ the shard.
struct MemoryRow {
  std::string what, formula;
  std::vector<int64_t> measured;  // per rank
  int64_t expected = 0;
};

void show_memory(const std::vector<MemoryRow>& rows, int64_t params, int N) {
  say("== 5. memory: optimizer state per rank, as the memory accountant counts it (Psi = %lld, N = %d) ==\n",
      (long long)params, N);
  // One column per rank up to 4 ranks; beyond, the smallest and the largest.
  std::vector<std::string> heads;
  if (N <= 4)
    for (int k = 0; k < N; ++k) heads.push_back(fmt_line("rank %d", k));
  else
    heads = {"min of ranks", "max of ranks"};
  std::string head = fmt_line("  %-38s", "bytes tagged OptimizerState");
  for (const std::string& h : heads) head += fmt_line(" %12s", h.c_str());
  say("%s %12s\n", head.c_str(), "formula");
  bool all_equal = true;
  for (const MemoryRow& row : rows) {
    std::string line = fmt_line("  %-38s", row.what.c_str());
    std::vector<int64_t> shown = row.measured;
    if (N > 4)
      shown = {*std::min_element(row.measured.begin(), row.measured.end()),
               *std::max_element(row.measured.begin(), row.measured.end())};
    for (int64_t b : shown) line += fmt_line(" %12lld", (long long)b);
    say("%s %12lld   %s\n", line.c_str(), (long long)row.expected, row.formula.c_str());
    for (int64_t b : row.measured) all_equal = all_equal && b == row.expected;
  }
  say("  measured = formula on every rank: %s\n", all_equal ? "yes" : "NO");
  say("  (an F16 or BF16 model would add DP's F32 master copy: 12 Psi = %lld bytes per rank; ZeRO-1 keeps\n"
      "   its F32 master shard for this F32 model too, and pads the shards to N x ceil(Psi/N) elements)\n\n",
      (long long)(12 * params));
}

// ---- 6. tensor parallel ---------------------------------------------------------------------------
// A Linear in -> out on 64 rows x (64, in): FashionMNIST's first 64 images into the MLP's first
// layer (784 -> 512), or 64 token vectors into the shape of a GPT block's c_fc (C -> 4C).
void show_tensor_parallel(Communicator& comm, const Tensor& x, int64_t out, const char* rows) {
  const int N = comm.world_size(), k = comm.rank();
  const int64_t in = x.shape()[1];
  say("== 6. tensor parallel: Linear %lld -> %lld split over %d rank(s), %s ==\n", (long long)in, (long long)out, N,
      rows);
  if (in % N != 0 || out % N != 0) {
    say("  (%lld and %lld do not split into %d equal blocks: skipped)\n\n", (long long)in, (long long)out, N);
    return;
  }
  hg::Generator gen(3);
  hg::nn::Linear fc(in, out, gen);
  const std::vector<float> whole = hg::linear(x, fc.weight, fc.bias).to_vector();
  const Tensor b_k = fc.bias.slice(k * (out / N), (k + 1) * (out / N)).contiguous();
  const Tensor col = hg::dist::column_parallel_linear(comm, x, hg::dist::row_block(fc.weight, N, k), b_k);
  const Tensor row = hg::dist::row_parallel_linear(comm, hg::dist::column_block(x, N, k),
                                                   hg::dist::column_block(fc.weight, N, k), fc.bias);
  say("  each rank holds %lld of the %lld weights\n", (long long)(in * out / N), (long long)(in * out));
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
// What each rank found for itself ("" when nothing): the first report of any rank, on every
// rank — "rank k: ..." for another rank's (its first 255 bytes, what gather_text carries),
// rank 0's own whole — or "" when no rank reported anything.
std::string first_report(Communicator& comm, const std::string& mine) {
  const std::vector<std::string> all = comm.gather_text(mine);
  for (size_t r = 0; r < all.size(); ++r)
    if (!all[r].empty()) return r == 0 ? (comm.rank() == 0 ? mine : all[0]) : fmt_line("rank %zu: %s", r, all[r].c_str());
  return "";
}

// A problem that each rank looks for itself: true on every rank when any rank found one,
// which rank 0 then says, once.
bool say_first_problem(Communicator& comm, const std::string& mine) {
  const std::string why = first_report(comm, mine);
  if (!why.empty() && comm.rank() == 0) std::fprintf(stderr, "lesson_13: %s\n", why.c_str());
  return !why.empty();
}

// Every rank must be given the same command line: each parses its own, and ranks that read
// different flags would train different things, write other folders, or wait forever in a
// collective the others never call (`mpirun -np 1 lesson_13 --epochs 1 : -np 1 lesson_13
// --epochs 2`). So before any flag is read the ranks compare a hash of their words (FNV-1a,
// 64 bits, each word with its terminating NUL): "" when all agree, else which rank differs.
std::string command_line_problem(Communicator& comm, int argc, char** argv) {
  uint64_t h = 14695981039346656037ull;
  for (int i = 1; i < argc; ++i)
    for (const char* c = argv[i];; ++c) {
      h = (h ^ uint8_t(*c)) * 1099511628211ull;
      if (*c == '\0') break;
    }
  const std::vector<std::string> all = comm.gather_text(fmt_line("%016llx", (unsigned long long)h));
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0])
      return fmt_line("rank %zu was started with another command line than rank 0: every rank must be given the "
                      "same flags (mpirun -np N lesson_13 FLAGS)", r);
  return "";
}

// The formula of section 4's optimizer state per rank, for section 5.
MemoryRow training_row(const Flags& fl, int64_t psi, int N, const std::vector<int64_t>& measured) {
  const int64_t c = (psi + N - 1) / N;
  const bool gpt = fl.common.model == "gpt";
  if (fl.zero) return {"section 4, ZeRO-1 AdamW: master, m, v", "12 ceil(Psi/N)", measured, 12 * c};
  if (gpt || fl.optimizer == "adamw") return {"section 4, DP AdamW: m and v", "8 Psi", measured, 8 * psi};
  if (fl.common.momentum > 0) return {"section 4, DP SGD: the momentum buffer", "4 Psi", measured, 4 * psi};
  return {"section 4, DP SGD without momentum", "0", measured, 0};
}

int main(int argc, char** argv) {
  std::unique_ptr<Communicator> comm;
  try {
    comm = std::make_unique<Communicator>(argc, argv);  // MPI first: every rank parses the same flags
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_13: %s\n", e.what());
    return 1;
  }
  g_print = comm->rank() == 0;
  if (const std::string why = command_line_problem(*comm, argc, argv); !why.empty()) {
    if (comm->rank() == 0) std::fprintf(stderr, "lesson_13: %s\n", why.c_str());
    return hg::train::kExitUsage;  // every rank: each found the same
  }
  CLI::App app{"Chapter 13: data-parallel training on MPI (and NCCL), ZeRO-1, the ring allreduce"};
  Flags fl;
  hg::train::CommonFlags& f = fl.common;
  f.limit_train = 10000;  // 2-core default; --limit-train -1 for all 60000
  fl.gpt.n_layer = 2;     // the GPT's defaults: 2 ranks on 2 cores train it in seconds
  fl.gpt.n_head = 4;
  fl.gpt.n_embd = 128;
  fl.gpt.block_size = 64;
  hg::train::add_common_flags(app, f);
  // BatchNorm's running statistics would need their own synchronisation: no ResNets here.
  app.get_option("--model")->check(hg::train::OneOf({"mlp", "smallcnn", "gpt"}));
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
  // --model gpt (chapter 12's flags and defaults, a smaller model)
  const std::vector<std::string> gpt_flags = {"--steps", "--warmup", "--grad-clip", "--eval-batches", "--n-layer",
                                              "--n-head", "--n-embd", "--block-size", "--text"};
  app.add_option("--steps", fl.steps, "--model gpt: optimizer steps")->capture_default_str()
      ->check(hg::train::WholeIn(1, 10000000, "a number of steps from 1 to 10^7"));
  app.add_option("--warmup", fl.warmup, "--model gpt: steps of linear warmup before the cosine")->capture_default_str()
      ->check(hg::train::WholeIn(0, 10000000, "a number of steps from 0 to 10^7"));
  app.add_option("--grad-clip", fl.grad_clip, "--model gpt: clip the global gradient norm to this (0: no clipping)")
      ->capture_default_str()->check(hg::train::NonNegative());
  app.add_option("--eval-batches", fl.eval_batches, "--model gpt: validation batches at the end")->capture_default_str()
      ->check(hg::train::WholeIn(1, 100000, "a number of batches from 1 to 100000"));
  app.add_option("--n-layer", fl.gpt.n_layer, "--model gpt: transformer blocks")->capture_default_str()
      ->check(hg::train::WholeIn(1, 256, "a depth from 1 to 256"));
  app.add_option("--n-head", fl.gpt.n_head, "--model gpt: attention heads per block")->capture_default_str()
      ->check(hg::train::WholeIn(1, 256, "a number of heads from 1 to 256"));
  app.add_option("--n-embd", fl.gpt.n_embd, "--model gpt: the residual width C (a multiple of --n-head)")
      ->capture_default_str()->check(hg::train::WholeIn(1, 16384, "a width from 1 to 16384"));
  app.add_option("--block-size", fl.gpt.block_size, "--model gpt: context length T")->capture_default_str()
      ->check(hg::train::WholeIn(1, 16384, "a context from 1 to 16384"));
  app.add_option("--text", fl.text, "--model gpt: a UTF-8 text file (default: Debian's fortunes)")
      ->check(CLI::ExistingFile);
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
  const bool gpt = f.model == "gpt";
  if (gpt) {  // chapter 12's loop: steps of random windows, AdamW; no epochs, images or checkpoints here
    for (const char* name : {"--epochs", "--limit-train", "--limit-test", "--data", "--optimizer", "--momentum",
                             "--checkpoint", "--resume"})
      if (app.count(name) > 0)
        return refuse(fmt_line("%s does not apply to --model gpt (it trains chapter 12's way: --steps of AdamW%s)",
                               name, std::string(name) == "--checkpoint" || std::string(name) == "--resume"
                                         ? "; chapter 12 checkpoints the GPT" : ""));
    try {
      hg::nn::GPTConfig c = fl.gpt;
      c.vocab_size = 1;  // the corpus decides; validate the rest now
      c.validate();
    } catch (const std::exception& e) {
      return refuse(e.what());
    }
    if (app.count("--warmup") == 0) fl.warmup = std::min(fl.warmup, fl.steps / 10);  // short runs: a tenth
    if (fl.warmup >= fl.steps) return refuse(fmt_line("--warmup %lld: must be below --steps %lld", (long long)fl.warmup, (long long)fl.steps));
    if (app.count("--batch-size") == 0) f.batch_size = 16;  // chapter 12's AdamW recipe
    if (app.count("--lr") == 0) f.lr = 2e-3;
    if (app.count("--weight-decay") == 0) f.weight_decay = 0.1;
  } else {
    for (const std::string& name : gpt_flags)
      if (app.count(name) > 0) return refuse(name + " belongs to --model gpt");
  }
  if (fl.zero && app.count("--optimizer") > 0 && fl.optimizer != "adamw")
    return refuse("--optimizer " + fl.optimizer + " with --zero: ZeRO-1 here shards AdamW's state (master, m, v); "
                  "leave --optimizer out, or drop --zero for plain DP with " + fl.optimizer);
  if (fl.zero) fl.optimizer = "adamw";  // recorded so: its checkpoint is plain AdamW's (zero.h)
  const bool resuming = !f.resume.empty();
  int64_t epochs_done = 0;
  if (resuming) {  // the checkpoint's flags fill in what the command line left out
    const std::string why = hg::train::resume_flags(app, f.resume, "13_data_parallel", recorded_flags(fl), epochs_done);
    if (!why.empty()) return refuse(why);
    if (fl.zero && fl.optimizer != "adamw")
      return refuse("--resume " + f.resume + " with --zero: the checkpoint was trained with --optimizer " + fl.optimizer +
                    ", and ZeRO-1 here shards AdamW's state; resume it without --zero");
  }
  const int epochs = f.epochs > 0 ? f.epochs : 1;
  if (resuming && epochs_done >= epochs) {
    say("%s has done %lld epoch(s), --epochs is %d: nothing left to train (--epochs %lld trains further)\n",
        f.resume.c_str(), (long long)epochs_done, epochs, (long long)epochs_done + 1);
    return 0;
  }
  if (f.lr_schedule != "constant") return refuse("--lr-schedule is not supported in this chapter");
  if (!gpt && fl.optimizer == "adamw" && app.count("--lr") == 0) f.lr = 1e-3;  // SGD's 0.05 is far too big for Adam
  // The run folder: checked by every rank before any work (on one machine they see the same
  // runs/; on several, each its own), and refused everywhere if any rank refuses it. Rank 0
  // says the first problem, once.
  if (say_first_problem(*comm, hg::train::check_run_folders({run_name(fl, comm->world_size())}, f.overwrite, resuming)))
    return hg::train::kExitUsage;
  if (f.batch_size < comm->world_size())
    return refuse(fmt_line("--batch-size %lld is the global batch: it needs at least one %s per rank (%d ranks)",
                           (long long)f.batch_size, gpt ? "sequence" : "example", comm->world_size()));
  // Threads: by default the cores this rank may use, shared with the other ranks on its machine
  // (mpirun binds each of 2 ranks to a core; with more ranks than cores it binds none).
  if (f.threads == 0) f.threads = std::max(1, omp_get_num_procs() / comm->local_size());
  hg::train::apply_threads(f.threads);
  // The device and the data, before any work. Every rank looks for itself (on several machines
  // each has its own GPUs and reads its own copy of the data); rank 0 says the first problem
  // found, once, and every rank returns: N copies of one line and MPI_Abort's banner say less.
  hg::Device device = hg::Device::CPU;
  std::string problem;
  if (f.device == "auto") {
    // The GPUs when every rank has one, else the CPU on every rank (NCCL wants all of them).
    const std::string no_gpu = first_report(*comm, hg::cuda_available() ? "" : hg::cuda::no_gpu_reason());
    device = no_gpu.empty() ? hg::Device::CUDA : hg::Device::CPU;
    if (!no_gpu.empty() && comm->rank() == 0)
      std::fprintf(stderr, "--device auto: %s; running on the CPU, every rank\n", no_gpu.c_str());
  } else {
    try {
      device = hg::train::device_from_flag(f.device);
    } catch (const std::exception& e) {
      problem = "--device " + f.device + ": " + e.what();
    }
  }
  if (say_first_problem(*comm, problem)) return hg::train::kExitUsage;
  // The data: FashionMNIST for the image models, a text corpus for the GPT. Missing or damaged:
  // exit 1, as in every chapter (README, "Flags and exit codes").
  Task task;
  task.model = f.model;
  hg::data::ImageDataset train_ds, test_ds;
  hg::data::TextCorpus corpus;
  try {
    if (gpt) {
      corpus = hg::data::load_text_corpus(fl.text, fl.gpt.block_size);
      task.text = &corpus;
      task.gpt = fl.gpt;
      task.gpt.vocab_size = corpus.vocab_size();
    } else {
      const std::string dir = hg::data::fashion_mnist_dir(f.data);
      train_ds = hg::data::load_fashion_mnist(dir, true, f.limit_train);
      test_ds = hg::data::load_fashion_mnist(dir, false, f.limit_test);
      hg::data::normalize(train_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
      hg::data::normalize(test_ds, hg::data::kFashionMnistMean, hg::data::kFashionMnistStd);
      task.images = &train_ds;
    }
  } catch (const std::exception& e) {
    problem = e.what();
  }
  if (say_first_problem(*comm, problem)) return 1;

  try {
    if (device == hg::Device::CUDA) comm->use_gpus();  // NCCL; each rank takes the GPU of its local rank
    // Training's order. Sections 2 and 3 choose their own for what they show, each in a
    // ReductionScope that gives this one back when the section ends.
    if (fl.deterministic) comm->set_reduction(hg::dist::Reduction::FixedOrder);
    show_job(*comm);
    show_ring(*comm, fl.ring_mb);
    Memory memory;
    if (fl.check_steps > 0) {
      const int64_t check_batch = gpt ? std::max<int64_t>(8, comm->world_size()) : 64;
      memory = run_checks(*comm, {task, check_batch, fl.check_steps, f.seed, fl.bucket_mb});
    }
    // What the communicator will do, read from it rather than from the flag.
    const char* order = comm->reduction() == hg::dist::Reduction::FixedOrder ? "rank-order sums" : "MPI's own order";
    const std::string accumulated = fl.accumulate > 1 ? fmt_line(" x %d accumulated", fl.accumulate) : "";
    if (gpt)
      say("== 4. training gpt on %d rank(s): %s, %lld characters, vocabulary %lld; %s\n"
          "   global batch %lld sequences x %lld tokens (%s per rank)%s, %lld steps, %s lr %g (warmup %lld, cosine "
          "to %g), wd %g, clip %g, %s, %s ==\n",
          comm->world_size(), corpus.source.c_str(), (long long)corpus.num_chars, (long long)corpus.vocab_size(),
          task.gpt.str().c_str(), (long long)f.batch_size, (long long)task.gpt.block_size,
          share_text(f.batch_size, comm->world_size()).c_str(), accumulated.c_str(), (long long)fl.steps,
          fl.zero ? "ZeRO-1 AdamW" : "AdamW", f.lr, (long long)fl.warmup, f.lr * 0.1, f.weight_decay, fl.grad_clip,
          fl.precision.c_str(), order);
    else
      say("== 4. training %s on %d rank(s): %lld images, global batch %lld (%s per rank)%s, %s, %s, %s ==\n",
          f.model.c_str(), comm->world_size(), (long long)train_ds.n, (long long)f.batch_size,
          share_text(f.batch_size, comm->world_size()).c_str(), accumulated.c_str(),
          fl.zero ? "ZeRO-1 AdamW" : fl.optimizer.c_str(), fl.precision.c_str(), order);
    const TrainResult r = gpt ? train_gpt(*comm, fl, task, device) : train(*comm, fl, task, device, epochs, test_ds);
    if (r.diverged) return hg::train::kExitDiverged;  // every rank: each said why on stderr
    if (fl.zero)
      say("  gradients: one reduce-scatter after backward, parameters: one all-gather after the step\n");
    else
      say("  buckets: %lld of %.1f MiB; %lld allreduce(s) started while backward was running\n",
          (long long)r.buckets, fl.bucket_mb, (long long)r.overlapped);
    const Waiting w = waiting_for_the_slowest(*comm, r.compute_ms, r.steps);
    const double step_ms = 1e3 * r.seconds / double(std::max<int64_t>(1, r.steps));
    if (comm->world_size() > 1)
      say("  a step, %.3f ms: each rank computes %.3f ms on average (outside MPI), the slowest rank of each step\n"
          "  %.3f ms: so a step waits %.3f ms for its slowest rank, and spends %.3f ms in the collectives themselves\n",
          step_ms, w.mean_ms, w.slowest_ms, w.slowest_ms - w.mean_ms, step_ms - w.slowest_ms);
    say("\n");
    // 5. memory: section 3's DP and ZeRO-1 runs (when they ran) and section 4's optimizer.
    const int64_t psi = fresh_model(task, f.seed).net->num_parameters();
    const int N = comm->world_size();
    std::vector<MemoryRow> rows;
    if (fl.check_steps > 0) {
      rows.push_back({"section 3, DP AdamW: m and v", "8 Psi", memory.dp, 8 * psi});
      rows.push_back({"section 3, ZeRO-1 AdamW: master, m, v", "12 ceil(Psi/N)", memory.zero, 12 * ((psi + N - 1) / N)});
    }
    rows.push_back(training_row(fl, psi, N, gather_bytes(*comm, r.optimizer_bytes)));
    show_memory(rows, psi, N);
    if (gpt) {
      hg::Generator gen(4);
      show_tensor_parallel(*comm, Tensor::randn({64, task.gpt.n_embd}, gen), 4 * task.gpt.n_embd,
                           "64 random token vectors (a GPT block's c_fc: C -> 4C)");
    } else {
      std::vector<int64_t> idx(64);
      for (int64_t i = 0; i < 64; ++i) idx[size_t(i)] = i;
      show_tensor_parallel(*comm, hg::dist::make_batch(train_ds, idx).images.reshape({64, 784}), 512, "64 images");
    }
    show_pipeline();
    if (gpt)
      say("RESULT model=gpt ranks=%d threads=%d precision=%s zero=%d steps=%lld seconds=%.3f step_ms=%.3f "
          "tokens_per_s=%.1f comm_share=%.3f compute_ms=%.3f slowest_ms=%.3f val_loss=%.4f\n",
          N, omp_get_max_threads(), fl.precision.c_str(), int(fl.zero), (long long)r.steps, r.seconds, step_ms,
          double(r.tokens) / r.seconds, r.comm_seconds / r.seconds, w.mean_ms, w.slowest_ms, r.val_loss);
    else
      say("RESULT model=%s ranks=%d threads=%d precision=%s zero=%d steps=%lld seconds=%.3f step_ms=%.3f "
          "images_per_s=%.1f comm_share=%.3f compute_ms=%.3f slowest_ms=%.3f test_accuracy=%.4f\n",
          f.model.c_str(), N, omp_get_max_threads(), fl.precision.c_str(), int(fl.zero), (long long)r.steps,
          r.seconds, step_ms, double(r.images) / r.seconds, r.comm_seconds / r.seconds, w.mean_ms, w.slowest_ms,
          r.accuracy);
  } catch (const std::exception& e) {
    comm->abort("lesson_13", e.what());  // prints, and ends every rank of the job
  }
  return 0;
}
