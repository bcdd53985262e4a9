#pragma once
// A model of shared-memory bank conflicts, for checking layouts on the CPU.
//
// Shared memory is 32 banks, each 4 bytes wide: byte address a lies in bank (a / 4) % 32.
// A warp's access is served in phases: 32 lanes per phase for 4-byte accesses, 16 lanes for
// 8-byte and 8 lanes for 16-byte ones (a phase moves at most 128 bytes). Within a phase, lanes
// that touch *different* 4-byte words in the same bank are serialised; lanes reading the same
// word share it (broadcast). The conflict degree of a phase is the largest number of distinct
// words any one bank must deliver; 1 means conflict-free.
//
// ldmatrix (what load_matrix_sync compiles to on sm_75+) reads four 8 x 8 matrices of halves,
// one per phase, each as eight 16-byte rows whose addresses come from 8 lanes; so it behaves
// like a 16-byte access of 8 lanes per phase.
#include <algorithm>
#include <cstdint>
#include <set>
#include <vector>

namespace hg::cuda::gemm {

// Worst conflict degree over the phases of one warp-wide access. byte_addr[lane] is the
// address lane `lane` accesses; access_bytes is 4, 8 or 16 (aligned to its size).
inline int bank_conflict_ways(const std::vector<uint32_t>& byte_addr, int access_bytes) {
  const int lanes_per_phase = 32 / (access_bytes / 4);
  int worst = 0;
  for (size_t first = 0; first < byte_addr.size(); first += lanes_per_phase) {
    std::set<uint32_t> words_in_bank[32];
    for (size_t lane = first; lane < std::min(byte_addr.size(), first + lanes_per_phase); ++lane)
      for (int w = 0; w < access_bytes / 4; ++w) {
        const uint32_t word = byte_addr[lane] / 4 + w;
        words_in_bank[word % 32].insert(word);
      }
    for (const auto& s : words_in_bank) worst = std::max(worst, static_cast<int>(s.size()));
  }
  return worst;
}

// Byte addresses of one ldmatrix.x4 (a 16 x 16 fragment of halves at (row0, col0) of a
// row-major array with leading dimension ld halves): lane l gives the start of row l % 8 of
// sub-matrix l / 8; the sub-matrices are (0,0), (8,0), (0,8), (8,8).
inline std::vector<uint32_t> ldmatrix_x4_addresses(int row0, int col0, int ld) {
  std::vector<uint32_t> addr(32);
  for (int lane = 0; lane < 32; ++lane) {
    const int sub = lane / 8, r = lane % 8;
    const int row = row0 + r + 8 * (sub % 2), col = col0 + 8 * (sub / 2);
    addr[lane] = static_cast<uint32_t>((row * ld + col) * 2);
  }
  return addr;
}

}  // namespace hg::cuda::gemm
