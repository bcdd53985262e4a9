// Chapter 13, section 3 — checked: N ranks against one process.
//
// The same few steps trained four ways; every rank runs the data-parallel ones (section 4's
// own step, dp_step), rank 0 also the single-process references (its ranks' micro-batches are
// the same examples the others use): DP against one process adding the ranks' gradients in
// rank order (bit for bit when the allreduce adds in rank order), against one process
// training each global batch whole (equal up to rounding), ZeRO-1 against DP (bit for bit),
// and the GradScaler across ranks with an inf on one rank.
#include <cmath>
#include <string>
#include <vector>

#include "framework/ops/ops.h"
#include "lessons/13_data_parallel/data_parallel.h"

namespace ch13 {
namespace {

OptimizerSpec check_optimizer(const std::string& kind) {
  OptimizerSpec spec;
  spec.kind = kind;
  spec.sgd = {.lr = 0.05, .momentum = 0.9};
  spec.adam = {.lr = 1e-3, .weight_decay = 0.01};
  return spec;
}

// One process: each step computes the N ranks' gradients one after another, each alone (from
// zeroed .grad), adds them in rank order and divides by N — what N-rank DP computes, in one
// fixed order. (Letting backward accumulate the N micro-batches into .grad is the same sum
// for the MLP, not for the GPT: its tied weight wte receives two gradients per backward, the
// LM head's and the embedding's, and accumulation would add ((h0 + e0) + h1) + e1 where the
// allreduce adds (h0 + e0) + (h1 + e1).)
std::vector<float> one_process_accumulating(const CheckSetup& c, int N) {
  Model m = c.task.fresh_model(c.seed);
  auto opt = plain_optimizer(check_optimizer("sgd"), m.net->parameters());
  std::vector<Dealer> ranks;
  for (int k = 0; k < N; ++k) ranks.push_back(c.task.dealer(k, N, c.batch, c.seed, hg::Device::CPU));
  const std::vector<Tensor> params = m.net->parameters();
  for (int step = 0; step < c.steps; ++step) {
    std::vector<Tensor> sum(params.size());  // Σ_k g_k, in rank order
    for (int k = 0; k < N; ++k) {
      opt->zero_grad();
      Tensor loss = share_loss(*m.net, ranks[size_t(k)](0, step), 1.0, DType::F32);
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
  Model m = c.task.fresh_model(c.seed);
  auto opt = plain_optimizer(check_optimizer("sgd"), m.net->parameters());
  const Dealer all = c.task.dealer(0, 1, c.batch, c.seed, hg::Device::CPU);
  for (int step = 0; step < c.steps; ++step) {
    opt->zero_grad();
    share_loss(*m.net, all(0, step), 1.0, DType::F32).backward();
    opt->step();
  }
  return values(m.net->parameters());
}

struct DPResult {
  std::vector<float> params;
  int64_t optimizer_bytes = 0;  // the optimizer's state on this rank, as the accountant counts it
};

// N ranks training with section 4's step (dp_step): plain DP or ZeRO-1 (`kind`), the
// gradients added in `order`.
DPResult data_parallel(Communicator& comm, const CheckSetup& c, const std::string& kind, hg::dist::Reduction order) {
  hg::dist::ReductionScope scope(comm, order);
  Replica r(c.task, c.seed, comm, hg::Device::CPU, c.bucket_mb, check_optimizer(kind));
  const Dealer deal = c.task.dealer(comm.rank(), comm.world_size(), c.batch, c.seed, hg::Device::CPU);
  hg::amp::GradScaler no_scaler({}, /*enabled=*/false);
  StepClock clock;
  for (int step = 0; step < c.steps; ++step)
    dp_step(r, no_scaler, [&](int64_t) { return deal(0, step); }, 1, 0.0, DType::F32, clock);
  return {values(r.net().parameters()), r.optimizer_bytes()};
}

// ZeRO-1 with a GradScaler; rank N−1 finds an inf in its gradients at step 2, in an element of
// rank 0's shard. Returns this rank's "stepped / scale" per step.
std::string scaler_run(Communicator& comm, const CheckSetup& c, bool agree) {
  Model m = c.task.fresh_model(c.seed);
  hg::dist::DistributedDataParallel ddp(*m.net, comm);  // for the broadcast
  const Dealer deal = c.task.dealer(comm.rank(), comm.world_size(), c.batch, c.seed, hg::Device::CPU);
  hg::dist::ZeroAdamW zero1(m.net->parameters(), comm, {.lr = 1e-3});
  hg::amp::GradScaler scaler;
  if (agree) hg::dist::agree_found_inf(scaler, comm);
  std::string line;
  for (int step = 0; step < 4; ++step) {
    zero1.zero_grad();
    scaler.scale(share_loss(*m.net, deal(0, step), 1.0, DType::F32)).backward();
    if (step == 2 && comm.rank() == comm.world_size() - 1) {
      Tensor g = m.net->parameters()[0].grad();
      g.data<float>()[0] = INFINITY;  // an overflow on this rank only
    }
    zero1.reduce_gradients();
    const bool stepped = scaler.step(zero1.optimizer());
    scaler.update();
    zero1.gather_parameters();
    line += fmt_line(" %s/%-6g", stepped ? "step" : "SKIP", double(scaler.get_scale()));
  }
  return line;
}

}  // namespace

Memory run_checks(Communicator& comm, const CheckSetup& c) {
  const int N = comm.world_size();
  say("== 3. checked: %d rank(s) against one process (%s, %d steps, global batch %lld%s = %d x %s) ==\n", N,
      c.task.name.c_str(), c.steps, (long long)c.batch, c.task.name == "gpt" ? " sequences" : "", N,
      share_text(c.batch, N).c_str());
  std::vector<float> acc, whole;
  if (comm.rank() == 0) {
    acc = one_process_accumulating(c, N);
    whole = one_process_whole_batch(c);
  }
  using hg::dist::Reduction;
  const DPResult lib = data_parallel(comm, c, "sgd", Reduction::Library);
  const DPResult fixed = data_parallel(comm, c, "sgd", Reduction::FixedOrder);
  say("  against one process that adds the %d ranks' gradients in rank order (SGD, momentum 0.9):\n", N);
  say("    DP, MPI's allreduce      %s\n", printing() ? compare(lib.params, acc).c_str() : "");
  say("    DP, rank order           %s\n", printing() ? compare(fixed.params, acc).c_str() : "");
  say("  against one process training each global batch of %lld whole:\n", (long long)c.batch);
  say("    DP, MPI's allreduce      %s\n", printing() ? compare(lib.params, whole).c_str() : "");
  // ZeRO-1 against DP, both AdamW. Two ranks: any order adds the same two numbers; more: the
  // allreduce and the reduce-scatter may add in different orders, so compare in rank order.
  const Reduction order = N <= 2 ? Reduction::Library : Reduction::FixedOrder;
  const DPResult dp = data_parallel(comm, c, "adamw", order);
  const DPResult z = data_parallel(comm, c, "zero1", order);
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
  mem.zero1 = gather_bytes(comm, z.optimizer_bytes);
  return mem;
}

}  // namespace ch13
