#include "framework/nn/models/gpt.h"

#include <fmt/format.h>

#include <unistd.h>

#include <cmath>
#include <new>
#include <stdexcept>

#include "framework/autograd/recompute.h"
#include "framework/autograd/grad_mode.h"
#include "framework/memory/formulas.h"
#include "framework/memory/report.h"
#include "framework/nn/init.h"
#include "framework/ops/ops.h"

namespace hg::nn {

// ---- configuration ------------------------------------------------------------------------

void GPTConfig::validate() const {
  auto need = [](bool ok, const std::string& what) {
    if (!ok) throw std::invalid_argument("GPT config: " + what);
  };
  need(n_layer >= 1, fmt::format("n_layer must be ≥ 1, got {}", n_layer));
  need(n_head >= 1, fmt::format("n_head must be ≥ 1, got {}", n_head));
  need(n_embd >= 1, fmt::format("n_embd must be ≥ 1, got {}", n_embd));
  need(n_embd % n_head == 0,
       fmt::format("n_embd ({}) must be a multiple of n_head ({}): each head gets n_embd / n_head channels",
                   n_embd, n_head));
  need(block_size >= 1, fmt::format("block_size must be ≥ 1, got {}", block_size));
  need(vocab_size >= 1, fmt::format("vocab_size must be ≥ 1, got {}", vocab_size));
  need(dropout >= 0.0 && dropout < 1.0, fmt::format("dropout must be in [0, 1), got {}", dropout));
}

std::string GPTConfig::str() const {
  return fmt::format("n_layer {}, n_head {}, n_embd {}, block_size {}, vocab {}, dropout {}, {}{}{}", n_layer,
                     n_head, n_embd, block_size, vocab_size, dropout, tied ? "tied head" : "untied head",
                     recompute_blocks ? ", recomputed blocks" : "",
                     fp8 ? fmt::format(", FP8 projections ({} scaling)", fp8::recipe_name(fp8->recipe)) : "");
}

namespace {

constexpr double kInitStd = 0.02;  // GPT-2's

// A Linear with GPT-2's initialisation: weight N(0, std²), bias 0 (written over the
// nn.Linear default the constructor drew). With an FP8 recipe it is an fp8::Fp8Linear named
// `name`: its constructor draws what nn::Linear's does, so the weights are the same.
std::shared_ptr<Linear> gpt_linear(int64_t in, int64_t out, bool bias, double std, Generator& gen,
                                   const std::optional<fp8::RecipeConfig>& fp8 = std::nullopt,
                                   const std::string& name = "") {
  std::shared_ptr<Linear> l;
  if (fp8) {
    if (!bias) throw std::invalid_argument("GPT: an FP8 projection has a bias (" + name + ")");
    l = std::make_shared<fp8::Fp8Linear>(in, out, gen, *fp8, name);
  } else {
    l = std::make_shared<Linear>(in, out, gen, bias);
  }
  NoGradGuard no_grad;
  copy_(l->weight, init::normal({out, in}, std, gen));
  if (bias) fill_(l->bias, 0.0);
  return l;
}

double residual_std(const GPTConfig& c) { return kInitStd / std::sqrt(2.0 * double(c.n_layer)); }

// A (B, T) float tensor of token ids as the vector the embedding takes.
std::vector<int32_t> ids_of(const Tensor& ids) {
  if (ids.dim() != 2) throw std::invalid_argument("GPT: ids must be (B, T), got shape " + shape_str(ids.shape()));
  std::vector<int32_t> v;
  for (double d : ids.to_double_vector()) {
    if (d != std::floor(d) || d < 0 || d > 2e9)
      throw std::invalid_argument(fmt::format("GPT: token id {} is not a non-negative integer", d));
    v.push_back(int32_t(d));
  }
  return v;
}

const GPTConfig& validated(const GPTConfig& c) {
  c.validate();
  return c;
}

}  // namespace

// ---- attention ----------------------------------------------------------------------------

CausalSelfAttention::CausalSelfAttention(const GPTConfig& c, Generator& gen, const std::string& name)
    : n_head_(c.n_head), dropout_(c.dropout), gen_(gen) {
  c_attn = register_module("c_attn", gpt_linear(c.n_embd, 3 * c.n_embd, true, kInitStd, gen, c.fp8, name + ".c_attn"));
  c_proj = register_module("c_proj",
                           gpt_linear(c.n_embd, c.n_embd, true, residual_std(c), gen, c.fp8, name + ".c_proj"));
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), H = n_head_, D = C / H;
  std::vector<Tensor> qkv = split(c_attn->forward(x), C, 2);  // 3 × (B, T, C), views
  // (B, T, C) -> (B, T, H, D) -> (B, H, T, D): each head's T rows of D, one matrix per (b, h)
  auto heads = [&](const Tensor& t) { return transpose(reshape(t, {B, T, H, D}), 1, 2); };
  Tensor q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
  // scores q·kᵀ (B, H, T, T), scaled by 1/√D so their variance does not grow with D
  Tensor att = causal_softmax(matmul(q, k, false, true), 1.0 / std::sqrt(double(D)));
  att = dropout(att, dropout_, is_training(), gen_);
  Tensor y = matmul(att, v);                     // (B, H, T, D)
  y = reshape(transpose(y, 1, 2), {B, T, C});    // heads side by side again
  return dropout(c_proj->forward(y), dropout_, is_training(), gen_);
}

