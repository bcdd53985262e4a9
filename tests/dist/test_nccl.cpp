// NCCL at world size 1 (one GPU: NCCL refuses two ranks on one device). Every collective on GPU
// tensors goes through NCCL, in both reduction orders; then DDP and ZeRO-1 train a small MLP
// on the GPU and are compared with one process doing the same without them.
//
// What this covers: the NCCL calls, the communicator's device switch, the GPU paths of DDP's
// buckets and of ZeRO-1's flat buffers. What it cannot: two GPUs exchanging data (at world
// size 1 every collective is a copy) — that needs a machine with two GPUs and
// `mpiexec -n 2 lesson_13 --device cuda`.
//
// Prints "OK" / "NOT OK" per check; exits 0, 1 on a failure, and 77 (ctest: skipped) with the
// reason when there is no GPU.
//
// `mpiexec -n 2 test_nccl start_fails`, on a machine without a GPU, checks the other side: NCCL
// cannot start on any rank, and every rank must say so and stop — none may wait for the others
// (ctest's timeout catches a rank that waits) — and name the other rank that failed.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "framework/dist/communicator.h"
#include "framework/dist/ddp.h"
#include "framework/dist/zero.h"
#include "framework/nn/models/mlp.h"
#include "framework/ops/ops.h"
#include "framework/optim/adam.h"
#include "framework/optim/sgd.h"

using namespace hg;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "OK    " : "NOT OK", what.c_str());
  if (!ok) ++failures;
}

std::vector<float> host(const Tensor& t) { return t.to(Device::CPU).to_vector(); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> params(const nn::Module& m) {
  std::vector<float> v;
  for (const Tensor& p : m.parameters()) {
    const auto x = host(p);
    v.insert(v.end(), x.begin(), x.end());
  }
  return v;
}

void collectives(dist::Communicator& comm) {
  Generator gen(1);
  const Tensor x = Tensor::randn({1000}, gen);
  for (dist::Reduction r : {dist::Reduction::Library, dist::Reduction::FixedOrder}) {
    comm.set_reduction(r);
    const std::string mode = r == dist::Reduction::Library ? " (NCCL's order)" : " (rank order)";
    for (dist::ReduceOp op : {dist::ReduceOp::Sum, dist::ReduceOp::Avg, dist::ReduceOp::Max}) {
      Tensor t = x.to(Device::CUDA);
      comm.allreduce(t, op);
      check(same_bits(host(t), x.to_vector()), std::string("allreduce ") + dist::reduce_op_name(op) + mode);
    }
    Tensor out = Tensor::empty({1000}, DType::F32, Device::CUDA);
    comm.reduce_scatter(x.to(Device::CUDA), out);
    check(same_bits(host(out), x.to_vector()), "reduce_scatter" + mode);
  }
  comm.set_reduction(dist::Reduction::Library);
  Tensor gathered = Tensor::empty({1000}, DType::F32, Device::CUDA);
  comm.all_gather(x.to(Device::CUDA), gathered);
  check(same_bits(host(gathered), x.to_vector()), "all_gather");
  Tensor b = x.to(Device::CUDA);
  comm.broadcast(b, 0);
  check(same_bits(host(b), x.to_vector()), "broadcast");
  Tensor a = x.to(Device::CUDA);
  dist::Work w = comm.allreduce_async(a, dist::ReduceOp::Avg);
  w.wait();
  check(same_bits(host(a), x.to_vector()), "allreduce_async + wait");
  for (DType d : {DType::F16, DType::BF16}) {
    Tensor h = x.to(d).to(Device::CUDA);
    comm.allreduce(h);
    check(same_bits(host(h.to(DType::F32)), x.to(d).to(DType::F32).to_vector()),
          std::string("allreduce of ") + dtype_name(d));
  }
}

// A few steps of an MLP on the GPU: DDP / ZeRO-1 through NCCL against the plain loop.
void training(dist::Communicator& comm, bool zero) {
  Generator data_gen(2);
  const Tensor x = Tensor::randn({32, 64}, data_gen).to(Device::CUDA);
  std::vector<int32_t> y(32);
  for (size_t i = 0; i < y.size(); ++i) y[i] = int32_t(i % 4);
  auto make = [] {
    Generator gen(3);
    auto m = std::make_shared<nn::MLP>(gen, 64, 32, 16, 4);
    m->to(Device::CUDA);
    return m;
  };
  auto ref = make(), model = make();
  std::unique_ptr<optim::Optimizer> ref_opt, opt;
  std::unique_ptr<dist::ZeroAdamW> z;
  dist::DistributedDataParallel ddp(*model, comm, {.bucket_mb = 0.001});
  if (zero) {
    ref_opt = std::make_unique<optim::AdamW>(ref->parameters(), optim::AdamOptions{.lr = 1e-3});
    z = std::make_unique<dist::ZeroAdamW>(model->parameters(), comm, optim::AdamOptions{.lr = 1e-3});
  } else {
    ref_opt = std::make_unique<optim::SGD>(ref->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    opt = std::make_unique<optim::SGD>(model->parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
  }
  for (int step = 0; step < 5; ++step) {
    ref_opt->zero_grad();
    cross_entropy((*ref)(x), y).backward();
    ref_opt->step();
    if (zero) {
      z->zero_grad();
      cross_entropy((*model)(x), y).backward();
      z->step();
    } else {
      opt->zero_grad();
      ddp.backward(cross_entropy((*model)(x), y));
      opt->step();
    }
  }
  check(same_bits(params(*model), params(*ref)),
        zero ? "ZeRO-1 through NCCL = plain AdamW, bit for bit" : "DDP through NCCL = the plain loop, bit for bit");
}

}  // namespace

// Every rank fails to start NCCL (no GPU); each must throw, and its message must name the other.
int start_fails(int argc, char** argv) {
  dist::Communicator comm(argc, argv);
  if (cuda_available() || comm.world_size() != 2) {
    std::printf("SKIPPED: start_fails needs 2 ranks on a machine without a GPU\n");
    return 77;
  }
  std::string what;
  try {
    comm.use_gpus();
  } catch (const std::exception& e) {
    what = e.what();
  }
  const int other = 1 - comm.rank();
  std::printf("rank %d: %s\n", comm.rank(), what.c_str());
  check(!what.empty(), "rank " + std::to_string(comm.rank()) + ": use_gpus() throws, without waiting for the other rank");
  check(what.find("rank " + std::to_string(other) + " of 2") != std::string::npos,
        "rank " + std::to_string(comm.rank()) + ": its message names rank " + std::to_string(other) + ", which failed too");
  const double failed = comm.allreduce_sum(failures);
  if (comm.rank() == 0) std::printf("start_fails: %s\n", failed == 0 ? "all checks passed" : "FAILED");
  return failed == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "start_fails") return start_fails(argc, argv);
  if (!cuda_available()) {
    std::printf("SKIPPED: no GPU (or a build without CUDA): NCCL needs one\n");
    return 77;
  }
  try {
    dist::Communicator comm(argc, argv);  // no mpirun: a world of one rank
    comm.use_gpus();
    std::printf("NCCL at world size %d, rank %d on GPU %d\n", comm.world_size(), comm.rank(), comm.local_rank());
    collectives(comm);
    training(comm, false);
    training(comm, true);
  } catch (const std::exception& e) {
    std::printf("NOT OK %s\n", e.what());
    return 1;
  }
  std::printf("%s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
