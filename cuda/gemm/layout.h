#pragma once
// Index math of the GEMM ladder, written once and used by the kernels and by the CPU tests
// (tests/unit/test_cuda_gemm_layout.cpp) and the chapters' CPU walk-throughs.
//
// Conventions for every rung: row-major, C (M,N) = A (M,K) · B (K,N).
//   A[m][k] is A[m*K + k],  B[k][n] is B[k*N + n],  C[m][n] is C[m*N + n].
// Thread and block indices are passed in as plain ints (tx = threadIdx.x, bx = blockIdx.x,
// bdx = blockDim.x, t = flat thread index in the block), so the same functions run on the CPU.
//
// Sections:  launch limits (64-bit offsets, grid.y, row slabs) · 01 naive · 02 coalesced ·
//            03 shared tiled · 04 register blocked · 05 WMMA one warp · 06 WMMA block tiles ·
//            07 the skew · 08 (07's tiles, two buffers) · 09 FP8 mma.sync, one warp per tile
#include "cuda/runtime/hd.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace hg::cuda::gemm {

struct Coord {
  int row, col;
};

HG_HD int ceil_div(int a, int b) { return (a + b - 1) / b; }
HG_HD int round_up(int a, int b) { return ceil_div(a, b) * b; }

// ---- launch limits ----------------------------------------------------------------------------
// Element (row, col) of a row-major matrix with leading dimension ld, as a 64-bit offset. The
// tensor-core rungs run on zero-padded copies whose sizes are rounded up to whole tiles: a
// matrix that fits 32-bit indexing (M = 65,537 by K = 32,767 has 2,147,450,879 elements) can
// stop fitting once padded (65,664 x 32,768 = 2,151,677,952 > 2^31 - 1), so the kernels form
// every global offset in 64 bits.
HG_HD size_t gmem_offset(int row, int ld, int col) { return size_t(row) * size_t(ld) + size_t(col); }

// Every dimension of a padded launch is still an int: M rounded up to a multiple of `tile`
// must not pass 2^31 - 1.
inline bool padded_dim_fits(int64_t n, int tile) { return n >= 1 && n <= int64_t(0x7fffffff) - (tile - 1); }

// A launch's grid: x walks the column tiles, y the row tiles. CUDA caps gridDim.y at 65,535
// (gridDim.x at 2^31 - 1), so one launch covers at most 65,535 tiles of rows: 1,048,560 rows
// for 16-row tiles (rung 05), 8,388,480 for 128-row tiles. A taller C is split into row slabs
// (row_slab, below) by the caller: cuda/gemm/matmul.cu does.
constexpr int64_t kMaxGridY = 65535;
struct GridSize {
  unsigned x, y;
};
inline GridSize gemm_grid(int64_t col_tiles, int64_t row_tiles, const char* rung) {
  if (row_tiles > kMaxGridY || col_tiles > int64_t(0x7fffffff))
    throw std::length_error(std::string(rung) + ": C needs a grid of " + std::to_string(col_tiles) + " x " +
                            std::to_string(row_tiles) + " tiles; CUDA allows at most 2^31 - 1 x 65535 "
                            "(split C into row slabs: cuda/gemm/matmul.cu does)");
  return {unsigned(col_tiles), unsigned(row_tiles)};
}
// The rows that fit one launch when a row tile is `tile_rows` tall.
constexpr int64_t max_rows_per_launch(int tile_rows) { return kMaxGridY * tile_rows; }
// Row slabs of C = A·B: rows [first, first + rows) of A and C are contiguous in row-major
// storage, and their product needs only those rows, so a tall product is a loop of slabs.
struct RowSlab {
  int64_t first, rows;
};
inline RowSlab row_slab(int64_t s, int64_t M, int64_t slab_rows) {
  const int64_t first = s * slab_rows;
  return {first, M - first < slab_rows ? M - first : slab_rows};
}
inline int64_t row_slab_count(int64_t M, int64_t slab_rows) { return (M + slab_rows - 1) / slab_rows; }

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
// A fragment of C is 16 x 16 (F32). Along K a fragment of A and B spans 16 elements for the
// 16-bit formats (F16, BF16: shape 16x16x16) and 8 for TF32 (shape 16x16x8), 32 bytes of a row
// either way.
constexpr int kWmma = 16;
// Block (bx, by) holds one warp, which computes C[by*16 .. +16][bx*16 .. +16].
HG_HD Coord rung05_tile(int bx, int by) { return {by * kWmma, bx * kWmma}; }

