// GPU tests of the engine on CUDA tensors: every op of framework/ops, forward and backward,
// on Device::CUDA against the same op on the CPU (the reference), in F32 and, for the ops
// mixed precision uses, F16 and BF16; then one SGD step of the MLP and the SmallCNN on the
// GPU against the same step on the CPU. How one op is checked: tests/gpu/op_check.h.
// (Chapter 12's GPT ops and model: test_cuda_gpt.cpp.)
#include "tests/gpu/op_check.h"

#include <functional>
#include <string>
#include <vector>

#include "cuda/gemm/matmul.h"
#include "cuda/gemm/validate.h"
#include "framework/halfgrad.h"
#include "framework/nn/models/mlp.h"
#include "framework/nn/models/small_cnn.h"
#include "framework/optim/sgd.h"

using hg::Device;
using hg::DType;
using hg::Shape;
using hg::Tensor;
using hg::test::check_op;
using hg::test::kAll;
using hg::test::name_of;

namespace {

void test_transfers(hg::test::Checker& t) {
  hg::Generator gen(7);
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    Tensor x = Tensor::randn({3, 5, 7}, gen, dt);
    Tensor back = x.to(Device::CUDA).to(Device::CPU);
    t.exact(std::string("to(CUDA).to(CPU) ") + name_of(dt), back.to_vector(), x.to_vector());
  }
  // casts on the GPU round like the CPU (RNE)
  Tensor x = hg::mul(Tensor::randn({1000}, gen), 100.0);
  for (DType dt : {DType::F16, DType::BF16})
    t.exact(std::string("cast F32 -> ") + name_of(dt) + " on the GPU",
            x.to(Device::CUDA).to(dt).to(Device::CPU).to_vector(), x.to(dt).to_vector());
}

// Tensor::full and fill_ write on the device the bits the CPU's fill writes (one element rounded
// on the host, copied n times), and zero_grad clears a GPU gradient in place, as on the CPU.
void test_fill_and_zero_grad(hg::test::Checker& t) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    const double v = 0.1;  // not exact in any format: every one rounds it
    const Tensor cpu = Tensor::full({1000}, v, dt);
    t.exact(std::string("Tensor::full on the GPU ") + name_of(dt),
            Tensor::full({1000}, v, dt, Device::CUDA).to(Device::CPU).to_vector(), cpu.to_vector());
    if (dt == DType::F64) continue;  // no F64 kernels: fill_ refuses it on the GPU
    Tensor g = Tensor::zeros({1000}, dt, Device::CUDA);
    hg::fill_(g, v);
    t.exact(std::string("fill_ on the GPU ") + name_of(dt), g.to(Device::CPU).to_vector(), cpu.to_vector());
  }
  Tensor p = Tensor::ones({7, 9}, DType::F32, Device::CUDA).requires_grad_(true);
  hg::sum(hg::mul(p, 3.0)).backward();
  const void* before = p.grad().raw_data();
  p.zero_grad();
  t.expect("zero_grad on the GPU: the same buffer, cleared in place", p.grad().raw_data() == before);
  t.exact("zero_grad on the GPU: zeros", p.grad().to(Device::CPU).to_vector(), std::vector<float>(63, 0.0f));
}

void test_elementwise(hg::test::Checker& t) {
  for (DType dt : kAll) {
    // broadcasting both ways: (4, 5) with (5) and with (4, 1)
    check_op(t, "add (4,5)+(5)", {{{4, 5}}, {{5}}}, dt, [](auto& v) { return hg::add(v[0], v[1]); });
    check_op(t, "sub (4,1)-(4,5)", {{{4, 1}}, {{4, 5}}}, dt, [](auto& v) { return hg::sub(v[0], v[1]); });
    check_op(t, "mul (3,4,5)*(4,1)", {{{3, 4, 5}}, {{4, 1}}}, dt, [](auto& v) { return hg::mul(v[0], v[1]); });
    check_op(t, "div (4,5)/(5)", {{{4, 5}}, {{5}, 0.5, 2}}, dt, [](auto& v) { return hg::div(v[0], v[1]); }, 2);
    check_op(t, "add scalar", {{{6, 7}}}, dt, [](auto& v) { return hg::add(v[0], 1.5); });
    check_op(t, "sub scalar", {{{6, 7}}}, dt, [](auto& v) { return hg::sub(v[0], 0.25); });
    check_op(t, "rsub scalar", {{{6, 7}}}, dt, [](auto& v) { return hg::rsub(3.0, v[0]); });
    check_op(t, "mul scalar", {{{6, 7}}}, dt, [](auto& v) { return hg::mul(v[0], -0.75); });
    check_op(t, "div scalar", {{{6, 7}}}, dt, [](auto& v) { return hg::div(v[0], 3.0); });
    check_op(t, "rdiv scalar", {{{6, 7}, 0.5, 2}}, dt, [](auto& v) { return hg::rdiv(2.0, v[0]); }, 2);
    // |a| > 256: a² overflows F16, so the backward must square in F32 (the gradient is ~2e-5)
    check_op(t, "rdiv scalar, a in [300, 400)", {{{6, 7}, 300, 400}}, dt,
             [](auto& v) { return hg::rdiv(2.0, v[0]); }, 0.01);
    check_op(t, "neg", {{{6, 7}}}, dt, [](auto& v) { return hg::neg(v[0]); });
  }
}

