#pragma once
// Index math of the GEMM ladder, written once and used by the kernels and by the CPU tests
// (tests/unit/test_cuda_gemm_layout.cpp) and the chapters' CPU walk-throughs.
//
// Conventions for every rung: row-major, C (M,N) = A (M,K) · B (K,N).
//   A[m][k] is A[m*K + k],  B[k][n] is B[k*N + n],  C[m][n] is C[m*N + n].
// Thread and block indices are passed in as plain ints (tx = threadIdx.x, bx = blockIdx.x,
// bdx = blockDim.x, t = flat thread index in the block), so the same functions run on the CPU.
//
// Sections:  01 naive · 02 coalesced · 03 shared tiled · 04 register blocked ·
//            05 WMMA one warp · 06/07 WMMA block tiles with skewed shared memory
#include "cuda/runtime/hd.h"

namespace hg::cuda::gemm {

struct Coord {
  int row, col;
};

HG_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }
HG_HD int round_up(int a, int b) { return ceil_div(a, b) * b; }

// ---- 01 naive: x -> row -------------------------------------------------------------------
// The first idea anyone writes: threadIdx.x walks down the rows. The 32 lanes of a warp then
// read 32 different rows of A (32 far-apart addresses) and write 32 different rows of C.
HG_HD Coord naive_coord(int bx, int by, int tx, int ty, int bdx, int bdy) {
  return {bx * bdx + tx, by * bdy + ty};
}

// ---- 02 coalesced: x -> column ------------------------------------------------------------
// Swap the roles: consecutive lanes take consecutive columns, so a warp reads 32 consecutive
// floats of B (one 128-byte line) and writes 32 consecutive floats of C; every lane reads the
// same A[row][k] (one broadcast).
HG_HD Coord coalesced_coord(int bx, int by, int tx, int ty, int bdx, int bdy) {
  return {by * bdy + ty, bx * bdx + tx};
}

// ---- 03 shared-memory tiling ---------------------------------------------------------------
// A block of TILE x TILE threads computes a TILE x TILE tile of C. For each step s along K it
// copies one tile of A and one of B into shared memory (each thread one element of each),
// then every thread reads TILE values of each from shared memory instead of global memory.
constexpr int kTile03 = 32;
// Element of A that thread (ty, tx) of block row `by` copies at step s: A[by*T + ty][s*T + tx].
HG_HD Coord tiled_a_element(int by, int s, int ty, int tx) { return {by * kTile03 + ty, s * kTile03 + tx}; }
// Element of B it copies: B[s*T + ty][bx*T + tx].
HG_HD Coord tiled_b_element(int bx, int s, int ty, int tx) { return {s * kTile03 + ty, bx * kTile03 + tx}; }

// ---- 04 2D register blocking ----------------------------------------------------------------
// A block of 256 threads computes a 128 x 128 tile of C; each thread computes 8 x 8 outputs
// held in registers. Per step of BK = 8 along K, a thread loads 8 values of A and 8 of B from
// shared memory and does 64 multiply-adds with them (8x more math per shared-memory load).
struct Rung04 {
  static constexpr int BM = 128, BN = 128, BK = 8, TM = 8, TN = 8;
  static constexpr int kThreads = (BM / TM) * (BN / TN);  // 256
};
// Output (i, j) of thread t (0..255), i, j in 0..7, tile-local. The 8 rows and 8 columns of a
// thread are *strided by 16*, not contiguous: then the 16 lanes with consecutive t read 16
// consecutive floats of the B tile (no bank conflict) and write 16 consecutive floats of C.
// (With contiguous blocks, t*8 + j, lanes 0, 4, 8, 12 would hit the same bank: 4-way conflict.)
HG_HD Coord rung04_output(int t, int i, int j) { return {t / 16 + 16 * i, t % 16 + 16 * j}; }
// The A tile (BM x BK = 128 x 8) has 1024 elements: thread t copies elements t + 256p, p = 0..3.
HG_HD Coord rung04_a_load(int t, int p) {
  const int e = t + Rung04::kThreads * p;
  return {e / Rung04::BK, e % Rung04::BK};
}
// The B tile (BK x BN = 8 x 128): the same, 128 elements per row.
HG_HD Coord rung04_b_load(int t, int p) {
  const int e = t + Rung04::kThreads * p;
  return {e / Rung04::BN, e % Rung04::BN};
}

