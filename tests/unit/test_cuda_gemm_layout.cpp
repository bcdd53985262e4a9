// CPU tests of the GEMM ladder's index math (cuda/gemm/layout.h) and of the shared-memory
// bank-conflict model (cuda/gemm/bank_model.h). No GPU and no CUDA needed: the helpers are
// plain inline functions under g++.
//
//   coverage     every thread -> element map visits each element of its tile exactly once
//   coalescing   the 32 lanes of a warp touch 1 (rung 02) vs 32 (rung 01) cache lines of C
//   banks        every shared-memory access of rungs 03, 04, 07/08 is conflict-free (16-bit
//                formats: the ldmatrix model; TF32: the mma.m16n8k8 model of bank_model.h),
//                rung 06's fragment loads conflict as its comment says, and the layouts the
//                comments warn against are caught as conflicting
//   alignment    the 16-byte copies and 32-byte fragment pointers of rungs 06-08 are aligned
//   limits       64-bit offsets, padded sizes, grid.y and the row slabs of a tall C
//   rung 09      the warp -> tile map covers C once and counts warps in 64 bits; the launcher
//                refuses an operand that is not 4-byte aligned before it touches the GPU
//                (CUDA builds only)
#include <doctest/doctest.h>

#include "cuda/gemm/bank_model.h"
#include "cuda/gemm/layout.h"

#if HG_WITH_CUDA
#include "cuda/gemm/fp8_mma.h"
#endif

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
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

// Rungs 06-08 for one element size E (2: F16/BF16, 4: TF32) and one tile layout R.
template <int E, class R>
void check_tiles_cover_and_align(Coord (*a_chunk)(int, int)) {
  Visits frag(R::BM, R::BN), a(R::BM, R::BK), b(R::BK, R::BN);
  for (int w = 0; w < R::kWarps; ++w)
    for (int i = 0; i < R::FM; ++i)
      for (int j = 0; j < R::FN; ++j) {
        const Coord c = wmma_fragment(w, i, j);
        for (int r = 0; r < kWmma; ++r)
          for (int s = 0; s < kWmma; ++s) CHECK(frag.add({c.row + r, c.col + s}));
        // load_matrix_sync needs 256-bit (32-byte) aligned pointers: A fragment at (row, kk), B at (kk, col)
        for (int kk = 0; kk < R::BK; kk += R::FK) {
          CHECK(smem_index(c.row, kk, R::A_LD) * E % 32 == 0);
          CHECK(smem_index(kk, c.col, R::B_LD) * E % 32 == 0);
        }
      }
  CHECK(R::A_LD * E % 16 == 0);  // leading dimensions: multiples of 16 bytes
  CHECK(R::B_LD * E % 16 == 0);
  for (int t = 0; t < R::kThreads; ++t)
    for (int p = 0; p < R::kChunksPerThread; ++p) {
      const Coord ca = a_chunk(t, p), cb = wmma_b_chunk<E>(t, p);
      CHECK(smem_index(ca.row, ca.col, R::A_LD) * E % 16 == 0);   // 16-byte copies, aligned
      CHECK(smem_index(cb.row, cb.col, R::B_LD) * E % 16 == 0);
      for (int h = 0; h < R::kChunk; ++h) {
        CHECK(a.add({ca.row, ca.col + h}));
        CHECK(b.add({cb.row, cb.col + h}));
      }
    }
  CHECK(frag.all_once());
  CHECK(a.all_once());
  CHECK(b.all_once());
}

TEST_CASE("rungs 06-08: warps' fragments tile the block, copies cover the tiles, all aligned") {
  CHECK(WmmaTiles<2>::BK == 32);
  CHECK(WmmaTiles<4>::BK == 16);
  CHECK(WmmaTiles<2>::kChunksPerThread == 2);
  CHECK(WmmaTiles<4>::kChunksPerThread == 2);
  check_tiles_cover_and_align<2, Rung06<2>>(rung06_a_chunk<2>);
  check_tiles_cover_and_align<4, Rung06<4>>(rung06_a_chunk<4>);
  check_tiles_cover_and_align<2, Rung07<2>>(rung07_a_chunk<2>);
  check_tiles_cover_and_align<4, Rung07<4>>(rung07_a_chunk<4>);
}

