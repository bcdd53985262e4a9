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
//   4. training: the data-parallel step (dp_step: K micro-batches, one gradient sync, DDP's
//      buckets or ZeRO-1's shards), on FashionMNIST here, or on chapter 12's GPT (--model
//      gpt, gpt.cpp); time in communication, per-rank run logs, checkpoints by rank 0
//   5. memory: the optimizer state per rank as the memory accountant counts it, DP against
//      ZeRO-1 (12·⌈Ψ/N⌉)
//   6. tensor parallel: a Linear split by columns and by rows
//   7. pipeline parallel: the bubble of a simulated GPipe schedule
//   8. main: the flags (parse_flags), the device and the data, checked by every rank
//
// The program in five files, one idea each: this one (the sections, in order),
// data_parallel.{h,cpp} (a rank's replica and the step, dp_step), one_process.cpp (section 3),
// gpt.cpp (section 4 for chapter 12's GPT), flags.cpp (the command line, checked by every rank).
//
// Rank 0 prints; the other ranks compute and send their lines to it. A rank that fails
// prints why and ends the whole job (MPI_Abort): the others would otherwise wait forever in
// their next allreduce.
//
// What changed from chapter 12: no new number format and no new model. A rank trains on its
// share of each batch (a sampler), a DistributedDataParallel's backward() averages the
// gradients over the ranks (or ZeRO-1 shards the optimizer), through a communicator. The
// GPT trains as chapter 12 trains it (framework/train/lm.h), now on N ranks.
#include <CLI/CLI.hpp>

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "framework/autograd/grad_mode.h"
#include "framework/cpu/wait_policy.h"
#include "framework/dist/parallel_layers.h"
#include "framework/dist/ring_allreduce.h"
#include "framework/dist/sampler.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/train/checkpoint.h"
#include "framework/train/step.h"
#include "lessons/13_data_parallel/data_parallel.h"