std::string CausalSelfAttention::describe() const {
  return fmt::format("CausalSelfAttention({} heads of {})", n_head_, c_proj->in_features / n_head_);
}

// ---- MLP and block --------------------------------------------------------------------------

FeedForward::FeedForward(const GPTConfig& c, Generator& gen, const std::string& name)
    : dropout_(c.dropout), gen_(gen) {
  c_fc = register_module("c_fc", gpt_linear(c.n_embd, 4 * c.n_embd, true, kInitStd, gen, c.fp8, name + ".c_fc"));
  c_proj = register_module("c_proj",
                           gpt_linear(4 * c.n_embd, c.n_embd, true, residual_std(c), gen, c.fp8, name + ".c_proj"));
}

Tensor FeedForward::forward(const Tensor& x) {
  return dropout(c_proj->forward(gelu(c_fc->forward(x))), dropout_, is_training(), gen_);
}

Block::Block(const GPTConfig& c, Generator& gen, const std::string& name) {
  ln_1 = register_module("ln_1", std::make_shared<LayerNorm>(c.n_embd));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(c, gen, name + ".attn"));
  ln_2 = register_module("ln_2", std::make_shared<LayerNorm>(c.n_embd));
  mlp = register_module("mlp", std::make_shared<FeedForward>(c, gen, name + ".mlp"));
}

// Pre-norm: each half reads a normalised copy and adds its result to the residual stream x,
// which itself is never normalised — the gradient has a straight path to the embeddings.
Tensor Block::forward(const Tensor& x_in) {
  Tensor x = add(x_in, attn->forward(ln_1->forward(x_in)));
  return add(x, mlp->forward(ln_2->forward(x)));
}

// ---- memory --------------------------------------------------------------------------------

GPTMemory gpt_memory(const GPTConfig& c) {
  const int64_t C = c.n_embd, V = c.vocab_size, T = c.block_size;
  GPTMemory m;
  // a block: ln_1, ln_2 (2C each), c_attn (3C² + 3C), c_proj (C² + C), c_fc (4C² + 4C),
  // mlp.c_proj (4C² + C) = 12C² + 13C; then wte (VC), wpe (TC), ln_f (2C), lm_head untied (VC)
  m.parameters = c.n_layer * (12 * C * C + 13 * C) + V * C + T * C + 2 * C + (c.tied ? 0 : V * C);
  m.parameter_bytes = 4.0 * double(m.parameters);
  m.training_bytes = 16.0 * double(m.parameters);
  m.activation_bytes_per_sequence = 2.0 * double(c.n_layer) * memory::activation_bytes_per_layer(T, 1, C, c.n_head) +
                                    2.0 * double(T) * double(V) * 4.0;
  return m;
}