// Worst conflict degree over all fragment loads of one step of rungs 06-08 for element size E
// and leading dimensions a_ld, b_ld (in elements). E = 2: ldmatrix; E = 4: the TF32 model.
template <int E>
int worst_fragment_load(int a_ld, int b_ld) {
  using R = WmmaTiles<E>;
  int worst = 0;
  for (int w = 0; w < R::kWarps; ++w)
    for (int kk = 0; kk < R::BK; kk += R::FK) {
      for (int i = 0; i < R::FM; ++i) {
        const int row = wmma_fragment(w, i, 0).row;
        if (E == 2) worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(row, kk, a_ld), 16));
        else
          for (const auto& load : tf32_fragment_a_loads(row, kk, a_ld)) worst = std::max(worst, bank_conflict_ways(load, 4));
      }
      for (int j = 0; j < R::FN; ++j) {
        const int col = wmma_fragment(w, 0, j).col;
        if (E == 2) worst = std::max(worst, bank_conflict_ways(ldmatrix_x4_addresses(kk, col, b_ld), 16));
        else
          for (const auto& load : tf32_fragment_b_loads(kk, col, b_ld)) worst = std::max(worst, bank_conflict_ways(load, 4));
      }
    }
  return worst;
}

TEST_CASE("rung 06 -> 07: the skew removes the fragment loads' bank conflicts, other skews do not") {
  // 16-bit formats (ldmatrix): unpadded rows conflict 4-way (A, 64 bytes) and 8-way (B, 256 bytes)
  CHECK(worst_fragment_load<2>(Rung06<2>::A_LD, Rung07<2>::B_LD) == 4);
  CHECK(worst_fragment_load<2>(Rung07<2>::A_LD, Rung06<2>::B_LD) == 8);
  CHECK(worst_fragment_load<2>(Rung06<2>::A_LD, Rung06<2>::B_LD) == 8);    // rung 06
  CHECK(worst_fragment_load<2>(Rung07<2>::A_LD, Rung07<2>::B_LD) == 1);    // rung 07: SKEW = 8 halves
  CHECK(worst_fragment_load<2>(32 + 16, 128 + 16) == 2);                   // SKEW = 16 halves: 2-way
  // TF32 (the mma.m16n8k8 model): 4-way unpadded; A needs 4 floats of skew, B 8
  CHECK(worst_fragment_load<4>(Rung06<4>::A_LD, Rung06<4>::B_LD) == 4);    // rung 06
  CHECK(worst_fragment_load<4>(Rung07<4>::A_LD, Rung07<4>::B_LD) == 1);    // rung 07
  CHECK(worst_fragment_load<4>(Rung07<4>::A_LD, 128 + 4) == 2);            // B skewed by 16 bytes only
  CHECK(worst_fragment_load<4>(16 + 8, Rung07<4>::B_LD) == 2);             // A skewed by 32 bytes
  CHECK(Rung07<2>::A_LD * 2 == 80);
  CHECK(Rung07<4>::A_LD * 4 == 80);
  CHECK(Rung07<2>::B_LD * 2 == 272);
  CHECK(Rung07<4>::B_LD * 4 == 544);
}

