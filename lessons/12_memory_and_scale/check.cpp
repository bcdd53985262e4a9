// Grades the chapter 12 exercise: the learner's prediction of a training run's model states.
//
// The answer is not a table from a paper but what halfgrad holds. For each configuration the
// grader builds the GPT (framework/nn/models/gpt.h) and the optimizer, runs one training
// step on a few tokens and reads the memory accountant (framework/memory/accountant.h): the
// bytes tagged parameters, gradients and optimizer state that the model and the optimizer
// left behind. The learner's parameter count is checked against the model's own, and each
// way to be wrong is named: a forgotten embedding, a tied head counted twice, Adam with one
// moment, mixed precision without its F32 master weights or their F32 gradient.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "framework/amp/master_weights.h"
#include "framework/memory/accountant.h"
#include "framework/nn/models/gpt.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"
#include "lessons/12_memory_and_scale/exercise.h"
#include "lessons/grader/grader.h"

using grader::format;
using grader::see;
using hg::memory::OptimizerKind;
using hg::memory::Precision;
using hg::memory::Tag;

namespace {

hg::nn::GPTConfig gpt(int64_t L, int64_t H, int64_t C, int64_t T, int64_t V, bool tied) {
  hg::nn::GPTConfig c;
  c.n_layer = L;
  c.n_head = H;
  c.n_embd = C;
  c.block_size = T;
  c.vocab_size = V;
  c.tied = tied;
  return c;
}

const char* name(OptimizerKind o) {
  return o == OptimizerKind::SGD ? "SGD" : o == OptimizerKind::SGDMomentum ? "SGD with momentum" : "Adam";
}
const char* name(Precision p) { return p == Precision::FP32 ? "FP32" : "mixed precision"; }

// ---- what halfgrad holds ------------------------------------------------------------------

struct Measured {
  int64_t params = 0;  // the model's parameter count
  ModelStates bytes;   // what the accountant holds under each tag after one step
};

// Builds the GPT and the optimizer, runs one step (forward, backward, step) on one batch of 2
// sequences of block_size tokens, and returns what each tag gained: the batch, the logits and
// the graph are gone by then, so what stays is the model states.
Measured measure(const hg::nn::GPTConfig& config, OptimizerKind optimizer, Precision precision) {
  const hg::memory::ByTag before = hg::memory::usage(hg::Device::CPU).current;
  Measured m;
  {
    hg::Generator gen(12);
    hg::nn::GPT model(config, gen);
    m.params = model.num_parameters();
    std::unique_ptr<hg::amp::MasterWeights> master;
    std::vector<hg::Tensor> trained = model.parameters();
    if (precision == Precision::Mixed) {
      model.to(hg::DType::F16);
      master = std::make_unique<hg::amp::MasterWeights>(model.parameters());
      trained = master->master_params();
    }
    std::unique_ptr<hg::optim::Optimizer> opt;
    if (optimizer == OptimizerKind::Adam)
      opt = std::make_unique<hg::optim::Adam>(trained, hg::optim::AdamOptions{});
    else
      opt = std::make_unique<hg::optim::SGD>(
          trained, hg::optim::SGDOptions{.lr = 0.01, .momentum = optimizer == OptimizerKind::SGD ? 0.0 : 0.9});
    const int64_t B = 2, T = config.block_size;
    std::vector<int32_t> ids, targets;
    for (int64_t i = 0; i < B * T; ++i) {
      ids.push_back(int32_t(i % config.vocab_size));
      targets.push_back(int32_t((i + 1) % config.vocab_size));
    }
    {
      hg::Tensor loss = hg::nn::GPT::loss(model.forward(ids, B, T).to(hg::DType::F32), targets);
      loss.backward();
    }
    if (master) master->copy_grads_to_master();
    opt->step();
    if (master) master->copy_master_to_model();
    const hg::memory::ByTag after = hg::memory::usage(hg::Device::CPU).current;
    m.bytes.parameters = after[int(Tag::Parameter)] - before[int(Tag::Parameter)];
    m.bytes.gradients = after[int(Tag::Gradient)] - before[int(Tag::Gradient)];
    m.bytes.optimizer_state = after[int(Tag::OptimizerState)] - before[int(Tag::OptimizerState)];
  }
  return m;
}

// ---- part 1: the parameter count ------------------------------------------------------------

std::string count(grader::Grader& g, const hg::nn::GPTConfig& c) {
  const int64_t got = g.run([&] { return student_gpt_parameters(c); });
  hg::Generator gen(12);
  const int64_t want = hg::nn::GPT(c, gen).num_parameters();
  if (got == want) return "";
  const int64_t L = c.n_layer, C = c.n_embd, T = c.block_size, V = c.vocab_size, diff = got - want;
  // The difference, not the count: it names the tensor that is missing or extra.
  const std::string at = format("%s: you count %lld parameters, %lld too %s. ", c.str().c_str(), (long long)got,
                                (long long)(diff < 0 ? -diff : diff), diff < 0 ? "few" : "many");
  if (got == 0)
    return c.str() + ": you count no parameters. Every tensor the model trains holds parameters: the "
                       "token and position embeddings, in each block two layer norms and the attention's "
                       "and the MLP's Linear layers, the final layer norm, and the LM head when it is not "
                       "tied. " + see("## Where the memory goes");
  if (diff == -T * C)
    return at + format("That is block_size × n_embd = %lld × %lld: the position embedding wpe has one "
                       "row of n_embd numbers per position, and it is trained too.", (long long)T, (long long)C);
  if (c.tied && diff == V * C)
    return at + format("That is vocab_size × n_embd = %lld × %lld: with a tied head the logits are "
                       "computed with wte's own weight, so the LM head adds no parameters. Count it only "
                       "when the head is untied.", (long long)V, (long long)C);
  if (!c.tied && diff == -V * C)
    return at + format("That is vocab_size × n_embd = %lld × %lld: an untied LM head is a weight of its "
                       "own, (V, C), beside wte.", (long long)V, (long long)C);
  if (diff == -V * C)
    return at + "That is vocab_size × n_embd: the token embedding wte, (V, C).";
  if (diff == -2 * C)
    return at + "That is 2 × n_embd: the final layer norm ln_f, a weight and a bias of n_embd each.";
  if (diff % L == 0)
    return at + format("Each of the %lld blocks is off by %+lld: a block holds ln_1 and ln_2 (a weight "
                       "and a bias of C each), c_attn C -> 3C, attn.c_proj C -> C, mlp.c_fc C -> 4C and "
                       "mlp.c_proj 4C -> C, each Linear with a weight and a bias.",
                       (long long)L, (long long)(diff / L)) + " " + see("## Where the memory goes");
  return at + "Count each tensor of gpt.h's parameter names once. " + see("## Where the memory goes");
}

// ---- part 2: the bytes ----------------------------------------------------------------------

std::string per_param(int64_t bytes, int64_t params) {
  return bytes % params == 0 ? format("%lld B", (long long)(bytes / params))
                             : format("%.3g B", double(bytes) / double(params));
}

// Compares one prediction with what halfgrad held, and names the mistake.
std::string explain(const std::string& what, const Measured& m, const ModelStates& got,
                    OptimizerKind o, Precision p) {
  const int64_t P = m.params;
  const ModelStates& want = m.bytes;
  const std::string at = format("%s, %s, %s: ", what.c_str(), name(o), name(p));
  auto show = [&](const char* tag, int64_t g, int64_t w) {
    return format("you predict %lld bytes of %s for %lld parameters (%s per parameter): too %s. ", (long long)g,
                  tag, (long long)P, per_param(g, P).c_str(), g < w ? "few" : "many");
  };
  if (got.parameters == 0 && got.gradients == 0 && got.optimizer_state == 0)
    return at + format("you predict no bytes at all for %lld parameters. Each category costs a fixed number "
                       "of bytes per parameter, set by the number format of what is kept and by what the "
                       "optimizer keeps between steps. ", (long long)P) + see("## Where the memory goes");
  const bool mixed = p == Precision::Mixed;
  if (got.parameters != want.parameters)
    return at + show("parameters", got.parameters, want.parameters) +
           (mixed ? "In mixed precision the model computes with F16 weights, 2 bytes each; the F32 copy is "
                    "the master weights, which the optimizer owns."
                  : "An F32 weight is 4 bytes.");
  const int64_t moments = o == OptimizerKind::SGD ? 0 : o == OptimizerKind::SGDMomentum ? 4 : 8;
  if (got.optimizer_state != want.optimizer_state) {
    std::string why = at + show("optimizer state", got.optimizer_state, want.optimizer_state);
    if (mixed && got.optimizer_state == moments * P)
      return why + "Mixed precision keeps F32 master weights: the optimizer updates an F32 copy of every "
                   "weight (4 bytes more per parameter), because an F16 weight would lose small updates. "
                   "The copy is optimizer state. " + see("## Where the memory goes");
    if (o == OptimizerKind::Adam && got.optimizer_state == want.optimizer_state - 4 * P)
      return why + "Adam keeps two F32 moments per parameter, m (the mean of the gradient) and v (the mean "
                   "of its square): 8 bytes, not 4.";
    if (o == OptimizerKind::SGD && !mixed)
      return why + "Plain SGD keeps nothing between steps: w -= lr·g.";
    if (o == OptimizerKind::SGDMomentum)
      return why + "SGD with momentum keeps one F32 buffer per parameter, b = μ·b + g.";
    return why + "The optimizer's state is what it keeps between steps, in F32: moments" +
           (mixed ? ", and the F32 master weights." : ".");
  }
  if (got.gradients != want.gradients) {
    std::string why = at + show("gradients", got.gradients, want.gradients);
    if (mixed && got.gradients == 2 * P)
      return why + "The F16 model's .grad is 2 bytes, as ZeRO counts; but the optimizer updates the F32 "
                   "master weights, and halfgrad's MasterWeights gives each its own F32 gradient "
                   "(copy_grads_to_master unscales into it): 4 bytes more, held as a gradient. " +
             see("## Where the memory goes");
    return why + (mixed ? "Backward leaves an F16 .grad on the model's weights and MasterWeights an F32 "
                          "one on the master's."
                        : "Backward leaves one F32 gradient per parameter.");
  }
  return "";
}

// One configuration, one optimizer, one precision: the learner's bytes for the model's true
// parameter count (part 2 alone), then, when `whole`, for the learner's own count.
std::string bytes(grader::Grader& g, const hg::nn::GPTConfig& c, OptimizerKind o, Precision p,
                  bool whole = false) {
  if (whole) {
    const std::string why = count(g, c);
    if (!why.empty()) return why;
  }
  const Measured m = measure(c, o, p);
  const ModelStates got = g.run([&] {
    const int64_t P = whole ? student_gpt_parameters(c) : m.params;
    return student_model_states(P, o, p);
  });
  return explain(c.str(), m, got, o, p);
}

std::string all_of(std::initializer_list<std::function<std::string()>> checks) {
  for (const auto& c : checks) {
    const std::string why = c();
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"12", "where the model states go, predicted", "12_memory_and_scale", "Where the memory goes"},
                   argc, argv);
  g.own_code_only({{"hg::nn::Module::", "the model's own parameter list and count (num_parameters)"},
                   {"hg::nn::GPT::", "building the GPT to count it"},
                   {"hg::memory::", "halfgrad's formulas (bytes_per_param) and its accountant"},
                   {"hg::optim::", "building the optimizer to measure it"},
                   {"hg::amp::", "building the master weights to measure them"}});
  g.check("the parameter count of a tied GPT (the LM head shares wte), at four sizes", [&] {
    for (const hg::nn::GPTConfig& c : {gpt(2, 2, 16, 8, 11, true), gpt(3, 4, 32, 16, 29, true),
                                       gpt(1, 1, 8, 5, 7, true), gpt(4, 2, 24, 12, 50, true)}) {
      const std::string why = count(g, c);
      if (!why.empty()) return why;
    }
    return std::string();
  });
  g.check("the parameter count of an untied GPT (lm_head.weight of its own)",
          [&] { return count(g, gpt(2, 2, 16, 8, 11, false)); });
  const hg::nn::GPTConfig small = gpt(2, 2, 16, 8, 11, true), untied = gpt(3, 4, 32, 16, 29, false);
  g.check("FP32: SGD, SGD with momentum, Adam", [&] {
    return all_of({[&] { return bytes(g, small, OptimizerKind::SGD, Precision::FP32); },
                   [&] { return bytes(g, small, OptimizerKind::SGDMomentum, Precision::FP32); },
                   [&] { return bytes(g, small, OptimizerKind::Adam, Precision::FP32); }});
  });
  g.check("mixed precision (F16 model, F32 master weights): SGD, SGD with momentum, Adam", [&] {
    return all_of({[&] { return bytes(g, small, OptimizerKind::Adam, Precision::Mixed); },
                   [&] { return bytes(g, small, OptimizerKind::SGD, Precision::Mixed); },
                   [&] { return bytes(g, small, OptimizerKind::SGDMomentum, Precision::Mixed); }});
  });
  g.check("the whole prediction from the configuration: untied, Adam, both precisions", [&] {
    return all_of({[&] { return bytes(g, untied, OptimizerKind::Adam, Precision::FP32, true); },
                   [&] { return bytes(g, untied, OptimizerKind::Adam, Precision::Mixed, true); }});
  });
  g.note("ZeRO's table counts 16 bytes per parameter for mixed-precision Adam (2 + 2 + 12); the judge here is "
         "what halfgrad's accountant holds, which is more: where the difference sits is part of the exercise. "
         "Activations come on top, and grow with the batch: ./lab lesson 12 prints both at the end of a run.");
  return g.finish();
}