// ---- 06 WMMA block tiles: the tensor-core counterpart of rung 04 ----------------------------
// A block of 8 warps computes a 128 x 128 tile of C. The warps form a 2 x 4 grid; each warp
// owns a 64 x 32 sub-tile = 4 x 2 fragments of 16 x 16. At each step along K the block copies a
// 128 x BK tile of A and a BK x 128 tile of B into shared memory, 16 bytes per copy.
//
// E is the size of an element of A and B in bytes: 2 for F16 and BF16, 4 for TF32 (F32
// storage). A step along K covers 64 bytes of each row of A whatever the format, so BK is 32
// halves or 16 floats, each tile holds 512 copies of 16 bytes (2 per thread), and the shared
// memory of a tile pair is the same 16 KB.
template <int E>
struct WmmaTiles {
  static constexpr int kElemBytes = E;
  static constexpr int BM = 128, BN = 128, BK = 64 / E;
  static constexpr int kWarps = 8, kThreads = kWarps * 32;
  static constexpr int WM = 64, WN = 32;                       // warp tile
  static constexpr int FM = WM / kWmma, FN = WN / kWmma;       // 4 x 2 fragments per warp
  static constexpr int FK = 32 / E;                            // K of one fragment: 16 or 8
  static constexpr int kChunk = 16 / E;                        // elements per 16-byte copy
  static constexpr int kChunksPerRowB = BN / kChunk;           // 16 (halves) or 32 (floats)
  static constexpr int kChunksPerThread = BM * BK / kChunk / kThreads;  // 2, for A and for B
};
// Rung 06: the tiles unpadded, row after row.
template <int E>
struct Rung06 : WmmaTiles<E> {
  static constexpr int A_LD = WmmaTiles<E>::BK;                // 64 bytes
  static constexpr int B_LD = WmmaTiles<E>::BN;                // 256 or 512 bytes
};
// Rung 07 (and 08): every row padded by a skew, so that the rows a fragment load reads at
// once fall in different banks (shared memory: 32 banks of 4 bytes = eight 16-byte groups per
// 128 bytes).
//   A: rows of 64 bytes start in bank groups 0, 4, 0, 4, ...; padded by one 16-byte group to
//      80 bytes = 5 groups (odd), eight consecutive rows start in eight different groups.
//   B: rows of 256 bytes (halves) or 512 bytes (floats) all start in group 0; padded by 8
//      elements to 272 bytes = 17 groups (odd: the same argument) for halves, and to 544 bytes
//      = 136 words for floats, which puts rows k, k+1, k+2, k+3 8 banks apart: a TF32 fragment
//      load reads 8 consecutive words of 4 such rows at once, 32 different banks.
// Why these and not others is checked access by access in tests/unit/test_cuda_gemm_layout.cpp
// (a skew of 16 halves gives 96 and 288 bytes = 6 and 18 groups, even: 2-way conflicts).
// The skew also keeps every fragment pointer 32-byte aligned (load_matrix_sync needs it):
// fragments start at rows that are multiples of 16 (A: 16 x 80 bytes) or of FK (B: 8 x 544 or
// 16 x 272 bytes), all multiples of 32.
template <int E>
struct Rung07 : WmmaTiles<E> {
  static constexpr int SKEW_A = 16 / E, SKEW_B = 8;            // elements
  static constexpr int A_LD = WmmaTiles<E>::BK + SKEW_A;       // 80 bytes
  static constexpr int B_LD = WmmaTiles<E>::BN + SKEW_B;       // 272 (halves) or 544 (floats) bytes
};

