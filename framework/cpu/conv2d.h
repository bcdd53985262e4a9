#pragma once
// framework/cpu/conv2d.h — conv2d forward and backward on the CPU: im2col + GEMM, one image
// at a time, images spread over the threads.
//
// Legend (as in im2col.h): N batch, C input channels, F filters, H W input, OH OW output,
// P = OH·OW, CKK = C·KH·KW.
//
//   forward   y_n (F, P)    = W (F, CKK) · cols_n (CKK, P) + b        cols_n = im2col(x_n)
//   backward  dW (F, CKK)   = Σ_n dy_n (F, P) · cols_nᵀ               sgemm(false, true)
//             db (F)        = Σ_n Σ_p dy_n
//             dx_n          = col2im(Wᵀ (CKK, F) · dy_n (F, P))       sgemm(true, false)
//
// Why one image at a time: cols_n is CKK·P floats (288·196·4 B = 225 KB for chapter 02's
// second conv), so it stays in the core's L2 from im2col to GEMM, and y_n comes out already
// in (N, F, P) order. The batched alternative — one (CKK, N·P) matrix, one big GEMM — moves
// 29 MB through memory for a batch of 128 and then needs a transpose: for chapter 02's
// SmallCNN on the 2-core machine it took about 1.5–2.5× as long (bench_conv prints both). Each thread takes whole images and calls
// the GEMM single-threaded; dW and db are summed in fixed groups of images, so the result is
// the same bits whatever the number of threads (conv2d.cpp).
#include <cstdint>

#include "framework/cpu/im2col.h"

namespace hg {
struct bfloat16;  // framework/dtype/bfloat16.h
}  // namespace hg

namespace hg::cpu {

// x (N, C, H, W), w (F, C, KH, KW), b (F) or nullptr  ->  y (N, F, OH, OW), overwritten.
void conv2d_forward(const float* x, const float* w, const float* b, float* y, int64_t N, int64_t F,
                    const ConvGeometry& g);
void conv2d_forward(const double* x, const double* w, const double* b, double* y, int64_t N,
                    int64_t F, const ConvGeometry& g);

// From dy (N, F, OH, OW): dx (N, C, H, W), dw (F, C, KH, KW), db (F), each overwritten; pass
// nullptr for a gradient that is not needed (its work is skipped).
void conv2d_backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                     float* db, int64_t N, int64_t F, const ConvGeometry& g);
void conv2d_backward(const double* x, const double* w, const double* dy, double* dx, double* dw,
                     double* db, int64_t N, int64_t F, const ConvGeometry& g);

// BF16 images, weights and gradients, F32 results (the caller rounds them): the GEMMs run on
// the CPU's BF16 matrix unit when it has one (gemm_bf16, gemm.h), else on the F32 kernels
// with the operands widened — then bit for bit what the F32 functions give on the widened
// inputs.
void conv2d_forward(const hg::bfloat16* x, const hg::bfloat16* w, const float* b, float* y,
                    int64_t N, int64_t F, const ConvGeometry& g);
void conv2d_backward(const hg::bfloat16* x, const hg::bfloat16* w, const hg::bfloat16* dy,
                     float* dx, float* dw, float* db, int64_t N, int64_t F, const ConvGeometry& g);

}  // namespace hg::cpu
