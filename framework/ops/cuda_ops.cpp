// framework/ops/cuda_ops.cpp — Tensor-level wrappers around the CUDA kernels (cuda_ops.h).
//
// The pattern of every function: check, allocate the result on the GPU, call one kernel
// entry with raw device pointers. F16/BF16 go to kernels that compute in F32 and round once,
// like the CPU engine; kernels that exist only in F32 (pooling, batch norm) get F32 copies
// of low-precision inputs, and their results are cast back — again one rounding.
#if HG_WITH_CUDA

#include "framework/ops/cuda_ops.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "cuda/gemm/matmul.h"
#include "cuda/ops/amp.h"
#include "cuda/ops/batchnorm.h"
#include "cuda/ops/conv.h"
#include "cuda/ops/optim.h"
#include "cuda/ops/reduce.h"
#include "cuda/ops/softmax.h"
#include "cuda/ops/strided.h"
#include "cuda/runtime/memory.h"
#include "framework/cpu/copy.h"
#include "framework/ops/check.h"

namespace hg::cuda {

namespace {

// Every kernel reads and writes plain row-major memory on the GPU.
void need_gpu_contiguous(const char* op, const Tensor& t, const char* what) {
  if (t.device() != Device::CUDA)
    op_error(op, fmt::format("{} is on the CPU; move it with .to(Device::CUDA)", what));
  if (!t.is_contiguous())
    op_error(op, fmt::format("{} is a non-contiguous view on the GPU; the CUDA kernels need "
                             "row-major memory", what));
}

Tensor gpu_empty(const Shape& shape, DType dt) { return Tensor::empty(shape, dt, Device::CUDA); }

// Σ over x viewed as (outer, n, inner) along `dim`.
void split_at(const Shape& s, int64_t dim, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1;
  inner = 1;
  n = s[dim];
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (int64_t d = dim + 1; d < static_cast<int64_t>(s.size()); ++d) inner *= s[d];
}

// F32 input for the F32-only kernels: x itself, or an F32 copy.
Tensor as_f32(const Tensor& x) { return x.dtype() == DType::F32 ? x : cast(x, DType::F32); }

ConvGeometry conv_geometry(int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, int64_t S, int64_t P) {
  ConvGeometry g;
  g.C = C;
  g.H = H;
  g.W = W;
  g.KH = KH;
  g.KW = KW;
  g.stride_h = g.stride_w = S;
  g.pad_h = g.pad_w = P;
  return g;
}

// C (M, N) F32 = op(A)·op(B) for A, B of dtype dt, on the path cuda/gemm/matmul.h picks:
// F16 and BF16 on the tensor cores; F32 on the SIMT rung, or on TF32 tensor cores when allowed.
void gemm_f32_out(Dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, const void* A,
                  const void* B, float* C) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    fill(Dtype::F32, C, 0.0f, M * N);
    return;
  }
  // The ladder's kernels index with 32-bit ints (an element index must fit in an int).
  constexpr int64_t kMax = std::numeric_limits<int>::max();
  if (M * K > kMax || K * N > kMax || M * N > kMax)
    op_error("matmul", fmt::format("({}x{})·({}x{}) has a matrix of more than 2^31 - 1 elements; "
                                   "the GEMM kernels index with 32-bit ints", M, K, K, N));
  switch (dt) {
    case Dtype::F32:
      matmul_f32(ta, tb, int(M), int(N), int(K), static_cast<const float*>(A),
                 static_cast<const float*>(B), C);
      return;
    case Dtype::F16:
      matmul_f16(ta, tb, int(M), int(N), int(K), static_cast<const __half*>(A),
                 static_cast<const __half*>(B), C);
      return;
    case Dtype::BF16:
      matmul_bf16(ta, tb, int(M), int(N), int(K), static_cast<const __nv_bfloat16*>(A),
                  static_cast<const __nv_bfloat16*>(B), C);
      return;
  }
}

}  // namespace

