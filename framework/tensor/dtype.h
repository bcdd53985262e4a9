#pragma once
// framework/tensor/dtype.h — the element types a Tensor can hold.
//
//   F32   float       the training default
//   F16   hg::half    IEEE binary16 (framework/dtype/half.h): 5 exponent, 10 mantissa bits
//   BF16  hg::bfloat16 8 exponent, 7 mantissa bits: F32's range, less precision
//   F64   double      only for gradient checks (finite differences need the digits)
//
// F16 and BF16 are *storage* formats here: an op loads them, computes in F32 and rounds
// the result back to the storage type (round-to-nearest-even), as a GPU does.
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "framework/dtype/bfloat16.h"
#include "framework/dtype/half.h"

namespace hg {

enum class DType { F32, F16, BF16, F64 };

inline const char* dtype_name(DType t) {
  switch (t) {
    case DType::F32: return "F32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::F64: return "F64";
  }
  return "?";
}

inline size_t dtype_size(DType t) {
  switch (t) {
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::F64: return 8;
  }
  return 0;
}

// True for the 16-bit formats that compute in F32 and round on store.
inline bool is_low_precision(DType t) { return t == DType::F16 || t == DType::BF16; }

// "f32"/"fp32"/"F32", "f16"/"fp16", "bf16", "f64"; throws std::invalid_argument otherwise.
DType parse_dtype(const std::string& name);

// The C++ type stored for each DType, and back.
template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };
template <> struct dtype_of<half> { static constexpr DType value = DType::F16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BF16; };

// The type arithmetic happens in: double for F64, float for everything else.
template <class T> using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Load a stored element into its compute type, and round a computed value back to storage.
template <class T> inline compute_t<T> load(T v) { return static_cast<compute_t<T>>(v); }
template <class T> inline T store(compute_t<T> v) { return static_cast<T>(v); }

// Call f with a value of the C++ type stored for `t` (a tag: only its type matters):
//   visit_dtype(t, [&](auto tag) { using T = decltype(tag); ... });
// This switch is the one place a dtype becomes a C++ type.
template <class F> decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(float{});
    case DType::F16: return f(half{});
    case DType::BF16: return f(bfloat16{});
    case DType::F64: return f(double{});
  }
  return f(float{});
}

}  // namespace hg
