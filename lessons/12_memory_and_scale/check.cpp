// Grades the chapter 12 exercise: the learner's prediction of a training run's model states
// and of its FLOPs.
//
// The answer is not a table from a paper but what halfgrad holds and computes. For each
// configuration the grader builds the GPT (framework/nn/models/gpt.h) and the optimizer, runs
// one training step on a few tokens and reads the memory accountant
// (framework/memory/accountant.h): the bytes tagged parameters, gradients and optimizer state
// that the model and the optimizer left behind. The learner's parameter count is checked
// against the model's own. The FLOPs are counted on the model's graph: every matmul and
// linear node of a forward pass, its size from its operands' shapes, a product with a trained
// weight or of two activations, and the products its backward computes, one per operand that
// needs a gradient. Each way to be wrong is named: a forgotten embedding, a tied head counted
// twice, Adam with one moment, mixed precision without its F32 master weights or their F32
// gradient, an embedding counted as a product, attention at block_size, a backward as cheap
// as the forward, a recomputed head.
//
// The configurations are drawn from the grading's seed (the hand-picked ones among them, in
// an order drawn too), so a table of one grading's answers fails the next.
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "framework/amp/master_weights.h"
#include "framework/autograd/node.h"
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
using hg::nn::GPTConfig;

namespace {

GPTConfig gpt(int64_t L, int64_t H, int64_t C, int64_t T, int64_t V, bool tied) {
  GPTConfig c;
  c.n_layer = L;
  c.n_head = H;
  c.n_embd = C;
  c.block_size = T;
  c.vocab_size = V;
  c.tied = tied;
  return c;
}

int64_t pick(std::mt19937_64& r, int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(r); }

// A GPT drawn from the grading's seed, small enough to build and run in milliseconds. The
// vocabulary is larger than block_size, so that a missing wte or head (V·C) is told apart
// from a missing wpe (block_size·C).
GPTConfig drawn(std::mt19937_64& r, bool tied) {
  const int64_t H = pick(r, 1, 4), L = pick(r, 1, 4), D = pick(r, 2, 6), T = pick(r, 4, 16), V = pick(r, 20, 80);
  return gpt(L, H, H * D, T, V, tied);
}

const char* name(OptimizerKind o) {
  return o == OptimizerKind::SGD ? "SGD" : o == OptimizerKind::SGDMomentum ? "SGD with momentum" : "Adam";
}
const char* name(Precision p) { return p == Precision::FP32 ? "FP32" : "mixed precision"; }

// The model's own count.
int64_t parameters_of(const GPTConfig& c) {
  hg::Generator gen(12);
  return hg::nn::GPT(c, gen).num_parameters();
}

// n token ids, (i + shift) mod V: a batch (shift 0) and its targets (shift 1).
std::vector<int32_t> tokens(int64_t n, int64_t V, int64_t shift) {
  std::vector<int32_t> ids;
  for (int64_t i = 0; i < n; ++i) ids.push_back(int32_t((i + shift) % V));
  return ids;
}

// ---- what halfgrad holds ------------------------------------------------------------------

struct Measured {
  int64_t params = 0;  // the model's parameter count
  ModelStates bytes;   // what the accountant holds under each tag after one step
};

// Builds the GPT and the optimizer, runs one step (forward, backward, step) on one batch of 2
// sequences of block_size tokens, and returns what each tag gained: the batch, the logits and
// the graph are gone by then, so what stays is the model states.
Measured measure(const GPTConfig& config, OptimizerKind optimizer, Precision precision) {
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
    {
      hg::Tensor loss = hg::nn::GPT::loss(model.forward(tokens(B * T, config.vocab_size, 0), B, T).to(hg::DType::F32),
                                          tokens(B * T, config.vocab_size, 1));
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

std::string explain_count(const GPTConfig& c, int64_t got) {
  const int64_t want = parameters_of(c);
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

// The learner's counts of `cases`, asked in an order drawn from `stream`; the first wrong one.
std::string counts(grader::Grader& g, const std::vector<GPTConfig>& cases, uint64_t stream) {
  const std::vector<int64_t> got =
      g.answers(cases, stream, [](const GPTConfig& c) { return student_gpt_parameters(c); });
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string why = explain_count(cases[i], got[i]);
    if (!why.empty()) return why;
  }
  return "";
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

struct Setting {
  OptimizerKind optimizer;
  Precision precision;
};

// The learner's bytes on configuration c for each setting, asked in an order drawn from
// `stream`: for the model's true parameter count (part 2 alone), or, when `whole`, for the
// learner's own count of c (parts 1 and 2 together).
std::string bytes(grader::Grader& g, const GPTConfig& c, const std::vector<Setting>& settings, uint64_t stream,
                  bool whole = false) {
  if (whole) {
    const std::string why = explain_count(c, g.run([&] { return student_gpt_parameters(c); }));
    if (!why.empty()) return why;
  }
  const int64_t P = parameters_of(c);
  const std::vector<ModelStates> got = g.answers(settings, stream, [&](const Setting& s) {
    return student_model_states(whole ? student_gpt_parameters(c) : P, s.optimizer, s.precision);
  });
  for (size_t i = 0; i < settings.size(); ++i) {
    const Setting& s = settings[i];
    const std::string why = explain(c.str(), measure(c, s.optimizer, s.precision), got[i], s.optimizer, s.precision);
    if (!why.empty()) return why;
  }
  return "";
}

// ---- part 3: the FLOPs, counted on the model's graph ---------------------------------------

// Multiply-adds of one forward pass over a batch, and of the backward through it.
struct Products {
  int64_t weights = 0;    // a product with a trained weight (a leaf that requires grad)
  int64_t attention = 0;  // a product of two activations
  int64_t backward = 0;   // the backward's products: one of the same size per operand needing a gradient
};

// Every matmul and linear node of the graph that computed `root`. A node's output is
// (…, M, N) and its first operand holds M·K numbers per matrix (either way round, transposed
// or not): M·N·K multiply-adds per matrix. Backward computes the gradient of each operand
// that needs one with one product of the same size (framework/ops/matmul.cpp): dA = dC·Bᵀ,
// dB = Aᵀ·dC; a linear's bias gradient is a sum, not a product.
Products products(const hg::Tensor& root) {
  Products p;
  std::vector<const hg::Node*> todo{root.grad_fn().get()};
  std::set<const hg::Node*> seen;
  while (!todo.empty()) {
    const hg::Node* n = todo.back();
    todo.pop_back();
    if (n == nullptr || !seen.insert(n).second) continue;
    for (const hg::Tensor& in : n->inputs)
      if (in.defined()) todo.push_back(in.grad_fn().get());
    if (n->op != "matmul" && n->op != "linear") continue;
    const hg::Tensor &a = n->inputs[0], &b = n->inputs[1];
    const int64_t M = n->out_shape[n->out_shape.size() - 2];
    const int64_t K = a.size(-1) * a.size(-2) / M;
    const int64_t macs = hg::shape_numel(n->out_shape) * K;
    const bool weight = (a.is_leaf() && a.requires_grad()) || (b.is_leaf() && b.requires_grad());
    (weight ? p.weights : p.attention) += macs;
    p.backward += macs * (int64_t(n->needs_grad[0]) + int64_t(n->needs_grad[1]));
  }
  return p;
}

struct FlopsCase {
  GPTConfig config;
  int64_t T;  // the sequence's length, ≤ block_size
};

std::string str(const FlopsCase& k) {
  return format("%s, sequences of T = %lld tokens", k.config.str().c_str(), (long long)k.T);
}

// The FLOPs per token (2 a multiply-add) of the GPT's products on a batch of 2 sequences of
// T tokens, counted on its graph. With recomputed blocks the graph holds the LM head's
// products only: the blocks run without recording and again in backward, so the step adds
// the blocks' forward products once more (framework/autograd/recompute.h) — what the graph
// without recomputation holds beyond the head's.
FlopsPerToken counted(const FlopsCase& k) {
  const int64_t B = 2, T = k.T, n = B * T;
  auto forward = [&](bool recompute) {
    GPTConfig c = k.config;
    c.recompute_blocks = recompute;
    hg::Generator gen(12);
    hg::nn::GPT model(c, gen);
    return products(model.forward(tokens(n, c.vocab_size, 0), B, T));
  };
  const Products plain = forward(false);
  int64_t step = plain.weights + plain.attention + plain.backward;
  if (k.config.recompute_blocks) {
    const Products head = forward(true);
    step += plain.weights + plain.attention - head.weights - head.attention;
  }
  FlopsPerToken f;
  f.weights_forward = 2 * plain.weights / n;
  f.attention_forward = 2 * plain.attention / n;
  f.training_step = 2 * step / n;
  return f;
}

std::string too(int64_t got, int64_t want) {
  const int64_t d = got - want;
  return format("%lld too %s", (long long)(d < 0 ? -d : d), d < 0 ? "few" : "many");
}

std::string explain_weights(const FlopsCase& k, int64_t want, int64_t got) {
  if (got == want) return "";
  const GPTConfig& c = k.config;
  const int64_t L = c.n_layer, C = c.n_embd, V = c.vocab_size, Tb = c.block_size, diff = got - want;
  const std::string at = format("%s: you count %lld FLOPs per token for the forward pass's products with a "
                                "weight, %s. ", str(k).c_str(), (long long)got, too(got, want).c_str());
  if (got == 0)
    return at + "A token's C features are multiplied by a weight wherever the forward pass applies a Linear "
                "layer, C·N multiply-adds for a Linear C -> N, and a multiply-add is 2 FLOPs. " +
           see("## The compute: 6N + 12·L·C·T FLOPs per token");
  if (2 * got == want)
    return at + "Half: a multiply-add is 2 FLOPs, a multiplication and an addition.";
  // The difference as what is not a product counted as one, or a product left out.
  struct Part {
    int64_t flops;
    const char* what;
  };
  const std::vector<Part> parts = {
      {2 * V * C, c.tied ? "the token embedding wte (V·C): it is looked up, a row copied per token; with a tied "
                           "head its weight is multiplied once, in the LM head"
                         : "the token embedding wte (V·C): it is looked up, a row copied per token; the untied "
                           "head multiplies lm_head's own weight"},
      {2 * Tb * C, "the position embedding wpe (block_size·C): looked up, one row per position"},
      {2 * 9 * L * C, "the biases (9·C a block): added to a product's result, once per output"},
      {2 * (4 * L * C + 2 * C), "the layer norms' weights and biases: they scale and shift each feature"},
      {-2 * V * C, "the LM head is missing: the logits multiply every token's C features by a V × C weight, "
                   "tied or not"}};
  for (unsigned mask = 1; mask < (1u << parts.size()); ++mask) {
    int64_t sum = 0;
    std::string what;
    for (size_t i = 0; i < parts.size(); ++i)
      if (mask & (1u << i)) {
        sum += parts[i].flops;
        what += (what.empty() ? "" : "; ") + std::string(parts[i].what);
      }
    if (sum == diff)
      return at + "That is " + what + ".";
  }
  if (diff % (2 * L) == 0)
    return at + format("Each of the %lld blocks is off by %+lld FLOPs: which Linear layers does a block "
                       "apply to a token, and from how many features to how many?",
                       (long long)L, (long long)(diff / L)) + " " + see("## The compute: 6N + 12·L·C·T FLOPs per token");
  return at + "Follow one token through gpt.h's diagram and count the multiply-adds of each product with a "
              "weight. " + see("## The compute: 6N + 12·L·C·T FLOPs per token");
}

std::string explain_attention(const FlopsCase& k, int64_t want, int64_t got) {
  if (got == want) return "";
  const GPTConfig& c = k.config;
  const int64_t L = c.n_layer, C = c.n_embd, H = c.n_head, T = k.T, Tb = c.block_size;
  const std::string at = format("%s: you count %lld FLOPs per token for attention's products of activations, "
                                "%s. ", str(k).c_str(), (long long)got, too(got, want).c_str());
  if (got == 0)
    return at + "Attention multiplies activations by activations, in every head of every block: the scores "
                "q·kᵀ, and the weighted sum att·v. " + see("## The compute: 6N + 12·L·C·T FLOPs per token");
  if (T != Tb && got * T == want * Tb)
    return at + format("That is their cost at block_size = %lld: the products are as long as the sequence, "
                       "T = %lld here; block_size only bounds T (wpe has that many rows).",
                       (long long)Tb, (long long)T);
  if (2 * got == want)
    return at + "Half: there are two products per head, q·kᵀ and att·v, and a multiply-add is 2 FLOPs.";
  if (got == 2 * L * C * (T + 1))
    return at + "That counts only the scores the causal mask keeps. halfgrad's matmul computes all T × T "
                "scores of a head, and causal_softmax masks the upper half afterwards: the FLOPs are spent.";
  if (got * L == want) return at + format("That is one block's; there are %lld.", (long long)L);
  if (got == want * H || got * H == want)
    return at + format("Off by the number of heads, %lld: each head works on D = C/H = %lld features, and "
                       "the H heads together on C.", (long long)H, (long long)(C / H));
  if (got == want * T)
    return at + "That is a sequence's FLOPs; a token's are the sequence's divided by its T tokens.";
  return at + "For one token of a sequence of T, in one head: how many keys does its query meet, and how many "
              "values do its attention weights? " + see("## The compute: 6N + 12·L·C·T FLOPs per token");
}

std::string explain_step(const FlopsCase& k, const FlopsPerToken& want, const FlopsPerToken& got) {
  if (got.training_step == want.training_step) return "";
  const GPTConfig& c = k.config;
  const int64_t L = c.n_layer, C = c.n_embd, V = c.vocab_size, Tb = c.block_size;
  const int64_t g = got.training_step, F = want.weights_forward + want.attention_forward;
  const int64_t blocks = F - 2 * V * C;  // the forward's products but the head's
  const int64_t again = c.recompute_blocks ? blocks : 0;
  const std::string at = format("%s: you count %lld FLOPs per token for a training step, %s. ", str(k).c_str(),
                                (long long)g, too(g, want.training_step).c_str());
  const char* backward = "Backward computes, for each product of the forward pass, the gradients of both "
                         "its operands, each a product of the same size: dx = dy·W and dW = dyᵀ·x, and "
                         "for attention those of q and k, and of att and v.";
  if (g == 0)
    return at + "A step is a forward pass and a backward pass through the same products: what does backward "
                "compute for each of them? " + see("## The compute: 6N + 12·L·C·T FLOPs per token");
  if (g == F || g == F + again) return at + "That is the forward pass alone. " + backward;
  if (g == 2 * F || g == 2 * F + again) return at + "That counts backward as one more forward. " + backward;
  if (g == 3 * want.weights_forward || g == 3 * want.weights_forward + (again ? L * 24 * C * C : 0))
    return at + "Attention's products have a backward too, twice their forward like every product's.";
  if (c.recompute_blocks && g == 3 * F)
    return at + "recompute_blocks: the blocks keep only their inputs in the forward pass and run their "
                "forward again in backward (framework/autograd/recompute.h): their products once more.";
  if (c.recompute_blocks && g == 4 * F)
    return at + "Only the blocks are recomputed: the LM head runs its forward once, outside them.";
  if (!c.recompute_blocks && g == 3 * F + blocks)
    return at + "This configuration recomputes nothing (recompute_blocks is false).";
  if (g == 6 * (parameters_of(c) - Tb * C) + 12 * L * C * Tb)
    return at + "That is the README's estimate 6N + 12·L·C·T, N every parameter but wpe: the products "
                "themselves leave out the biases and layer norms (and wte, untied), and attention costs as "
                "much as the sequence is long.";
  if (got.weights_forward != want.weights_forward || got.attention_forward != want.attention_forward)
    return at + "Your forward pass's counts are off (the checks above): the step is built on them.";
  return at + backward + " " + see("## The compute: 6N + 12·L·C·T FLOPs per token");
}

// The learner's FLOPs of every case, asked in an order drawn from `stream`, against the
// graph's; `explain` names the first wrong one.
template <class Explain>
std::string flops(grader::Grader& g, const std::vector<FlopsCase>& cases, uint64_t stream, Explain explain) {
  const std::vector<FlopsPerToken> got =
      g.answers(cases, stream, [](const FlopsCase& k) { return student_flops_per_token(k.config, k.T); });
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string why = explain(cases[i], counted(cases[i]), got[i]);
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  grader::Grader g({"12", "what a training run holds and computes, predicted", "12_memory_and_scale",
                    "Where the memory goes"},
                   argc, argv);
  const char* building = "building the model or its layers to count them";
  g.own_code_only({{"hg::nn::Module::", "the model's own parameter list and count (num_parameters)"},
                   {"hg::nn::gpt_memory", "the GPT's own parameter count and memory estimate (gpt.h)"},
                   {"hg::nn::gpt_memory_needs", "the GPT's own parameter count and memory estimate (gpt.h)"},
                   {"hg::nn::GPT", building},
                   {"hg::nn::GPTTransformer", building},
                   {"hg::nn::Block", building},
                   {"hg::nn::CausalSelfAttention", building},
                   {"hg::nn::FeedForward", building},
                   {"hg::nn::Linear", building},
                   {"hg::nn::Embedding", building},
                   {"hg::nn::LayerNorm", building},
                   {"hg::nn::Sequential", building},
                   {"hg::fp8::Fp8Linear", building},
                   {"hg::Generator", building},
                   {"hg::Tensor", "tensors: the model's weights, or a graph to count its products"},
                   {"hg::memory::", "halfgrad's formulas (bytes_per_param) and its accountant"},
                   {"hg::optim::", "building the optimizer to measure it"},
                   {"hg::amp::", "building the master weights to measure them"}});
  // Each check draws its configurations from a stream of its own, and asks them (the
  // hand-picked ones among them) in an order drawn from another.
  g.check("the parameter count of a tied GPT (the LM head shares wte), at seven sizes", [&] {
    std::mt19937_64 r = g.rng(1);
    std::vector<GPTConfig> cases = {gpt(2, 2, 16, 8, 11, true), gpt(3, 4, 32, 16, 29, true),
                                    gpt(1, 1, 8, 5, 7, true), gpt(4, 2, 24, 12, 50, true)};
    for (int i = 0; i < 3; ++i) cases.push_back(drawn(r, true));
    return counts(g, cases, 101);
  });
  g.check("the parameter count of an untied GPT (lm_head.weight of its own), at four sizes", [&] {
    std::mt19937_64 r = g.rng(2);
    std::vector<GPTConfig> cases = {gpt(2, 2, 16, 8, 11, false)};
    for (int i = 0; i < 3; ++i) cases.push_back(drawn(r, false));
    return counts(g, cases, 102);
  });
  const std::vector<OptimizerKind> optimizers = {OptimizerKind::SGD, OptimizerKind::SGDMomentum, OptimizerKind::Adam};
  g.check("FP32: SGD, SGD with momentum, Adam", [&] {
    std::mt19937_64 r = g.rng(3);
    const GPTConfig c = drawn(r, pick(r, 0, 1) == 1);
    std::vector<Setting> settings;
    for (OptimizerKind o : optimizers) settings.push_back({o, Precision::FP32});
    return bytes(g, c, settings, 103);
  });
  g.check("mixed precision (F16 model, F32 master weights): SGD, SGD with momentum, Adam", [&] {
    std::mt19937_64 r = g.rng(4);
    const GPTConfig c = drawn(r, pick(r, 0, 1) == 1);
    std::vector<Setting> settings;
    for (OptimizerKind o : optimizers) settings.push_back({o, Precision::Mixed});
    return bytes(g, c, settings, 104);
  });
  g.check("the whole prediction from the configuration: untied, Adam, both precisions", [&] {
    std::mt19937_64 r = g.rng(5);
    return bytes(g, drawn(r, false), {{OptimizerKind::Adam, Precision::FP32}, {OptimizerKind::Adam, Precision::Mixed}},
                 105, true);
  });
  // FLOPs: sequences of every length up to block_size, tied and untied heads.
  auto flops_cases = [&](uint64_t stream, std::vector<FlopsCase> cases, bool shorter, bool recompute) {
    std::mt19937_64 r = g.rng(stream);
    for (int i = 0; i < 4; ++i) {
      GPTConfig c = drawn(r, i % 2 == 0);
      c.recompute_blocks = recompute;
      cases.push_back({c, shorter ? pick(r, 1, c.block_size - 1) : pick(r, 1, c.block_size)});
    }
    return cases;
  };
  g.check("FLOPs per token of the forward pass's products with a weight, tied and untied", [&] {
    return flops(g, flops_cases(6, {{gpt(2, 2, 16, 8, 11, true), 8}, {gpt(3, 4, 32, 16, 29, false), 16}}, false, false),
                 106, [](const FlopsCase& k, const FlopsPerToken& want, const FlopsPerToken& got) {
                   return explain_weights(k, want.weights_forward, got.weights_forward);
                 });
  });
  g.check("FLOPs per token of attention's products, on sequences shorter than block_size", [&] {
    return flops(g, flops_cases(7, {{gpt(2, 2, 16, 8, 11, true), 8}, {gpt(2, 2, 16, 8, 11, true), 3}}, true, false),
                 107, [](const FlopsCase& k, const FlopsPerToken& want, const FlopsPerToken& got) {
                   return explain_attention(k, want.attention_forward, got.attention_forward);
                 });
  });
  g.check("FLOPs per token of a training step: forward and backward", [&] {
    return flops(g, flops_cases(8, {{gpt(3, 4, 32, 16, 29, true), 16}}, false, false), 108, explain_step);
  });
  g.check("FLOPs per token of a training step with recomputed blocks (recompute_blocks)", [&] {
    GPTConfig c = gpt(2, 2, 16, 8, 11, false);
    c.recompute_blocks = true;
    return flops(g, flops_cases(9, {{c, 8}}, false, true), 109, explain_step);
  });
  g.note("ZeRO's table counts 16 bytes per parameter for mixed-precision Adam (2 + 2 + 12); the judge here is "
         "what halfgrad's accountant holds, which is more: where the difference sits is part of the exercise. "
         "Activations come on top, and grow with the batch: ./lab lesson 12 prints both at the end of a run.");
  return g.finish();
}
