// CPU tests of the GEMM ladder's index math (cuda/gemm/layout.h) and of the shared-memory
// bank-conflict model (cuda/gemm/bank_model.h). No GPU and no CUDA needed: the helpers are
// plain inline functions under g++.
//
//   coverage     every thread -> element map visits each element of its tile exactly once
//   coalescing   the 32 lanes of a warp touch 1 (rung 02) vs 32 (rung 01) cache lines of C
//   banks        every shared-memory access of rungs 03, 04, 06/07 is conflict-free, and the
//                layouts the comments warn against are caught as conflicting
//   alignment    the 16-byte copies and 32-byte fragment pointers of rungs 06/07 are aligned
#include <doctest/doctest.h>

#include "cuda/gemm/bank_model.h"
#include "cuda/gemm/layout.h"

#include <cstdint>
#include <set>
#include <vector>

using namespace hg::cuda::gemm;

namespace {

// Counts visits per cell of a rows x cols grid; all_once() when each cell was visited once.
struct Visits {
  int rows, cols;
  std::vector<int> n;
  Visits(int r, int c) : rows(r), cols(c), n(size_t(r) * c, 0) {}
  bool add(Coord c) {  // false when outside the grid
    if (c.row < 0 || c.row >= rows || c.col < 0 || c.col >= cols) return false;
    ++n[size_t(c.row) * cols + c.col];
    return true;
  }
  bool all_once() const {
    for (int v : n)
      if (v != 1) return false;
    return true;
  }
};

int lines_touched(const std::vector<uint32_t>& byte_addr, int line_bytes) {
  std::set<uint32_t> lines;
  for (uint32_t a : byte_addr) lines.insert(a / line_bytes);
  return static_cast<int>(lines.size());
}

}  // namespace

TEST_CASE("bank model: the textbook cases") {
  std::vector<uint32_t> a(32);
  for (int l = 0; l < 32; ++l) a[l] = 4 * l;          // consecutive floats
  CHECK(bank_conflict_ways(a, 4) == 1);
  for (int l = 0; l < 32; ++l) a[l] = 8 * l;          // stride 2 floats: lanes l and l+16 share a bank
  CHECK(bank_conflict_ways(a, 4) == 2);
  for (int l = 0; l < 32; ++l) a[l] = 128 * l;        // stride 32 floats: all in bank 0
  CHECK(bank_conflict_ways(a, 4) == 32);
  for (int l = 0; l < 32; ++l) a[l] = 64;             // one word for everyone: broadcast
  CHECK(bank_conflict_ways(a, 4) == 1);
  for (int l = 0; l < 32; ++l) a[l] = 16 * l;         // 16-byte accesses, 8 lanes per phase
  CHECK(bank_conflict_ways(a, 16) == 1);
  for (int l = 0; l < 32; ++l) a[l] = 32 * l;         // 16-byte accesses every 32 bytes: 2-way
  CHECK(bank_conflict_ways(a, 16) == 2);
}

TEST_CASE("rungs 01/02: every element of C exactly once, for sizes that do not divide 32") {
  const int M = 70, N = 45, B = 32;
  Visits v01(M, N), v02(M, N);
  for (int bx = 0; bx < ceil_div(M, B); ++bx)          // rung 01: grid.x covers rows
    for (int by = 0; by < ceil_div(N, B); ++by)
      for (int tx = 0; tx < B; ++tx)
        for (int ty = 0; ty < B; ++ty) {
          const Coord c = naive_coord(bx, by, tx, ty, B, B);
          if (c.row < M && c.col < N) CHECK(v01.add(c));   // the kernel's guard
        }
  for (int bx = 0; bx < ceil_div(N, B); ++bx)          // rung 02: grid.x covers columns
    for (int by = 0; by < ceil_div(M, B); ++by)
      for (int tx = 0; tx < B; ++tx)
        for (int ty = 0; ty < B; ++ty) {
          const Coord c = coalesced_coord(bx, by, tx, ty, B, B);
          if (c.row < M && c.col < N) CHECK(v02.add(c));
        }
  CHECK(v01.all_once());
  CHECK(v02.all_once());
}

TEST_CASE("rungs 01 -> 02: a warp's store to C touches 32 lines, then 1") {
  const int N = 1024;  // row-major C, 4-byte floats, 128-byte lines
  std::vector<uint32_t> naive(32), coalesced(32);
  for (int lane = 0; lane < 32; ++lane) {  // one warp = threadIdx.x 0..31 at threadIdx.y 0
    const Coord a = naive_coord(0, 0, lane, 0, 32, 32);
    const Coord b = coalesced_coord(0, 0, lane, 0, 32, 32);
    naive[lane] = uint32_t((a.row * N + a.col) * 4);
    coalesced[lane] = uint32_t((b.row * N + b.col) * 4);
  }
  CHECK(lines_touched(naive, 128) == 32);
  CHECK(lines_touched(coalesced, 128) == 1);
}

