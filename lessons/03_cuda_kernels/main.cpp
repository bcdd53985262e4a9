// Chapter 03 — CUDA kernels: threads and blocks, elementwise, reduction, the SIMT GEMM rungs.
//
//   ./lab lesson 03              everything this machine can run (the CPU parts need no GPU)
//   ./lab bench gemm             the GPU table: every rung validated, then timed, vs cuBLAS
//
// The story, in order:
//   1. threads and blocks: which element each thread of an elementwise kernel takes
//   2. reduction: the warp-shuffle butterfly, emulated on the CPU, and why its sum differs
//      in the last bits from a left-to-right loop
//   3. rungs 01 -> 02: the same kernel, a different thread -> element map, 32x fewer
//      memory transactions (counted with cuda/gemm/layout.h)
//   4. rungs 03 -> 04: shared-memory tiles, then 8 x 8 outputs per thread; loads per
//      multiply-add and bank conflicts, counted; both rungs *run on the CPU* through the
//      same index functions as the kernels and are checked against a plain triple loop
//   5. on a GPU: rungs 01-04 checked bit for bit against the CPU (small-integer inputs)
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/gemm/bank_model.h"
#include "cuda/gemm/layout.h"
#include "cuda/gemm/validate.h"
#include "framework/train/cli.h"

#if HG_WITH_CUDA
#include "cuda/gemm/ladder.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/memory.h"
#endif

using namespace hg::cuda::gemm;