void test_unary(hg::test::Checker& t) {
  for (DType dt : kAll) {
    check_op(t, "relu", {{{8, 33}}}, dt, [](auto& v) { return hg::relu(v[0]); });
    check_op(t, "gelu", {{{8, 33}}}, dt, [](auto& v) { return hg::gelu(v[0]); }, 2);
    check_op(t, "sigmoid", {{{8, 33}}}, dt, [](auto& v) { return hg::sigmoid(v[0]); }, 2);
    check_op(t, "tanh", {{{8, 33}}}, dt, [](auto& v) { return hg::tanh(v[0]); }, 2);
    check_op(t, "exp", {{{8, 33}}}, dt, [](auto& v) { return hg::exp(v[0]); }, 2);
    check_op(t, "log", {{{8, 33}, 0.1, 4}}, dt, [](auto& v) { return hg::log(v[0]); }, 2);
    check_op(t, "sqrt", {{{8, 33}, 0.1, 4}}, dt, [](auto& v) { return hg::sqrt(v[0]); }, 2);
    check_op(t, "square", {{{8, 33}}}, dt, [](auto& v) { return hg::square(v[0]); });
    check_op(t, "pow 3", {{{8, 33}}}, dt, [](auto& v) { return hg::pow(v[0], 3.0); }, 2);
    check_op(t, "pow -0.5", {{{8, 33}, 0.25, 4}}, dt, [](auto& v) { return hg::pow(v[0], -0.5); }, 2);
  }
}

void test_reductions_and_shapes(hg::test::Checker& t) {
  for (DType dt : kAll) {
    check_op(t, "sum all", {{{37, 29}}}, dt, [](auto& v) { return hg::sum(v[0]); }, 4);
    check_op(t, "mean all", {{{37, 29}}}, dt, [](auto& v) { return hg::mean(v[0]); }, 4);
    check_op(t, "sum dim 1 keepdim", {{{5, 37, 3}}}, dt, [](auto& v) { return hg::sum(v[0], 1, true); }, 4);
    check_op(t, "mean dim 0", {{{37, 6}}}, dt, [](auto& v) { return hg::mean(v[0], 0, false); }, 4);
    check_op(t, "mean dim -1 (size 1)", {{{6, 1}}}, dt, [](auto& v) { return hg::mean(v[0], -1, false); });
  }
  check_op(t, "reshape", {{{4, 6}}}, DType::F32, [](auto& v) { return hg::mul(v[0].reshape({2, 12}), 2.0); });
  check_op(t, "flatten", {{{2, 3, 4, 5}}}, DType::F32, [](auto& v) { return hg::mul(hg::flatten(v[0], 1), 2.0); });
  check_op(t, "slice rows 1..3", {{{5, 4}}}, DType::F32, [](auto& v) { return hg::mul(v[0].slice(1, 3), 3.0); });
  check_op(t, "clone", {{{5, 4}}}, DType::F32, [](auto& v) { return hg::mul(v[0].clone(), 3.0); });
  // Views that are not row-major: contiguous() gathers them on the GPU (cuda/ops/strided.h).
  // expand and view_of are views without autograd: forward only.
  for (DType dt : kAll) {
    check_op(t, "contiguous of an expand (5,1)->(5,4)", {{{5, 1}, -2, 2, false}}, dt,
             [](auto& v) { return hg::mul(hg::expand(v[0], {5, 4}).contiguous(), 2.0); });
    check_op(t, "clone of an expand (5,1)->(5,4)", {{{5, 1}, -2, 2, false}}, dt,
             [](auto& v) { return hg::expand(v[0], {5, 4}).clone(); });
    check_op(t, "contiguous of a transposed view", {{{3, 7}, -2, 2, false}}, dt, [](auto& v) {
      Tensor xt = v[0].view_of({7, 3}, {1, 7}, v[0].impl().offset);  // x^T, no copy
      return xt.contiguous();
    });
    check_op(t, "contiguous of a slice's transpose", {{{6, 4}, -2, 2, false}}, dt, [](auto& v) {
      Tensor rows = v[0].slice(2, 5);                                           // (3, 4), offset 8
      return rows.view_of({4, 3}, {1, 4}, rows.impl().offset).contiguous();  // (4, 3)
    });
  }
  // a cast on the GPU, and its gradient cast back
  check_op(t, "cast F32->F16->F32", {{{5, 4}}}, DType::F32,
           [](auto& v) { return hg::mul(v[0].to(DType::F16).to(DType::F32), 2.0); });
}

