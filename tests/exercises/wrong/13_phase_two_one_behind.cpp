// A wrong answer: phase 2 starts by sending chunk k, which rank k has not completed (it
// completed chunk k+1 in phase 1).
// expect: send only a chunk whose sum is complete
#include "lessons/13_data_parallel/exercise.h"

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

hg::dist::RingStep student_ring_step(int rank, int world_size, int step) {
  const int N = world_size;
  hg::dist::RingStep s;
  if (step < N - 1) {
    s.send_chunk = mod(rank - step, N);
    s.recv_chunk = mod(rank - 1 - step, N);
    s.accumulate = true;
  } else {
    const int t = step - (N - 1);
    s.send_chunk = mod(rank - t, N);
    s.recv_chunk = mod(rank - 1 - t, N);
    s.accumulate = false;
  }
  return s;
}
