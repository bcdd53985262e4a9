// framework/cuda/no_cuda.cpp — the GPU layer in a build without CUDA (compiled instead of
// framework/cuda/*.cpp and cuda/; framework/CMakeLists.txt picks one or the other).
//
// Every entry of the layer throws "<op>: built without CUDA; use --device cpu"; the runtime
// says there is no GPU, and the GEMM settings are kept but nothing reads them. A CPU-only
// build never gets this far in practice: no tensor can be created on Device::CUDA
// (Storage::allocate calls require_cuda first), so these bodies are the guarantee behind the
// ops' `case Device::CUDA:` lines, which need no #if.
#include <stdexcept>
#include <string>

#include "cuda/gemm/backend.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#include "framework/ops/check.h"
#include "framework/ops/cuda_ops.h"

namespace hg::cuda {

// ---- the layer (framework/cuda/*.h) -------------------------------------------------------
Tensor upload(const Tensor&) { no_cuda_build("to"); }
Tensor download(const Tensor&) { no_cuda_build("to"); }
Tensor cast(const Tensor&, DType) { no_cuda_build("cast"); }
Tensor clone(const Tensor&) { no_cuda_build("clone"); }
Tensor contiguous(const Tensor&) { no_cuda_build("contiguous"); }
void copy_(Tensor&, const Tensor&) { no_cuda_build("copy_"); }
void copy_into_view(Tensor&, const Tensor&) { no_cuda_build("copy_into_view"); }

Tensor binary(const char* op, Binary, const Tensor&, const Tensor&, const Shape&) { no_cuda_build(op); }
Tensor binary_scalar(const char* op, Binary, const Tensor&, double, bool) { no_cuda_build(op); }
Tensor sum_to(const Tensor&, const Shape&) { no_cuda_build("sum_to"); }
Tensor unary(const char* op, Unary, const Tensor&) { no_cuda_build(op); }
Tensor unary_backward(Unary, const Tensor&, const Tensor&) { no_cuda_build("unary backward"); }
Tensor pow(const Tensor&, double) { no_cuda_build("pow"); }
Tensor pow_backward(const Tensor&, const Tensor&, double) { no_cuda_build("pow backward"); }
void add_(Tensor&, const Tensor&, double) { no_cuda_build("add_"); }
void mul_(Tensor&, double) { no_cuda_build("mul_"); }
void fill_(Tensor&, double) { no_cuda_build("fill_"); }
Tensor apply_mask(const Tensor&, const Tensor&) { no_cuda_build("dropout"); }

Tensor gemm(bool, bool, int64_t, int64_t, int64_t, const Tensor&, const Tensor&, const Tensor&) {
  no_cuda_build("matmul");
}
Tensor batched_gemm(bool, bool, int64_t, int64_t, int64_t, const Tensor&, const Tensor&, const std::vector<int64_t>&,
                    const std::vector<int64_t>&, const Shape&) {
  no_cuda_build("batched matmul");
}

Tensor conv2d_forward(const Tensor&, const Tensor&, const Tensor&, const ConvGeometry&) { no_cuda_build("conv2d"); }
std::vector<Tensor> conv2d_backward(const Tensor&, const Tensor&, const Tensor&, const ConvGeometry&, bool, bool,
                                    bool) {
  no_cuda_build("conv2d backward");
}

Tensor max_pool2d(const Tensor&, int64_t, int64_t, int64_t, std::shared_ptr<Storage>&) {
  no_cuda_build("max_pool2d");
}
Tensor max_pool2d_backward(const Tensor&, const Storage&, const Shape&, int64_t, int64_t, int64_t) {
  no_cuda_build("max_pool2d backward");
}
Tensor avg_pool2d(const Tensor&, int64_t, int64_t, int64_t) { no_cuda_build("avg_pool2d"); }
Tensor avg_pool2d_backward(const Tensor&, const Shape&, int64_t, int64_t, int64_t) {
  no_cuda_build("avg_pool2d backward");
}

Tensor sum_all(const char* op, const Tensor&, double) { no_cuda_build(op); }
Tensor sum_dim(const char* op, const Tensor&, int64_t, bool, double) { no_cuda_build(op); }
Tensor sum_backward(const Tensor&, const Shape&, int64_t, double) { no_cuda_build("sum backward"); }

Tensor softmax(const Tensor&, int64_t, bool log) { no_cuda_build(log ? "log_softmax" : "softmax"); }
Tensor softmax_backward(const Tensor&, const Tensor&, int64_t, bool log) {
  no_cuda_build(log ? "log_softmax backward" : "softmax backward");
}
std::shared_ptr<Storage> upload_targets(const std::vector<int32_t>&) { no_cuda_build("cross_entropy"); }
Tensor cross_entropy(const Tensor&, const Storage&) { no_cuda_build("cross_entropy"); }
Tensor cross_entropy_backward(const Tensor&, const Storage&, const Tensor&) { no_cuda_build("cross_entropy"); }

Tensor batch_norm2d(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, bool, double, double,
                    BatchNormSaved&) {
  no_cuda_build("batch_norm2d");
}
std::vector<Tensor> batch_norm2d_backward(const Tensor&, const Tensor&, const Tensor&, const BatchNormSaved&, bool,
                                          DType, DType) {
  no_cuda_build("batch_norm2d backward");
}

Tensor layer_norm(const Tensor&, const Tensor&, const Tensor&, double, LayerNormSaved&) { no_cuda_build("layer_norm"); }
std::vector<Tensor> layer_norm_backward(const Tensor&, const Tensor&, const Tensor&, const LayerNormSaved&, bool, bool,
                                        bool, DType, DType) {
  no_cuda_build("layer_norm backward");
}

Tensor embedding(const Tensor&, const std::vector<int32_t>&, const Shape&) { no_cuda_build("embedding"); }
Tensor embedding_backward(const Tensor&, const std::vector<int32_t>&, int64_t, int64_t) {
  no_cuda_build("embedding backward");
}

Tensor causal_mask(const Tensor&, double) { no_cuda_build("causal_mask"); }
Tensor causal_softmax(const Tensor&, double) { no_cuda_build("causal_softmax"); }
Tensor causal_softmax_backward(const Tensor&, const Tensor&, double) { no_cuda_build("causal_softmax backward"); }

void sgd_step(Tensor&, const Tensor&, Tensor&, double, double, double, double, bool, bool) {
  no_cuda_build("SGD");
}
void adam_step(Tensor&, const Tensor&, Tensor&, Tensor&, double, double, double, double, double, bool decoupled,
               int64_t) {
  no_cuda_build(decoupled ? "AdamW" : "Adam");
}

bool unscale_and_check(const std::vector<Tensor>&, float, bool check_only) {
  no_cuda_build(check_only ? "grads_have_inf_or_nan" : "unscale_");
}
double max_abs_finite(const std::vector<Tensor>&) { no_cuda_build("max_abs_finite"); }

// ---- the runtime (cuda/runtime/device.h, memory.h) -----------------------------------------
namespace {
[[noreturn]] void no_cuda() { throw std::runtime_error("built without CUDA; use --device cpu"); }
}  // namespace

int device_count() { return 0; }
std::string no_gpu_reason() { return "this build has no CUDA backend"; }
DeviceInfo device_info(int) { no_cuda(); }
std::string describe(const DeviceInfo&) { no_cuda(); }
void synchronize() {}

bool available() { return false; }
void* device_malloc(size_t) { no_cuda(); }
void device_free(void* p) {
  if (p) no_cuda();
}
void copy_host_to_device(void*, const void*, size_t) { no_cuda(); }
void copy_device_to_host(void*, const void*, size_t) { no_cuda(); }
void copy_device_to_device(void*, const void*, size_t) { no_cuda(); }
size_t live_bytes() { return 0; }
size_t peak_bytes() { return 0; }
void reset_peak_bytes() {}
size_t cached_bytes() { return 0; }
void empty_cache() {}
void device_memset_zero(void*, size_t) { no_cuda(); }
void device_fill(void*, const void*, size_t, int64_t) { no_cuda(); }
size_t allocation_granularity() { return 512; }

// ---- the GEMM settings (cuda/gemm/backend.h): kept, read by nothing ------------------------
namespace {
GemmBackend g_backend = GemmBackend::Ladder;
bool g_allow_tf32 = false;
}  // namespace

void set_gemm_backend(GemmBackend backend) { g_backend = backend; }
GemmBackend gemm_backend() { return g_backend; }
const char* gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::Cublas ? "cublas" : "ladder"; }
void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

}  // namespace hg::cuda