namespace {

// ---- 1. threads and blocks -------------------------------------------------------------------
void threads_and_blocks() {
  fmt::print("\n== 1. threads and blocks: y[i] = relu(x[i]) for n = 1,000,000 ==\n");
  const int64_t n = 1000000, threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  fmt::print("blockDim = {} threads, gridDim = ceil(n / 256) = {} blocks ({} threads, {} idle in the last block)\n",
             threads, blocks, blocks * threads, blocks * threads - n);
  fmt::print("thread (blockIdx, threadIdx) takes i = blockIdx * blockDim + threadIdx:\n");
  for (int64_t b : {int64_t(0), int64_t(1), blocks - 1})
    for (int64_t t : {int64_t(0), int64_t(1), int64_t(255)}) {
      const int64_t i = b * threads + t;
      fmt::print("  ({:>4}, {:>3}) -> i = {:>7}{}\n", b, t, i, i < n ? "" : "  (>= n: returns without work)");
    }
  fmt::print("A warp is 32 consecutive threads: lanes 0..31 read x[i..i+31], 128 contiguous bytes,\n"
             "one memory transaction. cuda/ops/*.cu use this shape with a grid-stride loop.\n");
}

// ---- 2. reduction ------------------------------------------------------------------------------
void reduction() {
  fmt::print("\n== 2. reduction: summing 32 values with warp shuffles (CPU emulation) ==\n");
  std::vector<float> lane(32);
  SplitMix64 g(2);
  for (float& v : lane) v = float(g.uniform01() * 1000.0);
  float sequential = 0.0f;
  for (float v : lane) sequential += v;
  // v += __shfl_xor_sync(mask, v, offset) for offset = 16, 8, 4, 2, 1: lane l adds lane l^offset.
  std::vector<float> v = lane;
  for (int offset = 16; offset > 0; offset /= 2) {
    std::vector<float> next(32);
    for (int l = 0; l < 32; ++l) next[l] = v[l] + v[l ^ offset];
    v = next;
    fmt::print("  after offset {:>2}: lane 0 holds {:.9g} (a sum of {} values)\n", offset, v[0], 32 / offset);
  }
  bool all_same = true;
  for (float x : v) all_same = all_same && x == v[0];
  double exact = 0;
  for (float x : lane) exact += x;
  fmt::print("butterfly sum  {:.9g}  (every lane holds it: {})\n", v[0], all_same ? "yes" : "no");
  fmt::print("loop sum       {:.9g}\n", sequential);
  fmt::print("exact (F64)    {:.9g}\n", exact);
  const float ulp = std::nextafter(sequential, INFINITY) - sequential;
  fmt::print("butterfly - loop = {:.9g} = {} ULPs of F32 at this size\n", v[0] - sequential, (v[0] - sequential) / ulp);
  fmt::print("The two F32 sums add the same numbers in a different order, so they may round\n"
             "differently. This is why a GPU result and a CPU result are compared with a\n"
             "tolerance, except when every partial sum is exact (small integers).\n");
}

// ---- 3. rungs 01 -> 02: coalescing -----------------------------------------------------------
void coalescing() {
  fmt::print("\n== 3. rungs 01 -> 02: which element does each lane compute? (C is 1024 x 1024 floats) ==\n");
  const int N = 1024;
  std::vector<uint32_t> a01(32), a02(32);
  for (int lane = 0; lane < 32; ++lane) {
    const Coord c1 = naive_coord(0, 0, lane, 0, 32, 32), c2 = coalesced_coord(0, 0, lane, 0, 32, 32);
    a01[lane] = uint32_t((c1.row * N + c1.col) * 4);
    a02[lane] = uint32_t((c2.row * N + c2.col) * 4);
    if (lane < 3 || lane == 31)
      fmt::print("  lane {:>2}: rung 01 C[{:>2}][{}]  rung 02 C[{}][{:>2}]\n", lane, c1.row, c1.col, c2.row, c2.col);
  }
  auto lines = [](const std::vector<uint32_t>& a) {
    std::vector<uint32_t> l;
    for (uint32_t x : a) l.push_back(x / 128);
    std::sort(l.begin(), l.end());
    return std::unique(l.begin(), l.end()) - l.begin();
  };
  fmt::print("128-byte lines one warp's store to C touches: rung 01: {}, rung 02: {}\n", lines(a01), lines(a02));
  fmt::print("Along k, rung 01's lanes read A[row][k] from 32 rows (32 lines) and share B[k][col];\n"
             "rung 02's lanes share A[row][k] (a broadcast) and read 32 consecutive B[k][col] (1 line).\n");
}

// ---- 4. rungs 03 and 04 on the CPU ------------------------------------------------------------
// Rung 03 as the kernel does it, with blocks and threads as loops: per step, copy tiles
// (zero outside the matrices), then every "thread" accumulates from the tiles.
std::vector<float> rung03_on_cpu(int M, int N, int K, const std::vector<float>& A, const std::vector<float>& B) {
  const int T = kTile03;
  std::vector<float> C(size_t(M) * N, 0.0f);
  std::vector<float> As(T * T), Bs(T * T);
  for (int by = 0; by < ceil_div(M, T); ++by)
    for (int bx = 0; bx < ceil_div(N, T); ++bx) {
      std::vector<float> acc(T * T, 0.0f);  // one register per thread (ty, tx)
      for (int s = 0; s < ceil_div(K, T); ++s) {
        for (int ty = 0; ty < T; ++ty)
          for (int tx = 0; tx < T; ++tx) {
            const Coord a = tiled_a_element(by, s, ty, tx), b = tiled_b_element(bx, s, ty, tx);
            As[ty * T + tx] = (a.row < M && a.col < K) ? A[size_t(a.row) * K + a.col] : 0.0f;
            Bs[ty * T + tx] = (b.row < K && b.col < N) ? B[size_t(b.row) * N + b.col] : 0.0f;
          }
        for (int ty = 0; ty < T; ++ty)
          for (int tx = 0; tx < T; ++tx)
            for (int k = 0; k < T; ++k) acc[ty * T + tx] += As[ty * T + k] * Bs[k * T + tx];
      }
      for (int ty = 0; ty < T; ++ty)
        for (int tx = 0; tx < T; ++tx) {
          const int row = by * T + ty, col = bx * T + tx;
          if (row < M && col < N) C[size_t(row) * N + col] = acc[ty * T + tx];
        }
    }
  return C;
}

std::vector<float> rung04_on_cpu(int M, int N, int K, const std::vector<float>& A, const std::vector<float>& B) {
  using R = Rung04;
  std::vector<float> C(size_t(M) * N, 0.0f);
  std::vector<float> As(R::BM * R::BK), Bs(R::BK * R::BN);
  for (int by = 0; by < ceil_div(M, R::BM); ++by)
    for (int bx = 0; bx < ceil_div(N, R::BN); ++bx) {
      const int m0 = by * R::BM, n0 = bx * R::BN;
      std::vector<float> acc(size_t(R::kThreads) * R::TM * R::TN, 0.0f);  // 64 registers per thread
      for (int k0 = 0; k0 < K; k0 += R::BK) {
        for (int t = 0; t < R::kThreads; ++t)
          for (int p = 0; p < 4; ++p) {
            const Coord a = rung04_a_load(t, p), b = rung04_b_load(t, p);
            As[a.row * R::BK + a.col] = (m0 + a.row < M && k0 + a.col < K) ? A[size_t(m0 + a.row) * K + k0 + a.col] : 0.0f;
            Bs[b.row * R::BN + b.col] = (k0 + b.row < K && n0 + b.col < N) ? B[size_t(k0 + b.row) * N + n0 + b.col] : 0.0f;
          }
        for (int t = 0; t < R::kThreads; ++t)
          for (int k = 0; k < R::BK; ++k)
            for (int i = 0; i < R::TM; ++i)
              for (int j = 0; j < R::TN; ++j)
                acc[(size_t(t) * R::TM + i) * R::TN + j] +=
                    As[rung04_output(t, i, 0).row * R::BK + k] * Bs[k * R::BN + rung04_output(t, 0, j).col];
      }
      for (int t = 0; t < R::kThreads; ++t)
        for (int i = 0; i < R::TM; ++i)
          for (int j = 0; j < R::TN; ++j) {
            const Coord c = rung04_output(t, i, j);
            if (m0 + c.row < M && n0 + c.col < N) C[size_t(m0 + c.row) * N + n0 + c.col] = acc[(size_t(t) * R::TM + i) * R::TN + j];
          }
    }
  return C;
}

void tiled_rungs() {
  fmt::print("\n== 4. rungs 03 and 04: reuse through shared memory and registers ==\n");
  fmt::print("loads per multiply-add (per thread, per step):\n");
  fmt::print("  rung 01/02: 2 global loads for 1 FMA\n");
  fmt::print("  rung 03:    2 shared loads for 1 FMA; each global element is loaded once per 32 FMAs of the block\n");
  fmt::print("  rung 04:    {} shared loads for {} FMAs (an 8 x 8 outer product per k)\n", Rung04::TM + Rung04::TN,
             Rung04::TM * Rung04::TN);
  fmt::print("rung 04's thread t computes rows t/16 + 16i and columns t%16 + 16j of the 128 x 128 tile:\n");
  for (int t : {0, 1, 17}) {
    fmt::print("  thread {:>3}: rows", t);
    for (int i = 0; i < 8; ++i) fmt::print(" {}", rung04_output(t, i, 0).row);
    fmt::print(", columns");
    for (int j = 0; j < 8; ++j) fmt::print(" {}", rung04_output(t, 0, j).col);
    fmt::print("\n");
  }
  // Bank conflicts of rung 04's read of Bs, strided (chosen) vs contiguous (rejected) columns.
  std::vector<uint32_t> strided(32), contiguous(32);
  for (int lane = 0; lane < 32; ++lane) {
    strided[lane] = uint32_t(rung04_output(lane, 0, 0).col * 4);
    contiguous[lane] = uint32_t((lane % 16) * Rung04::TN * 4);
  }
  fmt::print("warp 0 reading Bs[k][col(t, 0)]: strided columns -> {}-way bank conflict, contiguous blocks -> {}-way\n",
             bank_conflict_ways(strided, 4), bank_conflict_ways(contiguous, 4));

  // Run both rungs' index math on the CPU on a size that divides no tile, and check.
  const int M = 150, N = 133, K = 70;
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), ref(size_t(M) * N);
  fill_small_integers(A, 1);
  fill_small_integers(B, 2);
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) ref[size_t(m) * N + n] = float(reference_entry(A.data(), B.data(), N, K, m, n).value);
  auto mismatches = [&](const std::vector<float>& C) {
    int bad = 0;
    for (size_t i = 0; i < C.size(); ++i) bad += C[i] != ref[i];
    return bad;
  };
  fmt::print("CPU run of the kernels' index math, {}x{}x{} small-integer inputs, vs a triple loop:\n", M, N, K);
  fmt::print("  rung 03: {} of {} entries differ\n", mismatches(rung03_on_cpu(M, N, K, A, B)), ref.size());
  fmt::print("  rung 04: {} of {} entries differ\n", mismatches(rung04_on_cpu(M, N, K, A, B)), ref.size());
}

