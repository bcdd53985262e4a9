// framework/cpu/gemm_bf16_amx.cpp — BF16 GEMM on AMX tiles: the tensor core in the CPU.
//
// Sections: 1. permission  2. the tiles  3. packing  4. the micro-kernel  5. the blocking
//
// AMX (Advanced Matrix Extensions, Intel Xeon 4th generation "Sapphire Rapids" and later) adds
// eight tile registers tmm0..tmm7 of up to 16 rows × 64 bytes and one instruction that does
// what a tensor core does:
//
//   TDPBF16PS tmmC, tmmA, tmmB      C (16×16 F32) += A (16×32 BF16) · B (32×16 BF16)
//
// 16·16·32 = 8192 multiply-adds, 16,384 FLOP, in one instruction. B is not stored as 32 rows
// of 16 but as 16 rows of 16 *pairs*: row p holds (B[2p][n], B[2p+1][n]) for n = 0..15, the
// "VNNI" layout, so that one 64-byte row of A (32 BF16 of K) meets 16 rows of B. The
// numerics (two chains of FMAs, flush to zero) are in bf16_units.h.
//
// Side by side with a WMMA fragment (cuda/gemm/05_wmma.cu):
//
//   CUDA WMMA (per warp)                     AMX (per core)
//   fragment<matrix_a, 16,16,16, half>       tile config: rows 16, colsb 64  (tmm4, tmm5)
//   load_matrix_sync(a, ptr, lda)            _tile_loadd(4, ptr, lda · 2 bytes)
//   mma_sync(acc, a, b, acc)                 _tile_dpbf16ps(0, 4, 6)
//   store_matrix_sync(ptr, acc, ldc, ...)    _tile_stored(0, ptr, ldc · 4 bytes)
//
// The register blocking of this kernel: 4 C tiles (a 32×32 block of C) stay in tmm0..3 for
// the whole k loop; per 32 of K it loads two A tiles (tmm4, 5: rows 0-15, 16-31) and two B
// tiles (tmm6, 7: columns 0-15, 16-31) and issues four TDPBF16PS. Each loaded tile is used
// twice, so 4 KB of loads feed 65,536 FLOP.
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "framework/cpu/gemm_bf16_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

namespace hg::cpu {

// ---- 1. Permission ----------------------------------------------------------------------------
// The tiles are 8 KB of register state that the kernel saves on every context switch, so Linux
// (5.16+) gives them only to a process that asks: arch_prctl(ARCH_REQ_XCOMP_PERM,
// XFEATURE_XTILEDATA). Without the permission the first tile instruction kills the process with
// SIGILL. Asked once per process (the answer holds for all its threads).
namespace {
constexpr int kArchReqXcompPerm = 0x1023;  // ARCH_REQ_XCOMP_PERM, <asm/prctl.h>
constexpr int kXfeatureXtiledata = 18;     // the tile data's bit in XCR0
}  // namespace

const AmxPermission& amx_permission() {
  static const AmxPermission answer = [] {
    AmxPermission p;
    if (!__builtin_cpu_supports("amx-tile") || !__builtin_cpu_supports("amx-bf16")) {
      p.reason = "this CPU has no AMX-BF16";
      return p;
    }
    if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) {
      p.reason = std::string("the operating system refused the tile state (arch_prctl "
                             "ARCH_REQ_XCOMP_PERM: ") + std::strerror(errno) + ")";
      return p;
    }
    p.granted = true;
    return p;
  }();
  return answer;
}