Dtype kernel_dtype(const char* op, const Tensor& t) {
  switch (t.dtype()) {
    case DType::F32: return Dtype::F32;
    case DType::F16: return Dtype::F16;
    case DType::BF16: return Dtype::BF16;
    case DType::F64: break;
  }
  op_error(op, "F64 tensors have no CUDA kernels; cast to F32, or compute in F64 on the CPU");
}

// ---- elementwise ----------------------------------------------------------------------------

Tensor binary(const char* op, Binary kind, const Tensor& a, const Tensor& b, const Shape& out_shape) {
  need_gpu_contiguous(op, a, "a");
  need_gpu_contiguous(op, b, "b");
  Tensor y = gpu_empty(out_shape, a.dtype());
  binary(kind, kernel_dtype(op, a), a.raw_data(), b.raw_data(), y.raw_data(),
         make_broadcast(a.shape(), b.shape()));
  return y;
}

Tensor binary_scalar(const char* op, Binary kind, const Tensor& a, double s, bool scalar_first) {
  need_gpu_contiguous(op, a, "x");
  Tensor y = gpu_empty(a.shape(), a.dtype());
  binary_scalar(kind, kernel_dtype(op, a), a.raw_data(), static_cast<float>(s), y.raw_data(),
                a.numel(), scalar_first);
  return y;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  need_gpu_contiguous("sum_to", g, "gradient");
  Tensor out = gpu_empty(shape, g.dtype());
  // a = the target (strides 0 where it was repeated), out_shape = g's shape
  sum_to(kernel_dtype("sum_to", g), g.raw_data(), make_broadcast(shape, g.shape()), out.raw_data(),
         out.numel());
  return out;
}

Tensor unary(const char* op, Unary kind, const Tensor& x) {
  need_gpu_contiguous(op, x, "x");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  unary_forward(kind, kernel_dtype(op, x), x.raw_data(), y.raw_data(), x.numel());
  return y;
}

Tensor unary_backward(Unary kind, const Tensor& dy_in, const Tensor& saved) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("unary backward", dy, "dy");
  need_gpu_contiguous("unary backward", saved, "saved input");
  Tensor dx = gpu_empty(dy.shape(), dy.dtype());
  unary_backward(kind, kernel_dtype("unary backward", dy), dy.raw_data(), saved.raw_data(),
                 dx.raw_data(), dy.numel());
  return dx;
}

Tensor pow(const Tensor& x, double p) {
  need_gpu_contiguous("pow", x, "x");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  pow_forward(kernel_dtype("pow", x), x.raw_data(), y.raw_data(), x.numel(), static_cast<float>(p));
  return y;
}

Tensor pow_backward(const Tensor& dy_in, const Tensor& x, double p) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("pow backward", dy, "dy");
  need_gpu_contiguous("pow backward", x, "saved input");
  Tensor dx = gpu_empty(dy.shape(), dy.dtype());
  pow_backward(kernel_dtype("pow backward", dy), dy.raw_data(), x.raw_data(), dx.raw_data(),
               dy.numel(), static_cast<float>(p));
  return dx;
}

void add_(Tensor& dst, const Tensor& src_in, double alpha) {
  need_gpu_contiguous("add_", dst, "dst");
  Tensor src = src_in.detach().to(Device::CUDA).contiguous().to(dst.dtype());
  need_gpu_contiguous("add_", src, "src");
  axpy(kernel_dtype("add_", dst), dst.raw_data(), src.raw_data(), static_cast<float>(alpha),
       dst.numel());
}

void mul_(Tensor& dst, double s) {
  need_gpu_contiguous("mul_", dst, "dst");
  scale(kernel_dtype("mul_", dst), dst.raw_data(), static_cast<float>(s), dst.numel());
}

void fill_(Tensor& dst, double value) {
  need_gpu_contiguous("fill_", dst, "dst");
  fill(kernel_dtype("fill_", dst), dst.raw_data(), static_cast<float>(value), dst.numel());
}

