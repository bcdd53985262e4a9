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
// ldmatrix (what load_matrix_sync compiles to on sm_75+ for 16-bit elements, F16 and BF16)
// reads four 8 x 8 matrices of halves, one per phase, each as eight 16-byte rows whose
// addresses come from 8 lanes; so it behaves like a 16-byte access of 8 lanes per phase.
// TF32 fragments are loaded differently: see the end of this file.
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

namespace hg::cuda::gemm {

// TF32 fragments hold 32-bit values: there is no ldmatrix for them, and a fragment load is a
// few 4-byte loads, one register per lane each. WMMA does not say which lane holds which
// element, so this is a model: the layout PTX documents for mma.m16n8k8 with .tf32 operands,
// of which a WMMA 16x16x8 fragment is assumed to be built (g = lane / 4, t = lane % 4):
//   A (16 x 8):  register 0 (g, t), 1 (g + 8, t), 2 (g, t + 4), 3 (g + 8, t + 4)
//   B (8 x 8):   register 0 (t, g), 1 (t + 4, g);  an 8 x 16 fragment of B is two of them.
// Each function returns the byte addresses of the 4 warp-wide loads of one fragment at
// (row0, col0) of a row-major float array with leading dimension ld.
inline std::vector<std::vector<uint32_t>> tf32_fragment_a_loads(int row0, int col0, int ld) {
  std::vector<std::vector<uint32_t>> loads(4, std::vector<uint32_t>(32));
  for (int reg = 0; reg < 4; ++reg)
    for (int lane = 0; lane < 32; ++lane) {
      const int row = row0 + lane / 4 + 8 * (reg % 2), col = col0 + lane % 4 + 4 * (reg / 2);
      loads[reg][lane] = static_cast<uint32_t>((row * ld + col) * 4);
    }
  return loads;
}
inline std::vector<std::vector<uint32_t>> tf32_fragment_b_loads(int row0, int col0, int ld) {
  std::vector<std::vector<uint32_t>> loads(4, std::vector<uint32_t>(32));
  for (int reg = 0; reg < 4; ++reg)  // registers 0, 1: columns 0..7; 2, 3: columns 8..15
    for (int lane = 0; lane < 32; ++lane) {
      const int row = row0 + lane % 4 + 4 * (reg % 2), col = col0 + lane / 4 + 8 * (reg / 2);
      loads[reg][lane] = static_cast<uint32_t>((row * ld + col) * 4);
    }
  return loads;
}

}  // namespace hg::cuda::gemm
