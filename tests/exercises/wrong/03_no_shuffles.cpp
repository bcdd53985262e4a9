// A wrong answer: every lane reads every other lane's value directly, which a warp cannot do.
// expect: No shuffle was used
#include "lessons/03_cuda_kernels/exercise.h"

Element coalesced_element(int bx, int by, int tx, int ty, int bdx, int bdy) {
  return {by * bdy + ty, bx * bdx + tx};
}

Warp warp_sum(Warp v) {
  float s = 0;
  for (int l = 0; l < 32; ++l) s += v.lane[l];
  for (int l = 0; l < 32; ++l) v.lane[l] = s;
  return v;
}

float block_sum(const float* x) {
  float s = 0;
  for (int i = 0; i < 256; ++i) s += x[i];
  return s;
}