TEST_CASE("rung 03: tile loads cover the tile and shared reads are conflict-free") {
  const int T = kTile03;
  Visits a(T, T), b(T, T);
  for (int ty = 0; ty < T; ++ty)
    for (int tx = 0; tx < T; ++tx) {
      const Coord ea = tiled_a_element(2, 3, ty, tx), eb = tiled_b_element(5, 3, ty, tx);
      CHECK(a.add({ea.row - 2 * T, ea.col - 3 * T}));   // block row 2, step 3
      CHECK(b.add({eb.row - 3 * T, eb.col - 5 * T}));   // step 3, block column 5
    }
  CHECK(a.all_once());
  CHECK(b.all_once());
  for (int warp_ty = 0; warp_ty < T; ++warp_ty)       // a warp = one ty, tx = 0..31
    for (int k = 0; k < T; ++k) {
      std::vector<uint32_t> as(32), bs(32), st(32);
      for (int tx = 0; tx < 32; ++tx) {
        as[tx] = uint32_t((warp_ty * T + k) * 4);       // As[ty][k]
        bs[tx] = uint32_t((k * T + tx) * 4);            // Bs[k][tx]
        st[tx] = uint32_t((warp_ty * T + tx) * 4);      // As[ty][tx] = ...
      }
      CHECK(bank_conflict_ways(as, 4) == 1);
      CHECK(bank_conflict_ways(bs, 4) == 1);
      CHECK(bank_conflict_ways(st, 4) == 1);
    }
}

TEST_CASE("rung 04: maps cover the tiles, accesses are conflict-free, contiguous blocks would conflict") {
  using R = Rung04;
  Visits out(R::BM, R::BN), a(R::BM, R::BK), b(R::BK, R::BN);
  for (int t = 0; t < R::kThreads; ++t) {
    for (int i = 0; i < R::TM; ++i)
      for (int j = 0; j < R::TN; ++j) CHECK(out.add(rung04_output(t, i, j)));
    for (int p = 0; p < R::BM * R::BK / R::kThreads; ++p) CHECK(a.add(rung04_a_load(t, p)));
    for (int p = 0; p < R::BK * R::BN / R::kThreads; ++p) CHECK(b.add(rung04_b_load(t, p)));
  }
  CHECK(out.all_once());
  CHECK(a.all_once());
  CHECK(b.all_once());

  int worst = 0, worst_contiguous = 0;
  for (int warp = 0; warp < R::kThreads / 32; ++warp) {
    for (int k = 0; k < R::BK; ++k) {
      for (int i = 0; i < R::TM; ++i) {   // a_reg[i] = As[row(t, i)][k],  As is (BM, BK)
        std::vector<uint32_t> addr(32);
        for (int lane = 0; lane < 32; ++lane)
          addr[lane] = uint32_t((rung04_output(warp * 32 + lane, i, 0).row * R::BK + k) * 4);
        worst = std::max(worst, bank_conflict_ways(addr, 4));
      }
      for (int j = 0; j < R::TN; ++j) {   // b_reg[j] = Bs[k][col(t, j)],  Bs is (BK, BN)
        std::vector<uint32_t> addr(32), contiguous(32);
        for (int lane = 0; lane < 32; ++lane) {
          const int t = warp * 32 + lane;
          addr[lane] = uint32_t((k * R::BN + rung04_output(t, 0, j).col) * 4);
          contiguous[lane] = uint32_t((k * R::BN + (t % 16) * R::TN + j) * 4);  // the rejected map
        }
        worst = std::max(worst, bank_conflict_ways(addr, 4));
        worst_contiguous = std::max(worst_contiguous, bank_conflict_ways(contiguous, 4));
      }
    }
    for (int p = 0; p < 4; ++p) {         // the tile copies
      std::vector<uint32_t> sa(32), sb(32);
      for (int lane = 0; lane < 32; ++lane) {
        const Coord ca = rung04_a_load(warp * 32 + lane, p), cb = rung04_b_load(warp * 32 + lane, p);
        sa[lane] = uint32_t((ca.row * R::BK + ca.col) * 4);
        sb[lane] = uint32_t((cb.row * R::BN + cb.col) * 4);
      }
      worst = std::max(worst, std::max(bank_conflict_ways(sa, 4), bank_conflict_ways(sb, 4)));
    }
  }
  CHECK(worst == 1);
  CHECK(worst_contiguous == 4);   // lanes 0, 4, 8, 12 on one bank, as the comment says
}

