// bench_gpt — halfgrad's half of ./lab bench gpt: chapter 12's GPT and recipe for N steps,
// with everything PyTorch needs to run the same steps written to --out:
//
//   OUT/init.bin     the initial parameters, float32, in named_parameters() order
//   OUT/init.json    their names and shapes, the configuration and the recipe
//   OUT/batches.bin  the token ids of every step, int32: N × (x: B·T, then y: B·T)
//
// then trains (AdamW, warmup + cosine, clipping, the lesson's data order) and prints one line
// per step, "step S loss L", and "RESULT framework=halfgrad precision=.. ms_per_step=..".
// tests/bench/torch_gpt.py reads the same files and prints the same lines.
//
//   --precision fp32       everything in F32
//   --precision amp_bf16   chapter 12's BF16 AMP: the forward pass and the loss inside an
//                          Autocast(BF16) region (matmuls on the CPU's BF16 unit, softmax and
//                          the loss in F32), F32 weights and gradients, no GradScaler
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/text.h"
#include "framework/amp/autocast.h"
#include "framework/amp/unscale.h"
#include "framework/io/atomic_file.h"
#include "framework/nn/models/gpt.h"
#include "framework/optim/adam.h"
#include "framework/optim/lr_schedule.h"
#include "framework/train/cli.h"

using Clock = std::chrono::steady_clock;

namespace {

template <typename T>
void write_binary(const std::string& path, const std::vector<T>& v) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(v.data()), std::streamsize(v.size() * sizeof(T)));
  if (!f) throw std::runtime_error("bench_gpt: cannot write " + path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"halfgrad's side of ./lab bench gpt: chapter 12's GPT for N steps, inputs written for PyTorch"};
  hg::nn::GPTConfig c;
  c.n_layer = 4;
  c.n_head = 4;
  c.n_embd = 128;
  c.block_size = 64;
  int64_t B = 16, steps = 30, warmup = 5, threads = 2;
  double lr = 2e-3, weight_decay = 0.1, clip = 1.0;
  uint64_t seed = 0;
  std::string out, data, precision = "fp32";
  app.add_option("--out", out, "folder for init.bin, init.json, batches.bin")->required();
  app.add_option("--precision", precision, "fp32 | amp_bf16 (autocast BF16, no scaler, as chapter 12)")
      ->capture_default_str()->check(CLI::IsMember({"fp32", "amp_bf16"}));
  app.add_option("--steps", steps)->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(100000)));
  app.add_option("--threads", threads)->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(1024)));
  app.add_option("--batch-size", B)->capture_default_str()->check(CLI::Range(int64_t(1), int64_t(65536)));
  app.add_option("--n-layer", c.n_layer)->capture_default_str();
  app.add_option("--n-head", c.n_head)->capture_default_str();
  app.add_option("--n-embd", c.n_embd)->capture_default_str();
  app.add_option("--block-size", c.block_size)->capture_default_str();
  app.add_option("--seed", seed)->capture_default_str();
  app.add_option("--data", data, "a UTF-8 text file (default: the fortunes corpus)")->check(CLI::ExistingFile);
  HG_PARSE_FLAGS(app, argc, argv);
  hg::train::apply_threads(int(threads));
  try {
    const hg::data::TextCorpus corpus = hg::data::load_text_corpus(data, c.block_size);
    c.vocab_size = corpus.vocab_size();
    const int64_t T = c.block_size;
    hg::Generator gen(seed);
    hg::nn::GPT model(c, gen);

    // ---- what PyTorch needs: the weights, the configuration and recipe, the data order
    std::vector<float> init;
    nlohmann::json params = nlohmann::json::array();
    for (const auto& [name, p] : model.named_parameters()) {
      const auto v = p.to_vector();
      init.insert(init.end(), v.begin(), v.end());
      params.push_back({{"name", name}, {"shape", p.shape()}});
    }
    std::vector<int32_t> ids;
    for (int64_t s = 0; s < steps; ++s) {
      const hg::data::TokenBatch b = hg::data::random_batch(corpus.train, B, T, seed, s);
      ids.insert(ids.end(), b.x.begin(), b.x.end());
      ids.insert(ids.end(), b.y.begin(), b.y.end());
    }
    const hg::optim::LRSchedule schedule = hg::optim::LRSchedule::cosine(lr, std::max<int64_t>(1, steps - warmup),
                                                                         lr * 0.1, warmup);
    nlohmann::json meta = {{"config", {{"n_layer", c.n_layer}, {"n_head", c.n_head}, {"n_embd", c.n_embd},
                                       {"block_size", c.block_size}, {"vocab_size", c.vocab_size}, {"tied", true}}},
                           {"params", params}, {"B", B}, {"T", T}, {"steps", steps}, {"threads", threads},
                           {"precision", precision},
                           {"adamw", {{"betas", {0.9, 0.99}}, {"eps", 1e-8}, {"weight_decay", weight_decay}}},
                           {"clip", clip}, {"lr", nlohmann::json::array()}};
    for (int64_t s = 0; s < steps; ++s) meta["lr"].push_back(schedule.lr_at(s));
    write_binary(out + "/init.bin", init);
    write_binary(out + "/batches.bin", ids);
    hg::io::write_file_atomic(out + "/init.json", meta.dump());

    // ---- chapter 12's step, timed
    const bool bf16 = precision == "amp_bf16";
    hg::optim::AdamOptions ao;
    ao.lr = lr;
    ao.beta2 = 0.99;
    ao.weight_decay = weight_decay;
    hg::optim::AdamW opt(model.parameters(), ao);
    double seconds = 0;
    for (int64_t s = 0; s < steps; ++s) {
      const auto t0 = Clock::now();
      const hg::data::TokenBatch b = hg::data::random_batch(corpus.train, B, T, seed, s);
      opt.set_lr(schedule.lr_at(s));
      opt.zero_grad();
      hg::Tensor loss;
      {
        hg::amp::Autocast ac(hg::DType::BF16, bf16);  // enabled = false for fp32: the same step
        loss = hg::nn::GPT::loss(model.forward(b.x, B, T), b.y);
      }
      loss.backward();  // BF16 has F32's range: no loss scaling
      hg::amp::clip_grad_norm_(opt.params(), clip);
      opt.step();
      const double dt = std::chrono::duration<double>(Clock::now() - t0).count();
      if (s >= 2) seconds += dt;  // the first steps allocate and warm the caches
      std::printf("step %lld loss %.6f\n", (long long)s + 1, loss.item());
      std::fflush(stdout);
    }
    std::printf("RESULT framework=halfgrad precision=%s ms_per_step=%.1f\n", precision.c_str(),
                steps > 2 ? 1000.0 * seconds / double(steps - 2) : 0.0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_gpt: %s\n", e.what());
    return 1;
  }
  return 0;
}
