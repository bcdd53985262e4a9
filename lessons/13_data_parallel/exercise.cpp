// Chapter 13 exercise — the ring's schedule (see exercise.h).
//
// Follow one chunk. In phase 1 it should travel once round the ring, picking up one rank's
// numbers at each hop, so that after N−1 hops one rank holds its complete sum; no two ranks
// may send the same chunk in a step, or two partial sums of it would never meet. Which chunk
// does rank k send at step 0, and at step s? Then which does it receive from rank k−1? In
// phase 2 the complete sums go round once more: which chunk is complete on rank k when phase
// 2 begins? (README "## 2. The ring")
// Chunk numbers are mod N: ((x % N) + N) % N is x mod N also for a negative x.
// halfgrad's own ring (hg::dist::ring_step) is not allowed here: the checker refuses it.
// Run: ./lab check 13
#include "lessons/13_data_parallel/exercise.h"

hg::dist::RingStep student_ring_step(int rank, int world_size, int step) {
  hg::dist::RingStep s;
  // TODO: s.send_chunk, s.recv_chunk and s.accumulate for this rank at this step.
  return s;
}
