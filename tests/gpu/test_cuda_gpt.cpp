// GPU tests of chapter 12: the GPT's ops and the GPT itself on CUDA tensors against the CPU.
//
//   1. embedding        forward and backward, bit-exact (a copy; the GPU sums each row's
//                       positions in the CPU's order: cuda/ops/embedding.h)
//   2. layer_norm       with and without weight and bias, F32 weights under F16/BF16 x, rows
//                       in several chunks, rows with |mean| ≫ std
//   3. causal_mask      bit-exact; causal_softmax: rows shorter and longer than a warp, huge scores
//   4. views            narrow, split into q, k, v, transpose, permute (copies: bit-exact)
//   5. batched matmul   every transpose flag, a broadcast batch, attention's shapes
//   6. attention        the GPT's attention chain as one op, in F32/F16/BF16 and under autocast
//   7. the GPT          logits, loss and every parameter's gradient of one forward and backward;
//                       three of chapter 12's training steps (2 micro-batches, GradScaler,
//                       clipping, AdamW) in FP32, AMP F16 and AMP BF16; sampling
//
// Each op: tests/gpu/op_check.h (the same inputs and upstream gradient on both devices, the
// output and every gradient compared), in F32, F16 and BF16, at sizes that are no multiple of
// a warp (32) or a block (256). Tolerances are the dtype's (op_check.h's tolerance()) times
// the scale each call states: both devices compute in F32 and round once, and differ by the
// order of their sums. For the whole GPT they are relative to the tensor's largest value,
// because a gradient summed over many rows can be near 0 where its terms are not.
#include "tests/gpu/op_check.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "datasets/text.h"
#include "framework/amp/autocast.h"
#include "framework/amp/grad_scaler.h"
#include "framework/amp/unscale.h"
#include "framework/halfgrad.h"
#include "framework/nn/models/gpt.h"
#include "framework/optim/adam.h"
#include "framework/train/lm_step.h"

using hg::Device;
using hg::DType;
using hg::Shape;
using hg::Tensor;
using hg::test::check_op;
using hg::test::kAll;
using hg::test::name_of;
using hg::test::Tol;
using hg::test::tolerance;

