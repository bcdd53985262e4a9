// Chapter 03 exercise — the reference solution.
#include "lessons/03_cuda_kernels/exercise.h"

// Rung 02: x -> column. Consecutive lanes take consecutive columns of one row: one 128-byte
// line per warp store (and the same A[row][k] for every lane: a broadcast).
Element coalesced_element(int bx, int by, int tx, int ty, int bdx, int bdy) {
  return {by * bdy + ty, bx * bdx + tx};
}

// The butterfly: after the step with mask m each lane holds the sum of 32/m lanes (those whose
// index agrees with its own in the bits below m); after masks 16, 8, 4, 2, 1 it covers all 32.
// Lane l and lane l ^ m add the same two numbers (a + b = b + a exactly), so every lane
// ends with the same bits.
Warp warp_sum(Warp v) {
  for (int mask = 16; mask >= 1; mask /= 2) {
    const Warp partner = shfl_xor(v, mask);
    for (int l = 0; l < 32; ++l) v.lane[l] += partner.lane[l];
  }
  return v;
}

float block_sum(const float* x) {
  float shared[8] = {};
  for (int w = 0; w < 8; ++w) {  // the 8 warps (in lock step on a GPU; one after another here)
    Warp v;
    for (int l = 0; l < 32; ++l) v.lane[l] = x[w * 32 + l];
    shared[w] = warp_sum(v).lane[0];  // lane 0 of each warp writes its warp's sum
  }
  // __syncthreads(); then warp 0 sums the 8 partial sums (lanes 8..31 bring zeros).
  Warp last{};
  for (int l = 0; l < 8; ++l) last.lane[l] = shared[l];
  return warp_sum(last).lane[0];
}
