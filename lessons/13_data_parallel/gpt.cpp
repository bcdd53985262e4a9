// Chapter 13, section 4 for --model gpt: chapter 12's GPT, trained as chapter 12 trains it
// (framework/train/lm.h: AdamW with β2 = 0.99, warmup then cosine, clipping, the validation
// loss on chapter 12's batches), on N ranks. What the ranks add is the step (dp_step) and
// where the data comes from:
//
//   global batch s      random_batch(train, B, T, seed, s): B windows of T + 1 tokens,
//                       drawn by a generator seeded with (seed, s) alone, so every rank draws
//                       them without a message (no epochs)
//   rank k              windows k, k + N, k + 2N, ... of it (the DistributedTextSampler)
//   --grad-accum K      a step is K micro-batches of B/K windows, micro-batch s·K + j drawn
//                       as above; the first K−1 under no_sync
//   clipping            under DDP every rank holds the whole averaged gradient and clips it
//                       alone (the same numbers, the same result everywhere); under ZeRO-1 a
//                       rank holds only its shard, and the norm takes one more allreduce
//   validation          rank k evaluates batches k, k + N, ...; the ranks' sums are added
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "framework/dist/sampler.h"
#include "framework/nn/models/gpt.h"
#include "lessons/13_data_parallel/data_parallel.h"

