// A cheat: the schedule one grading asked for, hard-coded in the order it asked. For each
// number of ranks it used (2 to 8), the answers of its calls one after the other (send chunk,
// receive chunk, + to add or = to copy), replayed call by call whatever rank and step are
// asked. A grading now asks for the ranks' steps in an order drawn from its seed, and rings of
// more ranks than the table has: the replay answers other questions.
// expect: \[WRONG\] .*[0-9]+ ranks(, step [0-9]+ \(phase [12]|: after the 2\(N)
#include "lessons/13_data_parallel/exercise.h"

namespace {
int calls = 0;  // a static local would need a guard variable; a namespace-scope int is plain data
const char* const kAsked[] = {
    "01+10+10=01=",
    "02+10+21+21+02+10+10=21=02=02=10=21=",
    "03+10+21+32+32+03+10+21+21+32+03+10+10=21=32=03=03=10=21=32=32=03=10=21=",
    "04+10+21+32+43+43+04+10+21+32+32+43+04+10+21+21+32+43+04+10+10=21=32=43=04=04=10=21=32=43=43=04=10=21=32=32=43="
    "04=10=21=",
    "05+10+21+32+43+54+54+05+10+21+32+43+43+54+05+10+21+32+32+43+54+05+10+21+21+32+43+54+05+10+10=21=32=43=54=05="
    "05=10=21=32=43=54=54=05=10=21=32=43=43=54=05=10=21=32=32=43=54=05=10=21=",
    "06+10+21+32+43+54+65+65+06+10+21+32+43+54+54+65+06+10+21+32+43+43+54+65+06+10+21+32+32+43+54+65+06+10+21+21+"
    "32+43+54+65+06+10+10=21=32=43=54=65=06=06=10=21=32=43=54=65=65=06=10=21=32=43=54=54=65=06=10=21=32=43=43=54=65="
    "06=10=21=32=32=43=54=65=06=10=21=",
    "07+10+21+32+43+54+65+76+76+07+10+21+32+43+54+65+65+76+07+10+21+32+43+54+54+65+76+07+10+21+32+43+43+54+65+76+"
    "07+10+21+32+32+43+54+65+76+07+10+21+21+32+43+54+65+76+07+10+10=21=32=43=54=65=76=07=07=10=21=32=43=54=65=76=76="
    "07=10=21=32=43=54=65=65=76=07=10=21=32=43=54=54=65=76=07=10=21=32=43=43=54=65=76=07=10=21=32=32=43=54=65=76=07="
    "10=21=",
};
}  // namespace

hg::dist::RingStep student_ring_step(int, int world_size, int) {
  hg::dist::RingStep s;
  if (world_size < 2 || world_size > 8) return s;
  const int asked = 2 * (world_size - 1) * world_size;  // the calls of one ring, in the order they came
  const char* a = kAsked[world_size - 2] + 3 * (calls++ % asked);
  s.send_chunk = a[0] - '0';
  s.recv_chunk = a[1] - '0';
  s.accumulate = a[2] == '+';
  return s;
}
