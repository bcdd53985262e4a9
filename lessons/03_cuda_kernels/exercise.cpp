// Chapter 03 exercise — a thread map and a warp-shuffle reduction (see exercise.h).
//
// 1. The map: README "## 3. Rung 01 → 02: coalescing". Rung 01 gives threadIdx.x the rows;
//    what does that make the 32 lanes of a warp store? Give the lanes what a warp stores
//    best. blockIdx and blockDim place the block; threadIdx places the thread in it.
// 2. The warp sum: README "## 2. Reduction". After one shfl_xor with mask m, each lane can
//    add the value of its partner l ^ m: how many values does each lane's sum cover now?
//    Which masks, in how many steps, until every lane covers all 32?
// 3. The block sum: warps cannot see each other's registers; shared memory is where they meet.
// Run: ./lab check 03
#include "lessons/03_cuda_kernels/exercise.h"

Element coalesced_element(int bx, int by, int tx, int ty, int bdx, int bdy) {
  // TODO: the element thread (tx, ty) of block (bx, by) computes.
  return {0, 0};
}

Warp warp_sum(Warp v) {
  // TODO: shuffles and additions until every lane holds the sum.
  return v;
}

float block_sum(const float* x) {
  float shared[8] = {};  // one slot per warp, as __shared__ float shared[8]
  // TODO: each warp's sum into its slot, then the sum of the slots.
  (void)x;
  return shared[0];
}
