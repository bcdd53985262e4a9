// framework/cuda/norm.cpp — batch norm and layer norm on GPU tensors (norm.h).
#include "framework/cuda/norm.h"

#include "cuda/ops/batchnorm.h"
#include "cuda/ops/elementwise.h"
#include "cuda/ops/layernorm.h"
#include "framework/cuda/common.h"
#include "framework/cuda/copy.h"

namespace hg::cuda {

namespace {
// An F32 per-channel (batch norm) or per-feature (layer norm) vector on the GPU: t itself, t
// converted, or `fallback` when undefined.
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
  if (training) {
    saved.mean = gpu_empty({C}, DType::F32);
    saved.invstd = gpu_empty({C}, DType::F32);
    const bool track = rm.defined() && rv.defined();
    launch_batch_norm_forward_train(f32_data(x), f32_data(g), f32_data(b), N, C, HW, static_cast<float>(eps),
                                    static_cast<float>(momentum), track ? f32_data(rm) : nullptr,
                                    track ? f32_data(rv) : nullptr, f32_data(y), f32_data(saved.mean),
                                    f32_data(saved.invstd));
    if (track) {  // round the F32 statistics back into the buffers that are not F32
      Tensor m = running_mean, v = running_var;
      if (!rm.same(running_mean)) copy_(m, rm);
      if (!rv.same(running_var)) copy_(v, rv);
    }
  } else {
    launch_batch_norm_forward_eval(f32_data(x), f32_data(g), f32_data(b), f32_data(rm), f32_data(rv), N, C, HW,
                                   static_cast<float>(eps), f32_data(y));
    // what the backward needs: the running mean and 1/√(running_var + eps) (C values, on the GPU)
    saved.mean = clone(rm);
    saved.invstd = gpu_empty({C}, DType::F32);
    launch_batch_norm_invstd(f32_data(rv), C, eps, f32_data(saved.invstd));
  }
  return round_back(y, x_in.dtype());
}

std::vector<Tensor> batch_norm2d_backward(const Tensor& dy_in, const Tensor& x_in, const Tensor& gamma,
                                          const BatchNormSaved& saved, bool training, DType gdt, DType bdt) {
  Tensor dy = as_f32(dy_in.contiguous());
  need_gpu_contiguous("batch_norm2d backward", dy, "dy");
  Tensor x = as_f32(x_in);
  const int64_t N = x.size(0), C = x.size(1), HW = x.size(2) * x.size(3);
  Tensor g = channel_f32(gamma, C, 1.0);
  Tensor dx = gpu_empty(x.shape(), DType::F32), dgamma = gpu_empty({C}, DType::F32),
         dbeta = gpu_empty({C}, DType::F32);
  // dgamma = Σ dy·x̂ and dbeta = Σ dy hold in both modes; so does dx in training
  launch_batch_norm_backward(f32_data(dy), f32_data(x), f32_data(g), f32_data(saved.mean), f32_data(saved.invstd),
                             N, C, HW, f32_data(dx), f32_data(dgamma), f32_data(dbeta));
  if (!training) {  // eval: μ and σ are constants, dx = γ·invstd·dy
    Tensor k = gpu_empty({C}, DType::F32);
    launch_binary(Binary::Mul, DType::F32, g.raw_data(), saved.invstd.raw_data(), k.raw_data(),
                  make_broadcast({C}, {C}));
    launch_binary(Binary::Mul, DType::F32, dy.raw_data(), k.raw_data(), dx.raw_data(),
                  make_broadcast({N, C, HW}, {C, 1}));
  }
  return {round_back(dx, x_in.dtype()), round_back(dgamma, gdt), round_back(dbeta, bdt)};
}

Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps, LayerNormSaved& saved) {
  need_gpu_contiguous("layer_norm", x, "x");
  const DType dt = kernel_dtype("layer_norm", x);
  const int64_t C = x.shape().back(), R = x.numel() / C;
  Tensor w = channel_f32(weight, C, 1.0), b = channel_f32(bias, C, 0.0);
  Tensor y = gpu_empty(x.shape(), dt);
  saved.mean_rel = gpu_empty({R}, DType::F32);
  saved.rstd = gpu_empty({R}, DType::F32);
  launch_layer_norm_forward(dt, x.raw_data(), f32_data(w), f32_data(b), R, C, static_cast<float>(eps), y.raw_data(),
                            f32_data(saved.mean_rel), f32_data(saved.rstd));
  return y;
}

std::vector<Tensor> layer_norm_backward(const Tensor& dy_in, const Tensor& x, const Tensor& weight,
                                        const LayerNormSaved& saved, bool need_dx, bool need_dweight,
                                        bool need_dbias, DType wdt, DType bdt) {
  Tensor dy = dy_in.contiguous();
  need_gpu_contiguous("layer_norm backward", dy, "dy");
  const DType dt = kernel_dtype("layer_norm backward", x);
  if (dy.dtype() != dt) dy = cast(dy, dt);  // the kernels read dy as x's type
  const int64_t C = x.shape().back(), R = x.numel() / C;
  Tensor w = channel_f32(weight, C, 1.0);
  Tensor dx = need_dx ? gpu_empty(x.shape(), dt) : Tensor();
  Tensor dw = need_dweight ? gpu_empty({C}, DType::F32) : Tensor();
  Tensor db = need_dbias ? gpu_empty({C}, DType::F32) : Tensor();
  launch_layer_norm_backward(dt, x.raw_data(), dy.raw_data(), f32_data(w), f32_data(saved.mean_rel),
                             f32_data(saved.rstd), R, C, need_dx ? dx.raw_data() : nullptr,
                             need_dweight ? f32_data(dw) : nullptr, need_dbias ? f32_data(db) : nullptr);
  return {dx, round_back(dw, wdt), round_back(db, bdt)};
}

}  // namespace hg::cuda
