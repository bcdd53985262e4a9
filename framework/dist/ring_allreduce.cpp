#include "framework/dist/ring_allreduce.h"

#include <stdexcept>

#include <fmt/format.h>

#include "framework/dist/mpi_backend.h"

namespace hg::dist {

namespace {
int mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

RingStep ring_step(int rank, int world_size, int step) {
  const int N = world_size;
  RingStep s;
  if (step < N - 1) {  // phase 1: reduce-scatter
    s.send_chunk = mod(rank - step, N);
    s.recv_chunk = mod(rank - step - 1, N);
    s.accumulate = true;
  } else {             // phase 2: all-gather
    const int t = step - (N - 1);
    s.send_chunk = mod(rank + 1 - t, N);
    s.recv_chunk = mod(rank - t, N);
    s.accumulate = false;
  }
  return s;
}

RingTraffic simulate_ring_allreduce(std::vector<std::vector<float>>& buffers, const RingSchedule& schedule) {
  const int N = int(buffers.size());
  if (N == 0) throw std::invalid_argument("simulate_ring_allreduce: no ranks");
  const int64_t n = int64_t(buffers[0].size());
  for (const auto& b : buffers)
    if (int64_t(b.size()) != n) throw std::invalid_argument("simulate_ring_allreduce: the buffers differ in length");
  RingTraffic traffic;
  traffic.buffer_bytes = n * int64_t(sizeof(float));
  std::vector<int64_t> sent(size_t(N), 0);
  for (int step = 0; step < ring_steps(N); ++step) {
    std::vector<RingStep> plan(static_cast<size_t>(N));
    for (int k = 0; k < N; ++k) {
      plan[size_t(k)] = schedule(k, N, step);
      for (int c : {plan[size_t(k)].send_chunk, plan[size_t(k)].recv_chunk})
        if (c < 0 || c >= N)
          throw std::invalid_argument(fmt::format("step {}: rank {} names chunk {}, but there are chunks 0 to {}",
                                                  step, k, c, N - 1));
    }
    // Everybody sends (a copy of the chunk as it is now) ...
    std::vector<std::vector<float>> in_flight(static_cast<size_t>(N));
    for (int k = 0; k < N; ++k) {
      const Range r = block_range(n, N, plan[size_t(k)].send_chunk);
      in_flight[size_t(k)].assign(buffers[size_t(k)].begin() + r.begin, buffers[size_t(k)].begin() + r.end);
      sent[size_t(k)] += r.size() * int64_t(sizeof(float));
    }
    // ... then everybody receives from its left neighbour.
    for (int k = 0; k < N; ++k) {
      const int left = mod(k - 1, N);
      const RingStep& me = plan[size_t(k)];
      if (me.recv_chunk != plan[size_t(left)].send_chunk)
        throw std::invalid_argument(fmt::format(
            "step {}: rank {} expects chunk {} from rank {}, which sends chunk {}", step, k, me.recv_chunk, left,
            plan[size_t(left)].send_chunk));
      const Range r = block_range(n, N, me.recv_chunk);
      float* mine = buffers[size_t(k)].data() + r.begin;
      const std::vector<float>& got = in_flight[size_t(left)];
      for (int64_t i = 0; i < r.size(); ++i) mine[i] = me.accumulate ? mine[i] + got[size_t(i)] : got[size_t(i)];
    }
  }
  traffic.steps = ring_steps(N);
  for (int64_t s : sent) traffic.bytes_sent = std::max(traffic.bytes_sent, s);
  return traffic;
}

RingTraffic ring_allreduce(Communicator& comm, Tensor& t) {
  if (!t.defined() || t.device() != Device::CPU || t.dtype() != DType::F32 || !t.is_contiguous())
    throw std::invalid_argument("ring_allreduce: needs a contiguous F32 tensor on the CPU");
  const int N = comm.world_size(), k = comm.rank();
  const int64_t n = t.numel();
  RingTraffic traffic;
  traffic.buffer_bytes = int64_t(t.nbytes());
  traffic.steps = ring_steps(N);
  Tensor flat = t.reshape({n});                                // (n) a view of t
  float* data = t.data<float>();
  const int right = (k + 1) % N, left = (k - 1 + N) % N;
  Tensor incoming = Tensor::empty({block_range(n, N, 0).size()});  // chunk 0 is never shorter than another
  const double t0 = mpi::now();
  for (int step = 0; step < traffic.steps; ++step) {
    const RingStep s = ring_step(k, N, step);
    const Range send = block_range(n, N, s.send_chunk), recv = block_range(n, N, s.recv_chunk);
    Tensor got = incoming.slice(0, recv.size());
    comm.sendrecv(flat.slice(send.begin, send.end), right, got, left);  // straight from t's memory
    traffic.bytes_sent += send.size() * int64_t(sizeof(float));
    const float* g = got.data<float>();
    for (int64_t i = 0; i < recv.size(); ++i)
      data[recv.begin + i] = s.accumulate ? data[recv.begin + i] + g[i] : g[i];
  }
  traffic.seconds = mpi::now() - t0;
  return traffic;
}

}  // namespace hg::dist