void copy_(Tensor& dst, const Tensor& src_in) {
  need_gpu_contiguous("copy_", dst, "dst");
  Tensor src = src_in.detach();
  if (src.device() == Device::CPU) {  // convert on the CPU (any dtype), then one upload
    Tensor s = src.to(dst.dtype()).contiguous();
    copy_host_to_device(dst.raw_data(), s.raw_data(), dst.nbytes());
    return;
  }
  need_gpu_contiguous("copy_", src, "src");
  if (src.dtype() == dst.dtype())
    copy_device_to_device(dst.raw_data(), src.raw_data(), dst.nbytes());
  else
    cast(kernel_dtype("copy_", src), src.raw_data(), kernel_dtype("copy_", dst), dst.raw_data(),
         dst.numel());
}

Tensor cast(const Tensor& x, DType dtype) {
  if (x.dtype() == dtype) return x;
  need_gpu_contiguous("cast", x, "x");
  Tensor y = gpu_empty(x.shape(), dtype);
  const Dtype from = kernel_dtype("cast", x);
  cast(from, x.raw_data(), kernel_dtype("cast", y), y.raw_data(), x.numel());
  return y;
}

Tensor contiguous(const Tensor& x) {
  if (x.device() != Device::CUDA) op_error("contiguous", "x is on the CPU");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  if (x.dim() > kMaxViewDims)
    op_error("contiguous", fmt::format("views of more than {} dims are not supported on the GPU",
                                       kMaxViewDims));
  // raw_data() is already advanced to the view's first element (its offset).
  copy_strided(kernel_dtype("contiguous", x), x.raw_data(), make_strided_view(x.shape(), x.strides()),
               y.raw_data(), x.numel());
  return y;
}

bool unscale_and_check(const std::vector<Tensor>& grads, float inv_scale, bool check_only) {
  Tensor flag = gpu_empty({1}, DType::F32);  // 4 bytes on the GPU, used as one int
  int* found = static_cast<int*>(flag.raw_data());
  fill(Dtype::F32, flag.raw_data(), 0.0f, 1);  // all-zero bits: the int 0
  for (const Tensor& g : grads) {
    if (!g.defined()) continue;
    need_gpu_contiguous(check_only ? "grads_have_inf_or_nan" : "unscale_", g, "gradient");
    if (check_only)
      check_finite(kernel_dtype("grads_have_inf_or_nan", g), g.raw_data(), g.numel(), found);
    else
      unscale_and_check(kernel_dtype("unscale_", g), g.raw_data(), g.numel(), inv_scale, found);
  }
  int host = 0;
  copy_device_to_host(&host, found, sizeof(int));  // waits for the kernels above
  return host != 0;
}

double max_abs_finite(const std::vector<Tensor>& xs) {
  Tensor out = gpu_empty({1}, DType::F32);
  fill(Dtype::F32, out.raw_data(), 0.0f, 1);
  for (const Tensor& x : xs) {
    if (!x.defined()) continue;
    need_gpu_contiguous("max_abs_finite", x, "x");
    max_abs_finite(kernel_dtype("max_abs_finite", x), x.raw_data(), x.numel(),
                   static_cast<float*>(out.raw_data()));
  }
  return out.item();
}

Tensor clone(const Tensor& x) {
  if (x.device() == Device::CUDA && !x.is_contiguous()) return contiguous(x);  // a fresh copy too
  need_gpu_contiguous("clone", x, "x");
  Tensor y = gpu_empty(x.shape(), x.dtype());
  copy_device_to_device(y.raw_data(), x.raw_data(), x.nbytes());
  return y;
}

// ---- reductions -----------------------------------------------------------------------------

