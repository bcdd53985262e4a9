#pragma once
// A small GPT (a decoder-only transformer, as GPT-2), laid out and named as Karpathy's
// nanoGPT so that a PyTorch twin loads the same weights by name.
//
// Legend: B batch, T positions (≤ block_size), C = n_embd, H = n_head, D = C / H the head
// width, V vocabulary.
//
//   ids (B, T)
//   x = wte[ids] + wpe[0..T)                                     (B, T, C)   embeddings
//   n_layer blocks, each pre-norm with a residual around both halves:
//     x = x + attn(ln_1(x))      causal multi-head self-attention
//     x = x + mlp(ln_2(x))       C -> 4C, GELU, 4C -> C
//   logits = ln_f(x) · Wᵀ                                        (B, T, V)
//   W = wte's weight (tied, as GPT-2) or lm_head's own (untied)
//
// Attention, per head:  q, k, v = x·W_q, x·W_k, x·W_v (one c_attn Linear makes all three)
//   att = causal_softmax(q·kᵀ, 1/√D)  (B, H, T, T)     y = att·v  (B, H, T, D)
// then the heads are concatenated back to (B, T, C) and projected by c_proj.
//
// Parameter names (nanoGPT's): transformer.wte.weight, transformer.wpe.weight,
//   transformer.h.{i}.ln_1.{weight,bias}, .attn.c_attn.{weight,bias}, .attn.c_proj.{weight,bias},
//   .ln_2.{weight,bias}, .mlp.c_fc.{weight,bias}, .mlp.c_proj.{weight,bias},
//   transformer.ln_f.{weight,bias}, and lm_head.weight (no bias) only when untied.
//
// Initialisation (GPT-2, as nanoGPT): every Linear weight and both embeddings N(0, 0.02²),
// biases 0, LayerNorms weight 1 bias 0; the two projections that write into the residual
// stream (attn.c_proj, mlp.c_proj) N(0, (0.02/√(2·n_layer))²), so the sum of 2·n_layer
// residual additions keeps the scale of one.
//
// Dropout (config.dropout > 0, training mode only) sits where nanoGPT has it: after the
// embeddings, on the attention weights, after each c_proj.
//
// FP8 (chapter 14, config.fp8 set): the four projections of every block (attn.c_attn,
// attn.c_proj, mlp.c_fc, mlp.c_proj) are fp8::Fp8Linear, each named by its path in the
// transformer ("h.0.attn.c_attn") for the run log, and drawn from the generator exactly as
// the plain Linear is: the same seed gives the same initial weights either way. Everything
// else keeps the run's precision (F32, or BF16 under autocast), as Transformer Engine does:
//   embeddings     a lookup, no GEMM to speed up
//   layer norms    a mean and a variance over C: reductions that FP8's 3 mantissa bits ruin
//   q·kᵀ, att·v    GEMMs, but of activations by activations with no weight: the scores feed
//                  an exponential, where an error of 2^-4 in a logit is an error of 6% in a
//                  probability (TE runs attention in BF16; FP8 attention is its own recipe)
//   LM head        the logits and the loss at the end, most sensitive to rounding; tied to
//                  the embedding table, which would need casting too
// They are also the smaller part of the FLOPs: the projections carry 12·C² weights a block
// (3C² + C² + 4C² + 4C²), most of 6N once n_layer·12·C² outweighs the vocabulary's V·C.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "framework/fp8/linear.h"
#include "framework/nn/embedding.h"
#include "framework/nn/layer_norm.h"
#include "framework/nn/linear.h"
#include "framework/nn/sequential.h"

namespace hg::nn {

struct GPTConfig {
  int64_t n_layer = 4;
  int64_t n_head = 4;
  int64_t n_embd = 128;
  int64_t block_size = 128;  // the longest context; wpe has one row per position
  int64_t vocab_size = 0;    // from the corpus
  double dropout = 0.0;
  bool tied = true;          // the LM head reuses the token embedding (GPT-2); false: lm_head.weight
  // Activation recomputation per block (hg::recompute, framework/autograd/recompute.h): a
  // block keeps only its input for backward and is run again there. Same gradients, bit for
  // bit; the activations of one block at a time instead of all n_layer; one more forward.
  bool recompute_blocks = false;
  // FP8 training (chapter 14): the blocks' projections in FP8 under this recipe; unset: Linear.
  std::optional<fp8::RecipeConfig> fp8;
  // Throws std::invalid_argument naming the field: sizes ≥ 1, n_embd a multiple of n_head,
  // dropout in [0, 1).
  void validate() const;
  std::string str() const;   // "n_layer 4, n_head 4, n_embd 128, block_size 128, vocab 102, ..."
};

class CausalSelfAttention : public Module {
 public:
  // name: the module's path in the transformer ("h.0.attn"), which names its FP8 tensors
  CausalSelfAttention(const GPTConfig& config, Generator& gen, const std::string& name = "attn");
  Tensor forward(const Tensor& x) override;  // (B, T, C) -> (B, T, C)
  std::string describe() const override;

  std::shared_ptr<Linear> c_attn;  // C -> 3C: q, k, v side by side
  std::shared_ptr<Linear> c_proj;  // C -> C

