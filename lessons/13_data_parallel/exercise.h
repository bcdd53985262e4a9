#pragma once
// Chapter 13 exercise: the schedule of the ring allreduce.
//
// N ranks stand in a ring: rank k sends only to rank k+1 and receives only from rank k−1
// (both mod N). Each rank's buffer is cut into N chunks, numbered 0 .. N−1. In 2(N−1)
// steps every rank ends with the sum of the N buffers:
//   steps 0 .. N−2     (reduce-scatter) the chunk a rank receives is ADDED to its own
//   steps N−1 .. 2N−3  (all-gather)     the chunk a rank receives, a complete sum, REPLACES its own
// At every step all ranks send at once, and each must receive exactly the chunk its left
// neighbour sends.
//
// student_ring_step(rank, N, step) says what rank `rank` does at `step`: the chunk it sends,
// the chunk it receives, and whether it adds (accumulate = true) or copies.
//
// exercise.cpp is yours; `./lab check 13` runs your schedule on 2 to 40 simulated ranks, in
// one process, and follows every chunk.
#include "framework/dist/ring_allreduce.h"

hg::dist::RingStep student_ring_step(int rank, int world_size, int step);