// ---- 5. on a GPU -----------------------------------------------------------------------------
void on_gpu() {
  fmt::print("\n== 5. on the GPU ==\n");
#if HG_WITH_CUDA
  if (!hg::cuda::available()) {
    fmt::print("{}: this part needs a GPU.\n", hg::cuda::no_gpu_reason());
    return;
  }
  fmt::print("GPU: {}\n", hg::cuda::describe(hg::cuda::device_info(0)));
  const int M = 300, N = 257, K = 129;
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
  fill_small_integers(A, 5);
  fill_small_integers(B, 6);
  auto* dA = static_cast<float*>(hg::cuda::device_malloc(A.size() * 4));
  auto* dB = static_cast<float*>(hg::cuda::device_malloc(B.size() * 4));
  auto* dC = static_cast<float*>(hg::cuda::device_malloc(C.size() * 4));
  hg::cuda::copy_host_to_device(dA, A.data(), A.size() * 4);
  hg::cuda::copy_host_to_device(dB, B.data(), B.size() * 4);
  for (const RungF32& r : kRungsF32) {
    r.run(M, N, K, dA, dB, dC);
    hg::cuda::copy_device_to_host(C.data(), dC, C.size() * 4);
    int bad = 0;
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n) bad += C[size_t(m) * N + n] != float(reference_entry(A.data(), B.data(), N, K, m, n).value);
    fmt::print("  rung {} {:<18} {}x{}x{} small integers: {}\n", r.id, r.name, M, N, K,
               bad == 0 ? "bit-exact" : fmt::format("{} entries differ", bad));
  }
  hg::cuda::device_free(dA);
  hg::cuda::device_free(dB);
  hg::cuda::device_free(dC);
  fmt::print("Timings: ./lab bench gemm (validates every rung again, then prints GFLOP/s and % of cuBLAS).\n");
#else
  fmt::print("this build has no CUDA (nvcc not found or HG_CUDA=OFF): the GPU part is skipped.\n");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 03: CUDA kernels — threads and blocks, reduction, the SIMT GEMM rungs"};
  HG_PARSE_FLAGS(app, argc, argv);  // no flags but --help: anything else is one line, exit code 2
  threads_and_blocks();
  reduction();
  coalescing();
  tiled_rungs();
  on_gpu();
  return 0;
}
