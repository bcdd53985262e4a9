#pragma once
// The GEMM settings of the engine, process-wide: which GEMM runs matmul, linear and conv2d on
// the GPU (the ladder's best rung, or cuBLAS for comparison), and whether F32 may use TF32.
// Plain C++ (no CUDA headers): the command line (framework/train/cli.h, --gemm and --tf32)
// sets them in every build; a build without CUDA keeps them (framework/cuda/no_cuda.cpp) and
// nothing reads them.
namespace hg::cuda {

enum class GemmBackend { Ladder, Cublas };
void set_gemm_backend(GemmBackend backend);   // default: Ladder
GemmBackend gemm_backend();
const char* gemm_backend_name(GemmBackend backend);  // "ladder" / "cublas"

// TF32 for F32 matmuls and convolutions, process-wide, off by default: PyTorch's
// torch.backends.cuda.matmul.allow_tf32. With it on, F32 operands are rounded to TF32 (10
// mantissa bits, ties away from zero, as the hardware's cvt.rna.tf32.f32) and multiplied on
// the tensor cores with F32 accumulation: about 3 decimal digits per operand instead of 7.
void set_allow_tf32(bool allow);
bool allow_tf32();

}  // namespace hg::cuda