namespace ch13 {

Task gpt_task(const hg::nn::GPTConfig& config, const hg::data::TextCorpus& corpus) {
  Task t;
  t.name = "gpt";
  t.fresh_model = [config](uint64_t seed) {
    Model m;
    m.gen = std::make_unique<hg::Generator>(seed);
    m.net = std::make_shared<hg::nn::GPT>(config, *m.gen);
    return m;
  };
  const int64_t T = config.block_size;
  t.dealer = [&corpus, T](int rank, int world_size, int64_t B, uint64_t seed, hg::Device) -> Dealer {
    auto s = std::make_shared<const hg::dist::DistributedTextSampler>(corpus.train, B, T, rank, world_size, seed);
    return [s](int64_t /*epoch*/, int64_t step) {
      const hg::data::TokenBatch b = s->batch(step);  // (b_k, T) windows
      return Share{Tensor::from_vector(std::vector<float>(b.x.begin(), b.x.end()), {b.B, b.T}), b.y,
                   s->loss_weight()};
    };
  };
  hg::Generator gen(4);  // section 6: 64 random token vectors into the shape of a block's c_fc
  t.tp_rows = Tensor::randn({64, config.n_embd}, gen);
  t.tp_out = 4 * config.n_embd;
  t.tp_what = "64 random token vectors (a GPT block's c_fc: C -> 4C)";
  return t;
}

namespace {

void print_gpt_heading(const Communicator& comm, const Flags& flags, const hg::data::TextCorpus& corpus) {
  const hg::train::CommonFlags& common = flags.common;
  const hg::train::GptFlags& g = flags.gpt;
  const int N = comm.world_size();
  const int64_t B = common.batch_size, K = flags.grad_accum;
  const std::string micro = K > 1 ? fmt_line(" in %lld micro-batches of %lld (%s per rank)", (long long)K,
                                             (long long)(B / K), share_text(B / K, N).c_str())
                                  : fmt_line(" (%s per rank)", share_text(B, N).c_str());
  say("== 4. training gpt on %d rank(s): %s, %lld characters, vocabulary %lld; %s\n"
      "   global batch %lld sequences x %lld tokens%s, %lld steps, %s lr %g (warmup %lld, cosine "
      "to %g), wd %g, clip %g, %s, %s ==\n",
      N, corpus.source.c_str(), (long long)corpus.num_chars, (long long)corpus.vocab_size(),
      g.config(corpus).str().c_str(), (long long)B, (long long)g.model.block_size, micro.c_str(),
      (long long)g.steps, flags.zero1 ? "ZeRO-1 AdamW" : "AdamW", common.lr, (long long)g.warmup, common.lr * g.min_lr_ratio,
      common.weight_decay, g.grad_clip, flags.precision.c_str(),
      comm.reduction() == hg::dist::Reduction::FixedOrder ? "rank-order sums" : "MPI's own order");
}

}  // namespace

TrainResult train_gpt(Communicator& comm, const Flags& flags, const Task& task, const hg::data::TextCorpus& corpus,
                      hg::Device device) {
  const hg::train::CommonFlags& common = flags.common;
  const hg::train::GptFlags& g = flags.gpt;
  const int N = comm.world_size(), k = comm.rank();
  const int64_t B = common.batch_size, T = g.model.block_size, K = flags.grad_accum;
  print_gpt_heading(comm, flags, corpus);
  OptimizerSpec spec;
  spec.kind = flags.zero1 ? "zero1" : "adamw";
  spec.adam = hg::train::lm_adamw(common.lr, common.weight_decay);
  Replica r(task, common.seed, comm, device, flags.bucket_mb, spec);
  hg::nn::GPT& model = dynamic_cast<hg::nn::GPT&>(r.net());  // gpt_task's models are GPTs
  const hg::optim::LRSchedule schedule = hg::train::lm_schedule(g, common.lr);
  const DType low = hg::train::autocast_dtype(flags.precision);
  hg::amp::GradScaler scaler({}, /*enabled=*/flags.precision == "amp_f16");
  hg::dist::agree_found_inf(scaler, comm);  // every rank skips together
  hg::io::RunLog log = open_rank_log(
      comm, flags, device,
      {{"steps", g.steps}, {"batch_size", B}, {"block_size", T}, {"n_layer", g.model.n_layer},
       {"n_head", g.model.n_head}, {"n_embd", g.model.n_embd}, {"lr", common.lr}, {"warmup", g.warmup},
       {"weight_decay", common.weight_decay}, {"grad_clip", g.grad_clip}, {"optimizer", flags.zero1 ? "zero1_adamw" : "adamw"},
       {"bucket_mb", flags.bucket_mb}, {"grad_accum", K}, {"deterministic", flags.deterministic}});
  const Dealer deal = task.dealer(k, N, B / K, common.seed, device);
  const int64_t every = std::max<int64_t>(1, g.steps / 5);
  say("  %6s %12s %10s\n", "step", "train loss", "lr");
  TrainResult res;
  res.items_name = "tokens";
  res.score_name = "val_loss";
  const double comm0 = comm.stats().seconds;
  const auto t0 = std::chrono::steady_clock::now();
  double window_loss = 0;  // this rank's losses since the last printed line
  int64_t window_steps = 0;
  StepClock clock;
  for (int64_t step = 0; step < g.steps; ++step) {
    clock.start(comm);
    maybe_fail(flags, k, step);
    r.opt.inner().set_lr(schedule.lr_at(step));
    const auto micro = [&](int64_t j) { return deal(0, step * K + j); };
    const StepResult s = dp_step(r, scaler, micro, K, g.grad_clip, low, clock);
    if (diverged(comm, log, common.model, step, s.loss, model, res.diverged)) return res;
    res.skipped += !s.stepped;
    log.scalar(step, "train/loss", s.loss);  // this rank's share
    if (scaler.is_enabled()) log.loss_scale(step, scaler.get_scale(), !s.stepped, !s.stepped);
    window_loss += s.loss;
    ++window_steps;
    if ((step + 1) % every == 0 || step + 1 == g.steps) {
      // The ranks' weighted shares average to the global batch's mean loss (sampler.h).
      const double loss = comm.allreduce_sum(window_loss) / double(N) / double(window_steps);
      say("  %6lld %12.4f %10.3g\n", (long long)step + 1, loss, r.opt.inner().lr());
      window_loss = 0;
      window_steps = 0;
    }
    clock.lap(comm);  // the optimizer step, the end-of-step agreement
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  res.comm_seconds = comm.stats().seconds - comm0;
  res.steps = g.steps;
  res.items = double(g.steps * B * T);
  res.overlapped = r.ddp.started_during_backward();
  res.buckets = int64_t(r.ddp.buckets().size());
  res.optimizer_bytes = r.optimizer_bytes();
  res.compute_ms = clock.laps_ms;
  res.score = comm.allreduce_sum(hg::train::validation_loss_sum(model, corpus.val, B, T, 1, g.eval_batches, low, k, N)) /
              double(g.eval_batches);
  log.scalar(g.steps - 1, "val/loss", res.score);
  log.scalar(g.steps - 1, "time/tokens_per_s", res.items / res.seconds);
  log.scalar(g.steps - 1, "dist/comm_share", res.comm_seconds / res.seconds);
  log.end("finished");
  const hg::train::Baselines base = hg::train::baselines(corpus);
  say("  %lld steps in %.2f s: %.0f tokens/s, %.0f%% of it in communication\n", (long long)res.steps, res.seconds,
      res.items / res.seconds, 100 * res.comm_seconds / res.seconds);
  say("  validation loss %.4f nats/char over %lld batches of %lld (chapter 12's); unigram %.4f, uniform ln V %.4f\n",
      res.score, (long long)g.eval_batches, (long long)B, base.unigram, base.uniform);
  const std::string name = run_name(flags, N);
  say("  run logs: runs/%s/rank0 .. rank%d (./lab view runs/%s overlays them)\n", name.c_str(), N - 1, name.c_str());
  return res;
}

}  // namespace ch13
