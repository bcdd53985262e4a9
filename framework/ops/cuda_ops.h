#pragma once
// framework/ops/cuda_ops.h — the engine's ops on CUDA tensors: Tensor in, Tensor out.
//
// Each function here is what one `case Device::CUDA:` of an op in framework/ops/*.cpp calls.
// It checks what the kernels need (contiguous memory on the GPU, a dtype with kernels:
// F32, F16 or BF16), allocates the result on the GPU, and calls the plain-pointer kernels of
// cuda/ops and cuda/gemm. Autograd stays in the op: these functions record nothing.
//
// Only compiled into a CUDA build (HG_WITH_CUDA); a CPU-only build never includes it.
#include <cstdint>
#include <vector>

#include "cuda/ops/dtype.h"
#include "cuda/ops/elementwise.h"
#include "cuda/ops/unary.h"
#include "framework/tensor/tensor.h"

namespace hg::cuda {

// The kernels' name for t's dtype; throws naming `op` for F64 (no F64 kernels on the GPU).
Dtype kernel_dtype(const char* op, const Tensor& t);

// ---- elementwise (elementwise.h, unary.h) -----------------------------------------------
// y (out_shape) = a (op) b with broadcasting.
Tensor binary(const char* op, Binary kind, const Tensor& a, const Tensor& b, const Shape& out_shape);
// y = a (op) s, or s (op) a with scalar_first.
Tensor binary_scalar(const char* op, Binary kind, const Tensor& a, double s, bool scalar_first = false);
// The gradient of a broadcast input: g summed down to `shape`.
Tensor sum_to(const Tensor& g, const Shape& shape);
Tensor unary(const char* op, Unary kind, const Tensor& x);
Tensor unary_backward(Unary kind, const Tensor& dy, const Tensor& saved);
Tensor pow(const Tensor& x, double p);
Tensor pow_backward(const Tensor& dy, const Tensor& x, double p);
void add_(Tensor& dst, const Tensor& src, double alpha);  // dst += alpha · src
void mul_(Tensor& dst, double s);                         // dst *= s
void fill_(Tensor& dst, double value);
void copy_(Tensor& dst, const Tensor& src);               // src on any device, any dtype
Tensor cast(const Tensor& x, DType dtype);
Tensor clone(const Tensor& x);
// A row-major copy of any view on the GPU (a transpose, an expand, a slice of a slice).
Tensor contiguous(const Tensor& x);

// ---- loss scaling (amp.h) ------------------------------------------------------------------
// For each defined tensor: g <- g · inv_scale in place (check_only: no change). Returns true
// when any element was inf or NaN. One flag on the GPU for the whole list, read back once.
bool unscale_and_check(const std::vector<Tensor>& grads, float inv_scale, bool check_only);
// The largest finite |value| over every defined tensor of the list (0 when none).
double max_abs_finite(const std::vector<Tensor>& xs);

// ---- reductions (reduce.h) ----------------------------------------------------------------
Tensor sum_all(const char* op, const Tensor& x, double scale);  // shape (), x's dtype
Tensor sum_dim(const char* op, const Tensor& x, int64_t dim, bool keepdim, double scale);
// dx (x_shape) = scale · dy copied along `dim` (dim < 0: every element, for sum_all).
Tensor sum_backward(const Tensor& dy, const Shape& x_shape, int64_t dim, double scale);

// ---- softmax and losses (softmax.h) -------------------------------------------------------
Tensor softmax(const Tensor& x, int64_t dim, bool log);
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int64_t dim, bool log);
// The class ids, checked by the op, copied to the GPU as int32.
std::shared_ptr<Storage> upload_targets(const std::vector<int32_t>& targets);
Tensor cross_entropy(const Tensor& logits, const Storage& targets);
Tensor cross_entropy_backward(const Tensor& logits, const Storage& targets, const Tensor& dloss);

// ---- GEMM (cuda/gemm/matmul.h: the ladder's best rung, or cuBLAS) --------------------------
// C (M, N) = op(A)·op(B) (+ bias on every row), in A's dtype; F16/BF16 accumulate in F32 and
// round once.
Tensor gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
            const Tensor& bias = Tensor());

// ---- convolution, pooling, batch norm (conv.h, batchnorm.h) -------------------------------
struct Conv2dGeometry {
  int64_t N, F, C, H, W, KH, KW, stride, pad;
};
Tensor conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dGeometry& s);
// dx, dw, db in x's dtype; each undefined when not needed.
std::vector<Tensor> conv2d_backward(const Tensor& x, const Tensor& w, const Tensor& dy,
                                    const Conv2dGeometry& s, bool need_dx, bool need_dw, bool need_db);

// argmax: the GPU buffer the backward needs (set by the forward).
Tensor max_pool2d(const Tensor& x, int64_t K, int64_t S, int64_t P, std::shared_ptr<Storage>& argmax);
Tensor max_pool2d_backward(const Tensor& dy, const Storage& argmax, const Shape& x_shape, int64_t K,
                           int64_t S, int64_t P);
Tensor avg_pool2d(const Tensor& x, int64_t K, int64_t S, int64_t P);
Tensor avg_pool2d_backward(const Tensor& dy, const Shape& x_shape, int64_t K, int64_t S, int64_t P);

// Batch norm statistics the backward needs: per-channel mean and 1/√(var + eps), F32 on the GPU.
struct BatchNormSaved {
  Tensor mean, invstd;
};
Tensor batch_norm2d(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                    const Tensor& running_var, bool training, double momentum, double eps,
                    BatchNormSaved& saved);
// dx, dgamma, dbeta (dgamma/dbeta in gdt/bdt).
std::vector<Tensor> batch_norm2d_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma,
                                          const BatchNormSaved& saved, bool training, DType gdt,
                                          DType bdt);

// Dropout: y = x · mask, mask (F32, on the GPU) holding keep_i / (1 − p).
Tensor apply_mask(const Tensor& x, const Tensor& mask);

}  // namespace hg::cuda
