#pragma once
// framework/dist/mpi_backend.h — the MPI calls the communicator makes, on plain pointers.
//
// Only mpi_backend.cpp includes <mpi.h>; nothing above this file sees MPI's types. A build
// without MPI compiles mpi_stub.cpp instead, where every function throws "built without MPI".
//
// Every call is checked: MPI's error handler is set to MPI_ERRORS_RETURN right after
// MPI_Init (the default, MPI_ERRORS_ARE_FATAL, would end the process with MPI's own text),
// and a failed call throws std::runtime_error "MPI_Xxx failed on rank k of N: <MPI's text>".
#include <cstdint>
#include <memory>
#include <string>

#include "framework/dist/communicator.h"
#include "framework/tensor/dtype.h"

namespace hg::dist::mpi {

struct World {
  int rank = 0, size = 1, local_rank = 0, local_size = 1;
  std::string host;
};

World init(int& argc, char**& argv);  // MPI_Init_thread, unless MPI is already initialised
void finalize();                      // MPI_Finalize
[[noreturn]] void abort(int code);    // MPI_Abort(MPI_COMM_WORLD, code)
double now();                         // MPI_Wtime, seconds

// Sum or Max (Avg is Sum then a scale, communicator.cpp) of `count` elements of `dtype`
// (F32 or F64), in place.
void allreduce(void* buf, int64_t count, DType dtype, ReduceOp op);

// A non-blocking allreduce (MPI_Iallreduce) and its request.
class Request {
 public:
  Request();
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  bool test();  // MPI_Test: true when complete
  void wait();  // MPI_Wait
  struct Impl;
  std::unique_ptr<Impl> impl;
};
std::unique_ptr<Request> iallreduce(void* buf, int64_t count, DType dtype, ReduceOp op);

// MPI_Reduce_scatter_block: rank k receives the reduction of block k (count elements) of
// every rank's `in` (size·count elements).
void reduce_scatter(const void* in, void* out, int64_t count, DType dtype, ReduceOp op);
// MPI_Allgather / MPI_Alltoall / MPI_Bcast on bytes (`bytes` per rank's block).
void all_gather(const void* in, void* out, int64_t bytes);
void alltoall(const void* in, void* out, int64_t bytes);
void broadcast(void* buf, int64_t bytes, int root);
void barrier();
// MPI_Sendrecv: send_bytes to rank `to` while receiving recv_bytes from rank `from`.
void sendrecv(const void* send, int64_t send_bytes, int to, void* recv, int64_t recv_bytes, int from);

}  // namespace hg::dist::mpi
