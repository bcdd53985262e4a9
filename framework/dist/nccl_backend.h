#pragma once
// framework/dist/nccl_backend.h — the NCCL calls the communicator makes for GPU tensors.
//
// One rank per GPU: rank k takes the GPU of its local rank (its number among the ranks on
// its machine). NCCL refuses two ranks on one GPU, so a machine with one GPU runs NCCL at
// world size 1. The ranks meet through MPI: rank 0 asks NCCL for an id (ncclGetUniqueId),
// MPI broadcasts it, and every rank joins with it (ncclCommInitRank).
//
// Collectives run on the stream halfgrad's kernels use (the default stream), so they start
// after the kernels that wrote their input; synchronize() waits for them.
//
// Only nccl_backend.cpp includes <nccl.h>; a build without NCCL compiles nccl_stub.cpp, where
// every function throws "built without NCCL".
#include <cstdint>
#include <memory>

#include "framework/dist/communicator.h"
#include "framework/tensor/dtype.h"

namespace hg::dist::nccl {

struct Comm;  // ncclComm_t and who we are, for messages

// Takes GPU `local_rank` and joins the NCCL communicator of all `size` ranks. Collective: when
// any rank cannot (no GPU of its own; rank 0 gets no id from NCCL), every rank throws, none
// waits for the others.
std::shared_ptr<Comm> init(int rank, int size, int local_rank);

void allreduce(Comm& c, void* buf, int64_t count, DType dtype, ReduceOp op);  // Sum or Max
void reduce_scatter(Comm& c, const void* in, void* out, int64_t count, DType dtype, ReduceOp op);
void all_gather(Comm& c, const void* in, void* out, int64_t count, DType dtype);
void alltoall(Comm& c, const void* in, void* out, int64_t count, DType dtype);  // grouped send/recv
void broadcast(Comm& c, void* buf, int64_t count, DType dtype, int root);
bool query(Comm& c);        // true when every collective issued so far is complete
void synchronize(Comm& c);  // waits for them

}  // namespace hg::dist::nccl
