#pragma once
// framework/dist/ring_allreduce.h — allreduce by hand: the ring (Patarasuk & Yuan, 2009;
// Baidu's "bringing HPC techniques to deep learning", 2017; NCCL's default).
//
// N ranks stand in a ring: each sends only to its right neighbour (k+1 mod N) and receives
// only from its left one (k−1 mod N). Each rank's buffer is cut into N chunks.
//
//   phase 1, reduce-scatter: N−1 steps. Every rank sends one chunk and receives one, which
//            it ADDS to its own: a chunk travels round the ring picking up one rank's
//            contribution per step, and after N−1 steps each rank holds the complete sum of
//            one chunk.
//   phase 2, all-gather: N−1 more steps. The complete sums travel round the ring once; a
//            rank COPIES what it receives over its own.
//   (Which chunk rank k sends and receives at step s is chapter 13's exercise; ring_step()
//   computes them.)
//
//   N = 3, chunks a b c     step 0              step 1                  (reduce-scatter done)
//   rank 0: a0 b0 c0        sends a0, gets c2   sends c0+c2, gets b1+b2 → holds b = b0+b1+b2
//   rank 1: a1 b1 c1        sends b1, gets a0   sends a1+a0, gets c0+c2 → holds c
//   rank 2: a2 b2 c2        sends c2, gets b1   sends b2+b1, gets a1+a0 → holds a
//
// Traffic: every rank sends 2(N−1) chunks of 1/N of the buffer: 2(N−1)/N of its bytes, almost
// independent of N. Reducing to one rank and broadcasting back (every rank sends the root its
// buffer, the root sends every rank the sum) costs the root N−1 buffers in and N−1 out. Time
// is 2(N−1) steps, each one message of S/N bytes: the ring is bandwidth-optimal, and pays
// 2(N−1) latencies (which is why small messages use other algorithms).
//
// Bits: chunk j is summed starting at rank j, in ring order: x_{j+1} + x_j first, then
// x_{j+2} + (x_{j+1} + x_j) ... Each chunk in a different order, and none in rank order: the
// same inputs give other bits than MPI_Allreduce or Reduction::FixedOrder (communicator.h).
#include <cstdint>
#include <functional>
#include <vector>

#include "framework/dist/communicator.h"

namespace hg::dist {

// What rank `rank` does at step `step` (0 .. 2(N−1) − 1) of the ring.
struct RingStep {
  int send_chunk = 0;       // the chunk it sends to rank + 1
  int recv_chunk = 0;       // the chunk it receives from rank − 1
  bool accumulate = false;  // true: add the received chunk to its own (phase 1); false: copy it (phase 2)
};
RingStep ring_step(int rank, int world_size, int step);
inline int ring_steps(int world_size) { return 2 * (world_size - 1); }

// Bytes moved, as counted by the sender.
struct RingTraffic {
  int64_t bytes_sent = 0;      // by one rank (the largest over ranks in the simulation)
  int64_t buffer_bytes = 0;    // the buffer being reduced
  int steps = 0;
  double seconds = 0;
};

using RingSchedule = std::function<RingStep(int rank, int world_size, int step)>;

// The ring with all N ranks' buffers in one process: buffers[k] is rank k's (all the same
// length), summed in place. At each step every rank sends first, then every rank receives,
// as on a real network. Checks the schedule as it goes: a rank must receive the chunk its
// left neighbour sends, and chunks must exist; throws std::invalid_argument saying which
// step and ranks disagree. For tests and the chapter's exercise.
RingTraffic simulate_ring_allreduce(std::vector<std::vector<float>>& buffers,
                                    const RingSchedule& schedule = ring_step);

// The ring over MPI point-to-point (MPI_Sendrecv), summing an F32 tensor on the CPU in place
// on every rank. Counts the bytes this rank sent.
RingTraffic ring_allreduce(Communicator& comm, Tensor& t);

}  // namespace hg::dist