namespace {

// n ids in [0, V) as text has them: every 4th one the same id (a space), ids ≥ V − 7 never.
std::vector<int32_t> text_like_ids(int64_t n, int64_t V) {
  std::vector<int32_t> ids;
  for (int64_t p = 0; p < n; ++p) ids.push_back(int32_t(p % 4 == 0 ? 5 : (p * 11 + 3) % (V - 7)));
  return ids;
}

// ---- 1. embedding -------------------------------------------------------------------------------
void test_embedding(hg::test::Checker& t) {
  const std::vector<int32_t> ids = text_like_ids(3 * 29, 37);
  std::vector<int32_t> positions;  // wpe's ids: 0..T-1 for each of B sequences
  for (int b = 0; b < 5; ++b)
    for (int32_t p = 0; p < 33; ++p) positions.push_back(p);
  for (DType dt : kAll) {
    check_op(t, "embedding (37,45) at (3,29) ids", {{{37, 45}}}, dt,
             [&ids](auto& v) { return hg::embedding(v[0], ids, {3, 29}); }, 0);
    check_op(t, "embedding (40,77) at positions (5,33)", {{{40, 77}}}, dt,
             [&positions](auto& v) { return hg::embedding(v[0], positions, {5, 33}); }, 0);
  }
}

// ---- 2. layer_norm ------------------------------------------------------------------------------
void test_layer_norm(hg::test::Checker& t) {
  auto ln = [](auto& v) { return hg::layer_norm(v[0], v[1], v[2]); };
  for (DType dt : kAll) {
    check_op(t, "layer_norm (3,7,45) +w +b", {{{3, 7, 45}}, {{45}, 0.5, 1.5}, {{45}}}, dt, ln, 4);
    // 200 rows: dweight and dbias through 4 chunks of 64 rows (the last one short)
    check_op(t, "layer_norm (200,77) 4 row chunks", {{{200, 77}}, {{77}, 0.5, 1.5}, {{77}}}, dt, ln, 4);
    check_op(t, "layer_norm (5,300) no weight, no bias", {{{5, 300}}}, dt,
             [](auto& v) { return hg::layer_norm(v[0], Tensor(), Tensor()); }, 4);
    // F32 parameters under an F16/BF16 x (an F32 master copy's LayerNorm): dweight, dbias F32
    check_op(t, "layer_norm (9,45), F32 weight and bias", {{{9, 45}}, {{45}, 0.5, 1.5, true, true}, {{45}, -2, 2, true, true}},
             dt, ln, 4);
  }
  // |mean| ≫ std: x in [1000, 1001), std 0.29. Both devices work on x − x[0] (layernorm.h),
  // so x̂ keeps its digits; E[x²] − E[x]² would lose about 7 bits here (1000² / 0.29² ≈ 2^23).
  check_op(t, "layer_norm (6,50) rows with mean 1000", {{{6, 50}, 1000, 1001}, {{50}, 0.5, 1.5}, {{50}}}, DType::F32,
           ln, 4);
}

// ---- 3. the causal mask and softmax -------------------------------------------------------------
void test_causal(hg::test::Checker& t) {
  for (DType dt : kAll) {
    check_op(t, "causal_mask (2,3,17,17)", {{{2, 3, 17, 17}}}, dt, [](auto& v) { return hg::causal_mask(v[0]); }, 0);
    check_op(t, "causal_softmax (2,3,37,37) scale 1/sqrt(8)", {{{2, 3, 37, 37}, -4, 4}}, dt,
             [](auto& v) { return hg::causal_softmax(v[0], 1.0 / std::sqrt(8.0)); }, 2);
    // rows of 70 keys: each lane of the warp handles two or three of them
    check_op(t, "causal_softmax (1,2,70,70) scale 1/8", {{{1, 2, 70, 70}, -4, 4}}, dt,
             [](auto& v) { return hg::causal_softmax(v[0], 0.125); }, 2);
  }
  // scores of ±30,000: e^x overflows without the max subtracted, in any dtype
  check_op(t, "causal_softmax (3,19,19) scores of 3e4", {{{3, 19, 19}, -3e4, 3e4}}, DType::F32,
           [](auto& v) { return hg::causal_softmax(v[0], 1.0); }, 2);
}

// ---- 4. views -----------------------------------------------------------------------------------
// A view's output is multiplied by 2 (exact) so the comparison reads row-major memory; the
// gradient of a view is dy put back in place (narrow: into a window of zeros).
void test_views(hg::test::Checker& t) {
  for (DType dt : kAll) {
    check_op(t, "narrow (4,9,30) dim 2 [10, 20)", {{{4, 9, 30}}}, dt,
             [](auto& v) { return hg::mul(hg::narrow(v[0], 2, 10, 10), 2.0); }, 0);
    check_op(t, "narrow (4,9,30) dim 1 [3, 8)", {{{4, 9, 30}}}, dt,
             [](auto& v) { return hg::mul(hg::narrow(v[0], 1, 3, 5), 2.0); }, 0);
    check_op(t, "narrow (7,5) dim 0 [6, 7)", {{{7, 5}}}, dt,
             [](auto& v) { return hg::mul(hg::narrow(v[0], 0, 6, 1), 2.0); }, 0);
    // the GPT's split of c_attn's output: three windows of one tensor, three gradients into it
    check_op(t, "split (3,5,36) into q,k,v: q*k + v", {{{3, 5, 36}}}, dt, [](auto& v) {
      const std::vector<Tensor> qkv = hg::split(v[0], 12, 2);
      return hg::add(hg::mul(qkv[0], qkv[1]), qkv[2]);
    }, 0);
    check_op(t, "permute (2,5,3,4) (0,2,1,3)", {{{2, 5, 3, 4}}}, dt,
             [](auto& v) { return hg::mul(hg::permute(v[0], {0, 2, 1, 3}).contiguous(), 2.0); }, 0);
    check_op(t, "transpose (2,5,3,4) dims 1,3", {{{2, 5, 3, 4}}}, dt,
             [](auto& v) { return hg::mul(hg::transpose(v[0], 1, 3), 2.0); }, 0);
  }
}

// ---- 5. batched matmul --------------------------------------------------------------------------
void test_batched_matmul(hg::test::Checker& t) {
  const int64_t M = 17, N = 13, K = 9;
  for (DType dt : kAll) {
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const Shape a = ta ? Shape{2, 3, K, M} : Shape{2, 3, M, K}, b = tb ? Shape{2, 3, N, K} : Shape{2, 3, K, N};
        check_op(t, std::string("batched matmul (2,3) ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0"), {{a}, {b}},
                 dt, [ta, tb](auto& v) { return hg::matmul(v[0], v[1], ta, tb); }, 4);
      }
    // (3, M, K) · (2, 1, K, N) -> (2, 3, M, N): each operand repeated along the other's batch
    // dim, its gradient summed back over it
    check_op(t, "batched matmul (3,17,9)x(2,1,9,13) broadcast", {{{3, M, K}}, {{2, 1, K, N}}}, dt,
             [](auto& v) { return hg::matmul(v[0], v[1]); }, 4);
    // attention's two products: q·kᵀ (B, H, T, T) and att·v (B, H, T, D)
    check_op(t, "batched matmul q.k^T (2,3,21,8)", {{{2, 3, 21, 8}}, {{2, 3, 21, 8}}}, dt,
             [](auto& v) { return hg::matmul(v[0], v[1], false, true); }, 4);
    check_op(t, "batched matmul att.v (2,3,21,21)x(2,3,21,8)", {{{2, 3, 21, 21}, 0, 1}, {{2, 3, 21, 8}}}, dt,
             [](auto& v) { return hg::matmul(v[0], v[1]); }, 4);
  }
}

