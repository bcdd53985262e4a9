#pragma once
// hg::Tensor in and out of a Checkpoint (framework/io/checkpoint.h stores plain buffers;
// this is the bridge). Dtypes map F32 ↔ "f32", F16 ↔ "f16", BF16 ↔ "bf16", F64 ↔ "f64".
// A GPU or non-contiguous tensor is copied to a contiguous CPU tensor first.
#include <string>

#include "framework/io/checkpoint.h"
#include "framework/tensor/tensor.h"

namespace hg::io {

const char* checkpoint_dtype(DType dtype);          // "f32", ...
DType dtype_from_checkpoint(const std::string& s);  // throws on "i64", "u8", unknown

void add_tensor(Checkpoint& ckpt, const std::string& name, const Tensor& t);
// A new CPU tensor with the entry's dtype and shape.
Tensor read_tensor(const Checkpoint& ckpt, const std::string& name);
// Copies the entry into `t` in place (same storage: parameters keep their identity) after
// checking dtype and shape match exactly; the message names the entry and both shapes.
void load_into(const Checkpoint& ckpt, const std::string& name, Tensor& t);

}  // namespace hg::io
