#pragma once
// framework/dist/communicator.h — N processes (ranks) that compute together.
//
// Data parallelism needs a handful of collective operations, every rank calling the same one
// in the same order. They are done by the libraries the field uses, not by hand:
//   MPI   (OpenMPI) for tensors on the CPU; it also starts the processes (mpirun) and
//         tells each its rank;
//   NCCL  (shipped with CUDA) for tensors on the GPU, one rank per GPU; its ranks find each
//         other through MPI (rank 0 makes an id, MPI broadcasts it).
// A collective picks the library by the tensor's device, with a plain switch, as an op does.
//
// Shape legend: N ranks (the world size), k a rank, n elements per rank's block.
//
//   allreduce(t, op)          every rank's t ← op over the N ranks' t       (n) → (n)
//   reduce_scatter(in, out)   out on rank k ← sum over ranks of block k of in (N·n) → (n)
//   all_gather(in, out)       block k of out ← rank k's in                   (n) → (N·n)
//   broadcast(t, root)        every rank's t ← root's t
//   barrier()                 returns when every rank has called it
// allreduce = reduce_scatter followed by all_gather: the identity ZeRO-1 (zero.h) and the
// ring (ring_allreduce.h) are built on.
//
// Avg is Sum followed by t · (1/N), on both libraries (NCCL's own ncclAvg multiplies
// before adding, which gives other bits), so a single process can repeat it exactly.
//
// Reduction order. Floating-point addition is not associative: (a + b) + c and a + (b + c)
// can differ in the last bit, and MPI picks its algorithm (ring, recursive doubling, ...)
// by message size and world size, each adding in its own order. Reduction::FixedOrder
// makes every sum ((x0 + x1) + x2) + ... in rank order, on every rank: an alltoall moves
// block k of every rank to rank k, which adds them in that order, then an all_gather shares
// the sums. The same bytes travel as in a ring; what is given up is the library's tuning.
// In this mode N-rank training equals one process accumulating the N ranks' gradients in
// rank order, bit for bit (lessons/13_data_parallel).
//
// Errors of either library become one std::runtime_error that names the call and the rank:
//   "MPI_Allreduce failed on rank 1 of 2: MPI_ERR_TRUNCATE: message truncated".
// A program catches it in main() and calls abort(), which prints it and ends every rank
// (MPI_Abort): a rank that fails alone would leave the others waiting in a collective.
//
// A build without MPI keeps this interface: constructing a Communicator throws "built
// without MPI ...". A build without NCCL throws "built without NCCL ..." for GPU tensors.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "framework/tensor/tensor.h"

namespace hg::dist {

enum class ReduceOp { Sum, Avg, Max };
const char* reduce_op_name(ReduceOp op);  // "sum", "avg", "max"

enum class Reduction {
  Library,     // MPI's / NCCL's own algorithm and order: the fast default
  FixedOrder,  // rank order, the same bits whatever the library does (see above)
};

// What passed through this communicator: calls, payload bytes handed to the library (not
// the bytes on the wire, which depend on its algorithm) and seconds spent blocked in calls.
struct CommStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  double seconds = 0;
};

namespace detail {
struct Pending;  // an operation in flight (communicator.cpp)
}
namespace nccl {
struct Comm;  // nccl_backend.h
}

// A collective started by allreduce_async. MPI moves a non-blocking collective forward only
// while the process is inside an MPI call: done() is such a call, so a caller that checks
// now and then (between layers of backward) keeps it going.
class Work {
 public:
  Work() = default;      // nothing in flight: done() is true
  bool done();           // true when complete (then the tensor holds the result)
  void wait();           // blocks until complete
  bool active() const { return pending_ != nullptr; }

 private:
  friend class Communicator;
  std::shared_ptr<detail::Pending> pending_;
};

