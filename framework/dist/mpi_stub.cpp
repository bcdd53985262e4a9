// framework/dist/mpi_stub.cpp — a build without MPI: every call says so (the CUDA stub's way).
#if !HG_WITH_MPI
#include <cstdlib>
#include <stdexcept>

#include "framework/dist/mpi_backend.h"

namespace hg::dist::mpi {

namespace {
[[noreturn]] void no_mpi(const char* call) {
  throw std::runtime_error(std::string(call) +
                           ": built without MPI; install libopenmpi-dev and openmpi-bin (./lab setup) "
                           "and rebuild (./lab build) to train on several processes");
}
}  // namespace

World init(int&, char**&) { no_mpi("MPI_Init"); }
void finalize() {}
void abort(int code) { std::_Exit(code); }
double now() { return 0.0; }
void allreduce(void*, int64_t, DType, ReduceOp) { no_mpi("MPI_Allreduce"); }
struct Request::Impl {};
Request::Request() = default;
Request::~Request() = default;
bool Request::test() { no_mpi("MPI_Test"); }
void Request::wait() { no_mpi("MPI_Wait"); }
std::unique_ptr<Request> iallreduce(void*, int64_t, DType, ReduceOp) { no_mpi("MPI_Iallreduce"); }
void reduce_scatter(const void*, void*, int64_t, DType, ReduceOp) { no_mpi("MPI_Reduce_scatter_block"); }
void all_gather(const void*, void*, int64_t) { no_mpi("MPI_Allgather"); }
void alltoall(const void*, void*, int64_t) { no_mpi("MPI_Alltoall"); }
void broadcast(void*, int64_t, int) { no_mpi("MPI_Bcast"); }
void barrier() { no_mpi("MPI_Barrier"); }
void sendrecv(const void*, int64_t, int, void*, int64_t, int) { no_mpi("MPI_Sendrecv"); }

}  // namespace hg::dist::mpi
#endif  // !HG_WITH_MPI