// Worst conflict degree of the 16-byte tile copies (8 lanes per phase) with a given A map.
template <int E>
int worst_copy(Coord (*a_chunk)(int, int), int a_ld, int b_ld) {
  using R = WmmaTiles<E>;
  int worst = 0;
  for (int w = 0; w < R::kWarps; ++w)
    for (int p = 0; p < R::kChunksPerThread; ++p) {
      std::vector<uint32_t> sa(32), sb(32);
      for (int lane = 0; lane < 32; ++lane) {
        const Coord ca = a_chunk(w * 32 + lane, p), cb = wmma_b_chunk<E>(w * 32 + lane, p);
        sa[lane] = uint32_t(smem_index(ca.row, ca.col, a_ld) * E);
        sb[lane] = uint32_t(smem_index(cb.row, cb.col, b_ld) * E);
      }
      worst = std::max(worst, std::max(bank_conflict_ways(sa, 16), bank_conflict_ways(sb, 16)));
    }
  return worst;
}

TEST_CASE("rungs 06-08: each rung's tile copy is conflict-free in its layout, the other map is not") {
  for (int e : {2, 4}) {
    CAPTURE(e);
    if (e == 2) {
      CHECK(worst_copy<2>(rung06_a_chunk<2>, Rung06<2>::A_LD, Rung06<2>::B_LD) == 1);  // rung 06
      CHECK(worst_copy<2>(rung07_a_chunk<2>, Rung07<2>::A_LD, Rung07<2>::B_LD) == 1);  // rungs 07, 08
      CHECK(worst_copy<2>(rung06_a_chunk<2>, Rung07<2>::A_LD, Rung07<2>::B_LD) == 2);  // row by row, skewed
      CHECK(worst_copy<2>(rung07_a_chunk<2>, Rung06<2>::A_LD, Rung06<2>::B_LD) == 4);  // column walk, unpadded
    } else {
      CHECK(worst_copy<4>(rung06_a_chunk<4>, Rung06<4>::A_LD, Rung06<4>::B_LD) == 1);
      CHECK(worst_copy<4>(rung07_a_chunk<4>, Rung07<4>::A_LD, Rung07<4>::B_LD) == 1);
      CHECK(worst_copy<4>(rung06_a_chunk<4>, Rung07<4>::A_LD, Rung07<4>::B_LD) == 2);
      CHECK(worst_copy<4>(rung07_a_chunk<4>, Rung06<4>::A_LD, Rung06<4>::B_LD) == 4);
    }
  }
}

TEST_CASE("launch limits: 64-bit offsets into padded buffers") {
  // M = 65,537 by K = 32,767 fits 32-bit indexing (2,147,450,879 elements) but its padded
  // copy, 65,664 x 32,768 for 128-row tiles, does not: the last element's offset needs 64 bits.
  const int M = 65537, K = 32767;
  CHECK(int64_t(M) * K <= 0x7fffffff);
  const int Mp = round_up(M, 128), Kp = round_up(K, 32);
  CHECK(Mp == 65664);
  CHECK(Kp == 32768);
  CHECK(gmem_offset(Mp - 1, Kp, Kp - 1) == size_t(Mp) * size_t(Kp) - 1);
  CHECK(gmem_offset(Mp - 1, Kp, Kp - 1) > size_t(0x7fffffff));
  CHECK(padded_dim_fits(0x7fffffff - 127, 128));
  CHECK_FALSE(padded_dim_fits(0x7fffffff - 126, 128));
  CHECK_FALSE(padded_dim_fits(0, 16));
}