namespace {

// ---- 2. The tiles ----------------------------------------------------------------------------
// A tile configuration is 64 bytes: a palette (1: eight tiles of up to 16×64 bytes), then the
// bytes per row and the rows of each tile. Loaded per thread (the tile state is per thread).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
constexpr int kTileRows = 16, kTileK = 32;  // a tile: 16 rows × 32 BF16 (or 16 F32)

__attribute__((target("amx-tile"))) void configure_tiles() {
  TileConfig config;
  for (int t = 0; t < 8; ++t) config.bytes_per_row[t] = 64, config.rows[t] = kTileRows;
  // GCC 12's _tile_loadconfig tells the compiler it reads 8 bytes, not 64, so the stores above
  // could be dropped as dead (and LDTILECFG then faults on a bad configuration). An empty asm
  // that may read all of memory through &config keeps them.
  asm volatile("" : : "r"(&config) : "memory");
  _tile_loadconfig(&config);
}

// ---- 3. Packing --------------------------------------------------------------------------------
// Both operands are copied into whole 1 KB tiles, one after the other, so that every tile load
// reads 16 consecutive cache lines. (Loading A's tiles straight from a row-major A would read
// 16 rows a stride apart: with a power-of-two stride such as 4096 bytes all 16 lines fall in
// the same set of the L1 cache, which holds 12, and the loads miss again and again.)
constexpr int64_t kTileElems = kTileRows * kTileK;  // 512 BF16 = 1 KB

// (GCC 12's AVX-512 headers make an "undefined" register as `__m512 __Y = __Y;` and its own
// -Wuninitialized then reports that line — GCC bug 105593, fixed in GCC 13. Silenced for the
// two packing moves only.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// Full tiles are packed in AVX-512 registers (every AMX CPU has AVX-512 BW), two moves:
//   interleave16      two rows of 16 BF16 -> 16 pairs:  out[2c + h] = row_h[c]
//   transpose_words   16 rows of 16 32-bit words -> out row p = word p of each row (a 16×16
//                     transpose in 64 shuffles: 32-bit, 64-bit, then 128-bit lanes twice)
__attribute__((target("avx512f,avx512bw"))) void interleave16(const uint16_t* r0, const uint16_t* r1,
                                                             uint16_t* out) {
  alignas(64) static const uint16_t pick[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i a = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r0)));
  const __m512i b = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r1)));
  _mm512_storeu_si512(out, _mm512_permutex2var_epi16(a, _mm512_load_si512(pick), b));
}

// src: 16 rows of 32 BF16 (16 words), row i at src + i·ld (ld in BF16); out: 16 rows of 16 words.
__attribute__((target("avx512f"))) void transpose_words(const uint16_t* src, int64_t ld, uint16_t* out) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_castsi512_ps(_mm512_loadu_si512(src + i * ld));
  for (int i = 0; i < 16; i += 2) t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]), t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int h = 0; h < 16; h += 8)
    for (int i = 0; i < 4; ++i) {
      t[h + i] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0x88);
      t[h + i + 4] = _mm512_shuffle_f32x4(r[h + i], r[h + i + 4], 0xdd);
    }
  for (int i = 0; i < 8; ++i) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
  }
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(out + i * kTileK, _mm512_castps_si512(r[i]));
}
#pragma GCC diagnostic pop

// All of op(B) (K, N) becomes `slivers` slivers of 16 columns (at least ceil(N/16)), each
// `ktiles` = ceil(K/32) tiles of 16 pair rows × 16 columns × 2, one after the other:
//   out[s][t][p][c][h] = op(B)(32t + 2p + h, 16s + c),   +0 past K or N.
// Two ways, each reading B in the order it is stored:
//   B stored (N, K) (trans_b): each pair is already one 32-bit word of a row of B, so a tile is
//     a transpose of words; one sliver at a time (pack_b_sliver_of_rows), tile after tile.
//   B stored (K, N): a pair row interleaves rows 2p and 2p+1 of B, for every sliver at once
//     (pack_b_pair_row), so the two rows are read from end to end, not 32 bytes at a time.
void pack_b_sliver_of_rows(const MatrixView<uint16_t>& B, int64_t K, int64_t N, int64_t s,
                           int64_t ktiles, uint16_t* out) {
  const int cols = int(std::clamp<int64_t>(N - 16 * s, 0, 16));
  for (int64_t t = 0; t < ktiles; ++t, out += kTileElems) {
    const int64_t k0 = kTileK * t, ks = std::min<int64_t>(kTileK, K - k0);
    if (cols == 16 && ks == kTileK) {
      transpose_words(B.data + 16 * s * B.ld + k0, B.ld, out);
      continue;
    }
    std::fill(out, out + kTileElems, uint16_t(0));  // a ragged tile, one value at a time
    for (int64_t k = 0; k < ks; ++k)
      for (int c = 0; c < cols; ++c) out[(k / 2) * kTileK + 2 * c + k % 2] = B.data[(16 * s + c) * B.ld + k0 + k];
  }
}

