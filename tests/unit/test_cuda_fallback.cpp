// What a run does about the GPU when it asks for one (framework/train/cli.h, issue: no GPU at
// run time gives one clear message; --device auto falls back to the CPU, --device cuda is an
// error), and that --gemm reaches the GEMM switch of the CUDA backend. Runs everywhere: on a
// machine without a GPU it checks the fallback; with a GPU, that auto picks it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "cuda/gemm/backend.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#include "framework/ops/check.h"
#include "framework/ops/cuda_ops.h"
#include "framework/tensor/tensor.h"
#include "framework/train/cli.h"
#include "framework/version.h"

using namespace hg;

namespace {
std::string error_of(void (*f)()) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// Parses argv with the shared flags; returns CLI11's exit code (0: parsed).
int parse(train::CommonFlags& flags, std::vector<std::string> args) {
  CLI::App app{"test"};
  train::add_common_flags(app, flags);
  std::vector<const char*> argv{"test"};
  for (const auto& a : args) argv.push_back(a.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    return e.get_exit_code();
  }
  return 0;
}
}  // namespace

TEST_CASE("--device auto falls back to the CPU without a GPU, --device cuda is an error") {
  if (cuda_available()) {
    CHECK(train::device_from_flag("auto") == Device::CUDA);
    return;
  }
  CHECK(train::device_from_flag("auto") == Device::CPU);
  CHECK(train::device_from_flag("cpu") == Device::CPU);
  const std::string e = error_of([] { train::device_from_flag("cuda"); });
  INFO("message: " << e);
  if (built_with_cuda())
    CHECK(e.find("no usable CUDA GPU") != std::string::npos);
  else
    CHECK(e == "built without CUDA; use --device cpu");
  CHECK(e.find("use --device cpu") != std::string::npos);
  // a tensor move says the same
  CHECK(error_of([] { Tensor::zeros({2}).to(Device::CUDA); }) == e);
}

TEST_CASE("--gemm and --tf32: parsing fills the flags, apply_settings() sets the process") {
  train::CommonFlags f;
  CHECK(parse(f, {"--device", "auto", "--gemm", "cublas", "--tf32"}) == 0);
  CHECK(f.device == "auto");
  CHECK(f.gemm == "cublas");
  CHECK(f.tf32);
  // parsing alone changes no setting of the process
  CHECK(cuda::gemm_backend() == cuda::GemmBackend::Ladder);
  CHECK_FALSE(cuda::allow_tf32());
  // main() applies them; every build keeps the settings (one without CUDA never reads them)
  train::apply_settings(f);
  CHECK(cuda::gemm_backend() == cuda::GemmBackend::Cublas);
  CHECK(cuda::allow_tf32());
  train::apply_settings(train::CommonFlags{});  // the defaults: the GEMM rungs, no TF32
  CHECK(cuda::gemm_backend() == cuda::GemmBackend::Ladder);
  CHECK_FALSE(cuda::allow_tf32());
  train::CommonFlags g;
  CHECK(parse(g, {"--gemm", "magma"}) != 0);  // a bad value: CLI11 refuses it (exit code 2 in main)
  CHECK(g.gemm == "ladder");
}

TEST_CASE("a build without CUDA: every entry of the GPU layer says so, the runtime has no GPU") {
  if (built_with_cuda()) return;  // the layer's wrappers run instead (tests/gpu)
  const std::string tail = ": built without CUDA; use --device cpu";
  CHECK(error_of([] { no_cuda_build("relu"); }) == "relu" + tail);
  CHECK(error_of([] { cuda::unary("relu", cuda::Unary::Relu, Tensor::ones({2})); }) == "relu" + tail);
  CHECK(error_of([] { cuda::gemm(false, false, 1, 1, 1, Tensor::ones({1, 1}), Tensor::ones({1, 1})); }) ==
        "matmul" + tail);
  CHECK(error_of([] { cuda::cast(Tensor::ones({2}), DType::F16); }) == "cast" + tail);
  CHECK(error_of([] { cuda::softmax(Tensor::ones({2}), 0, true); }) == "log_softmax" + tail);
  CHECK(error_of([] {
          Tensor p = Tensor::ones({2}), buf;
          cuda::sgd_step(p, p, buf, 0.1, 0, 0, 0, false, true);
        }) == "SGD" + tail);
  CHECK(error_of([] { cuda::unscale_and_check({Tensor::ones({2})}, 0.5f, false); }) == "unscale_" + tail);
  // chapter 12's GPT ops
  CHECK(error_of([] { cuda::embedding(Tensor::ones({3, 2}), {0, 2}, {2, 2}); }) == "embedding" + tail);
  CHECK(error_of([] { cuda::embedding_backward(Tensor::ones({2, 2}), {0, 2}, 3, 2); }) == "embedding backward" + tail);
  CHECK(error_of([] {
          cuda::LayerNormSaved saved;
          cuda::layer_norm(Tensor::ones({2, 3}), Tensor(), Tensor(), 1e-5, saved);
        }) == "layer_norm" + tail);
  CHECK(error_of([] { cuda::causal_softmax(Tensor::ones({2, 2}), 1.0); }) == "causal_softmax" + tail);
  CHECK(error_of([] { cuda::causal_mask(Tensor::ones({2, 2}), 0.0); }) == "causal_mask" + tail);
  CHECK(error_of([] {
          cuda::batched_gemm(false, false, 1, 1, 1, Tensor::ones({2, 1, 1}), Tensor::ones({2, 1, 1}), {0, 1}, {0, 1},
                             {2, 1, 1});
        }) == "batched matmul" + tail);
  CHECK(error_of([] {
          Tensor window = Tensor::zeros({2});
          cuda::copy_into_view(window, Tensor::ones({2}));
        }) == "copy_into_view" + tail);
  CHECK_FALSE(cuda::available());
  CHECK(cuda::device_count() == 0);
  CHECK(cuda::no_gpu_reason() == "this build has no CUDA backend");
  CHECK(error_of([] { cuda::device_malloc(16); }) == "built without CUDA; use --device cpu");
}