// ---- 05 WMMA, one warp per 16 x 16 tile ----------------------------------------------------
constexpr int kWmma = 16;  // fragment shape 16 x 16 x 16 (F16 inputs, F32 accumulator)
// Block (bx, by) holds one warp, which computes C[by*16 .. +16][bx*16 .. +16].
HG_HD Coord rung05_tile(int bx, int by) { return {by * kWmma, bx * kWmma}; }

// ---- 06 / 07 WMMA block tiles, skewed shared memory -----------------------------------------
// A block of 8 warps computes a 128 x 128 tile of C, stepping BK = 32 along K. The warps form
// a 2 x 4 grid; each warp owns a 64 x 32 sub-tile = 4 x 2 fragments of 16 x 16.
//
// Shared memory holds the A tile (128 x 32 halves) and the B tile (32 x 128 halves), each row
// padded by SKEW = 8 halves (16 bytes). Why: a fragment load (load_matrix_sync compiles to
// ldmatrix on sm_75+) reads, per phase, eight 16-byte rows of one 8 x 8 sub-matrix. Shared
// memory has 32 banks of 4 bytes, i.e. eight 16-byte bank groups per 128 bytes. Unskewed, a row
// of A is 64 bytes, so rows r and r+2 start in the same bank group: a 4-way conflict; rows of
// B are 256 bytes: all eight rows in the same group, 8-way. With the skew the row strides are
// 80 and 272 bytes = 5 and 17 groups; 5 and 17 are odd, so eight consecutive rows land in
// eight different groups: conflict-free. (A skew of 16 halves would give 96 and 288 bytes =
// 6 and 18 groups, even, hence 2-way conflicts.) The skew also keeps every fragment pointer
// 256-bit aligned as load_matrix_sync requires: fragments start at rows multiple of 16, and
// 16 rows x 80 bytes = 1280 bytes, a multiple of 32.
struct Rung06 {
  static constexpr int BM = 128, BN = 128, BK = 32;
  static constexpr int kWarps = 8, kThreads = kWarps * 32;
  static constexpr int WM = 64, WN = 32;                       // warp tile
  static constexpr int FM = WM / kWmma, FN = WN / kWmma;       // 4 x 2 fragments per warp
  static constexpr int SKEW = 8;                               // halves
  static constexpr int A_LD = BK + SKEW;                       // 40 halves = 80 bytes
  static constexpr int B_LD = BN + SKEW;                       // 136 halves = 272 bytes
  static constexpr int kChunk = 8;                             // halves per 16-byte copy
};
// Top-left corner (tile-local) of fragment (i, j) of warp w.
HG_HD Coord rung06_fragment(int warp, int i, int j) {
  return {(warp / 4) * Rung06::WM + i * kWmma, (warp % 4) * Rung06::WN + j * kWmma};
}
// Shared-memory index (in halves) of element (row, col) of a tile with leading dimension ld.
HG_HD int smem_index(int row, int col, int ld) { return row * ld + col; }

// Copying the A tile: 128 rows x 4 chunks of 16 bytes = 512 chunks, 2 per thread (p = 0, 1).
// A 16-byte store by a warp is served in 4 phases of 8 lanes. If lanes 0..7 took the chunks of
// rows r and r+1 (row by row), row r+1's last chunk would start at 80 + 48 = 128 bytes: the
// same bank group as row r's first chunk, a 2-way conflict. So lanes walk *down* a column of
// chunks: lanes 0..7 copy chunk column 0 of rows 0..7 (groups 0,5,2,7,4,1,6,3: all different),
// lanes 8..15 column 1, and so on. In global memory a warp still reads 8 whole 64-byte row
// pieces, i.e. full 32-byte sectors.
HG_HD Coord rung06_a_chunk(int t, int p) {
  const int q = t + Rung06::kThreads * p;                  // chunk number 0..511
  return {q % 8 + 8 * (q / 32), ((q / 8) % 4) * Rung06::kChunk};
}
// Copying the B tile: 32 rows x 16 chunks = 512 chunks, row by row (lanes 0..7 copy 8
// consecutive chunks of one row: groups r+0 .. r+7 mod 8, all different).
HG_HD Coord rung06_b_chunk(int t, int p) {
  const int q = t + Rung06::kThreads * p;
  return {q / 16, (q % 16) * Rung06::kChunk};
}

}  // namespace hg::cuda::gemm