namespace ch13 {
namespace {

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
  Tensor by_ring = Tensor::from_vector(v, {n}), by_mpi = by_ring.clone(), by_rank = by_ring.clone();
  hg::dist::ring_allreduce(comm, by_ring);
  comm.allreduce(by_mpi);
  {
    hg::dist::ReductionScope rank_order(comm, hg::dist::Reduction::FixedOrder);
    comm.allreduce(by_rank);
  }
  say("  random floats, the same inputs summed three ways:\n");
  say("    ring vs MPI_Allreduce:         %s\n", compare(by_ring.to_vector(), by_mpi.to_vector()).c_str());
  say("    rank order vs MPI_Allreduce:   %s\n", compare(by_rank.to_vector(), by_mpi.to_vector()).c_str());
  say("    ring vs rank order:            %s\n", compare(by_ring.to_vector(), by_rank.to_vector()).c_str());
  if (N <= 2) say("  (two ranks add the same two numbers whatever the algorithm: run with --ranks 4 to see orders differ)\n");
  say("\n");
}

// ---- 3. checked: N ranks against one process: one_process.cpp, run_checks() ---------------------

// ---- 4. training ---------------------------------------------------------------------------------
// The step is dp_step (data_parallel.cpp), the same for every model; the loop around it is the
// images' here (epochs of FashionMNIST, the test accuracy, checkpoints) and the GPT's in
// gpt.cpp (steps of random windows, the schedule, the validation loss).

// What the ranks train here: chapter 02's MLP or SmallCNN on FashionMNIST. The global batches
// of an epoch are its shuffled order in pieces of B, dealt by the DistributedSampler.
Task image_task(const std::string& name, const hg::data::ImageDataset& train) {
  Task t;
  t.name = name;
  t.fresh_model = [name](uint64_t seed) {
    Model m;
    m.gen = std::make_unique<hg::Generator>(seed);
    m.net = hg::nn::make_model(name, *m.gen);
    return m;
  };
  t.dealer = [&train](int rank, int world_size, int64_t B, uint64_t seed, hg::Device device) -> Dealer {
    auto s = std::make_shared<const hg::dist::DistributedSampler>(train.n, B, rank, world_size, seed);
    return [s, &train, device](int64_t epoch, int64_t step) {
      const hg::Batch b = hg::dist::make_batch(train, s->indices(epoch, step));
      if (b.size() == 0) return Share{};
      return Share{b.images.to(device), b.labels, s->loss_weight(epoch, step)};
    };
  };
  std::vector<int64_t> idx(64);  // section 6: the first 64 images into the MLP's first layer
  for (int64_t i = 0; i < 64; ++i) idx[size_t(i)] = i;
  t.tp_rows = hg::dist::make_batch(train, idx).images.reshape({64, 784});
  t.tp_out = 512;
  t.tp_what = "64 images";
  return t;
}

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

// The image models' optimizer: plain DP's SGD or AdamW, or ZeRO-1's AdamW.
OptimizerSpec image_optimizer(const Flags& flags) {
  const hg::train::CommonFlags& common = flags.common;
  OptimizerSpec spec;
  spec.kind = flags.zero1 ? "zero1" : flags.optimizer;
  spec.sgd = {.lr = common.lr, .momentum = common.momentum, .weight_decay = common.weight_decay};
  spec.adam = {.lr = common.lr, .weight_decay = common.weight_decay};
  return spec;
}

// Checkpoints: rank 0 writes one, atomically (a crash keeps the last one). Its optimizer
// state is a plain optimizer's over the whole model: ZeRO-1's is gathered from the shards
// first (every rank takes part) and held by a plain AdamW on its way into the file, and cut
// into the shards on its way out (zero.h) — so a checkpoint resumes at any N, with or without --zero.
void save_checkpoint(Communicator& comm, const Flags& flags, Replica& r, const hg::amp::GradScaler& scaler,
                     int64_t step, int64_t epochs_done) {
  const hg::optim::OptimizerState state = r.opt.state_dict();
  if (comm.rank() == 0) {
    const auto whole = plain_optimizer(image_optimizer(flags), r.net().parameters());
    whole->load_state_dict(state);
    hg::train::TrainingState st;
    st.step = step;
    st.epoch = epochs_done;
    st.extra["lesson"] = "13_data_parallel";
    st.extra["flags"] = recorded_flags(flags);
    if (scaler.is_enabled()) st.extra["grad_scaler"] = scaler.state_dict();
    hg::train::save_training_checkpoint(flags.common.checkpoint, r.net(), whole.get(), st);
  }
  comm.barrier();  // nobody runs ahead of the checkpoint
}

// --resume: every rank reads the same file (on several machines: a shared path).
hg::train::TrainingState resume(const Flags& flags, Replica& r, hg::amp::GradScaler& scaler) {
  if (flags.common.resume.empty()) return {};
  const auto whole = plain_optimizer(image_optimizer(flags), r.net().parameters());
  hg::train::TrainingState resumed = hg::train::load_training_checkpoint(flags.common.resume, r.net(), whole.get());
  r.opt.load_state_dict(whole->state_dict());
  if (resumed.extra.contains("grad_scaler")) scaler.load_state_dict(resumed.extra.at("grad_scaler"));
  say("  resumed from %s: epoch %lld, step %lld\n", flags.common.resume.c_str(), (long long)resumed.epoch + 1,
      (long long)resumed.step);
  return resumed;
}

void print_image_heading(const Communicator& comm, const Flags& flags, const hg::data::ImageDataset& train_ds) {
  const int N = comm.world_size();
  const int64_t B = flags.common.batch_size, K = flags.grad_accum;
  const std::string micro = K > 1 ? fmt_line(" in %lld micro-batches of %lld (%s per rank)", (long long)K,
                                             (long long)(B / K), share_text(B / K, N).c_str())
                                  : fmt_line(" (%s per rank)", share_text(B, N).c_str());
  say("== 4. training %s on %d rank(s): %lld images, global batch %lld%s, %s, %s, %s ==\n", flags.common.model.c_str(),
      N, (long long)train_ds.n, (long long)B, micro.c_str(), flags.zero1 ? "ZeRO-1 AdamW" : flags.optimizer.c_str(),
      flags.precision.c_str(), comm.reduction() == hg::dist::Reduction::FixedOrder ? "rank-order sums" : "MPI's own order");
}

// An epoch of steps, each of K micro-batches of B/K images (the last step of an epoch may have
// fewer); rank k trains on its share of each.
TrainResult train_images(Communicator& comm, const Flags& flags, const Task& task, int epochs,
                         const hg::data::ImageDataset& train_ds, const hg::data::ImageDataset& test_ds,
                         hg::Device device) {
  const hg::train::CommonFlags& common = flags.common;
  const int N = comm.world_size(), k = comm.rank();
  const int64_t K = flags.grad_accum, b = common.batch_size / K;  // b: a micro-batch, all ranks together
  print_image_heading(comm, flags, train_ds);
  Replica r(task, common.seed, comm, device, flags.bucket_mb, image_optimizer(flags));
  const DType low = hg::train::autocast_dtype(flags.precision);
  hg::amp::GradScaler scaler({}, /*enabled=*/flags.precision == "amp_f16");
  hg::dist::agree_found_inf(scaler, comm);  // every rank skips together
  const hg::train::TrainingState resumed = resume(flags, r, scaler);
  hg::io::RunLog log = open_rank_log(comm, flags, device,
                                     {{"epochs", epochs}, {"batch_size", common.batch_size}, {"lr", common.lr},
                                      {"optimizer", flags.zero1 ? "zero1_adamw" : flags.optimizer}, {"bucket_mb", flags.bucket_mb},
                                      {"grad_accum", K}, {"deterministic", flags.deterministic},
                                      {"limit_train", common.limit_train}});
  const Dealer deal = task.dealer(k, N, b, common.seed, device);
  const int64_t micro_per_epoch = (train_ds.n + b - 1) / b;
  TrainResult res;
  res.items_name = "images";
  res.score_name = "test_accuracy";
  StepClock clock;
  int64_t step = resumed.step;
  for (int64_t epoch = resumed.epoch; epoch < epochs; ++epoch) {
    const double comm0 = comm.stats().seconds;
    const int64_t during0 = r.ddp.started_during_backward();
    const auto t0 = std::chrono::steady_clock::now();
    double loss_sum = 0;
    int64_t steps = 0;
    for (int64_t first = 0; first < micro_per_epoch; first += K, ++step, ++steps) {
      clock.start(comm);
      maybe_fail(flags, k, step);
      const auto micro = [&](int64_t j) { return deal(epoch, first + j); };
      const StepResult s = dp_step(r, scaler, micro, std::min(K, micro_per_epoch - first), 0.0, low, clock);
      if (diverged(comm, log, common.model, step, s.loss, r.net(), res.diverged)) return res;
      res.skipped += !s.stepped;
      loss_sum += s.loss;
      log.scalar(step, "train/loss", s.loss, epoch);  // this rank's share
      if (scaler.is_enabled()) log.loss_scale(step, scaler.get_scale(), !s.stepped, !s.stepped);
      clock.lap(comm);  // the optimizer step, the end-of-step agreement
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double comm_seconds = comm.stats().seconds - comm0;
    res.seconds += seconds;
    res.comm_seconds += comm_seconds;
    res.steps += steps;
    res.items += double(train_ds.n);
    res.overlapped += r.ddp.started_during_backward() - during0;
    const double loss = comm.allreduce_sum(loss_sum) / double(N) / double(steps);
    res.score = sharded_accuracy(comm, r.net(), test_ds, device);
    log.scalar(step, "test/accuracy", res.score, epoch);
    log.scalar(step, "time/epoch_s", seconds, epoch);
    log.scalar(step, "dist/comm_share", comm_seconds / seconds, epoch);
    say("  epoch %lld  loss %.4f  test accuracy %.4f  %.2f s  (%.0f images/s, %.0f%% of it in communication)\n",
        (long long)epoch + 1, loss, res.score, seconds, double(train_ds.n) / seconds, 100 * comm_seconds / seconds);
    if (!common.checkpoint.empty()) save_checkpoint(comm, flags, r, scaler, step, epoch + 1);
  }
  res.buckets = int64_t(r.ddp.buckets().size());
  res.optimizer_bytes = r.optimizer_bytes();
  res.compute_ms = clock.laps_ms;
  log.end("finished");
  const std::string name = run_name(flags, N);
  say("  run logs: runs/%s/rank0 .. rank%d (./lab view runs/%s overlays them)\n", name.c_str(), N - 1, name.c_str());
  return res;
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
  say("  (an F16 or BF16 model would add DP's F32 master copy: 4 Psi = %lld bytes per rank, 12 Psi with m\n"
      "   and v; ZeRO-1 keeps its F32 master shard for this F32 model too, and pads the shards to\n"
      "   N x ceil(Psi/N) elements)\n\n",
      (long long)(4 * params));
}

// The formula of section 4's optimizer state per rank.
MemoryRow training_row(const Flags& flags, int64_t psi, int N, const std::vector<int64_t>& measured) {
  const int64_t c = (psi + N - 1) / N;
  if (flags.zero1) return {"section 4, ZeRO-1 AdamW: master, m, v", "12 ceil(Psi/N)", measured, 12 * c};
  if (flags.optimizer == "adamw") return {"section 4, DP AdamW: m and v", "8 Psi", measured, 8 * psi};
  if (flags.common.momentum > 0) return {"section 4, DP SGD: the momentum buffer", "4 Psi", measured, 4 * psi};
  return {"section 4, DP SGD without momentum", "0", measured, 0};
}

// ---- 6. tensor parallel ---------------------------------------------------------------------------
// A Linear in -> out on 64 rows x (64, in) (Task::tp_rows): FashionMNIST's first 64 images into
// the MLP's first layer (784 -> 512), or 64 token vectors into a GPT block's c_fc (C -> 4C).
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

// ---- 8. main --------------------------------------------------------------------------------------
// Sections 1 to 7, in order; returns the program's exit code.
int run_sections(Communicator& comm, const Flags& flags, const Task& task, const Data& data, int epochs,
                  hg::Device device) {
  const hg::train::CommonFlags& common = flags.common;
  show_job(comm);
  show_ring(comm, flags.ring_mb);
  Memory memory;
  if (flags.check_steps > 0) {
    const int64_t check_batch = task.name == "gpt" ? std::max<int64_t>(8, comm.world_size()) : 64;
    memory = run_checks(comm, {task, check_batch, flags.check_steps, common.seed, flags.bucket_mb});
  }
  const TrainResult r = task.name == "gpt" ? train_gpt(comm, flags, task, data.text, device)
                                           : train_images(comm, flags, task, epochs, data.train, data.test, device);
  if (r.diverged) return hg::train::kExitDiverged;  // every rank: each said why on stderr
  if (flags.zero1)
    say("  gradients: one reduce-scatter after backward, parameters: one all-gather after the step\n");
  else
    say("  buckets: %lld of %.1f MiB; %lld allreduce(s) started while backward was running\n",
        (long long)r.buckets, flags.bucket_mb, (long long)r.overlapped);
  const Waiting w = waiting_for_the_slowest(comm, r.compute_ms, r.steps);
  const double step_ms = 1e3 * r.seconds / double(std::max<int64_t>(1, r.steps));
  if (comm.world_size() > 1)
    say("  a step, %.3f ms: each rank computes %.3f ms on average (outside MPI), the slowest rank of each step\n"
        "  %.3f ms: so a step waits %.3f ms for its slowest rank, and spends %.3f ms in the collectives themselves\n",
        step_ms, w.mean_ms, w.slowest_ms, w.slowest_ms - w.mean_ms, step_ms - w.slowest_ms);
  say("\n");
  // 5. memory: section 3's DP and ZeRO-1 runs (when they ran) and section 4's optimizer.
  const int64_t psi = task.fresh_model(common.seed).net->num_parameters();
  const int N = comm.world_size();
  std::vector<MemoryRow> rows;
  if (flags.check_steps > 0) {
    rows.push_back({"section 3, DP AdamW: m and v", "8 Psi", memory.dp, 8 * psi});
    rows.push_back({"section 3, ZeRO-1 AdamW: master, m, v", "12 ceil(Psi/N)", memory.zero1, 12 * ((psi + N - 1) / N)});
  }
  rows.push_back(training_row(flags, psi, N, gather_bytes(comm, r.optimizer_bytes)));
  show_memory(rows, psi, N);
  show_tensor_parallel(comm, task.tp_rows, task.tp_out, task.tp_what.c_str());
  show_pipeline();
  say("RESULT model=%s ranks=%d threads=%d precision=%s zero=%d steps=%lld seconds=%.3f step_ms=%.3f "
      "%s_per_s=%.1f comm_share=%.3f compute_ms=%.3f slowest_ms=%.3f %s=%.4f\n",
      common.model.c_str(), N, omp_get_max_threads(), flags.precision.c_str(), int(flags.zero1), (long long)r.steps, r.seconds,
      step_ms, r.items_name.c_str(), r.items / r.seconds, r.comm_seconds / r.seconds, w.mean_ms, w.slowest_ms,
      r.score_name.c_str(), r.score);
  return 0;
}

}  // namespace
}  // namespace ch13