// ---- 6. the attention chain ---------------------------------------------------------------------
// CausalSelfAttention's forward (framework/nn/models/gpt.cpp) without its c_proj: x (B, T, C)
// through c_attn (w, b), split, heads, q·kᵀ, causal_softmax, ·v, heads back to (B, T, C).
Tensor attention(const std::vector<Tensor>& v, int64_t H) {
  const Tensor& x = v[0];
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2), D = C / H;
  Tensor qkv = hg::reshape(hg::linear(hg::reshape(x, {B * T, C}), v[1], v[2]), {B, T, 3 * C});
  const std::vector<Tensor> s = hg::split(qkv, C, 2);
  auto heads = [&](const Tensor& a) { return hg::transpose(hg::reshape(a, {B, T, H, D}), 1, 2); };
  Tensor att = hg::causal_softmax(hg::matmul(heads(s[0]), heads(s[1]), false, true), 1.0 / std::sqrt(double(D)));
  return hg::reshape(hg::transpose(hg::matmul(att, heads(s[2])), 1, 2), {B, T, C});
}

void test_attention(hg::test::Checker& t) {
  const std::vector<hg::test::Input> in = {{{2, 21, 24}}, {{72, 24}, -0.3, 0.3}, {{72}, -0.1, 0.1}};
  for (DType dt : kAll)
    check_op(t, "attention (2,21,24) 3 heads", in, dt, [](auto& v) { return attention(v, 3); }, 8);
  // under autocast: F32 inputs, the products in F16/BF16, causal_softmax in F32
  for (DType low : {DType::F16, DType::BF16})
    check_op(t, std::string("attention under autocast ") + name_of(low), in, DType::F32,
             [low](auto& v) {
               hg::amp::Autocast ac(low);
               return attention(v, 3);
             },
             tolerance(low, 8));
}

// ---- 7. the GPT ---------------------------------------------------------------------------------
hg::nn::GPTConfig small_gpt() {
  hg::nn::GPTConfig c;
  c.n_layer = 2;
  c.n_head = 3;
  c.n_embd = 48;  // D = 16
  c.block_size = 21;
  c.vocab_size = 37;
  return c;
}