void pack_b_pair_row(const MatrixView<uint16_t>& B, int64_t K, int64_t N, int64_t q, int64_t slivers,
                     int64_t ktiles, uint16_t* out) {
  const int64_t k = 2 * q, t = k / kTileK, p = (k % kTileK) / 2;
  const uint16_t* r0 = B.data + k * B.ld;
  const uint16_t* r1 = k + 1 < K ? r0 + B.ld : nullptr;  // K odd: the last pair's upper half is +0
  for (int64_t s = 0; s < slivers; ++s) {
    uint16_t* row = out + (s * ktiles + t) * kTileElems + p * kTileK;
    const int64_t c0 = 16 * s, cols = std::clamp<int64_t>(N - c0, 0, 16);
    if (cols == 16 && r1) {
      interleave16(r0 + c0, r1 + c0, row);
      continue;
    }
    for (int64_t c = 0; c < 16; ++c) {
      row[2 * c] = c < cols ? r0[c0 + c] : 0;
      row[2 * c + 1] = c < cols && r1 ? r1[c0 + c] : 0;
    }
  }
}

// The (mc, kc) block of op(A) at (i0, p0) becomes `blocks` row blocks (at least ceil(mc/16)),
// each ceil(kc/32) tiles of 16 rows × 32 BF16 of K:
//   out[b][t][r][k] = op(A)(i0 + 16b + r, p0 + 32t + k),   +0 past mc or kc.
// Row-major A is copied 64 bytes a row. A stored (K, M) (trans_a) is interleaved into 16 pair
// rows (words (A(k, i+r), A(k+1, i+r)) for each r) and those words transposed.
void pack_a_tiles(const MatrixView<uint16_t>& A, int64_t i0, int64_t p0, int64_t mc, int64_t kc,
                  int64_t blocks, uint16_t* out) {
  const int64_t tiles = (kc + kTileK - 1) / kTileK;
  alignas(64) uint16_t pairs[kTileElems];
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t t = 0; t < tiles; ++t, out += kTileElems) {
      const int rows = int(std::clamp<int64_t>(mc - 16 * b, 0, 16));
      const int64_t i = i0 + 16 * b, k0 = p0 + kTileK * t, ks = std::min<int64_t>(kTileK, kc - kTileK * t);
      if (rows == 16 && ks == kTileK) {  // a whole tile
        if (!A.trans) {
          for (int r = 0; r < 16; ++r) std::memcpy(out + r * kTileK, A.data + (i + r) * A.ld + k0, kTileK * 2);
        } else {
          const uint16_t* first = A.data + k0 * A.ld + i;
          for (int q = 0; q < 16; ++q) interleave16(first + 2 * q * A.ld, first + (2 * q + 1) * A.ld, pairs + q * kTileK);
          transpose_words(pairs, kTileK, out);
        }
        continue;
      }
      std::fill(out, out + kTileElems, uint16_t(0));  // a ragged tile, one value at a time
      for (int r = 0; r < rows; ++r)
        for (int64_t k = 0; k < ks; ++k) out[r * kTileK + k] = *A.at(i + r, k0 + k);
    }
}

// ---- 4. The micro-kernel -----------------------------------------------------------------------
// out (32×32, row stride ld_out) = [in (32×32, row stride ld_in) +] A · B over `tiles` tiles of
// K: A's two row blocks at a0, a1 and B's two slivers at b0, b1, each `tiles` packed tiles.
// in == nullptr: the tiles start from zero (the first K block).
__attribute__((target("amx-tile,amx-bf16"))) void kernel_32x32(
    int64_t tiles, const uint16_t* a0, const uint16_t* a1, const uint16_t* b0, const uint16_t* b1,
    const float* in, int64_t ld_in, float* out, int64_t ld_out) {
  if (in) {
    _tile_loadd(0, in, ld_in * 4);
    _tile_loadd(1, in + 16, ld_in * 4);
    _tile_loadd(2, in + 16 * ld_in, ld_in * 4);
    _tile_loadd(3, in + 16 * ld_in + 16, ld_in * 4);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t t = 0; t < tiles; ++t) {
    _tile_loadd(4, a0 + t * kTileElems, 64);  // rows 0-15 of A, 32 of K
    _tile_loadd(5, a1 + t * kTileElems, 64);  // rows 16-31
    _tile_loadd(6, b0 + t * kTileElems, 64);  // columns 0-15, as pairs
    _tile_loadd(7, b1 + t * kTileElems, 64);  // columns 16-31
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, out, ld_out * 4);
  _tile_stored(1, out + 16, ld_out * 4);
  _tile_stored(2, out + 16 * ld_out, ld_out * 4);
  _tile_stored(3, out + 16 * ld_out + 16, ld_out * 4);
}

