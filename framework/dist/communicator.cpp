#include "framework/dist/communicator.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "framework/dist/mpi_backend.h"
#include "framework/dist/nccl_backend.h"
#include "framework/ops/elementwise.h"

namespace hg::dist {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Avg: return "avg";
    case ReduceOp::Max: return "max";
  }
  return "?";
}

Range block_range(int64_t n, int parts, int k) {
  const int64_t base = n / parts, extra = n % parts;
  Range r;
  r.begin = k * base + std::min<int64_t>(k, extra);
  r.end = r.begin + base + (k < extra ? 1 : 0);
  return r;
}

namespace {

void check_tensor(const char* call, const Tensor& t, const char* which = "tensor") {
  if (!t.defined()) throw std::invalid_argument(fmt::format("{}: the {} is undefined", call, which));
  if (!t.is_contiguous())
    throw std::invalid_argument(fmt::format("{}: the {} must be contiguous (call .contiguous() first)", call, which));
}

void check_same_device(const char* call, const Tensor& a, const Tensor& b) {
  if (a.device() != b.device() || a.dtype() != b.dtype())
    throw std::invalid_argument(fmt::format("{}: input ({} {}) and output ({} {}) must have the same device and dtype",
                                            call, device_name(a.device()), dtype_name(a.dtype()),
                                            device_name(b.device()), dtype_name(b.dtype())));
}

// Element j·c .. (j+1)·c of a contiguous tensor, as a 1-D view.
Tensor block(const Tensor& t, int64_t j, int64_t c) { return t.reshape({t.numel()}).slice(j * c, (j + 1) * c); }

}  // namespace

// ---- the job ---------------------------------------------------------------------------

Communicator::Communicator(int& argc, char**& argv) {
  const mpi::World w = mpi::init(argc, argv);
  rank_ = w.rank;
  size_ = w.size;
  local_rank_ = w.local_rank;
  local_size_ = w.local_size;
  host_ = w.host;
}

Communicator::~Communicator() {
  nccl_.reset();  // NCCL's communicator goes before MPI does
  mpi::finalize();
}

std::string Communicator::where() const { return fmt::format("rank {} of {}", rank_, size_); }

void Communicator::use_gpus() {
  if (!nccl_) nccl_ = nccl::init(rank_, size_, local_rank_);
}

nccl::Comm& Communicator::gpu(const char* call) {
  if (!nccl_)
    throw std::logic_error(fmt::format("{}: the tensor is on the GPU: call use_gpus() first (NCCL)", call));
  return *nccl_;
}

void Communicator::abort(const std::string& program, const std::string& why, int code) {
  std::fprintf(stderr, "%s: %s: %s\n", program.c_str(), where().c_str(), why.c_str());
  std::fflush(stderr);
  std::fflush(stdout);
  mpi::abort(code);
}

void Communicator::count(const Tensor& t, double seconds) {
  ++stats_.calls;
  stats_.bytes += int64_t(t.nbytes());
  stats_.seconds += seconds;
}

void Communicator::average(Tensor& t) const {
  if (size_ > 1) mul_(t, 1.0 / size_);
}

// ---- allreduce ---------------------------------------------------------------------------

void Communicator::allreduce(Tensor& t, ReduceOp op) {
  check_tensor("allreduce", t);
  if (reduction_ == Reduction::FixedOrder && op != ReduceOp::Max) return fixed_order_allreduce(t, op);
  const double t0 = mpi::now();
  switch (t.device()) {
    case Device::CPU: mpi::allreduce(t.raw_data(), t.numel(), t.dtype(), op); break;
    case Device::CUDA: {
      nccl::Comm& c = gpu("allreduce");
      nccl::allreduce(c, t.raw_data(), t.numel(), t.dtype(), op);
      nccl::synchronize(c);
      break;
    }
  }
  if (op == ReduceOp::Avg) average(t);
  count(t, mpi::now() - t0);
}

// Max is the same whatever the order, so it always takes the library's.
// Sum in rank order: pad to N blocks of c, reduce-scatter in rank order, gather the sums.
void Communicator::fixed_order_allreduce(Tensor& t, ReduceOp op) {
  const int64_t n = t.numel(), c = (n + size_ - 1) / size_;
  Tensor padded = Tensor::zeros({size_ * c}, t.dtype(), t.device());  // (N·c)
  Tensor flat = t.reshape({n});                                       // a view of t
  Tensor head = padded.slice(0, n);
  copy_(head, flat);
  Tensor mine = Tensor::empty({c}, t.dtype(), t.device());            // (c): my block's sum
  fixed_order_reduce_scatter(padded, mine, op);
  Tensor gathered = Tensor::empty({size_ * c}, t.dtype(), t.device());  // (N·c)
  all_gather(mine, gathered);
  copy_(flat, gathered.slice(0, n));
}

