// rank_order_reference — what chapter 13's --deterministic promises, computed in one process
// without a communicator, and held against the chapter's saved checkpoint.
//
//   rank_order_reference train CKPT N --optimizer sgd|adamw --epochs E --batch-size B --lr LR
//                        --momentum M --weight-decay WD --seed S --limit-train L
//       trains the MLP on FashionMNIST as N ranks of lesson_13 do (the same weights, the same
//       examples dealt to the same ranks, the same optimizer), except for the one thing under
//       test: each step computes rank 0's gradient, then rank 1's, ... each alone, and adds
//       them here, by hand, in rank order — ((g0 + g1) + g2) + ... — then ×(1/N). Then every
//       tensor of CKPT (the model's weights, the optimizer's state) and its optimizer record
//       must equal this process's, bit for bit.
//   rank_order_reference same A B
//       two checkpoints: every tensor and the optimizer record, bit for bit.
//
// Prints one line per tensor that differs, then "rank_order_reference: same" (exit 0) or
// "... DIFFERENT" (exit 1); 2 for a bad command line or an unreadable file.
//
// With one thread and the same shapes, every micro-batch's forward and backward gives the
// same bits in any process (tests/dist/test_dist_mpi.cpp says why), so the only freedom
// left to the N-rank run is the order of the additions — which is what this pins.
#include <CLI/CLI.hpp>

#include <omp.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "datasets/fashion_mnist.h"
#include "datasets/paths.h"
#include "framework/dist/sampler.h"
#include "framework/io/checkpoint.h"
#include "framework/nn/models/models.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "framework/train/checkpoint.h"

using namespace hg;

namespace {

struct Setup {
  std::string optimizer = "sgd";
  int epochs = 1;
  int64_t batch_size = 64, limit_train = -1;
  double lr = 0.05, momentum = 0.9, weight_decay = 0.0;
  uint64_t seed = 0;
};

// The N ranks' training, in one process: rank k's loss is its mean loss times N·b_k/B
// (sampler.h), its gradient is computed from zeros, and the N gradients are summed in rank
// order by this loop.
io::Checkpoint train_in_rank_order(const Setup& s, int N) {
  data::ImageDataset ds = data::load_fashion_mnist(data::fashion_mnist_dir(""), true, s.limit_train);
  data::normalize(ds, data::kFashionMnistMean, data::kFashionMnistStd);
  Generator gen(s.seed);
  nn::ModulePtr model = nn::make_model("mlp", gen);
  const std::vector<Tensor> params = model->parameters();
  std::unique_ptr<optim::Optimizer> opt;
  if (s.optimizer == "adamw")
    opt = std::make_unique<optim::AdamW>(params, optim::AdamOptions{.lr = s.lr, .weight_decay = s.weight_decay});
  else
    opt = std::make_unique<optim::SGD>(params, optim::SGDOptions{.lr = s.lr, .momentum = s.momentum,
                                                                 .weight_decay = s.weight_decay});
  std::vector<dist::DistributedSampler> ranks;
  for (int k = 0; k < N; ++k) ranks.emplace_back(ds.n, s.batch_size, k, N, s.seed);
  int64_t step = 0;
  for (int64_t epoch = 0; epoch < s.epochs; ++epoch)
    for (int64_t b = 0; b < ranks[0].steps_per_epoch(); ++b, ++step) {
      std::vector<Tensor> sum(params.size());  // Σ_k g_k, added in rank order
      for (int k = 0; k < N; ++k) {
        opt->zero_grad();
        const Batch batch = dist::make_batch(ds, ranks[size_t(k)].indices(epoch, b));
        if (batch.size() > 0) {  // a rank without an example adds zeros
          Tensor loss = cross_entropy((*model)(batch.images), batch.labels);
          const double w = ranks[size_t(k)].loss_weight(epoch, b);
          (w == 1.0 ? loss : mul(loss, w)).backward();
        }
        for (size_t i = 0; i < params.size(); ++i) {
          const Tensor g = params[i].grad().defined() ? params[i].grad() : Tensor::zeros(params[i].shape());
          if (k == 0) sum[i] = g.clone();
          else add_(sum[i], g);
        }
      }
      for (size_t i = 0; i < params.size(); ++i) {
        mul_(sum[i], 1.0 / N);
        Tensor p = params[i];
        p.set_grad(sum[i]);
      }
      opt->step();
    }
  train::TrainingState st;
  st.step = step;
  st.epoch = s.epochs;
  return train::make_checkpoint(*model, opt.get(), st);
}

// Every "model." and "optim." entry of `want` against `got`, bit for bit, and the optimizer
// record (its type, lr, step counts, hyperparameters). Returns the number of differences.
int compare(const io::Checkpoint& got, const io::Checkpoint& want, const std::string& got_name) {
  int problems = 0;
  size_t tensors = 0;
  for (const io::CheckpointEntry& w : want.entries()) {
    if (w.name.rfind("model.", 0) != 0 && w.name.rfind("optim.", 0) != 0) continue;
    ++tensors;
    if (!got.has(w.name)) {
      std::printf("  %s: missing in %s\n", w.name.c_str(), got_name.c_str());
      ++problems;
      continue;
    }
    const io::CheckpointEntry& g = got.at(w.name);
    if (g.dtype != w.dtype || g.shape != w.shape) {
      std::printf("  %s: %s %s, expected %s %s\n", w.name.c_str(), g.dtype.c_str(), io::shape_string(g.shape).c_str(),
                  w.dtype.c_str(), io::shape_string(w.shape).c_str());
      ++problems;
      continue;
    }
    const size_t size = io::checkpoint_dtype_size(w.dtype);
    int64_t differ = 0;
    for (size_t i = 0; i < w.bytes.size(); i += size) differ += std::memcmp(&g.bytes[i], &w.bytes[i], size) != 0;
    if (differ > 0) {
      std::printf("  %s: %lld of %lld values differ\n", w.name.c_str(), (long long)differ, (long long)w.numel());
      ++problems;
    }
  }
  for (const io::CheckpointEntry& g : got.entries())
    if ((g.name.rfind("model.", 0) == 0 || g.name.rfind("optim.", 0) == 0) && !want.has(g.name)) {
      std::printf("  %s: in %s only\n", g.name.c_str(), got_name.c_str());
      ++problems;
    }
  const nlohmann::json none;
  const nlohmann::json& go = got.meta.contains("optimizer") ? got.meta["optimizer"] : none;
  const nlohmann::json& wo = want.meta.contains("optimizer") ? want.meta["optimizer"] : none;
  if (go != wo) {
    std::printf("  optimizer record: %s, expected %s\n", go.dump().c_str(), wo.dump().c_str());
    ++problems;
  }
  std::printf("rank_order_reference: %zu tensors compared: %s\n", tensors, problems == 0 ? "same" : "DIFFERENT");
  return problems;
}

}  // namespace