__attribute__((target("amx-tile"))) void release_tiles() { _tile_release(); }

// Per-thread buffers, 64-byte aligned (a tile row in one cache line), kept and grown between
// calls (training multiplies the same shapes thousands of times).
template <class T>
struct Buffer {
  std::vector<T> v;
  T* get(int64_t n) {
    const int64_t pad = 64 / int64_t(sizeof(T));
    if (int64_t(v.size()) < n + pad) v.resize(size_t(n + pad));
    const uintptr_t p = reinterpret_cast<uintptr_t>(v.data());
    return v.data() + ((64 - p % 64) % 64) / sizeof(T);
  }
};
thread_local Buffer<uint16_t> t_packed_a, t_packed_b;
thread_local Buffer<float> t_acc;

// One thread's block of C: rows [i0, i0 + mc), columns [j0, j0 + nc), over all of K.
//   for pc in K step KC:          KC = 256: the pair of B slivers a kernel reads is 16 KB, in L1
//     for jr in nc step 32:       the B slivers stay in L1 while ...
//       for ir in mc step 32:     ... A's tiles (mc × KC, in L2) stream past
//         kernel_32x32            acc (32×32) [+]= A (32, KC) · B (KC, 32)
// Until the last K block the sums live in `acc`: 32×32 row-major blocks in the order the
// kernels visit them (at most 512 × 512 F32, 1 MB: in L2 for the next K block). The last K
// block stores its tiles into C itself, once. (Loading and storing C's own rows on every K
// block costs a page and a cache set per row: 16 rows 8 KB apart, in a 2048-wide C, all fall
// in one set of L1.) Each element accumulates across the K blocks in place, so its sum is one
// unbroken sequence of TDPBF16PS: the order gemm_bf16_emulated(Amx) follows. Blocks at the
// ragged edges of C end in `acc` too, and only their valid part is copied to C.
void amx_block(const uint16_t* Ap, const uint16_t* Bp, int64_t ktiles, int64_t i0, int64_t mc,
               int64_t j0, int64_t nc, int64_t M, int64_t N, float* C, int64_t ldc) {
  constexpr int64_t KT = 256 / kTileK;  // KC in tiles
  const int64_t rb = (mc + 31) / 32, cb = (nc + 31) / 32;  // 32×32 blocks down and across
  float* const acc = t_acc.get(rb * cb * 1024);
  for (int64_t pt = 0; pt < ktiles; pt += KT) {
    const int64_t tiles = std::min(KT, ktiles - pt);
    const bool first = pt == 0, last = pt + KT >= ktiles;
    for (int64_t y = 0; y < cb; ++y) {
      const int64_t j = j0 + 32 * y;
      const uint16_t* b0 = Bp + ((j / 16) * ktiles + pt) * kTileElems;  // sliver j/16, tile pt
      const uint16_t* b1 = b0 + ktiles * kTileElems;                    // the next sliver
      for (int64_t x = 0; x < rb; ++x) {
        const int64_t i = i0 + 32 * x;
        const uint16_t* a0 = Ap + ((i / 16) * ktiles + pt) * kTileElems;
        float* block = acc + (y * rb + x) * 1024;
        const bool whole = i + 32 <= M && j + 32 <= N;
        const uint16_t* a1 = a0 + ktiles * kTileElems;                   // the next 16 rows
        if (last && whole) {
          kernel_32x32(tiles, a0, a1, b0, b1, first ? nullptr : block, 32, C + i * ldc + j, ldc);
          continue;
        }
        kernel_32x32(tiles, a0, a1, b0, b1, first ? nullptr : block, 32, block, 32);
        if (!last) continue;
        for (int64_t r = 0; r < std::min<int64_t>(32, M - i); ++r)  // a ragged block: its valid part
          std::memcpy(C + (i + r) * ldc + j, block + r * 32, size_t(std::min<int64_t>(32, N - j)) * 4);
      }
    }
  }
}

}  // namespace