// Top-left corner (tile-local) of fragment (i, j) of warp w (the same for every format).
HG_HD Coord wmma_fragment(int warp, int i, int j) {
  return {(warp / 4) * WmmaTiles<2>::WM + i * kWmma, (warp % 4) * WmmaTiles<2>::WN + j * kWmma};
}
// Shared-memory index (in elements) of element (row, col) of a tile with leading dimension ld.
HG_HD int smem_index(int row, int col, int ld) { return row * ld + col; }

// Copying the tiles: 512 chunks of 16 bytes per tile, chunk q = t + 256p for p = 0, 1.
// A 16-byte store by a warp is served in 4 phases of 8 lanes.
// Rung 06, A: row after row, 4 chunks per row. Lanes 0..7 copy rows r and r + 1: byte offsets
// 0, 16, ..., 112 of the unpadded tile, eight different bank groups.
template <int E>
HG_HD Coord rung06_a_chunk(int t, int p) {
  const int q = t + WmmaTiles<E>::kThreads * p;
  return {q / 4, (q % 4) * WmmaTiles<E>::kChunk};
}
// Rung 07, A: in the skewed tile the row-by-row map would put row r+1's last chunk at
// 80 + 48 = 128 bytes, the bank group of row r's first chunk: a 2-way conflict. So lanes walk
// *down* a column of chunks: lanes 0..7 copy chunk column 0 of rows 0..7 (groups 0,5,2,7,4,1,6,3:
// all different), lanes 8..15 column 1, and so on. In global memory a warp still reads 8 whole
// 64-byte row pieces, i.e. full 32-byte sectors.
template <int E>
HG_HD Coord rung07_a_chunk(int t, int p) {
  const int q = t + WmmaTiles<E>::kThreads * p;
  return {q % 8 + 8 * (q / 32), ((q / 8) % 4) * WmmaTiles<E>::kChunk};
}
// B (every rung): row after row; lanes 0..7 copy 8 consecutive chunks of one row (8 different
// bank groups, with or without the skew).
template <int E>
HG_HD Coord wmma_b_chunk(int t, int p) {
  const int q = t + WmmaTiles<E>::kThreads * p;
  return {q / WmmaTiles<E>::kChunksPerRowB, (q % WmmaTiles<E>::kChunksPerRowB) * WmmaTiles<E>::kChunk};
}

// ---- 09 FP8 mma.sync: one warp per 16 x 8 tile of C ------------------------------------------
// Warp w of the whole grid (block after block, 4 warps a block) computes tile (tm, tn) of C,
// the tiles numbered row after row: tm = w / (N / 8), tn = w % (N / 8). Warps past the last
// tile (the last block's) find tm * 16 >= M and return.
// The thread number is counted in 64 bits: blockIdx.x * blockDim.x is a product of two 32-bit
// unsigned values and wraps at 2^32 threads, which a C of more than 2^27 tiles passes (more
// than 64 GiB of F32: M = 262,144 by N = 131,072 is 128 GiB, within an H200's memory); the
// warps past the wrap would compute the first tiles again and leave the last ones unwritten.
struct Fp8Tile {
  int64_t tm, tn;  // tile row and column: C rows tm*16 .. +16, columns tn*8 .. +8
};
HG_HD Fp8Tile rung09_tile(unsigned block, unsigned threads_per_block, unsigned thread, int N) {
  const int64_t warp = (int64_t(block) * threads_per_block + thread) / 32;
  const int64_t tiles_n = N / 8;
  return {warp / tiles_n, warp % tiles_n};
}

}  // namespace hg::cuda::gemm