std::string gpt_memory_needs(const GPTConfig& c, int64_t batch) {
  const GPTMemory m = gpt_memory(c);
  auto bytes = [](double b) { return memory::human_bytes(int64_t(std::llround(b))); };
  return fmt::format("{} parameters take {} in F32; training them with AdamW takes {} (16 bytes a parameter: the "
                     "parameters, their gradients and AdamW's two moments), and the activations about {} a "
                     "sequence of {} tokens{}",
                     m.parameters, bytes(m.parameter_bytes), bytes(m.training_bytes),
                     bytes(m.activation_bytes_per_sequence), c.block_size,
                     batch > 0 ? fmt::format(" ({} for a batch of {} sequences)",
                                             bytes(m.activation_bytes_per_sequence * double(batch)), batch)
                               : "");
}

// ---- the transformer and the model ----------------------------------------------------------

GPTTransformer::GPTTransformer(const GPTConfig& c, Generator& gen)
    : dropout_(c.dropout), recompute_blocks_(c.recompute_blocks), gen_(gen) {
  wte = register_module("wte", std::make_shared<Embedding>(c.vocab_size, c.n_embd, gen));
  wpe = register_module("wpe", std::make_shared<Embedding>(c.block_size, c.n_embd, gen));
  {
    NoGradGuard no_grad;  // GPT-2's N(0, 0.02²) instead of nn.Embedding's N(0, 1)
    copy_(wte->weight, init::normal({c.vocab_size, c.n_embd}, kInitStd, gen));
    copy_(wpe->weight, init::normal({c.block_size, c.n_embd}, kInitStd, gen));
  }
  h = register_module("h", std::make_shared<Sequential>());
  for (int64_t i = 0; i < c.n_layer; ++i) h->add(std::make_shared<Block>(c, gen, fmt::format("h.{}", i)));
  ln_f = register_module("ln_f", std::make_shared<LayerNorm>(c.n_embd));
}

Tensor GPTTransformer::forward(const std::vector<int32_t>& ids, int64_t B, int64_t T) {
  const int64_t block_size = wpe->num_embeddings;
  if (T < 1 || T > block_size)
    throw std::invalid_argument(fmt::format("GPT: a sequence of {} tokens; the model takes 1 to block_size = {}",
                                            T, block_size));
  if (int64_t(ids.size()) != B * T)
    throw std::invalid_argument(fmt::format("GPT: {} token ids for a batch of B = {} × T = {}", ids.size(), B, T));
  std::vector<int32_t> positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) positions[t] = int32_t(t);
  Tensor tok = wte->forward(ids, {B, T});          // (B, T, C)
  Tensor pos = wpe->forward(positions, {T});       // (T, C), the same for every sequence
  Tensor x = dropout(add(tok, pos), dropout_, is_training(), gen_);
  for (size_t i = 0; i < h->size(); ++i) {
    Module& block = (*h)[i];
    if (!recompute_blocks_) {
      x = block.forward(x);
      continue;
    }
    // Keep x only; backward runs the block again (with the same dropout masks: gen_ is
    // rewound) and backpropagates through that fresh graph at once.
    x = recompute([&block](const std::vector<Tensor>& in) { return block.forward(in[0]); }, {x}, &gen_);
  }
  return ln_f->forward(x);                         // (B, T, C)
}

Tensor GPTTransformer::forward(const Tensor& ids) {
  return forward(ids_of(ids), ids.size(0), ids.size(1));
}

