// A wrong answer: rung 01's map (threadIdx.x -> row). Every element is covered once, but a
// warp's lanes store to 32 different rows.
// expect: touch 32 different 128-byte lines
#include "lessons/03_cuda_kernels/exercise.h"

Element coalesced_element(int bx, int by, int tx, int ty, int bdx, int bdy) {
  return {bx * bdx + tx, by * bdy + ty};
}

Warp warp_sum(Warp v) {
  for (int mask = 16; mask >= 1; mask /= 2) {
    const Warp p = shfl_xor(v, mask);
    for (int l = 0; l < 32; ++l) v.lane[l] += p.lane[l];
  }
  return v;
}

float block_sum(const float* x) {
  float shared[8];
  for (int w = 0; w < 8; ++w) {
    Warp v;
    for (int l = 0; l < 32; ++l) v.lane[l] = x[w * 32 + l];
    shared[w] = warp_sum(v).lane[0];
  }
  Warp last{};
  for (int l = 0; l < 8; ++l) last.lane[l] = shared[l];
  return warp_sum(last).lane[0];
}
