#pragma once
// Chapter 05 exercise: what one tensor-core instruction computes, and a GEMM made of them.
//
// 1. mma_16x16x16(A, B, C, D): D = A·B + C for one 16×16×16 tile, as a WMMA mma_sync with
//    F16 inputs and an F32 accumulator computes it: A (16, 16) and B (16, 16) F16, C and D
//    (16, 16) F32, all row-major. The order of the additions is this chapter's emulation
//    order ("## Why the CPU emulation matches"): each D[i][j] starts from C[i][j] and adds
//    the 16 products of k = 0, 1, ..., 15 in turn. C and D may be the same array
//    (acc = a·b + acc, as mma_sync(acc, a, b, acc) is used).
//
// 2. tiled_gemm(M, N, K, A, B, C): C (M, N) F32 = A (M, K) F16 · B (K, N) F16, the way rung 05
//    does it: one 16×16 tile of C at a time, its accumulator starting at zero and carried
//    through the K/16 tiles of A's rows and B's columns in order, calling mma_16x16x16 for
//    each. M, N, K are multiples of 16. Row-major; lda = K, ldb = N, ldc = N.
//
// exercise.cpp is yours; `./lab check 05` compares both bit for bit.
#include "framework/dtype/half.h"

void mma_16x16x16(const hg::half* A, const hg::half* B, const float* C, float* D);
void tiled_gemm(int M, int N, int K, const hg::half* A, const hg::half* B, float* C);
