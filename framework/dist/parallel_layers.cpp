#include "framework/dist/parallel_layers.h"

#include <stdexcept>

#include <fmt/format.h>

#include "framework/ops/elementwise.h"
#include "framework/ops/matmul.h"

namespace hg::dist {

namespace {
void check_matrix(const char* who, const Tensor& m, int parts, int64_t split_size) {
  if (!m.defined() || m.dim() != 2 || m.dtype() != DType::F32 || m.device() != Device::CPU)
    throw std::invalid_argument(fmt::format("{}: needs a 2-D F32 matrix on the CPU", who));
  if (split_size % parts != 0)
    throw std::invalid_argument(fmt::format("{}: {} does not split into {} equal blocks", who, split_size, parts));
}
}  // namespace

Tensor row_block(const Tensor& m, int parts, int k) {
  check_matrix("row_block", m, parts, m.size(0));
  const int64_t r = m.size(0) / parts;
  return m.contiguous().slice(k * r, (k + 1) * r).clone();
}

Tensor column_block(const Tensor& m, int parts, int k) {
  check_matrix("column_block", m, parts, m.size(1));
  const int64_t R = m.size(0), C = m.size(1), c = C / parts;
  Tensor src = m.contiguous(), out = Tensor::empty({R, c});
  const float* s = src.data<float>();
  float* d = out.data<float>();
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < c; ++j) d[i * c + j] = s[i * C + k * c + j];
  return out;
}

Tensor column_parallel_linear(Communicator& comm, const Tensor& x, const Tensor& w_rows, const Tensor& b_rows) {
  const int N = comm.world_size();
  Tensor y_k = linear(x, w_rows, b_rows).contiguous();  // (B, c): this rank's output features
  const int64_t B = y_k.size(0), c = y_k.size(1);
  Tensor all = Tensor::empty({N * B * c});  // (N, B, c): rank j's block j
  comm.all_gather(y_k.reshape({B * c}), all);
  Tensor y = Tensor::empty({B, N * c});     // (B, N·c): the blocks side by side
  const float* a = all.data<float>();
  float* d = y.data<float>();
  for (int j = 0; j < N; ++j)
    for (int64_t i = 0; i < B; ++i)
      for (int64_t f = 0; f < c; ++f) d[i * N * c + j * c + f] = a[(j * B + i) * c + f];
  return y;
}

Tensor row_parallel_linear(Communicator& comm, const Tensor& x_cols, const Tensor& w_cols, const Tensor& b) {
  Tensor partial = linear(x_cols, w_cols).contiguous();  // (B, out): x_k·W_kᵀ
  comm.allreduce(partial, ReduceOp::Sum);                 // Σ_k x_k·W_kᵀ = x·Wᵀ
  return add(partial, b);
}

PipelineSchedule simulate_gpipe(int p, int m) {
  if (p < 1 || m < 1) throw std::invalid_argument("simulate_gpipe: needs at least one stage and one micro-batch");
  PipelineSchedule s;
  s.stages = p;
  s.micro_batches = m;
  // done_f[i][j] / done_b[i][j]: the tick after which micro-batch i's forward / backward on
  // stage j is finished (-1: not yet).
  std::vector<std::vector<int64_t>> done_f(size_t(m), std::vector<int64_t>(size_t(p), -1)), done_b = done_f;
  std::vector<int> next(size_t(p), 0);  // per stage: its next task, 0 .. m−1 forwards, m .. 2m−1 backwards
  s.rows.assign(size_t(p), "");
  int finished_stages = 0;
  for (int64_t tick = 0; finished_stages < p; ++tick) {
    std::vector<std::pair<int, bool>> ran(size_t(p), {-1, false});  // what each stage runs this tick
    for (int j = 0; j < p; ++j) {
      const int t = next[size_t(j)];
      if (t >= 2 * m) continue;
      const bool forward = t < m;
      const int i = forward ? t : 2 * m - 1 - t;  // backwards in order m−1 .. 0
      bool ready;
      if (forward) {
        ready = j == 0 || (done_f[size_t(i)][size_t(j - 1)] >= 0 && done_f[size_t(i)][size_t(j - 1)] < tick);
      } else {
        const int64_t after = j == p - 1 ? done_f[size_t(m - 1)][size_t(p - 1)]  // the flush: every forward done
                                         : done_b[size_t(i)][size_t(j + 1)];
        ready = after >= 0 && after < tick;
      }
      if (ready) ran[size_t(j)] = {i, forward};
    }
    for (int j = 0; j < p; ++j) {
      const auto [i, forward] = ran[size_t(j)];
      if (i < 0) {
        s.rows[size_t(j)] += "..";
        continue;
      }
      (forward ? done_f : done_b)[size_t(i)][size_t(j)] = tick;
      s.rows[size_t(j)] += fmt::format("{}{}", forward ? 'F' : 'B', i % 10);
      ++s.busy;
      if (++next[size_t(j)] == 2 * m) ++finished_stages;
    }
    s.ticks = tick + 1;
  }
  return s;
}

}  // namespace hg::dist