void test_gemm(hg::test::Checker& t) {
  // odd sizes (no multiple of any tile) and every transpose combination
  const int64_t M = 37, N = 29, K = 23;
  for (DType dt : kAll)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        const Shape a = ta ? Shape{K, M} : Shape{M, K}, b = tb ? Shape{N, K} : Shape{K, N};
        check_op(t, std::string("matmul ta=") + (ta ? "1" : "0") + " tb=" + (tb ? "1" : "0"), {{a}, {b}}, dt,
                 [ta, tb](auto& v) { return hg::matmul(v[0], v[1], ta, tb); }, 4);
      }
  for (DType dt : kAll)
    check_op(t, "linear (19,70)x(33,70)+b", {{{19, 70}}, {{33, 70}}, {{33}}}, dt,
             [](auto& v) { return hg::linear(v[0], v[1], v[2]); }, 4);
}

void test_conv_pool(hg::test::Checker& t) {
  for (DType dt : kAll) {
    check_op(t, "conv2d 3x3 s1 p1 +b", {{{2, 3, 9, 8}}, {{5, 3, 3, 3}}, {{5}}}, dt,
             [](auto& v) { return hg::conv2d(v[0], v[1], v[2], 1, 1); }, 4);
    check_op(t, "conv2d 3x3 s2 p0", {{{2, 3, 9, 8}}, {{4, 3, 3, 3}}}, dt,
             [](auto& v) { return hg::conv2d(v[0], v[1], Tensor(), 2, 0); }, 4);
    // A batch too large for one GEMM (144 x 1024 column values per image, 113 images per
    // GEMM: cuda/ops/conv_index.h), so the second GEMM's offsets are checked too. (Not under
    // memcheck, nor on a simulated GPU: 120 images of 16 x 32 x 32.)
    if (!hg::test::small_run() && !hg::test::simulated())
      check_op(t, "conv2d N=120 (two GEMMs) 3x3 s1 p1 +b", {{{120, 16, 32, 32}, -1, 1}, {{16, 16, 3, 3}, -0.3, 0.3}, {{16}}},
               dt, [](auto& v) { return hg::conv2d(v[0], v[1], v[2], 1, 1); }, 8);
    check_op(t, "max_pool2d 2 s2", {{{2, 3, 8, 6}}}, dt, [](auto& v) { return hg::max_pool2d(v[0], 2, 2, 0); });
    check_op(t, "max_pool2d 3 s2 p1", {{{2, 3, 9, 7}}}, dt, [](auto& v) { return hg::max_pool2d(v[0], 3, 2, 1); });
    check_op(t, "avg_pool2d 3 s2 p1", {{{2, 3, 9, 7}}}, dt, [](auto& v) { return hg::avg_pool2d(v[0], 3, 2, 1); });
    check_op(t, "global_avg_pool2d", {{{2, 5, 7, 6}}}, dt, [](auto& v) { return hg::global_avg_pool2d(v[0]); }, 2);
  }
}

