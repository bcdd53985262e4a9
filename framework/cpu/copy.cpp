#include "framework/cpu/copy.h"

#include <algorithm>
#include <cstring>

#include "framework/cpu/convert_kernel.h"
#include "framework/dtype/rounding.h"

namespace hg::cpu {

static constexpr int64_t kParallelMin = 1 << 15;  // below this, threads cost more than they save

void copy_to_contiguous(const TensorImpl& src, void* dst) {
  const int64_t n = shape_numel(src.shape);
  const size_t es = dtype_size(src.dtype);
  const char* base = static_cast<const char*>(src.storage->data) + src.offset * es;
  char* out = static_cast<char*>(dst);
  const int64_t nd = static_cast<int64_t>(src.shape.size());
  if (nd == 0) {
    std::memcpy(out, base, es);
    return;
  }
  // Walk the output in row-major order; the innermost dimension is a strided run.
  const int64_t inner = src.shape[nd - 1];
  const int64_t inner_stride = src.strides[nd - 1];
  const int64_t rows = inner == 0 ? 0 : n / inner;
#pragma omp parallel for if (n > kParallelMin)
  for (int64_t r = 0; r < rows; ++r) {
    // offset of row r: decompose r over the outer dimensions
    int64_t rem = r, off = 0;
    for (int64_t d = nd - 2; d >= 0; --d) {
      off += (rem % src.shape[d]) * src.strides[d];
      rem /= src.shape[d];
    }
    char* o = out + r * inner * es;
    if (inner_stride == 1) {
      std::memcpy(o, base + off * es, inner * es);
    } else {
      for (int64_t i = 0; i < inner; ++i)
        std::memcpy(o + i * es, base + (off + i * inner_stride) * es, es);
    }
  }
}

void convert_block(const void* src, DType from, void* dst, DType to, int64_t n) {
  if (from == to) {
    std::memcpy(dst, src, n * dtype_size(from));
    return;
  }
  // F32 <-> F16 and F32 <-> BF16: the block kernels (convert_kernel.h: F16C or AVX-512 when
  // the CPU has them), the same bits as framework/dtype's conversions.
  const ConvertKernel& k = convert_kernel();
  if (from == DType::F32 && to == DType::F16)
    return k.f32_to_f16(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
  if (from == DType::F16 && to == DType::F32)
    return k.f16_to_f32(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
  if (from == DType::F32 && to == DType::BF16)
    return k.f32_to_bf16(static_cast<const float*>(src), static_cast<uint16_t*>(dst), n);
  if (from == DType::BF16 && to == DType::F32)
    return k.bf16_to_f32(static_cast<const uint16_t*>(src), static_cast<float*>(dst), n);
  visit_dtype(from, [&](auto src_tag) {
    using S = decltype(src_tag);
    visit_dtype(to, [&](auto dst_tag) {
      using D = decltype(dst_tag);
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<S, double> && std::is_same_v<D, half>) {
          // F64 -> F16 in one rounding (through F32 would round twice)
          d[i] = half::from_bits(uint16_t(convert_bits(double_bits(s[i]), kFP64, kFP16)));
        } else if constexpr (std::is_same_v<S, double> && std::is_same_v<D, bfloat16>) {
          d[i] = bfloat16::from_bits(uint16_t(convert_bits(double_bits(s[i]), kFP64, kBF16)));
        } else {
          // every other pair is exact (widening) or one rounding through float/double
          using Via = std::conditional_t<std::is_same_v<S, double> || std::is_same_v<D, double>,
                                         double, float>;
          d[i] = static_cast<D>(static_cast<Via>(static_cast<compute_t<S>>(s[i])));
        }
      }
    });
  });
}

void convert(const void* src, DType from, void* dst, DType to, int64_t n) {
  constexpr int64_t kChunk = 1 << 14;
  const size_t fs = dtype_size(from), ts = dtype_size(to);
#pragma omp parallel for if (n > kParallelMin)
  for (int64_t i0 = 0; i0 < n; i0 += kChunk)
    convert_block(static_cast<const char*>(src) + i0 * fs, from, static_cast<char*>(dst) + i0 * ts,
                  to, std::min(kChunk, n - i0));
}

void fill(void* dst, DType t, int64_t n, double value) {
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    T v;
    convert(&value, DType::F64, &v, t, 1);  // one rounding, as for whole tensors
    T* d = static_cast<T*>(dst);
#pragma omp parallel for if (n > kParallelMin)
    for (int64_t i = 0; i < n; ++i) d[i] = v;
  });
}

}  // namespace hg::cpu
