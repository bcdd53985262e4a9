// Chapter 13 exercise — a reference solution.
#include "lessons/13_data_parallel/exercise.h"

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

hg::dist::RingStep student_ring_step(int rank, int world_size, int step) {
  const int N = world_size;
  hg::dist::RingStep s;
  if (step < N - 1) {
    // Phase 1: rank k starts with its own chunk k and passes on what it last received; the
    // chunk it receives is the one rank k−1 sends: (k − 1) − step.
    s.send_chunk = mod(rank - step, N);
    s.recv_chunk = mod(rank - 1 - step, N);
    s.accumulate = true;
  } else {
    // Phase 2: after N−1 additions rank k holds the complete chunk k+1. It sends that first,
    // then each complete chunk it has just received.
    const int t = step - (N - 1);
    s.send_chunk = mod(rank + 1 - t, N);
    s.recv_chunk = mod(rank - t, N);
    s.accumulate = false;
  }
  return s;
}