Tensor sum_all(const char* op, const Tensor& x, double scale) {
  need_gpu_contiguous(op, x, "x");
  Tensor y = gpu_empty({}, x.dtype());
  sum_all(kernel_dtype(op, x), x.raw_data(), x.numel(), y.raw_data(), static_cast<float>(scale));
  return y;
}

Tensor sum_dim(const char* op, const Tensor& x, int64_t dim, bool keepdim, double scale) {
  need_gpu_contiguous(op, x, "x");
  int64_t outer, n, inner;
  split_at(x.shape(), dim, outer, n, inner);
  Shape out_shape = x.shape();
  if (keepdim) out_shape[dim] = 1;
  else out_shape.erase(out_shape.begin() + dim);
  Tensor y = gpu_empty(out_shape, x.dtype());
  sum_dim(kernel_dtype(op, x), x.raw_data(), outer, n, inner, y.raw_data(), static_cast<float>(scale));
  return y;
}

Tensor sum_backward(const Tensor& dy_in, const Shape& x_shape, int64_t dim, double scale) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("sum backward", dy, "dy");
  int64_t outer = 1, n = shape_numel(x_shape), inner = 1;  // dim < 0: all of x is one row
  if (dim >= 0) split_at(x_shape, dim, outer, n, inner);
  Tensor dx = gpu_empty(x_shape, dy.dtype());
  sum_dim_backward(kernel_dtype("sum backward", dy), dy.raw_data(), outer, n, inner, dx.raw_data(),
                   static_cast<float>(scale));
  return dx;
}

// ---- softmax and losses ---------------------------------------------------------------------

Tensor softmax(const Tensor& x, int64_t dim, bool log) {
  const char* op = log ? "log_softmax" : "softmax";
  need_gpu_contiguous(op, x, "x");
  int64_t outer, n, inner;
  split_at(x.shape(), dim, outer, n, inner);
  Tensor y = gpu_empty(x.shape(), x.dtype());
  softmax_forward(kernel_dtype(op, x), x.raw_data(), y.raw_data(), outer, n, inner, log);
  return y;
}

Tensor softmax_backward(const Tensor& y, const Tensor& dy_in, int64_t dim, bool log) {
  const char* op = log ? "log_softmax backward" : "softmax backward";
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous(op, dy, "dy");
  int64_t outer, n, inner;
  split_at(y.shape(), dim, outer, n, inner);
  Tensor dx = gpu_empty(y.shape(), y.dtype());
  softmax_backward(kernel_dtype(op, y), y.raw_data(), dy.raw_data(), dx.raw_data(), outer, n, inner, log);
  return dx;
}

std::shared_ptr<Storage> upload_targets(const std::vector<int32_t>& targets) {
  auto s = Storage::allocate(targets.size() * sizeof(int32_t), Device::CUDA);
  copy_host_to_device(s->data, targets.data(), targets.size() * sizeof(int32_t));
  return s;
}

Tensor cross_entropy(const Tensor& logits, const Storage& targets) {
  need_gpu_contiguous("cross_entropy", logits, "logits");
  Tensor loss = gpu_empty({}, logits.dtype());
  cross_entropy_forward(kernel_dtype("cross_entropy", logits), logits.raw_data(),
                        static_cast<const int32_t*>(targets.data), logits.size(0), logits.size(1),
                        loss.raw_data());
  return loss;
}

Tensor cross_entropy_backward(const Tensor& logits, const Storage& targets, const Tensor& dloss_in) {
  // the kernel reads dloss as a device scalar of the logits' dtype
  Tensor dloss = dloss_in.detach().to(logits.dtype()).to(Device::CUDA);
  Tensor dx = gpu_empty(logits.shape(), logits.dtype());
  cross_entropy_backward(kernel_dtype("cross_entropy", logits), logits.raw_data(),
                         static_cast<const int32_t*>(targets.data), dloss.raw_data(), logits.size(0),
                         logits.size(1), dx.raw_data());
  return dx;
}

// ---- GEMM -----------------------------------------------------------------------------------