class Communicator {
 public:
  // Joins the job: MPI_Init (MPI_THREAD_FUNNELED: OpenMP threads compute, only the main
  // thread calls MPI). Started without mpirun, the process is a world of one rank.
  Communicator(int& argc, char**& argv);
  ~Communicator();  // MPI_Finalize (not after abort())
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int world_size() const { return size_; }
  int local_rank() const { return local_rank_; }  // rank among the ranks on this machine
  int local_size() const { return local_size_; }  // how many ranks run on this machine
  const std::string& host() const { return host_; }
  std::string where() const;  // "rank 1 of 2"

  void set_reduction(Reduction r) { reduction_ = r; }
  Reduction reduction() const { return reduction_; }

  // Tensors must be contiguous and have the same shape on every rank. Sums need F32 or F64
  // on the CPU (MPI has no F16 type); the GPU takes F32, F16, BF16.
  void allreduce(Tensor& t, ReduceOp op = ReduceOp::Sum);
  Work allreduce_async(Tensor& t, ReduceOp op = ReduceOp::Sum);  // Library order only; FixedOrder completes at once
  void reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op = ReduceOp::Sum);  // (N·n) -> (n)
  void all_gather(const Tensor& input, Tensor& output);                                    // (n) -> (N·n)
  void broadcast(Tensor& t, int root = 0);
  void barrier();
  // Block k of `input` goes to rank k; block j of `output` comes from rank j.  (N·n) -> (N·n)
  void alltoall(const Tensor& input, Tensor& output);
  // One number: the max, or the sum, over ranks (a flag such as found-inf, a count).
  double allreduce_max(double x);
  double allreduce_sum(double x);

  // Every rank's line of text, in rank order, on every rank (for printing a table on rank 0;
  // each line is cut at 255 bytes).
  std::vector<std::string> gather_text(const std::string& line);

  // Point to point, for the hand-written ring: sends `send` to rank `to` while receiving
  // `recv` from rank `from` (its size is what is expected). Both contiguous, on the CPU.
  void sendrecv(const Tensor& send, int to, Tensor& recv, int from);

  // NCCL for GPU tensors: this rank takes GPU local_rank() and joins an NCCL communicator
  // of every rank. Throws when this build has no NCCL or this machine has too few GPUs.
  void use_gpus();
  bool has_gpus() const { return nccl_ != nullptr; }

  // Prints "<program>: rank k of N: <why>" on stderr and ends every rank of the job.
  [[noreturn]] void abort(const std::string& program, const std::string& why, int code = 1);

  const CommStats& stats() const { return stats_; }
  void reset_stats() { stats_ = {}; }

 private:
  friend class Work;
  void fixed_order_allreduce(Tensor& t, ReduceOp op);
  void fixed_order_reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op);
  void average(Tensor& t) const;  // t · (1/N), the second half of Avg
  nccl::Comm& gpu(const char* call);
  void count(const Tensor& t, double seconds);

  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  Reduction reduction_ = Reduction::Library;
  std::shared_ptr<nccl::Comm> nccl_;
  CommStats stats_;
};

// The reduction for one scope: sets it, and puts back the one before when the scope ends (an
// exception too). A section that shows one order, or compares two, leaves the communicator as
// it found it, so the order the program chose for training is the order training gets.
//
//   {
//     hg::dist::ReductionScope rank_order(comm, hg::dist::Reduction::FixedOrder);
//     comm.allreduce(t);   // in rank order
//   }                      // back to what it was
class ReductionScope {
 public:
  ReductionScope(Communicator& comm, Reduction r) : comm_(comm), previous_(comm.reduction()) { comm.set_reduction(r); }
  ~ReductionScope() { comm_.set_reduction(previous_); }
  ReductionScope(const ReductionScope&) = delete;
  ReductionScope& operator=(const ReductionScope&) = delete;

 private:
  Communicator& comm_;
  Reduction previous_;
};

// The rows [begin, end) of an n-element buffer split into `parts` near-equal blocks (the first
// n % parts blocks one longer), e.g. n = 10, parts = 4: [0,3) [3,6) [6,8) [8,10).
struct Range {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Range block_range(int64_t n, int parts, int k);

}  // namespace hg::dist