struct Precision {
  const char* name;
  DType autocast;  // F32: none
  Tol tol;         // relative to each tensor's largest |value|, and to each value
};
// F32: the two devices differ by the order of sums, ~1e-6 of a value; 1e-4 leaves room for
// two layers of it. Under autocast one F16 (BF16) rounding that falls the other way changes a
// value by 2^-11 (2^-8) and moves everything computed from it: 1e-2 (5e-2) of the largest.
// A wrong kernel is off by the size of the values themselves.
const Precision kPrecisions[] = {{"fp32", DType::F32, {1e-4, 1e-3}},
                                 {"amp_f16", DType::F16, {1e-2, 3e-2}},
                                 {"amp_bf16", DType::BF16, {5e-2, 1e-1}}};

// |gpu − cpu| ≤ tol.atol · max|cpu| + tol.rtol · |cpu| for every element.
void close_relative(hg::test::Checker& t, const std::string& what, const Tensor& gpu, const Tensor& cpu, Tol tol) {
  const std::vector<float> want = cpu.to(DType::F32).to_vector();
  float largest = 0;
  for (float w : want) largest = std::max(largest, std::fabs(w));
  t.close(what, gpu.to(DType::F32).to_vector(), want, tol.atol * largest, tol.rtol);
}

void test_gpt_forward_backward(hg::test::Checker& t) {
  const int64_t B = 3, T = 19;  // T < block_size: the first 19 rows of wpe
  const std::vector<int32_t> ids = text_like_ids(B * T, 37), targets = text_like_ids(B * T + 1, 37);
  const std::vector<int32_t> y(targets.begin() + 1, targets.end());
  for (const Precision& p : kPrecisions) {
    hg::Generator g1(11), g2(11);
    hg::nn::GPT cpu(small_gpt(), g1), gpu(small_gpt(), g2);  // the same weights
    gpu.to(Device::CUDA);
    const std::string name = std::string("GPT ") + p.name;
    Tensor logits_c, logits_g, loss_c, loss_g;
    {
      hg::amp::Autocast ac(p.autocast == DType::F32 ? DType::F16 : p.autocast, p.autocast != DType::F32);
      logits_c = cpu.forward(ids, B, T);
      logits_g = gpu.forward(ids, B, T);
      loss_c = hg::nn::GPT::loss(logits_c, y);
      loss_g = hg::nn::GPT::loss(logits_g, y);
    }
    if (!t.expect(name + " logits on the GPU", logits_g.device() == Device::CUDA && loss_g.device() == Device::CUDA))
      continue;
    close_relative(t, name + " logits (3,19,37)", logits_g, logits_c, p.tol);
    t.close(name + " loss", loss_g.to_vector(), loss_c.to_vector(), 0, p.tol.atol);  // one value: its own largest
    loss_c.backward();
    loss_g.backward();
    const auto pc = cpu.named_parameters(), pg = gpu.named_parameters();
    t.expect(name + " same parameters", pc.size() == pg.size() && !pc.empty());
    for (size_t i = 0; i < pc.size() && i < pg.size(); ++i) {
      const Tensor gc = pc[i].tensor.grad(), gg = pg[i].tensor.grad();
      if (!t.expect(name + " grad " + pg[i].name + " on the GPU", gc.defined() && gg.defined() &&
                                                                     gg.device() == Device::CUDA))
        continue;
      close_relative(t, name + " grad " + pc[i].name, gg, gc, p.tol);
    }
  }
}