Tensor gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const Tensor& A, const Tensor& B,
            const Tensor& bias) {
  need_gpu_contiguous("matmul", A, "a");
  need_gpu_contiguous("matmul", B, "b");
  const Dtype dt = kernel_dtype("matmul", A);
  // the F32 accumulator: the result itself for F32, a temporary for F16/BF16
  Tensor acc = gpu_empty({M, N}, DType::F32);
  gemm_f32_out(dt, ta, tb, M, N, K, A.raw_data(), B.raw_data(), static_cast<float*>(acc.raw_data()));
  if (bias.defined()) {  // + bias on every row, still in F32: the result rounds once
    Tensor b32 = as_f32(bias.detach().contiguous());
    need_gpu_contiguous("linear", b32, "bias");
    binary(Binary::Add, Dtype::F32, acc.raw_data(), b32.raw_data(), acc.raw_data(),
           make_broadcast({M, N}, {N}));
  }
  return A.dtype() == DType::F32 ? acc : cast(acc, A.dtype());
}

// ---- convolution ----------------------------------------------------------------------------
// The CPU engine's recipe over the whole batch, one GEMM per convolution (cuda/ops/conv.h):
//   forward   cols (CKK, N·P) = im2col(x);  Y' (F, N·P) = W · cols;  y = swap(Y') + b
//   backward  dY' = swap(dy);  dW = dY' · colsᵀ;  dcols = Wᵀ · dY';  dx = col2im(dcols);  db = Σ dY
// The columns and the GEMM operands keep x's dtype (F16 and BF16 on the tensor cores, F32 on
// the SIMT rung or TF32); the GEMM accumulates in F32, and each result is rounded once to x's
// dtype. A very large batch is split into a few GEMMs of many images (conv_images_per_gemm).

