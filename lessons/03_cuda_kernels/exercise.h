#pragma once
// Chapter 03 exercise: two SIMT ideas, run on a CPU emulation of the thread grid.
//
// 1. coalesced_element: the thread -> element map of GEMM rung 02. C (M, N) is row-major;
//    a launch has a 2-D grid of 2-D blocks of bdx × bdy threads. Thread (tx, ty) of block
//    (bx, by) computes one element C[row][col] (threads past the edge compute nothing).
//    Return that element so that every element has exactly one thread and the 32 lanes of a
//    warp (tx = 0..31, one ty) store 32 consecutive floats of one row: one 128-byte line.
//
// 2. warp_sum: a Warp holds one float per lane. shfl_xor(v, mask) gives every lane l the
//    value lane l ^ mask holds — what __shfl_xor_sync does; it is the only way lanes see each
//    other's registers. Return the warp with the sum of the 32 values in EVERY lane, using
//    only shfl_xor and additions.
//
// 3. block_sum: a block of 256 threads is 8 warps. Return the sum of x[0..255], thread t
//    holding x[t]: each warp sums its 32 values (warp_sum), one lane per warp writes its
//    warp's sum to shared memory (an array of 8 floats), and one warp sums those 8.
//
// exercise.cpp is yours; `./lab check 03` runs it on the emulated grid.
struct Element {
  int row, col;
};
Element coalesced_element(int bx, int by, int tx, int ty, int bdx, int bdy);

struct Warp {
  float lane[32];
};

// The emulated shuffle (given: this is the hardware). Counts its calls, so the checker can
// see that lanes exchange values through it.
inline int g_shuffles = 0;
inline Warp shfl_xor(const Warp& v, int lane_mask) {
  ++g_shuffles;
  Warp out;
  for (int l = 0; l < 32; ++l) out.lane[l] = v.lane[(l ^ lane_mask) & 31];
  return out;
}

Warp warp_sum(Warp v);
float block_sum(const float* x);  // x: 256 values, thread t holds x[t]
