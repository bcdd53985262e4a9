#pragma once
// check_op: one op of the engine run on the CPU (the reference) and on the GPU with the same
// inputs and upstream gradient, its output and every input's gradient compared. Shared by the
// GPU tests of the engine (test_cuda_engine.cpp, test_cuda_gpt.cpp).
//
// How one op is checked: the same input values (rounded to the dtype) go to the CPU and to
// the GPU as leaves; both run the op and backward() with the same upstream gradient; the
// outputs and every input's .grad must agree within atol + rtol·|cpu|. Both backends compute
// in F32 and round once to the storage type, so they differ only by the order of sums: the
// tolerances are a few units of the storage type's precision (tolerance()); a copy (a view, a
// mask, a lookup) is checked bit for bit (tol_scale 0).
#include "tests/gpu/gpu_test.h"

#include <functional>
#include <string>
#include <vector>

#include "framework/halfgrad.h"

namespace hg::test {

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

struct Input {
  Shape shape;
  double lo = -2, hi = 2;  // values drawn uniformly from [lo, hi)
  bool grad = true;         // compare its gradient too
  bool f32 = false;         // F32 whatever the op's dtype (a mixed-precision parameter)
};

struct Tol {
  double atol, rtol;
};
inline Tol tolerance(DType dt, double scale = 1) {
  switch (dt) {
    case DType::F16: return {1e-3 * scale, 4e-3 * scale};   // F16: 2^-11 relative precision
    case DType::BF16: return {8e-3 * scale, 3e-2 * scale};  // BF16: 2^-8
    default: return {1e-5 * scale, 1e-4 * scale};
  }
}

inline const char* name_of(DType dt) { return dtype_name(dt); }

const std::vector<DType> kAll = {DType::F32, DType::F16, DType::BF16};

// Runs `op` on the CPU and on the GPU with the same inputs (dtype dt) and upstream gradient
// and compares the outputs and the gradients of the inputs marked `grad`, within `tol`.
inline void check_op(Checker& t, const std::string& name, const std::vector<Input>& inputs, DType dt, const Op& op,
                     Tol tol) {
  Generator gen(1234);
  std::vector<Tensor> cpu, gpu;
  for (const Input& in : inputs) {
    Tensor v = Tensor::uniform(in.shape, in.lo, in.hi, gen, in.f32 ? DType::F32 : dt);  // rounded to dt once
    Tensor c = v.detach(), g = v.detach().to(Device::CUDA);
    if (in.grad) {
      c.requires_grad_();
      g.requires_grad_();
    }
    cpu.push_back(c);
    gpu.push_back(g);
  }
  const std::string what = name + " " + name_of(dt);
  Tensor yc = op(cpu), yg = op(gpu);
  if (!t.expect(what + " runs on the GPU", yg.device() == Device::CUDA && yg.dtype() == yc.dtype(),
                std::string("output on ") + device_name(yg.device()) + ", " + name_of(yg.dtype())))
    return;
  t.close(what + " forward", yg.to_vector(), yc.to_vector(), tol.atol, tol.rtol);

  bool any_grad = false;
  for (const Input& in : inputs) any_grad = any_grad || in.grad;
  if (!any_grad) return;
  Tensor up = Tensor::uniform(yc.shape(), -1, 1, gen, yc.dtype());  // the upstream gradient
  yc.backward(up);
  yg.backward(up.to(Device::CUDA));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].grad) continue;
    const std::string gname = what + " grad[" + std::to_string(i) + "]";
    if (!t.expect(gname + " exists", cpu[i].grad().defined() && gpu[i].grad().defined() &&
                                         gpu[i].grad().device() == Device::CUDA))
      continue;
    t.close(gname, gpu[i].grad().to_vector(), cpu[i].grad().to_vector(), tol.atol, tol.rtol);
  }
}

// The same with the dtype's own tolerance, times tol_scale (0: bit-exact).
inline void check_op(Checker& t, const std::string& name, const std::vector<Input>& inputs, DType dt, const Op& op,
                     double tol_scale = 1) {
  check_op(t, name, inputs, dt, op, tolerance(dt, tol_scale));
}

}  // namespace hg::test