namespace {
const char* bytes_at(const Tensor& t, int64_t elements) {
  return static_cast<const char*>(t.raw_data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}
char* bytes_at(Tensor& t, int64_t elements) {
  return static_cast<char*>(t.raw_data()) + elements * static_cast<int64_t>(dtype_size(t.dtype()));
}
}  // namespace

Tensor conv2d_forward(const Tensor& x, const Tensor& w_in, const Tensor& b, const Conv2dGeometry& s) {
  need_gpu_contiguous("conv2d", x, "x");
  need_gpu_contiguous("conv2d", w_in, "weight");
  Tensor w = w_in.dtype() == x.dtype() ? w_in : cast(w_in, x.dtype());
  const Dtype kt = kernel_dtype("conv2d", x);
  const ConvGeometry g = conv_geometry(s.C, s.H, s.W, s.KH, s.KW, s.stride, s.pad);
  const int64_t P = g.positions(), CKK = g.patch(), image = s.C * s.H * s.W;
  const int64_t nb = conv_images_per_gemm(CKK, s.F, P, s.N);
  Tensor y = gpu_empty({s.N, s.F, g.out_h(), g.out_w()}, x.dtype());
  Tensor b32 = b.defined() ? as_f32(b.detach().contiguous()) : Tensor();
  Tensor cols = gpu_empty({CKK, nb * P}, x.dtype());
  Tensor acc = gpu_empty({s.F, nb * P}, DType::F32);  // Y' of nb images
  for (int64_t n0 = 0; n0 < s.N; n0 += nb) {
    const int64_t n = std::min(nb, s.N - n0);
    im2col(kt, bytes_at(x, n0 * image), n, g, cols.raw_data());
    gemm_f32_out(kt, false, false, s.F, n * P, CKK, w.raw_data(), cols.raw_data(),
                 static_cast<float*>(acc.raw_data()));
    conv_output(static_cast<const float*>(acc.raw_data()),
                b32.defined() ? static_cast<const float*>(b32.raw_data()) : nullptr, n, s.F, P, kt,
                bytes_at(y, n0 * s.F * P));
  }
  return y;
}

std::vector<Tensor> conv2d_backward(const Tensor& x, const Tensor& w_in, const Tensor& dy_in,
                                    const Conv2dGeometry& s, bool need_dx, bool need_dw, bool need_db) {
  const DType dt = x.dtype();
  Tensor w = w_in.dtype() == dt ? w_in : cast(w_in, dt);
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("conv2d backward", dy, "dy");
  if (dy.dtype() != dt) dy = cast(dy, dt);
  const Dtype kt = kernel_dtype("conv2d", x);
  const ConvGeometry g = conv_geometry(s.C, s.H, s.W, s.KH, s.KW, s.stride, s.pad);
  const int64_t P = g.positions(), CKK = g.patch(), image = s.C * s.H * s.W;
  const int64_t nb = conv_images_per_gemm(CKK, s.F, P, s.N);

  Tensor dx = need_dx ? gpu_empty(x.shape(), DType::F32) : Tensor();          // F32, rounded once at the end
  Tensor dw = need_dw ? gpu_empty(w.shape(), DType::F32) : Tensor();
  Tensor part = need_dw && nb < s.N ? gpu_empty({s.F, CKK}, DType::F32) : Tensor();  // dW of one GEMM
  Tensor dyF = gpu_empty({s.F, nb * P}, dt);                                         // dY' of nb images
  Tensor cols = need_dw ? gpu_empty({CKK, nb * P}, dt) : Tensor();
  Tensor dcols = need_dx ? gpu_empty({CKK, nb * P}, DType::F32) : Tensor();
  for (int64_t n0 = 0; n0 < s.N; n0 += nb) {
    const int64_t n = std::min(nb, s.N - n0);
    swap01(kt, bytes_at(dy, n0 * s.F * P), s.F, n, P, dyF.raw_data());  // (n, F, P) -> (F, n, P)
    if (need_dw) {
      im2col(kt, bytes_at(x, n0 * image), n, g, cols.raw_data());
      Tensor& into = n0 == 0 ? dw : part;
      gemm_f32_out(kt, false, true, s.F, CKK, n * P, dyF.raw_data(), cols.raw_data(),
                   static_cast<float*>(into.raw_data()));
      if (n0 > 0) axpy(Dtype::F32, dw.raw_data(), part.raw_data(), 1.0f, part.numel());
    }
    if (need_dx) {
      gemm_f32_out(kt, true, false, CKK, n * P, s.F, w.raw_data(), dyF.raw_data(),
                   static_cast<float*>(dcols.raw_data()));
      col2im(Dtype::F32, dcols.raw_data(), n, g, bytes_at(dx, n0 * image));
    }
  }
  Tensor db;
  if (need_db) {  // Σ over p within each (n, f), then over n
    Tensor dy32 = as_f32(dy);
    Tensor per_image = gpu_empty({s.N, s.F}, DType::F32);
    sum_dim(Dtype::F32, dy32.raw_data(), s.N * s.F, P, 1, per_image.raw_data());
    db = gpu_empty({s.F}, DType::F32);
    sum_dim(Dtype::F32, per_image.raw_data(), 1, s.N, s.F, db.raw_data());
  }
  auto back = [dt](const Tensor& t) { return !t.defined() || dt == DType::F32 ? t : cast(t, dt); };
  return {back(dx), back(dw), back(db)};
}

// ---- pooling (F32 kernels) ------------------------------------------------------------------

Tensor max_pool2d(const Tensor& x_in, int64_t K, int64_t S, int64_t P, std::shared_ptr<Storage>& argmax) {
  need_gpu_contiguous("max_pool2d", x_in, "x");
  Tensor x = as_f32(x_in);
  const ConvGeometry g = conv_geometry(x.size(1), x.size(2), x.size(3), K, K, S, P);
  const int64_t N = x.size(0);
  Tensor y = gpu_empty({N, g.C, g.out_h(), g.out_w()}, DType::F32);
  argmax = Storage::allocate(static_cast<size_t>(y.numel()) * sizeof(int32_t), Device::CUDA);
  max_pool2d_forward(static_cast<const float*>(x.raw_data()), N, g, static_cast<float*>(y.raw_data()),
                     static_cast<int32_t*>(argmax->data));
  return x_in.dtype() == DType::F32 ? y : cast(y, x_in.dtype());
}

Tensor max_pool2d_backward(const Tensor& dy_in, const Storage& argmax, const Shape& xs, int64_t K,
                           int64_t S, int64_t P) {
  Tensor dy = as_f32(dy_in.contiguous());
  need_gpu_contiguous("max_pool2d backward", dy, "dy");
  const ConvGeometry g = conv_geometry(xs[1], xs[2], xs[3], K, K, S, P);
  Tensor dx = gpu_empty(xs, DType::F32);
  max_pool2d_backward(static_cast<const float*>(dy.raw_data()), static_cast<const int32_t*>(argmax.data),
                      xs[0], g, static_cast<float*>(dx.raw_data()));
  return dy_in.dtype() == DType::F32 ? dx : cast(dx, dy_in.dtype());
}

Tensor avg_pool2d(const Tensor& x_in, int64_t K, int64_t S, int64_t P) {
  need_gpu_contiguous("avg_pool2d", x_in, "x");
  Tensor x = as_f32(x_in);
  const ConvGeometry g = conv_geometry(x.size(1), x.size(2), x.size(3), K, K, S, P);
  Tensor y = gpu_empty({x.size(0), g.C, g.out_h(), g.out_w()}, DType::F32);
  avg_pool2d_forward(static_cast<const float*>(x.raw_data()), x.size(0), g, static_cast<float*>(y.raw_data()));
  return x_in.dtype() == DType::F32 ? y : cast(y, x_in.dtype());
}

Tensor avg_pool2d_backward(const Tensor& dy_in, const Shape& xs, int64_t K, int64_t S, int64_t P) {
  Tensor dy = as_f32(dy_in.contiguous());
  need_gpu_contiguous("avg_pool2d backward", dy, "dy");
  const ConvGeometry g = conv_geometry(xs[1], xs[2], xs[3], K, K, S, P);
  Tensor dx = gpu_empty(xs, DType::F32);
  avg_pool2d_backward(static_cast<const float*>(dy.raw_data()), xs[0], g, static_cast<float*>(dx.raw_data()));
  return dy_in.dtype() == DType::F32 ? dx : cast(dx, dy_in.dtype());
}

// ---- batch norm (F32 kernels) ---------------------------------------------------------------

namespace {
// An F32 per-channel vector on the GPU: t itself, t converted, or `fallback` when undefined.
Tensor channel_f32(const Tensor& t, int64_t C, double fallback) {
  if (!t.defined()) return Tensor::full({C}, fallback, DType::F32, Device::CUDA);
  return as_f32(t.detach().contiguous());
}
}  // namespace

Tensor batch_norm2d(const Tensor& x_in, const Tensor& gamma, const Tensor& beta, const Tensor& running_mean,
                    const Tensor& running_var, bool training, double momentum, double eps,
                    BatchNormSaved& saved) {
  need_gpu_contiguous("batch_norm2d", x_in, "x");
  if (running_mean.defined()) need_gpu_contiguous("batch_norm2d", running_mean, "running_mean");
  if (running_var.defined()) need_gpu_contiguous("batch_norm2d", running_var, "running_var");
  // The kernels keep running statistics in F32: F16/BF16 buffers are updated through F32
  // copies, written back below (F32 buffers are updated in place: as_f32 returns them).
  Tensor rm = running_mean.defined() ? as_f32(running_mean) : Tensor();
  Tensor rv = running_var.defined() ? as_f32(running_var) : Tensor();
  Tensor x = as_f32(x_in);
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  Tensor g = channel_f32(gamma, C, 1.0), b = channel_f32(beta, C, 0.0);
  Tensor y = gpu_empty(x.shape(), DType::F32);
  auto f = [](const Tensor& t) { return static_cast<float*>(t.raw_data()); };
  if (training) {
    saved.mean = gpu_empty({C}, DType::F32);
    saved.invstd = gpu_empty({C}, DType::F32);
    const bool track = rm.defined() && rv.defined();
    batch_norm_forward_train(f(x), f(g), f(b), N, C, HW, static_cast<float>(eps),
                             static_cast<float>(momentum), track ? f(rm) : nullptr,
                             track ? f(rv) : nullptr, f(y), f(saved.mean), f(saved.invstd));
    if (track) {  // round the F32 statistics back into the buffers that are not F32
      Tensor m = running_mean, v = running_var;
      if (!rm.same(running_mean)) copy_(m, rm);
      if (!rv.same(running_var)) copy_(v, rv);
    }
  } else {
    batch_norm_forward_eval(f(x), f(g), f(b), f(rm), f(rv), N, C, HW, static_cast<float>(eps), f(y));
    // what the backward needs: the running mean and 1/√(running_var + eps) (C values, on the GPU)
    saved.mean = clone(rm);
    saved.invstd = gpu_empty({C}, DType::F32);
    batch_norm_invstd(f(rv), C, eps, f(saved.invstd));
  }
  return x_in.dtype() == DType::F32 ? y : cast(y, x_in.dtype());
}

std::vector<Tensor> batch_norm2d_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma,
                                          const BatchNormSaved& saved, bool training, DType gdt, DType bdt) {
  Tensor dy = as_f32(dy_in.contiguous());
  need_gpu_contiguous("batch_norm2d backward", dy, "dy");
  Tensor x = as_f32(x_in);
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  Tensor g = channel_f32(gamma, C, 1.0);
  auto f = [](const Tensor& t) { return static_cast<float*>(t.raw_data()); };
  Tensor dx = gpu_empty(x.shape(), DType::F32), dgamma = gpu_empty({C}, DType::F32),
         dbeta = gpu_empty({C}, DType::F32);
  // dgamma = Σ dy·x̂ and dbeta = Σ dy hold in both modes; so does dx in training
  batch_norm_backward(f(dy), f(x), f(g), f(saved.mean), f(saved.invstd), N, C, HW, f(dx), f(dgamma), f(dbeta));
  if (!training) {  // eval: μ and σ are constants, dx = γ·invstd·dy
    Tensor k = gpu_empty({C}, DType::F32);
    binary(Binary::Mul, Dtype::F32, g.raw_data(), saved.invstd.raw_data(), k.raw_data(),
           make_broadcast({C}, {C}));
    binary(Binary::Mul, Dtype::F32, dy.raw_data(), k.raw_data(), dx.raw_data(),
           make_broadcast({N, C, HW}, {C, 1}));
  }
  return {x_in.dtype() == DType::F32 ? dx : cast(dx, x_in.dtype()),
          gdt == DType::F32 ? dgamma : cast(dgamma, gdt), bdt == DType::F32 ? dbeta : cast(dbeta, bdt)};
}

// ---- dropout --------------------------------------------------------------------------------

Tensor apply_mask(const Tensor& x_in, const Tensor& mask) {
  // in F32, like the CPU (load, multiply by keep/(1−p) in F32, round once)
  Tensor x = as_f32(x_in.contiguous());
  need_gpu_contiguous("dropout", x, "x");
  Tensor y = gpu_empty(x.shape(), DType::F32);
  binary(Binary::Mul, Dtype::F32, x.raw_data(), mask.raw_data(), y.raw_data(),
         make_broadcast(x.shape(), mask.shape()));
  return x_in.dtype() == DType::F32 ? y : cast(y, x_in.dtype());
}

}  // namespace hg::cuda

#endif  // HG_WITH_CUDA