// Block k of every rank's input comes to rank k (alltoall) as a row of recv; rank k adds the
// rows in rank order: out = ((r0 + r1) + r2) + ...
void Communicator::fixed_order_reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op) {
  const int64_t c = output.numel();
  Tensor recv = Tensor::empty({size_ * c}, input.dtype(), input.device());  // (N·c): row j from rank j
  alltoall(input, recv);
  Tensor out = output.reshape({c});
  copy_(out, block(recv, 0, c));
  for (int j = 1; j < size_; ++j) add_(out, block(recv, j, c));
  if (op == ReduceOp::Avg) average(output);
}

// ---- the other collectives -----------------------------------------------------------------

void Communicator::reduce_scatter(const Tensor& input, Tensor& output, ReduceOp op) {
  check_tensor("reduce_scatter", input, "input");
  check_tensor("reduce_scatter", output, "output");
  check_same_device("reduce_scatter", input, output);
  if (input.numel() != size_ * output.numel())
    throw std::invalid_argument(fmt::format("reduce_scatter: the input has {} elements, the output {}: the input "
                                            "must hold N = {} blocks of the output's size",
                                            input.numel(), output.numel(), size_));
  if (reduction_ == Reduction::FixedOrder && op != ReduceOp::Max) return fixed_order_reduce_scatter(input, output, op);
  const double t0 = mpi::now();
  switch (input.device()) {
    case Device::CPU:
      mpi::reduce_scatter(input.raw_data(), output.raw_data(), output.numel(), input.dtype(), op);
      break;
    case Device::CUDA: {
      nccl::Comm& c = gpu("reduce_scatter");
      nccl::reduce_scatter(c, input.raw_data(), output.raw_data(), output.numel(), input.dtype(), op);
      nccl::synchronize(c);
      break;
    }
  }
  if (op == ReduceOp::Avg) average(output);
  count(input, mpi::now() - t0);
}

void Communicator::all_gather(const Tensor& input, Tensor& output) {
  check_tensor("all_gather", input, "input");
  check_tensor("all_gather", output, "output");
  check_same_device("all_gather", input, output);
  if (output.numel() != size_ * input.numel())
    throw std::invalid_argument(fmt::format("all_gather: the input has {} elements, the output {}: the output "
                                            "must hold N = {} blocks of the input's size",
                                            input.numel(), output.numel(), size_));
  const double t0 = mpi::now();
  switch (input.device()) {
    case Device::CPU: mpi::all_gather(input.raw_data(), output.raw_data(), int64_t(input.nbytes())); break;
    case Device::CUDA: {
      nccl::Comm& c = gpu("all_gather");
      nccl::all_gather(c, input.raw_data(), output.raw_data(), input.numel(), input.dtype());
      nccl::synchronize(c);
      break;
    }
  }
  count(output, mpi::now() - t0);
}

void Communicator::alltoall(const Tensor& input, Tensor& output) {
  check_tensor("alltoall", input, "input");
  check_tensor("alltoall", output, "output");
  check_same_device("alltoall", input, output);
  if (input.numel() != output.numel() || input.numel() % size_ != 0)
    throw std::invalid_argument(fmt::format("alltoall: input and output must have the same size, a multiple of "
                                            "N = {}; got {} and {}", size_, input.numel(), output.numel()));
  const int64_t per_rank = input.numel() / size_;
  const double t0 = mpi::now();
  switch (input.device()) {
    case Device::CPU:
      mpi::alltoall(input.raw_data(), output.raw_data(), per_rank * int64_t(dtype_size(input.dtype())));
      break;
    case Device::CUDA: {
      nccl::Comm& c = gpu("alltoall");
      nccl::alltoall(c, input.raw_data(), output.raw_data(), per_rank, input.dtype());
      nccl::synchronize(c);
      break;
    }
  }
  count(input, mpi::now() - t0);
}

void Communicator::broadcast(Tensor& t, int root) {
  check_tensor("broadcast", t);
  if (root < 0 || root >= size_)
    throw std::invalid_argument(fmt::format("broadcast: root {} is not a rank (0 .. {})", root, size_ - 1));
  const double t0 = mpi::now();
  switch (t.device()) {
    case Device::CPU: mpi::broadcast(t.raw_data(), int64_t(t.nbytes()), root); break;
    case Device::CUDA: {
      nccl::Comm& c = gpu("broadcast");
      nccl::broadcast(c, t.raw_data(), t.numel(), t.dtype(), root);
      nccl::synchronize(c);
      break;
    }
  }
  count(t, mpi::now() - t0);
}