TEST_CASE("launch limits: grid.y holds 65535 row tiles, a taller C is split into row slabs") {
  const GridSize g = gemm_grid(32, 65535, "rung 05");
  CHECK(g.x == 32u);
  CHECK(g.y == 65535u);
  std::string msg;
  try { gemm_grid(1, 65536, "rung 05"); } catch (const std::length_error& e) { msg = e.what(); }
  INFO(msg);
  CHECK(msg.find("rung 05") != std::string::npos);
  CHECK(msg.find("65535") != std::string::npos);
  // rung 05 stops at M = 1,048,560 rows (65535 tiles of 16): the figure its launcher refuses beyond
  CHECK(max_rows_per_launch(kWmma) == 1048560);
  CHECK(max_rows_per_launch(128) == 8388480);
  // The slabs cover [0, M) once, in order, none taller than one launch; every slab but the last
  // starts at a multiple of 128 rows (so a 32-byte aligned A stays aligned).
  for (int64_t M : {int64_t(1), int64_t(8388480), int64_t(8388481), int64_t(20000000)}) {
    CAPTURE(M);
    const int64_t slab = max_rows_per_launch(128);
    int64_t next = 0;
    for (int64_t s = 0; s < row_slab_count(M, slab); ++s) {
      const RowSlab r = row_slab(s, M, slab);
      CHECK(r.first == next);
      CHECK(r.first % 128 == 0);
      CHECK(r.rows >= 1);
      CHECK(r.rows <= slab);
      CHECK(ceil_div(int(r.rows), 128) <= kMaxGridY);
      next = r.first + r.rows;
    }
    CHECK(next == M);
  }
}

TEST_CASE("rung 09: one warp per 16 x 8 tile covers C once, the warp number in 64 bits") {
  const int M = 48, N = 40, threads = 128;  // 3 x 5 tiles: 15 warps, 4 blocks of 4 (one warp spare)
  Visits v(M, N);
  int spare = 0;
  for (unsigned block = 0; block < 4; ++block)
    for (unsigned t = 0; t < unsigned(threads); t += 32) {
      const Fp8Tile tile = rung09_tile(block, threads, t, N);
      if (tile.tm * 16 >= M) { ++spare; continue; }
      for (int r = 0; r < 16; ++r)
        for (int c = 0; c < 8; ++c) CHECK(v.add({int(tile.tm) * 16 + r, int(tile.tn) * 8 + c}));
    }
  CHECK(v.all_once());
  CHECK(spare == 1);
  // More than 2^27 tiles need more than 2^32 threads: M = 262,144 by N = 131,072 (2^28 tiles,
  // 128 GiB of F32, which an H200 holds) runs 2^26 blocks of 128 threads. Block 2^25 starts at
  // thread 2^32, where blockIdx.x * blockDim.x in 32 bits wraps to 0: its first warp is number
  // 2^27, tile row 2^13 (2^14 tiles per row), not tile 0 again.
  const int M_big = 262144, N_big = 131072;
  const Fp8Tile first = rung09_tile(1u << 25, 128, 0, N_big);
  CHECK(first.tm == 8192);
  CHECK(first.tn == 0);
  const Fp8Tile last = rung09_tile((1u << 26) - 1, 128, 96, N_big);  // the grid's last warp
  CHECK(last.tm * 16 == M_big - 16);
  CHECK(last.tn * 8 == N_big - 8);
}

#if HG_WITH_CUDA
TEST_CASE("rung 09's launcher refuses an operand that is not 4-byte aligned, before any launch") {
  // Each lane reads four FP8 codes of A (and of B) with one 32-bit load: a view that starts one
  // byte into a buffer would fault on the GPU. The check comes before any CUDA call, so this
  // test needs no GPU (the pointers are never dereferenced).
  using E4 = __nv_fp8_e4m3;
  const auto at = [](uintptr_t address) { return reinterpret_cast<const E4*>(address); };
  float* C = reinterpret_cast<float*>(uintptr_t(0x20000));
  for (const std::string which : {"A", "B"}) {
    CAPTURE(which);
    const bool a_odd = which == "A";
    std::string msg;
    try {
      gemm_09_mma_fp8(16, 8, 32, at(a_odd ? 0x10001 : 0x10000), at(a_odd ? 0x30000 : 0x30002), C, 1.0f);
    } catch (const std::invalid_argument& e) {
      msg = e.what();
    }
    INFO(msg);
    CHECK(msg.find("gemm_09_mma_fp8") != std::string::npos);
    CHECK(msg.find(which + " starts at") != std::string::npos);
    CHECK(msg.find("4-byte aligned") != std::string::npos);
  }
}
#endif