 private:
  int64_t n_head_;
  double dropout_;
  Generator& gen_;
};

// nanoGPT's MLP (named "mlp" in a block): C -> 4C, GELU, 4C -> C.
class FeedForward : public Module {
 public:
  FeedForward(const GPTConfig& config, Generator& gen, const std::string& name = "mlp");
  Tensor forward(const Tensor& x) override;  // (B, T, C) -> (B, T, C)
  std::string describe() const override { return "MLP (GELU)"; }

  std::shared_ptr<Linear> c_fc, c_proj;

 private:
  double dropout_;
  Generator& gen_;
};

class Block : public Module {
 public:
  Block(const GPTConfig& config, Generator& gen, const std::string& name);  // name "h.0", "h.1", ...
  Tensor forward(const Tensor& x) override;  // (B, T, C) -> (B, T, C)
  std::string describe() const override { return "Block"; }

  std::shared_ptr<LayerNorm> ln_1, ln_2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<FeedForward> mlp;
};

// nanoGPT's `transformer` ModuleDict: everything but the LM head.
class GPTTransformer : public Module {
 public:
  GPTTransformer(const GPTConfig& config, Generator& gen);
  Tensor forward(const Tensor& ids) override;  // (B, T) float ids -> (B, T, C)
  Tensor forward(const std::vector<int32_t>& ids, int64_t B, int64_t T);
  std::string describe() const override { return "transformer"; }

  std::shared_ptr<Embedding> wte, wpe;
  std::shared_ptr<Sequential> h;  // the blocks, named 0, 1, ...
  std::shared_ptr<LayerNorm> ln_f;

 private:
  double dropout_;
  bool recompute_blocks_;
  Generator& gen_;
};

class GPT : public Module {
 public:
  // `gen` draws the initial weights and, when config.dropout > 0, the dropout masks: the
  // model keeps a reference, so the generator must outlive it (as nn::Dropout's).
  GPT(const GPTConfig& config, Generator& gen);
  // ids (B, T) as a float tensor of integer ids -> logits (B, T, V)
  Tensor forward(const Tensor& ids) override;
  // ids as a text batch holds them, row-major (B·T) -> logits (B, T, V)
  Tensor forward(const std::vector<int32_t>& ids, int64_t B, int64_t T);
  std::string describe() const override;

  // The mean cross entropy of predicting targets (B·T ids) from logits (B, T, V).
  static Tensor loss(const Tensor& logits, const std::vector<int32_t>& targets);

  const GPTConfig config;
  std::shared_ptr<GPTTransformer> transformer;
  std::shared_ptr<Linear> lm_head;  // null when tied
  // The weight the logits are computed with: wte's (tied) or lm_head's.
  const Tensor& head_weight() const;
  // FP8 (config.fp8 set): the last cast of x, w and dy of every projection, block by block
  // in the order c_attn, attn.c_proj, c_fc, mlp.c_proj — for the run log's fp8_scale events
  // (fp8::log_fp8_scales). Empty for a model without FP8.
  std::vector<fp8::ScaleRecord> fp8_records() const;
};

// ---- memory: what a configuration needs, known before anything is allocated ----------------
// For the message of an allocation that fails: a std::bad_alloc alone says nothing. The GPT
// constructor refuses parameters larger than the machine's memory before allocating any, and
// turns a failed allocation into std::runtime_error with gpt_memory_needs(); so does
// train::accumulate_gradients() for the forward and backward passes.
//   parameters         exactly: L(12C² + 13C) + VC + TC + 2C, and VC more untied (GPT-2's count)
//   training (AdamW)   16 bytes a parameter in F32: the parameters, their gradients and AdamW's
//                      two moments (framework/memory/formulas.h, the ZeRO table's FP32 Adam row)
//   activations        an estimate for one sequence of block_size tokens: Korthikanti et al.'s
//                      per-layer count sbh(34 + 5as/h), which is for 16-bit values, doubled for
//                      F32, plus the logits and their gradient (2·T·V F32 values)
struct GPTMemory {
  int64_t parameters = 0;
  double parameter_bytes = 0;                 // 4 a parameter
  double training_bytes = 0;                  // 16 a parameter
  double activation_bytes_per_sequence = 0;   // the estimate above
};
GPTMemory gpt_memory(const GPTConfig& config);
// "N parameters take X in F32; training them with AdamW takes Y (16 bytes a parameter: ...),
// and the activations about Z a sequence of T tokens (W for a batch of B sequences)";
// batch 0 leaves out the part in brackets.
std::string gpt_memory_needs(const GPTConfig& config, int64_t batch = 0);

// Sampling: extends `prompt` (token ids, at least one) by `n_new` tokens, one at a time:
// the logits of the last position (of at most block_size) are divided by `temperature`
// (< 1 sharper, > 1 flatter; > 0), and the next id is drawn from their softmax with `gen`.
// Runs in eval mode without a graph; the model's mode is restored after.
std::vector<int32_t> generate(GPT& model, std::vector<int32_t> prompt, int64_t n_new, double temperature,
                              Generator& gen);

}  // namespace hg::nn
