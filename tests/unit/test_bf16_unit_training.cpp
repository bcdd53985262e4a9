// One BF16 autocast training step through the CPU's BF16 unit (AMX or VDPBF16PS) against the
// same step with BF16 widened to F32 on the F32 kernels (the path every CPU has): the loss and
// every parameter gradient agree within the tolerance below. MLP (matmul, linear) and SmallCNN
// (conv2d's im2col GEMMs too). Exits 77 on a CPU without a BF16 unit.
//
// Why these tolerances: both paths form the same exact products of the same BF16 values; only
// the order of the F32 additions differs (relative ~K·2^-24). But each GEMM's result is then
// rounded to BF16, 2^-8 apart near 1, and a tiny F32 difference next to a rounding boundary
// moves a BF16 value by one step; such steps spread through the backward pass. So a gradient
// may differ by a few BF16 steps of its largest value, not more: at most 2^-5 of the tensor's
// largest |gradient|, and the loss (summed in F32 from BF16 logits) by at most 2^-8 of itself.
// A wrong kernel — a transposed operand, a dropped K block, a sign — misses that by far.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "datasets/synthetic.h"
#include "framework/amp/autocast.h"
#include "framework/cpu/gemm.h"
#include "framework/data/loader.h"
#include "framework/nn/models/mlp.h"
#include "framework/nn/models/small_cnn.h"
#include "framework/ops/ops.h"

using hg::DType;
using hg::Tensor;
using hg::cpu::GemmKernel;

namespace {

struct Step {
  double loss;
  std::vector<std::vector<float>> grads;  // one per parameter, in order
};

// One forward and backward under BF16 autocast, with gemm_bf16 on `kernel`.
Step step_on(GemmKernel kernel, hg::nn::Module& model, const hg::Batch& b) {
  hg::cpu::set_gemm_kernel(kernel);
  for (Tensor& p : model.parameters()) p.set_grad(Tensor());
  Tensor loss;
  {
    hg::amp::Autocast ac(DType::BF16);
    loss = hg::cross_entropy(model(b.images), b.labels);
  }
  loss.backward();
  Step s{loss.item(), {}};
  for (Tensor& p : model.parameters()) s.grads.push_back(p.grad().to(DType::F32).to_vector());
  hg::cpu::set_gemm_kernel(GemmKernel::Auto);
  return s;
}

void compare_unit_with_widened(hg::nn::Module& model, const hg::Batch& b) {
  const GemmKernel unit = hg::cpu::gemm_kernel_supported(GemmKernel::Amx)          ? GemmKernel::Amx
                          : hg::cpu::gemm_kernel_supported(GemmKernel::Avx512Bf16) ? GemmKernel::Avx512Bf16
                                                                                   : GemmKernel::Auto;
  if (unit == GemmKernel::Auto) {
    std::printf("SKIP: this CPU has no BF16 unit (AMX or AVX512_BF16) to compare with the F32 path\n");
    std::exit(77);
  }
  const Step on_unit = step_on(unit, model, b);
  const Step widened = step_on(hg::cpu::gemm_kernel(), model, b);
  MESSAGE("loss on " << std::string(unit == GemmKernel::Amx ? "amx" : "avx512_bf16") << " " << on_unit.loss << ", widened "
                     << widened.loss);
  CHECK(std::fabs(on_unit.loss - widened.loss) <= std::ldexp(std::fabs(widened.loss), -8));
  REQUIRE(on_unit.grads.size() == widened.grads.size());
  int differing_tensors = 0;
  for (size_t t = 0; t < widened.grads.size(); ++t) {
    const auto& u = on_unit.grads[t];
    const auto& w = widened.grads[t];
    REQUIRE(u.size() == w.size());
    double largest = 0, worst = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      largest = std::max(largest, double(std::fabs(w[i])));
      worst = std::max(worst, double(std::fabs(u[i] - w[i])));
    }
    differing_tensors += worst > 0;
    INFO("parameter " << t << ": max |difference| " << worst << ", largest |gradient| " << largest);
    CHECK(largest > 0);  // the step reached it: a comparison of zeros proves nothing
    CHECK(worst <= std::ldexp(largest, -5));
  }
  // The two paths are not the same computation (else this test compares nothing).
  MESSAGE(differing_tensors << " of " << widened.grads.size() << " gradients differ in some bits");
}

hg::data::ImageDataset synthetic(int64_t n, int64_t side) {
  hg::data::SyntheticOptions o;
  o.n = n;
  o.height = o.width = side;
  o.noise = 1.0f;
  return hg::data::make_synthetic(o);
}

}  // namespace

TEST_CASE("a BF16 step of the MLP on the CPU's BF16 unit agrees with the widened F32 path") {
  const auto ds = synthetic(128, 28);
  hg::DataLoader loader(ds, {128, false, false, 1});
  hg::Batch b;
  REQUIRE(loader.next(b));
  hg::Generator gen(5);
  hg::nn::MLP model(gen, ds.image_size(), 256, 128, ds.num_classes);
  compare_unit_with_widened(model, b);
}

TEST_CASE("a BF16 step of the SmallCNN on the CPU's BF16 unit agrees with the widened F32 path") {
  const auto ds = synthetic(32, 28);
  hg::DataLoader loader(ds, {32, false, false, 1});
  hg::Batch b;
  REQUIRE(loader.next(b));
  hg::Generator gen(6);
  hg::nn::SmallCNN model(gen);
  compare_unit_with_widened(model, b);
}