GPT::GPT(const GPTConfig& c, Generator& gen) : config(validated(c)) {
  // Parameters that cannot fit are refused before any is allocated: the allocations could
  // succeed one by one (Linux promises memory it has not got) and the program be killed
  // when the initialisation writes them, with no message at all.
  const double machine = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGE_SIZE));
  if (machine > 0 && gpt_memory(c).parameter_bytes > machine)
    throw std::runtime_error(fmt::format("GPT ({}): out of memory: its parameters alone are more than the {} of "
                                         "memory this machine has; {}",
                                         c.str(), memory::human_bytes(int64_t(machine)), gpt_memory_needs(c)));
  try {
    transformer = register_module("transformer", std::make_shared<GPTTransformer>(c, gen));
    if (!c.tied) lm_head = register_module("lm_head", gpt_linear(c.n_embd, c.vocab_size, false, kInitStd, gen));
  } catch (const std::bad_alloc&) {
    throw std::runtime_error(
        fmt::format("GPT ({}): out of memory creating its parameters: {}", c.str(), gpt_memory_needs(c)));
  }
}

const Tensor& GPT::head_weight() const { return config.tied ? transformer->wte->weight : lm_head->weight; }

std::vector<fp8::ScaleRecord> GPT::fp8_records() const {
  std::vector<fp8::ScaleRecord> all;
  if (!config.fp8) return all;
  for (size_t i = 0; i < transformer->h->size(); ++i) {
    const auto& block = dynamic_cast<const Block&>((*transformer->h)[i]);
    for (const auto& l : {block.attn->c_attn, block.attn->c_proj, block.mlp->c_fc, block.mlp->c_proj}) {
      const std::vector<fp8::ScaleRecord> r = std::dynamic_pointer_cast<fp8::Fp8Linear>(l)->records();
      all.insert(all.end(), r.begin(), r.end());
    }
  }
  return all;
}

Tensor GPT::forward(const std::vector<int32_t>& ids, int64_t B, int64_t T) {
  Tensor x = transformer->forward(ids, B, T);  // (B, T, C)
  // logits (B·T, V) = x (B·T, C) · Wᵀ: tied, W is the embedding table itself, so a token's
  // output score is the dot product of the state with that token's input vector
  Tensor logits = linear(reshape(x, {B * T, config.n_embd}), head_weight());
  return reshape(logits, {B, T, config.vocab_size});
}

Tensor GPT::forward(const Tensor& ids) { return forward(ids_of(ids), ids.size(0), ids.size(1)); }

Tensor GPT::loss(const Tensor& logits, const std::vector<int32_t>& targets) {
  if (logits.dim() != 3)
    throw std::invalid_argument("GPT::loss: logits must be (B, T, V), got shape " + shape_str(logits.shape()));
  return cross_entropy(reshape(logits, {-1, logits.size(2)}), targets);
}

std::string GPT::describe() const { return "GPT(" + config.str() + ")"; }

// ---- sampling ------------------------------------------------------------------------------------

std::vector<int32_t> generate(GPT& model, std::vector<int32_t> ids, int64_t n_new, double temperature,
                              Generator& gen) {
  if (ids.empty()) throw std::invalid_argument("generate: the prompt needs at least one token");
  if (!(temperature > 0)) throw std::invalid_argument(fmt::format("generate: temperature must be > 0, got {}", temperature));
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  const int64_t V = model.config.vocab_size;
  for (int64_t i = 0; i < n_new; ++i) {
    // the last block_size tokens: the model has no position beyond that
    const int64_t T = std::min<int64_t>(int64_t(ids.size()), model.config.block_size);
    std::vector<int32_t> context(ids.end() - T, ids.end());
    Tensor logits = model.forward(context, 1, T);                      // (1, T, V)
    Tensor last = reshape(narrow(logits, 1, T - 1, 1), {1, V});        // (1, V)
    std::vector<double> p = softmax(div(last.to(DType::F32), temperature), -1).to_double_vector();
    // inverse CDF: the first id whose cumulative probability passes a uniform draw
    double u = gen.uniform(), cum = 0;
    int32_t next = int32_t(V - 1);
    for (int64_t v = 0; v < V; ++v) {
      cum += p[v];
      if (u < cum) {
        next = int32_t(v);
        break;
      }
    }
    ids.push_back(next);
  }
  model.train(was_training);
  return ids;
}

}  // namespace hg::nn