void test_batch_norm(hg::test::Checker& t) {
  for (DType dt : kAll) {
    for (bool training : {true, false}) {
      // running statistics: F32 buffers on each side, compared after the step
      Tensor rm_c = Tensor::full({4}, 0.1), rv_c = Tensor::full({4}, 1.5);
      Tensor rm_g = rm_c.to(Device::CUDA).clone(), rv_g = rv_c.to(Device::CUDA).clone();
      auto op = [&, training](const std::vector<Tensor>& v) {
        const bool gpu = v[0].device() == Device::CUDA;
        return hg::batch_norm2d(v[0], v[1], v[2], gpu ? rm_g : rm_c, gpu ? rv_g : rv_c, training, 0.1, 1e-5);
      };
      const std::string name = training ? "batch_norm2d train" : "batch_norm2d eval";
      check_op(t, name, {{{3, 4, 5, 6}}, {{4}, 0.5, 1.5}, {{4}}}, dt, op, 4);
      // 4 x 64 x 64 = 16,384 values per channel: 16 slices (blocks) per channel, summed through partials
      check_op(t, name + " (4,4,64,64) 16 slices", {{{4, 4, 64, 64}, 1, 3}, {{4}, 0.5, 1.5}, {{4}}}, dt, op, 4);
      if (training) {
        t.close(name + " running_mean " + name_of(dt), rm_g.to_vector(), rm_c.to_vector(), 1e-5, 1e-4);
        t.close(name + " running_var " + name_of(dt), rv_g.to_vector(), rv_c.to_vector(), 1e-5, 1e-4);
      }
    }
  }
}

void test_softmax_losses(hg::test::Checker& t) {
  const std::vector<int32_t> targets = {3, 0, 9, 9, 1, 4, 7};
  for (DType dt : kAll) {
    check_op(t, "softmax dim 1", {{{7, 10}, -4, 4}}, dt, [](auto& v) { return hg::softmax(v[0], 1); }, 2);
    check_op(t, "log_softmax dim 0", {{{7, 10}, -4, 4}}, dt, [](auto& v) { return hg::log_softmax(v[0], 0); }, 2);
    check_op(t, "cross_entropy", {{{7, 10}, -4, 4}}, dt,
             [&targets](auto& v) { return hg::cross_entropy(v[0], targets); }, 2);
    check_op(t, "mse_loss", {{{6, 5}}, {{6, 5}}}, dt, [](auto& v) { return hg::mse_loss(v[0], v[1]); }, 2);
  }
}

void test_dropout(hg::test::Checker& t) {
  // the mask is drawn on the CPU from the generator, so equal seeds give equal masks
  for (DType dt : kAll) {
    auto op = [](const std::vector<Tensor>& v) {
      hg::Generator g(99);
      return hg::dropout(v[0], 0.3, true, g);
    };
    check_op(t, "dropout p=0.3", {{{9, 13}}}, dt, op);
  }
}

// One SGD step (momentum, weight decay) of a model on the GPU vs the same on the CPU.
void check_sgd_step(hg::test::Checker& t, const std::string& name,
                    const std::function<hg::nn::ModulePtr(hg::Generator&)>& make, const Shape& input_shape) {
  hg::Generator g1(5), g2(5), gx(6);
  hg::nn::ModulePtr cpu_model = make(g1), gpu_model = make(g2);  // identical weights
  gpu_model->to(Device::CUDA);
  hg::optim::SGDOptions o;
  o.lr = 0.05;
  o.momentum = 0.9;
  o.weight_decay = 1e-4;
  hg::optim::SGD cpu_opt(cpu_model->parameters(), o), gpu_opt(gpu_model->parameters(), o);
  Tensor x = Tensor::randn(input_shape, gx);
  std::vector<int32_t> y;
  for (int64_t i = 0; i < input_shape[0]; ++i) y.push_back(static_cast<int32_t>((i * 7) % 10));

  Tensor loss_c = hg::cross_entropy(cpu_model->forward(x), y);
  Tensor loss_g = hg::cross_entropy(gpu_model->forward(x.to(Device::CUDA)), y);
  t.close(name + " loss", loss_g.to_vector(), loss_c.to_vector(), 1e-5, 1e-4);
  cpu_opt.zero_grad();
  gpu_opt.zero_grad();
  loss_c.backward();
  loss_g.backward();
  cpu_opt.step();
  gpu_opt.step();
  const auto pc = cpu_model->named_parameters(), pg = gpu_model->named_parameters();
  t.expect(name + " same parameters", pc.size() == pg.size() && !pc.empty());
  for (size_t i = 0; i < pc.size() && i < pg.size(); ++i) {
    t.expect(name + " " + pg[i].name + " on the GPU", pg[i].tensor.device() == Device::CUDA);
    t.close(name + " " + pc[i].name + " after one step", pg[i].tensor.to_vector(), pc[i].tensor.to_vector(),
            1e-5, 1e-4);
  }
}

