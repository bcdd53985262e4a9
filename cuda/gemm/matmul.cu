// matmul.h: pick a rung (or cuBLAS), handle transposed operands and tall matrices.
//
// The two switches (backend, TF32) are the hidden state here, set once, from the command
// line. cuBLAS is not linked: cublas_on_demand.h opens it when --gemm cublas first needs it.
#include "cuda/gemm/cublas_on_demand.h"
#include "cuda/gemm/ladder.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/matmul.h"
#include "cuda/gemm/wmma_format.cuh"
#include "cuda/ops/elementwise.h"  // launch_cast
#include "cuda/ops/transpose.h"
#include "cuda/runtime/check.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>

namespace hg::cuda {
namespace {

std::atomic<GemmBackend> g_backend{GemmBackend::Ladder};
std::atomic<bool> g_allow_tf32{false};

// A row-major (rows, cols) operand X, transposed into a temporary when asked: X is pointed at
// the temporary, which the returned DeviceTemp owns (freed at the caller's closing brace).
template <class T>
DeviceTemp untranspose(const T*& X, bool trans, int rows, int cols, DType dt) {
  if (!trans) return DeviceTemp();
  DeviceTemp t(size_t(rows) * cols * sizeof(T));
  launch_transpose(dt, X, cols, rows, t.get());  // stored (cols, rows) -> (rows, cols)
  X = t.as<const T>();
  return t;
}

// rung(M, N, K, A, B, C) on untransposed operands, in row slabs that each fit one launch's
// grid. Every rung matmul uses has 128-row block tiles.
template <class T, class Rung>
void ladder_gemm(bool ta, bool tb, int M, int N, int K, const T* A, const T* B, float* C, DType dt, Rung rung) {
  static_assert(gemm::Rung04::BM == 128 && gemm::WmmaTiles<2>::BM == 128, "slab height assumes 128-row tiles");
  DeviceTemp ta_tmp = untranspose(A, ta, M, K, dt);
  DeviceTemp tb_tmp = untranspose(B, tb, K, N, dt);
  constexpr int64_t kSlabRows = gemm::max_rows_per_launch(128);
  for (int64_t s = 0; s < gemm::row_slab_count(M, kSlabRows); ++s) {
    const gemm::RowSlab r = gemm::row_slab(s, M, kSlabRows);
    rung(int(r.rows), N, K, A + r.first * K, B, C + r.first * N);
  }
}

void note_once(std::once_flag& flag, const char* text) {
  std::call_once(flag, [text] { std::fprintf(stderr, "%s\n", text); });
}

}  // namespace


void set_gemm_backend(GemmBackend backend) { g_backend = backend; }
GemmBackend gemm_backend() { return g_backend; }
const char* gemm_backend_name(GemmBackend backend) { return backend == GemmBackend::Ladder ? "ladder" : "cublas"; }

void set_allow_tf32(bool allow) { g_allow_tf32 = allow; }
bool allow_tf32() { return g_allow_tf32; }

void launch_matmul_f32(bool ta, bool tb, int M, int N, int K, const float* A, const float* B, float* C) {
  bool tf32 = g_allow_tf32;
  if (tf32 && !gemm::has_tensor_cores<float>()) {
    static std::once_flag once;
    note_once(once, "note: TF32 needs tensor cores of sm_80 or newer; F32 matmuls on this GPU stay true F32");
    tf32 = false;
  }
  if (g_backend == GemmBackend::Cublas) {
    cublas_gemm_on_demand(ta, tb, M, N, K, A, B, CUDA_R_32F, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, C);
    return;
  }
  if (tf32) ladder_gemm(ta, tb, M, N, K, A, B, C, DType::F32, gemm::gemm_08_wmma_cp_async_double_buffered<float>);
  else ladder_gemm(ta, tb, M, N, K, A, B, C, DType::F32, gemm::gemm_04_register_blocked);
}

void launch_matmul_f16(bool ta, bool tb, int M, int N, int K, const __half* A, const __half* B, float* C) {
  if (g_backend == GemmBackend::Cublas) {
    cublas_gemm_on_demand(ta, tb, M, N, K, A, B, CUDA_R_16F, CUBLAS_COMPUTE_32F, C);
    return;
  }
  static const bool has_cp_async = device_info(0).cp_async();
  if (has_cp_async) ladder_gemm(ta, tb, M, N, K, A, B, C, DType::F16, gemm::gemm_08_wmma_cp_async_double_buffered<__half>);
  else ladder_gemm(ta, tb, M, N, K, A, B, C, DType::F16, gemm::gemm_07_wmma_skewed<__half>);
}

void launch_matmul_bf16(bool ta, bool tb, int M, int N, int K, const __nv_bfloat16* A, const __nv_bfloat16* B, float* C) {
  if (!gemm::has_tensor_cores<__nv_bfloat16>()) {
    // Widen to F32 (exact) and multiply in true F32: every BF16 product is exact in F32, so
    // these are the numbers of a BF16 tensor core, summed in another order.
    static std::once_flag once;
    note_once(once, "note: BF16 tensor cores need sm_80 or newer; BF16 matmuls on this GPU run in F32 (same values, slower)");
    const size_t a_n = size_t(M) * K, b_n = size_t(K) * N;
    DeviceTemp a32(a_n * sizeof(float)), b32(b_n * sizeof(float));
    launch_cast(DType::BF16, A, DType::F32, a32.get(), int64_t(a_n));
    launch_cast(DType::BF16, B, DType::F32, b32.get(), int64_t(b_n));
    // (true F32 even when TF32 is allowed: a GPU without BF16 tensor cores has no TF32 ones)
    launch_matmul_f32(ta, tb, M, N, K, a32.as<const float>(), b32.as<const float>(), C);
    return;
  }
  if (g_backend == GemmBackend::Cublas) {
    cublas_gemm_on_demand(ta, tb, M, N, K, A, B, CUDA_R_16BF, CUBLAS_COMPUTE_32F, C);
    return;
  }
  ladder_gemm(ta, tb, M, N, K, A, B, C, DType::BF16, gemm::gemm_08_wmma_cp_async_double_buffered<__nv_bfloat16>);
}

}  // namespace hg::cuda
