// framework/dist/nccl_stub.cpp — a build without NCCL: GPU collectives say so.
#if !HG_WITH_NCCL
#include <stdexcept>
#include <string>

#include "framework/dist/nccl_backend.h"

namespace hg::dist::nccl {

struct Comm {};

namespace {
[[noreturn]] void no_nccl(const char* call) {
  throw std::runtime_error(std::string(call) +
                           ": built without NCCL (it needs CUDA and MPI; see the 'NCCL:' line of "
                           "./lab build); keep the tensors on the CPU (--device cpu)");
}
}  // namespace

std::shared_ptr<Comm> init(int, int, int) { no_nccl("ncclCommInitRank"); }
void allreduce(Comm&, void*, int64_t, DType, ReduceOp) { no_nccl("ncclAllReduce"); }
void reduce_scatter(Comm&, const void*, void*, int64_t, DType, ReduceOp) { no_nccl("ncclReduceScatter"); }
void all_gather(Comm&, const void*, void*, int64_t, DType) { no_nccl("ncclAllGather"); }
void alltoall(Comm&, const void*, void*, int64_t, DType) { no_nccl("ncclSend"); }
void broadcast(Comm&, void*, int64_t, DType, int) { no_nccl("ncclBroadcast"); }
bool query(Comm&) { no_nccl("cudaStreamQuery"); }
void synchronize(Comm&) { no_nccl("cudaStreamSynchronize"); }

}  // namespace hg::dist::nccl
#endif  // !HG_WITH_NCCL