void test_models(hg::test::Checker& t) {
  check_sgd_step(t, "MLP", [](hg::Generator& g) { return std::make_shared<hg::nn::MLP>(g, 784, 64, 32, 10); },
                 {16, 1, 28, 28});
  check_sgd_step(t, "SmallCNN",
                 [](hg::Generator& g) { return std::make_shared<hg::nn::SmallCNN>(g, 1, 8, 16, 32, 10, 28); },
                 {8, 1, 28, 28});
}

// F32 matmul and conv2d with TF32 allowed (hg::cuda::set_allow_tf32): small integers are TF32
// values, so the result must equal the CPU's F32 result bit for bit, forward and backward;
// random inputs are rounded to 10 mantissa bits, so they agree to TF32's precision only.
void test_tf32(hg::test::Checker& t) {
  const bool sm80 = hg::cuda::device_info(0).major >= 8;
  hg::cuda::set_allow_tf32(true);
  auto ints = [](const Shape& s, uint64_t seed) {
    std::vector<float> v(hg::shape_numel(s));
    hg::cuda::gemm::fill_small_integers(v, seed);
    return Tensor::from_vector(v, s);
  };
  const Tensor x = ints({3, 4, 9, 8}, 1), w = ints({6, 4, 3, 3}, 2), b = ints({6}, 3), up = ints({3, 6, 9, 8}, 4);
  std::vector<Tensor> cpu = {x.detach(), w.detach(), b.detach()}, gpu;
  for (Tensor& c : cpu) c.requires_grad_();
  for (const Tensor& c : cpu) gpu.push_back(c.detach().to(Device::CUDA).requires_grad_());
  Tensor yc = hg::conv2d(cpu[0], cpu[1], cpu[2], 1, 1), yg = hg::conv2d(gpu[0], gpu[1], gpu[2], 1, 1);
  t.exact("conv2d F32 with TF32 allowed, small integers: forward", yg.to_vector(), yc.to_vector());
  yc.backward(up);
  yg.backward(up.to(Device::CUDA));
  const char* names[] = {"dx", "dw", "db"};
  for (int i = 0; i < 3; ++i)
    t.exact(std::string("conv2d F32 with TF32 allowed, small integers: ") + names[i], gpu[i].grad().to_vector(),
            cpu[i].grad().to_vector());
  const Tensor A = ints({40, 70}, 5), B = ints({70, 33}, 6);
  t.exact("matmul F32 with TF32 allowed, small integers", hg::matmul(A.to(Device::CUDA), B.to(Device::CUDA)).to_vector(),
          hg::matmul(A, B).to_vector());
  // Random values: TF32 keeps 11 significant bits of each operand (relative error 2^-11 each).
  hg::Generator gen(9);
  const Tensor R = Tensor::uniform({40, 70}, -1, 1, gen), S = Tensor::uniform({70, 33}, -1, 1, gen);
  const std::vector<float> want = hg::matmul(R, S).to_vector();
  t.close("matmul F32 with TF32 allowed, random [-1, 1], K = 70", hg::matmul(R.to(Device::CUDA), S.to(Device::CUDA)).to_vector(),
          want, 70 * 2 * 0x1p-11, 0);
  if (sm80) {  // and it is TF32, not F32: 1 + 2^-20 is not a TF32 value
    std::vector<float> identity(256, 0.0f);
    for (int i = 0; i < 16; ++i) identity[i * 16 + i] = 1.0f;
    const Tensor one = Tensor::full({16, 16}, 1.0 + 0x1p-20), eye = Tensor::from_vector(identity, {16, 16});
    t.exact("matmul F32 with TF32 allowed rounds 1 + 2^-20 to 1", hg::matmul(one.to(Device::CUDA), eye.to(Device::CUDA)).to_vector(),
            std::vector<float>(256, 1.0f));
  }
  hg::cuda::set_allow_tf32(false);
}

void run(hg::test::Checker& t) {
  test_transfers(t);
  test_fill_and_zero_grad(t);
  test_elementwise(t);
  test_unary(t);
  test_reductions_and_shapes(t);
  test_gemm(t);
  test_conv_pool(t);
  test_batch_norm(t);
  test_softmax_losses(t);
  test_dropout(t);
  test_models(t);
  test_tf32(t);
}

}  // namespace

HG_GPU_TEST_MAIN(run)
