// A cheat: w − u rounded to F16 by the tensor cast, Tensor::to(DType::F16), and compared.
// No hg::half in sight; the cast is halfgrad's F16 rounding all the same.
// expect: exercise\.cpp calls hg::Tensor::to
#include "framework/tensor/tensor.h"
#include "lessons/06_fp16_naive/exercise.h"

bool update_is_lost(float w, float u) {
  const hg::Tensor t = hg::Tensor::from_vector(std::vector<double>{double(w) - double(u)}, {1}, hg::DType::F64);
  return t.to(hg::DType::F16).to_double_vector()[0] == double(w);
}