// ---- 5. The blocking ---------------------------------------------------------------------------
// At 2,000+ GFLOP/s a core needs its operands from L1 and L2, and even C must not go back to
// memory between K blocks: one pass of a 32×32 C block over KC = 256 is 0.5 MFLOP against 8 KB
// of C loaded and stored, 64 FLOP a byte — main memory cannot feed that, L2 can. So:
//   1. pack all of op(A) and op(B) into tiles once, every thread packing its share (the F32
//      kernels pack per block and per thread; at AMX speed the repeated copies cost more than
//      the arithmetic);
//   2. cut C into blocks of at most 512 × 512 (smaller when that leaves a thread idle), and let
//      each thread finish whole blocks, K block by K block (amx_block).
void amx_gemm(const MatrixView<uint16_t>& A, const MatrixView<uint16_t>& B, int64_t M, int64_t N,
              int64_t K, float* C, int64_t ldc, int threads) {
  const int64_t mblocks = (M + 31) / 32 * 2, nslivers = (N + 31) / 32 * 2;  // 16-row / 16-column units, even
  const int64_t ktiles = (K + kTileK - 1) / kTileK;
  uint16_t* const Ap = t_packed_a.get(mblocks * ktiles * kTileElems);
  uint16_t* const Bp = t_packed_b.get(nslivers * ktiles * kTileElems);
  // Blocks of C: 512 × 512, halved (in 32s) while there are fewer than two per thread.
  int64_t MC = 512, NC = 512;
  auto blocks = [&] { return ((M + MC - 1) / MC) * ((N + NC - 1) / NC); };
  while (blocks() < 2 * threads && (MC > 32 || NC > 32)) (MC >= NC ? MC : NC) /= 2;
  const int64_t bm = (M + MC - 1) / MC, count = blocks();
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    configure_tiles();
#pragma omp for schedule(static)
    for (int64_t b = 0; b < mblocks; ++b) {
      const int64_t rows = std::clamp<int64_t>(M - 16 * b, 0, 16);  // 0: a zero block, the pair's second
      pack_a_tiles(A, 16 * b, 0, rows, K, 1, Ap + b * ktiles * kTileElems);
    }
    if (B.trans) {
#pragma omp for schedule(static)
      for (int64_t s = 0; s < nslivers; ++s)
        pack_b_sliver_of_rows(B, K, N, s, ktiles, Bp + s * ktiles * kTileElems);
    } else {
      // pair rows past K (up to the last whole tile) are zero
      const int64_t pair_rows = ktiles * kTileRows, real = (K + 1) / 2;
#pragma omp for schedule(static)
      for (int64_t q = 0; q < pair_rows; ++q) {
        if (q < real) pack_b_pair_row(B, K, N, q, nslivers, ktiles, Bp);
        else
          for (int64_t s = 0; s < nslivers; ++s)
            std::fill_n(Bp + (s * ktiles + q / kTileRows) * kTileElems + (q % kTileRows) * kTileK, kTileK, uint16_t(0));
      }
    }
#pragma omp for schedule(dynamic)
    for (int64_t b = 0; b < count; ++b) {
      const int64_t i0 = (b % bm) * MC, j0 = (b / bm) * NC;
      amx_block(Ap, Bp, ktiles, i0, std::min(MC, M - i0), j0, std::min(NC, N - j0), M, N, C, ldc);
    }
    release_tiles();
  }
}

}  // namespace hg::cpu

#else
namespace hg::cpu {
const AmxPermission& amx_permission() {
  static const AmxPermission answer{false, "AMX exists on x86-64 only"};
  return answer;
}
void amx_gemm(const MatrixView<uint16_t>&, const MatrixView<uint16_t>&, int64_t, int64_t, int64_t,
              float*, int64_t, int) {}
}  // namespace hg::cpu
#endif
