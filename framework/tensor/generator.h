#pragma once
// framework/tensor/generator.h — a seeded random number generator with a saveable state.
//
// Everything random in halfgrad (weight init, dropout masks, data shuffling) draws from a
// Generator the caller owns and can see: no hidden global RNG. Its whole state is one
// 64-bit integer, so a checkpoint stores it and a resumed run draws the same numbers.
//
// The engine is SplitMix64 (Steele, Lea, Flood 2014): state += golden-ratio constant, then
// a bit mixer. Small, fast, and passes BigCrush — plenty for initialisation and dropout.
#include <cstdint>

namespace hg {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) : state_(seed) {}

  uint64_t next_u64() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1): the top 53 bits as a double's mantissa.
  double uniform() { return (next_u64() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  // Standard normal by Box–Muller: two uniforms -> one N(0,1) (the second is discarded so
  // that the state stays a single integer).
  double normal();
  double normal(double mean, double stddev) { return mean + stddev * normal(); }
  // Uniform integer in [0, n).
  uint64_t randint(uint64_t n) { return n == 0 ? 0 : next_u64() % n; }

  uint64_t state() const { return state_; }
  void set_state(uint64_t s) { state_ = s; }

 private:
  uint64_t state_;
};

}  // namespace hg
