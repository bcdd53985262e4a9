#include "framework/io/checkpoint_tensor.h"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace hg::io {

const char* checkpoint_dtype(DType dtype) {
  switch (dtype) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F64: return "f64";
  }
  return "?";
}

DType dtype_from_checkpoint(const std::string& s) {
  if (s == "f32") return DType::F32;
  if (s == "f16") return DType::F16;
  if (s == "bf16") return DType::BF16;
  if (s == "f64") return DType::F64;
  throw std::runtime_error(fmt::format("checkpoint dtype '{}' is not a tensor dtype", s));
}

void add_tensor(Checkpoint& ckpt, const std::string& name, const Tensor& t) {
  Tensor cpu = t.device() == Device::CPU ? t : t.to(Device::CPU);
  cpu = cpu.contiguous();
  ckpt.add(name, checkpoint_dtype(cpu.dtype()), cpu.shape(), cpu.raw_data(), cpu.nbytes());
}

Tensor read_tensor(const Checkpoint& ckpt, const std::string& name) {
  const CheckpointEntry& e = ckpt.at(name);
  Tensor t = Tensor::empty(e.shape, dtype_from_checkpoint(e.dtype));
  if (!e.bytes.empty()) std::memcpy(t.raw_data(), e.bytes.data(), e.bytes.size());
  return t;
}

void load_into(const Checkpoint& ckpt, const std::string& name, Tensor& t) {
  if (t.device() != Device::CPU || !t.is_contiguous())
    throw std::runtime_error(fmt::format("load_into '{}': only a contiguous CPU tensor can be filled in "
                                         "place; load on the CPU, then move the model with .to(device)", name));
  ckpt.copy_to(name, checkpoint_dtype(t.dtype()), t.shape(), t.raw_data(), t.nbytes());
}

}  // namespace hg::io
