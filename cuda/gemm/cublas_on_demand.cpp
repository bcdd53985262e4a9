// cublas_on_demand.h: open libcublas when the first `--gemm cublas` matmul runs.
#include "cuda/gemm/cublas_on_demand.h"

#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <string>

namespace hg::cuda {
namespace {

// The exported cublasGemmEx, as cublas_api.h declares it. (The header adds a C++ overload with a
// cudaDataType compute type, so `decltype(&cublasGemmEx)` would be ambiguous.)
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int m, int n, int k,
                                    const void* alpha, const void* A, cudaDataType, int lda, const void* B,
                                    cudaDataType, int ldb, const void* beta, void* C, cudaDataType, int ldc,
                                    cublasComputeType_t, cublasGemmAlgo_t);

// The three functions, with the types cublas_v2.h declares for them. (cublasCreate is a macro
// for cublasCreate_v2, the name the library exports.)
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  GemmExFn gemm_ex = nullptr;
  decltype(&cublasGetStatusString) status_string = nullptr;
  cublasHandle_t handle = nullptr;
};

void* symbol(void* lib, const char* name, const std::string& path) {
  void* f = dlsym(lib, name);
  if (!f) throw std::runtime_error("--gemm cublas: " + path + " has no " + name);
  return f;
}

// HG_CUBLAS_LIBRARY: the library CMake found at build time (its full path); if it has moved,
// the loader's search path by soname.
Cublas open_cublas() {
  std::string tried;
  void* lib = nullptr;
  for (const char* path : {HG_CUBLAS_LIBRARY, HG_CUBLAS_SONAME}) {
    lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib) { tried = path; break; }
    tried += std::string(tried.empty() ? "" : "; ") + dlerror();
  }
  if (!lib) throw std::runtime_error("--gemm cublas: cannot open cuBLAS (" + tried + ")");
  Cublas c;
  c.create = reinterpret_cast<decltype(c.create)>(symbol(lib, "cublasCreate_v2", tried));
  c.gemm_ex = reinterpret_cast<decltype(c.gemm_ex)>(symbol(lib, "cublasGemmEx", tried));
  c.status_string = reinterpret_cast<decltype(c.status_string)>(symbol(lib, "cublasGetStatusString", tried));
  const cublasStatus_t st = c.create(&c.handle);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cublasCreate failed: ") + c.status_string(st));
  return c;  // the library stays open for the life of the process
}

const Cublas& cublas() {
  static std::once_flag once;
  static Cublas c;
  std::call_once(once, [] { c = open_cublas(); });  // throws again at the next call if it failed
  return c;
}

}  // namespace

// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ (see 00_cublas.cu).
void cublas_gemm_on_demand(bool ta, bool tb, int M, int N, int K, const void* A, const void* B, cudaDataType in,
                           cublasComputeType_t compute, float* C) {
  const Cublas& c = cublas();
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t st =
      c.gemm_ex(c.handle, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, in,
                tb ? K : N, A, in, ta ? M : K, &beta, C, CUDA_R_32F, N, compute, CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublasGemmEx (--gemm cublas) failed: cuBLAS status " + std::to_string(int(st)) + " (" +
                             c.status_string(st) + ")");
}

}  // namespace hg::cuda