TEST_CASE("rung 05: one 16 x 16 tile per warp covers C once (padded sizes)") {
  const int Mp = round_up(37, kWmma), Np = round_up(50, kWmma);
  CHECK(Mp == 48);
  CHECK(Np == 64);
  Visits v(Mp, Np);
  for (int bx = 0; bx < Np / kWmma; ++bx)
    for (int by = 0; by < Mp / kWmma; ++by) {
      const Coord c = rung05_tile(bx, by);
      for (int r = 0; r < kWmma; ++r)
        for (int s = 0; s < kWmma; ++s) CHECK(v.add({c.row + r, c.col + s}));
    }
  CHECK(v.all_once());
}

TEST_CASE("rungs 06/07: warps' fragments tile the block, copies cover the tiles, all aligned") {
  using R = Rung06;
  Visits frag(R::BM, R::BN), a(R::BM, R::BK), b(R::BK, R::BN);
  for (int w = 0; w < R::kWarps; ++w)
    for (int i = 0; i < R::FM; ++i)
      for (int j = 0; j < R::FN; ++j) {
        const Coord c = rung06_fragment(w, i, j);
        for (int r = 0; r < kWmma; ++r)
          for (int s = 0; s < kWmma; ++s) CHECK(frag.add({c.row + r, c.col + s}));
        // load_matrix_sync needs 256-bit (32-byte) aligned pointers: A fragment at (row, kk), B at (kk, col)
        for (int kk = 0; kk < R::BK; kk += kWmma) {
          CHECK(smem_index(c.row, kk, R::A_LD) * 2 % 32 == 0);
          CHECK(smem_index(kk, c.col, R::B_LD) * 2 % 32 == 0);
        }
      }
  for (int t = 0; t < R::kThreads; ++t)
    for (int p = 0; p < 2; ++p) {
      const Coord ca = rung06_a_chunk(t, p), cb = rung06_b_chunk(t, p);
      CHECK(smem_index(ca.row, ca.col, R::A_LD) * 2 % 16 == 0);   // 16-byte copies, aligned
      CHECK(smem_index(cb.row, cb.col, R::B_LD) * 2 % 16 == 0);
      for (int h = 0; h < R::kChunk; ++h) {
        CHECK(a.add({ca.row, ca.col + h}));
        CHECK(b.add({cb.row, cb.col + h}));
      }
    }
  CHECK(frag.all_once());
  CHECK(a.all_once());
  CHECK(b.all_once());
}

// Worst conflict degree of all fragment loads (ldmatrix model) of rung 06/07 for given row strides.
static int worst_fragment_load(int a_ld, int b_ld) {
  using R = Rung06;
  int worst = 0;
  for (int w = 0; w < R::kWarps; ++w)
    for (int kk = 0; kk < R::BK; kk += kWmma) {
      for (int i = 0; i < R::FM; ++i)
        worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(rung06_fragment(w, i, 0).row, kk, a_ld), 16));
      for (int j = 0; j < R::FN; ++j)
        worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(kk, rung06_fragment(w, 0, j).col, b_ld), 16));
    }
  return worst;
}

TEST_CASE("rungs 06/07: the skewed layout is free of bank conflicts; other skews are not") {
  using R = Rung06;
  CHECK(worst_fragment_load(R::A_LD, R::B_LD) == 1);          // SKEW = 8 halves
  CHECK(worst_fragment_load(R::BK, R::B_LD) == 4);            // A unskewed: rows 64 B apart
  CHECK(worst_fragment_load(R::A_LD, R::BN) == 8);            // B unskewed: rows 256 B apart
  CHECK(worst_fragment_load(R::BK + 16, R::BN + 16) == 2);    // SKEW = 16 halves: 2-way

  // The tile copies (16-byte stores, 8 lanes per phase), with the chosen maps ...
  int worst = 0, worst_row_by_row = 0;
  for (int w = 0; w < R::kWarps; ++w)
    for (int p = 0; p < 2; ++p) {
      std::vector<uint32_t> sa(32), sb(32), row_by_row(32);
      for (int lane = 0; lane < 32; ++lane) {
        const int t = w * 32 + lane, q = t + R::kThreads * p;
        const Coord ca = rung06_a_chunk(t, p), cb = rung06_b_chunk(t, p);
        sa[lane] = uint32_t(smem_index(ca.row, ca.col, R::A_LD) * 2);
        sb[lane] = uint32_t(smem_index(cb.row, cb.col, R::B_LD) * 2);
        // ... and the rejected row-by-row map for A: chunk q -> (q / 4, q % 4)
        row_by_row[lane] = uint32_t(smem_index(q / 4, (q % 4) * R::kChunk, R::A_LD) * 2);
      }
      worst = std::max(worst, std::max(bank_conflict_ways(sa, 16), bank_conflict_ways(sb, 16)));
      worst_row_by_row = std::max(worst_row_by_row, bank_conflict_ways(row_by_row, 16));
    }
  CHECK(worst == 1);
  CHECK(worst_row_by_row == 2);
}