// Chapter 12's step (lessons/12_memory_and_scale/main.cpp): zero_grad, K = 2 micro-batches
// (framework/train/lm_step.h), unscale, clip to norm 1, GradScaler step and update; three
// steps. Adam moves every weight by about lr whatever its gradient's size, so the weights are
// compared through the loss they give, step by step, not one by one.
void test_gpt_training_steps(hg::test::Checker& t) {
  hg::data::TokenBatch batch;
  batch.B = 4;
  batch.T = 17;
  batch.x = text_like_ids(batch.B * batch.T, 37);
  batch.y = text_like_ids(batch.B * batch.T + 1, 37);
  batch.y.erase(batch.y.begin());
  for (const Precision& p : kPrecisions) {
    const std::string name = std::string("GPT training step ") + p.name;
    hg::Generator g1(12), g2(12);
    hg::nn::GPT cpu(small_gpt(), g1), gpu(small_gpt(), g2);
    gpu.to(Device::CUDA);
    hg::optim::AdamOptions ao;
    ao.lr = 1e-3;
    ao.weight_decay = 0.1;
    hg::optim::AdamW opt_c(cpu.parameters(), ao), opt_g(gpu.parameters(), ao);
    const bool scaled = p.autocast == DType::F16;
    hg::amp::GradScaler sc_c(hg::amp::ScaleRule{}, scaled), sc_g(hg::amp::ScaleRule{}, scaled);
    for (int step = 0; step < 3; ++step) {
      double loss[2], norm[2];
      hg::nn::GPT* models[2] = {&cpu, &gpu};
      hg::optim::AdamW* opts[2] = {&opt_c, &opt_g};
      hg::amp::GradScaler* scalers[2] = {&sc_c, &sc_g};
      for (int d = 0; d < 2; ++d) {
        opts[d]->zero_grad();
        loss[d] = hg::train::accumulate_gradients(*models[d], *scalers[d], hg::train::split_batch(batch, 2), p.autocast);
        scalers[d]->unscale_(*opts[d]);
        norm[d] = hg::amp::clip_grad_norm_(opts[d]->params(), 1.0);
        scalers[d]->step(*opts[d]);
        scalers[d]->update();
      }
      const std::string at = name + " step " + std::to_string(step + 1);
      // one number each, relative to itself: its own largest value
      t.close(at + " loss", {float(loss[1])}, {float(loss[0])}, 0, p.tol.atol);
      t.close(at + " gradient norm", {float(norm[1])}, {float(norm[0])}, 0, p.tol.atol);
      t.expect(at + " loss scale", sc_g.get_scale() == sc_c.get_scale(),
               std::to_string(sc_g.get_scale()) + " vs " + std::to_string(sc_c.get_scale()));
    }
    bool on_gpu = true;
    for (const Tensor& w : gpu.parameters()) on_gpu = on_gpu && w.device() == Device::CUDA;
    t.expect(name + " weights stay on the GPU", on_gpu);
  }
}

// generate() on the GPU: the logits of the last position, a softmax, a draw on the CPU. The
// draws compare uniform numbers with cumulative probabilities, so a probability that differs
// in its last bits may (rarely) pick a neighbouring token: the tokens must be valid, and the
// count that match the CPU's is shown.
void test_generate(hg::test::Checker& t) {
  hg::Generator g1(13), g2(13);
  hg::nn::GPT cpu(small_gpt(), g1), gpu(small_gpt(), g2);
  gpu.to(Device::CUDA);
  hg::Generator s1(5), s2(5);
  const std::vector<int32_t> prompt = {1, 2, 3};
  const std::vector<int32_t> want = hg::nn::generate(cpu, prompt, 30, 1.0, s1);  // 33 ids: past block_size
  const std::vector<int32_t> got = hg::nn::generate(gpu, prompt, 30, 1.0, s2);
  bool valid = got.size() == want.size();
  size_t same = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    valid = valid && got[i] >= 0 && got[i] < 37;
    same += got[i] == want[i] ? 1 : 0;
  }
  t.expect("GPT generate 30 tokens on the GPU", valid,
           std::to_string(same) + " of " + std::to_string(want.size()) + " ids as on the CPU");
}

void run(hg::test::Checker& t) {
  test_embedding(t);
  test_layer_norm(t);
  test_causal(t);
  test_views(t);
  test_batched_matmul(t);
  test_attention(t);
  test_gpt_forward_backward(t);
  test_gpt_training_steps(t);
  test_generate(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