int main(int argc, char** argv) {
  omp_set_num_threads(1);  // as lesson_13 --threads 1: the same bits per micro-batch
  CLI::App app{"chapter 13's rank-order training in one process, against a saved checkpoint"};
  app.require_subcommand(1);
  Setup s;
  std::string ckpt, other;
  int N = 1;
  CLI::App* tr = app.add_subcommand("train", "train as N ranks in rank order, compare with CKPT");
  tr->add_option("ckpt", ckpt)->required();
  tr->add_option("ranks", N)->required()->check(CLI::Range(1, 64));
  tr->add_option("--optimizer", s.optimizer)->required()->check(CLI::IsMember({"sgd", "adamw"}));
  tr->add_option("--epochs", s.epochs)->required();
  tr->add_option("--batch-size", s.batch_size)->required();
  tr->add_option("--lr", s.lr)->required();
  tr->add_option("--momentum", s.momentum)->required();
  tr->add_option("--weight-decay", s.weight_decay)->required();
  tr->add_option("--seed", s.seed)->required();
  tr->add_option("--limit-train", s.limit_train)->required();
  CLI::App* same = app.add_subcommand("same", "two checkpoints, bit for bit");
  same->add_option("a", ckpt)->required();
  same->add_option("b", other)->required();
  CLI11_PARSE(app, argc, argv);
  try {
    const io::Checkpoint got = io::load_checkpoint(ckpt);
    if (*tr) return compare(got, train_in_rank_order(s, N), ckpt) == 0 ? 0 : 1;
    return compare(got, io::load_checkpoint(other), ckpt) == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank_order_reference: %s\n", e.what());
    return 2;
  }
}
