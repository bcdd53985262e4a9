// framework/dist/nccl_backend.cpp — the NCCL calls (a build with NCCL; nccl_stub.cpp otherwise).
#if HG_WITH_NCCL
#include "framework/dist/nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "framework/dist/mpi_backend.h"

namespace hg::dist::nccl {

struct Comm {
  ncclComm_t comm = nullptr;
  int rank = 0, size = 1;
  ~Comm() {
    if (comm) ncclCommDestroy(comm);
  }
};

namespace {

// "ncclAllReduce failed on rank 1 of 2: unhandled cuda error (run with NCCL_DEBUG=INFO for details)"
void check(ncclResult_t rc, const char* call, int rank, int size) {
  if (rc == ncclSuccess) return;
  std::string detail = ncclGetLastError(nullptr);
  throw std::runtime_error(fmt::format("{} failed on rank {} of {}: {}{}{}", call, rank, size,
                                       ncclGetErrorString(rc), detail.empty() ? "" : ": ", detail));
}
void check(ncclResult_t rc, const char* call, const Comm& c) { check(rc, call, c.rank, c.size); }

void check_cuda(cudaError_t rc, const char* call, int rank, int size) {
  if (rc == cudaSuccess) return;
  throw std::runtime_error(fmt::format("{} failed on rank {} of {}: {}", call, rank, size, cudaGetErrorString(rc)));
}

ncclDataType_t nccl_type(DType d) {
  switch (d) {
    case DType::F32: return ncclFloat32;
    case DType::F16: return ncclFloat16;
    case DType::BF16: return ncclBfloat16;
    case DType::F64: return ncclFloat64;
  }
  return ncclFloat32;
}

ncclRedOp_t nccl_op(ReduceOp op) { return op == ReduceOp::Max ? ncclMax : ncclSum; }

// "rank 2 of 4" or "ranks 1, 3 of 4"
std::string rank_list(const std::vector<int>& ranks, int size) {
  return fmt::format("rank{} {} of {}", ranks.size() > 1 ? "s" : "", fmt::join(ranks, ", "), size);
}

constexpr cudaStream_t kStream = 0;  // the default stream, where halfgrad's kernels run

}  // namespace

std::shared_ptr<Comm> init(int rank, int size, int local_rank) {
  // A rank that threw on its own here would leave the others waiting for ever: in the broadcast
  // of NCCL's id (rank 0 failed to get one) or in ncclCommInitRank (a rank found no GPU). So each
  // rank first tries its own steps, then every rank learns which ranks failed, and either all go
  // on or all throw: a rank that failed with its own reason, the others naming the ranks that
  // failed. (ncclCommInitRank is itself collective: a rank that fails inside it, out of memory
  // say, can still leave the others waiting in NCCL. Catching that needs NCCL's non-blocking
  // initialisation and ncclCommAbort, which this backend does not use.)
  ncclUniqueId id{};
  std::string failure;
  try {
    int gpus = 0;
    if (cudaGetDeviceCount(&gpus) != cudaSuccess) gpus = 0;
    if (local_rank >= gpus)
      throw std::runtime_error(fmt::format(
          "rank {} of {} is local rank {} on its machine, which has {} GPU(s): NCCL needs a GPU per rank "
          "(start at most {} rank(s) per machine)", rank, size, local_rank, gpus, gpus));
    check_cuda(cudaSetDevice(local_rank), "cudaSetDevice", rank, size);
    if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId", rank, size);
  } catch (const std::exception& e) {
    failure = e.what();
  }
  const char failed_here = failure.empty() ? 0 : 1;
  std::vector<char> failed_at(size_t(size), 0);
  mpi::all_gather(&failed_here, failed_at.data(), 1);
  std::vector<int> others;  // the other ranks that failed
  for (int r = 0; r < size; ++r)
    if (failed_at[size_t(r)] && r != rank) others.push_back(r);
  if (failed_here)
    throw std::runtime_error(others.empty() ? failure
                                            : fmt::format("{}; NCCL starts on no rank: {} failed too", failure,
                                                          rank_list(others, size)));
  if (!others.empty())
    throw std::runtime_error(fmt::format("NCCL cannot start: {} failed (each says why); rank {} of {} stops too "
                                         "instead of waiting for it", rank_list(others, size), rank, size));
  mpi::broadcast(&id, sizeof id, 0);
  auto c = std::make_shared<Comm>();
  c->rank = rank;
  c->size = size;
  check(ncclCommInitRank(&c->comm, size, id, rank), "ncclCommInitRank", rank, size);
  return c;
}

void allreduce(Comm& c, void* buf, int64_t count, DType dtype, ReduceOp op) {
  check(ncclAllReduce(buf, buf, size_t(count), nccl_type(dtype), nccl_op(op), c.comm, kStream), "ncclAllReduce", c);
}

void reduce_scatter(Comm& c, const void* in, void* out, int64_t count, DType dtype, ReduceOp op) {
  check(ncclReduceScatter(in, out, size_t(count), nccl_type(dtype), nccl_op(op), c.comm, kStream),
        "ncclReduceScatter", c);
}

void all_gather(Comm& c, const void* in, void* out, int64_t count, DType dtype) {
  check(ncclAllGather(in, out, size_t(count), nccl_type(dtype), c.comm, kStream), "ncclAllGather", c);
}

void alltoall(Comm& c, const void* in, void* out, int64_t count, DType dtype) {
  // NCCL has no alltoall call: a group of one send and one receive per peer is one.
  const size_t bytes = size_t(count) * dtype_size(dtype);
  check(ncclGroupStart(), "ncclGroupStart", c);
  for (int peer = 0; peer < c.size; ++peer) {
    check(ncclSend(static_cast<const char*>(in) + peer * bytes, size_t(count), nccl_type(dtype), peer, c.comm, kStream),
          "ncclSend", c);
    check(ncclRecv(static_cast<char*>(out) + peer * bytes, size_t(count), nccl_type(dtype), peer, c.comm, kStream),
          "ncclRecv", c);
  }
  check(ncclGroupEnd(), "ncclGroupEnd", c);
}

void broadcast(Comm& c, void* buf, int64_t count, DType dtype, int root) {
  check(ncclBroadcast(buf, buf, size_t(count), nccl_type(dtype), root, c.comm, kStream), "ncclBroadcast", c);
}

bool query(Comm& c) {
  const cudaError_t rc = cudaStreamQuery(kStream);
  if (rc == cudaErrorNotReady) return false;
  check_cuda(rc, "cudaStreamQuery", c.rank, c.size);
  return true;
}

void synchronize(Comm& c) { check_cuda(cudaStreamSynchronize(kStream), "cudaStreamSynchronize", c.rank, c.size); }

}  // namespace hg::dist::nccl
#endif  // HG_WITH_NCCL
