// framework/dist/mpi_backend.cpp — the MPI calls (a build with MPI; mpi_stub.cpp otherwise).
#if HG_WITH_MPI
#include "framework/dist/mpi_backend.h"

#include <mpi.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace hg::dist::mpi {

namespace {

// "MPI_Allreduce failed on rank 1 of 2: MPI_ERR_TRUNCATE: message truncated"
void check(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) len = fmt::format_to_n(text, sizeof text - 1, "error code {}", rc).size;
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  throw std::runtime_error(fmt::format("{} failed on rank {} of {}: {}", call, rank, size, std::string(text, size_t(len))));
}

// MPI counts are int: larger buffers would have to go in pieces, which nothing here needs.
int as_count(int64_t n, const char* call) {
  if (n < 0 || n > INT_MAX)
    throw std::runtime_error(fmt::format("{}: {} elements is more than one MPI call takes (2^31 - 1)", call, n));
  return int(n);
}

MPI_Datatype mpi_type(DType d, const char* call) {
  switch (d) {
    case DType::F32: return MPI_FLOAT;
    case DType::F64: return MPI_DOUBLE;
    default:
      throw std::invalid_argument(fmt::format(
          "{}: MPI has no {} type to add in; reduce F32 tensors (for an F16 model, the F32 "
          "master copies of its gradients, chapter 07)", call, dtype_name(d)));
  }
}

MPI_Op mpi_op(ReduceOp op) { return op == ReduceOp::Max ? MPI_MAX : MPI_SUM; }

}  // namespace

World init(int& argc, char**& argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    // A program started without mpirun is a "singleton": a job of one. Open MPI then starts a
    // helper daemon (orted) beside it in case it spawns more processes later; halfgrad never
    // spawns, so it asks for none and starts about 0.2 s sooner. A value already in the
    // environment wins (the 0), and under mpirun the setting is not read.
    setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
    int provided = 0;
    // FUNNELED: the process may have OpenMP threads, but only the main thread calls MPI.
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw std::runtime_error("MPI_Init_thread failed: MPI could not start this process");
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  World w;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
  check(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
  // The ranks that share this machine's memory, numbered 0, 1, ...: the local rank picks a GPU.
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &node),
        "MPI_Comm_split_type");
  check(MPI_Comm_rank(node, &w.local_rank), "MPI_Comm_rank");
  check(MPI_Comm_size(node, &w.local_size), "MPI_Comm_size");
  MPI_Comm_free(&node);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  check(MPI_Get_processor_name(name, &len), "MPI_Get_processor_name");
  w.host.assign(name, size_t(len));
  return w;
}

void finalize() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; if it ever did, still stop here
}

double now() { return MPI_Wtime(); }

void allreduce(void* buf, int64_t count, DType dtype, ReduceOp op) {
  check(MPI_Allreduce(MPI_IN_PLACE, buf, as_count(count, "MPI_Allreduce"), mpi_type(dtype, "MPI_Allreduce"),
                      mpi_op(op), MPI_COMM_WORLD),
        "MPI_Allreduce");
}

struct Request::Impl {
  MPI_Request request = MPI_REQUEST_NULL;
};
Request::Request() : impl(std::make_unique<Impl>()) {}
Request::~Request() {
  // A request still in flight must complete before its buffer goes away.
  if (impl && impl->request != MPI_REQUEST_NULL) MPI_Wait(&impl->request, MPI_STATUS_IGNORE);
}
bool Request::test() {
  int flag = 0;
  check(MPI_Test(&impl->request, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  return flag != 0;
}
void Request::wait() { check(MPI_Wait(&impl->request, MPI_STATUS_IGNORE), "MPI_Wait"); }

std::unique_ptr<Request> iallreduce(void* buf, int64_t count, DType dtype, ReduceOp op) {
  auto r = std::make_unique<Request>();
  check(MPI_Iallreduce(MPI_IN_PLACE, buf, as_count(count, "MPI_Iallreduce"), mpi_type(dtype, "MPI_Iallreduce"),
                       mpi_op(op), MPI_COMM_WORLD, &r->impl->request),
        "MPI_Iallreduce");
  return r;
}

void reduce_scatter(const void* in, void* out, int64_t count, DType dtype, ReduceOp op) {
  check(MPI_Reduce_scatter_block(in, out, as_count(count, "MPI_Reduce_scatter_block"),
                                 mpi_type(dtype, "MPI_Reduce_scatter_block"), mpi_op(op), MPI_COMM_WORLD),
        "MPI_Reduce_scatter_block");
}

void all_gather(const void* in, void* out, int64_t bytes) {
  const int n = as_count(bytes, "MPI_Allgather");
  check(MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD), "MPI_Allgather");
}

void alltoall(const void* in, void* out, int64_t bytes) {
  const int n = as_count(bytes, "MPI_Alltoall");
  check(MPI_Alltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD), "MPI_Alltoall");
}

void broadcast(void* buf, int64_t bytes, int root) {
  check(MPI_Bcast(buf, as_count(bytes, "MPI_Bcast"), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
}

void barrier() { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

void sendrecv(const void* send, int64_t send_bytes, int to, void* recv, int64_t recv_bytes, int from) {
  check(MPI_Sendrecv(send, as_count(send_bytes, "MPI_Sendrecv"), MPI_BYTE, to, 0, recv,
                     as_count(recv_bytes, "MPI_Sendrecv"), MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
        "MPI_Sendrecv");
}

}  // namespace hg::dist::mpi
#endif  // HG_WITH_MPI
