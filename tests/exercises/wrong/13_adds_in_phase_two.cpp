// A wrong answer: the right chunks, but phase 2 adds the complete sums instead of copying them.
// expect: In phase 2 the received chunk is a complete sum
#include "lessons/13_data_parallel/exercise.h"

namespace {
int mod(int x, int n) { return ((x % n) + n) % n; }
}  // namespace

hg::dist::RingStep student_ring_step(int rank, int world_size, int step) {
  const int N = world_size;
  hg::dist::RingStep s;
  const int t = step < N - 1 ? step : step - (N - 1);
  s.send_chunk = step < N - 1 ? mod(rank - t, N) : mod(rank + 1 - t, N);
  s.recv_chunk = step < N - 1 ? mod(rank - 1 - t, N) : mod(rank - t, N);
  s.accumulate = true;
  return s;
}