void Communicator::barrier() {
  const double t0 = mpi::now();
  mpi::barrier();
  stats_.seconds += mpi::now() - t0;
  ++stats_.calls;
}

double Communicator::allreduce_max(double x) {
  Tensor t = Tensor::scalar(x, DType::F64);
  const double t0 = mpi::now();
  mpi::allreduce(t.raw_data(), 1, DType::F64, ReduceOp::Max);
  count(t, mpi::now() - t0);
  return t.item();
}

double Communicator::allreduce_sum(double x) {
  Tensor t = Tensor::scalar(x, DType::F64);
  const double t0 = mpi::now();
  mpi::allreduce(t.raw_data(), 1, DType::F64, ReduceOp::Sum);
  count(t, mpi::now() - t0);
  return t.item();
}

std::vector<std::string> Communicator::gather_text(const std::string& line) {
  constexpr size_t kLine = 256;
  std::vector<char> mine(kLine, '\0'), all(kLine * size_t(size_));
  std::copy_n(line.data(), std::min(line.size(), kLine - 1), mine.data());
  const double t0 = mpi::now();
  mpi::all_gather(mine.data(), all.data(), int64_t(kLine));
  ++stats_.calls;
  stats_.bytes += int64_t(kLine);
  stats_.seconds += mpi::now() - t0;
  std::vector<std::string> lines;
  for (int j = 0; j < size_; ++j) lines.emplace_back(all.data() + size_t(j) * kLine);
  return lines;
}

void Communicator::sendrecv(const Tensor& send, int to, Tensor& recv, int from) {
  check_tensor("sendrecv", send, "send buffer");
  check_tensor("sendrecv", recv, "receive buffer");
  if (send.device() != Device::CPU || recv.device() != Device::CPU)
    throw std::invalid_argument("sendrecv: both buffers must be on the CPU");
  const double t0 = mpi::now();
  mpi::sendrecv(send.raw_data(), int64_t(send.nbytes()), to, recv.raw_data(), int64_t(recv.nbytes()), from);
  count(send, mpi::now() - t0);
}

// ---- non-blocking allreduce ---------------------------------------------------------------

namespace detail {
struct Pending {
  Communicator* comm = nullptr;
  Tensor tensor;
  ReduceOp op = ReduceOp::Sum;
  std::unique_ptr<mpi::Request> request;  // CPU tensors
  nccl::Comm* gpu = nullptr;              // GPU tensors: the collective is queued on the stream
  bool finished = false;
};
}  // namespace detail

Work Communicator::allreduce_async(Tensor& t, ReduceOp op) {
  check_tensor("allreduce_async", t);
  Work w;
  if (reduction_ == Reduction::FixedOrder && op != ReduceOp::Max) {
    allreduce(t, op);  // rank order is a sequence of blocking steps: done before returning
    return w;
  }
  const double t0 = mpi::now();
  auto p = std::make_shared<detail::Pending>();
  p->comm = this;
  p->tensor = t;
  p->op = op;
  switch (t.device()) {
    case Device::CPU: p->request = mpi::iallreduce(t.raw_data(), t.numel(), t.dtype(), op); break;
    case Device::CUDA:
      p->gpu = &gpu("allreduce_async");
      nccl::allreduce(*p->gpu, t.raw_data(), t.numel(), t.dtype(), op);
      break;
  }
  count(t, mpi::now() - t0);
  w.pending_ = std::move(p);
  return w;
}

bool Work::done() {
  if (!pending_ || pending_->finished) return true;
  detail::Pending& p = *pending_;
  const double t0 = mpi::now();
  const bool complete = p.gpu ? nccl::query(*p.gpu) : p.request->test();
  if (complete) {
    if (p.op == ReduceOp::Avg) p.comm->average(p.tensor);
    p.finished = true;
  }
  p.comm->stats_.seconds += mpi::now() - t0;
  return complete;
}

void Work::wait() {
  if (!pending_ || pending_->finished) return;
  detail::Pending& p = *pending_;
  const double t0 = mpi::now();
  if (p.gpu) nccl::synchronize(*p.gpu);
  else p.request->wait();
  if (p.op == ReduceOp::Avg) p.comm->average(p.tensor);
  p.finished = true;
  p.comm->stats_.seconds += mpi::now() - t0;
}

}  // namespace hg::dist