int main(int argc, char** argv) {
  hg::set_omp_wait_policy(argv);  // idle threads sleep, also when run directly (wait_policy.h); before MPI starts
  using namespace ch13;
  std::unique_ptr<Communicator> comm;
  try {
    comm = std::make_unique<Communicator>(argc, argv);  // MPI first: every rank parses the same flags
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lesson_13: %s\n", e.what());
    return 1;
  }
  set_printing(comm->rank() == 0);
  if (const std::string why = command_line_problem(*comm, argc, argv); !why.empty()) {
    if (comm->rank() == 0) std::fprintf(stderr, "lesson_13: %s\n", why.c_str());
    return hg::train::kExitUsage;  // every rank: each found the same
  }
  CLI::App app{"Chapter 13: data-parallel training on MPI (and NCCL), ZeRO-1, the ring allreduce"};
  Flags flags;
  int epochs = 1;
  if (const int code = parse_flags(app, *comm, argc, argv, flags, epochs); code != kGoOn) return code;
  hg::Device device = hg::Device::CPU;
  if (say_first_problem(*comm, choose_device(*comm, flags.common.device, device))) return hg::train::kExitUsage;
  Data data;
  if (say_first_problem(*comm, load_data(flags, data))) return 1;
  try {
    if (device == hg::Device::CUDA) comm->use_gpus();  // NCCL; each rank takes the GPU of its local rank
    // Training's order. Sections 2 and 3 choose their own for what they show, each in a
    // ReductionScope that gives this one back when the section ends.
    if (flags.deterministic) comm->set_reduction(hg::dist::Reduction::FixedOrder);
    const Task task = flags.common.model == "gpt" ? gpt_task(flags.gpt.config(data.text), data.text)
                                               : image_task(flags.common.model, data.train);
    return run_sections(*comm, flags, task, data, epochs, device);
  } catch (const std::exception& e) {
    comm->abort("lesson_13", e.what());  // prints, and ends every rank of the job
  }
  return 0;
}
