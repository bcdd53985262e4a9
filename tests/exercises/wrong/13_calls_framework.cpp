// A wrong answer: halfgrad's ring schedule does the work.
// expect: exercise\.cpp calls hg::dist::ring_step
#include "lessons/13_data_parallel/exercise.h"

hg::dist::RingStep student_ring_step(int rank, int world_size, int step) {
  return hg::dist::ring_step(rank, world_size, step);
}
