#pragma once
// Row-by-row dot products x_i . v over the rows of a row-major X with few columns (the
// residuals y - X beta, the projections X s): what a GEMV does, in an order of our own that
// is the same on every CPU. OpenBLAS's GEMV on 16-32 columns ran at a quarter of the kernel
// below on the engine's batches (a short dot product per row, then a reduction per row).
//
// The order, for every variant: the columns padded with zeros to a multiple of 8 (v too);
// lane k (k < 8) sums its columns j = 8m + k by fused multiply-adds in order of m from +0;
// then v_k = s_k + s_(k+4) (k < 4) and the row's dot is (v_0 + v_1) + (v_2 + v_3). The AVX2 + FMA
// variant (row_dots_avx2.cpp) computes exactly this; the portable one spells it out with
// std::fma, so the bits never depend on the CPU.
//
// And the other way, the score X^T s of an evaluation pass (add_weighted_rows): partial_j takes
// one fused multiply-add per row, partial_j <- fma(x_ij, s_i, partial_j), rows in order. Each
// column's chain is its own, so a block's partial has the same bits however its rows are cut into
// calls, and the AVX2 + FMA variant (columns in register blocks, rows inner) computes exactly the
// portable loop. OpenBLAS's GEMV ran a chunk of 1,024 x 32 from cache at about a third of this
// rate (~13 % of a steady streaming batch); BatchOps uses it on the large batches (where it says
// why not on the small ones).

#include <concepts>
#include <cstddef>

namespace rh::cpu {

// out[i] = x_i . v for rows [0, rows) of X (row-major, `features` columns), v of `features`.
template <std::floating_point T>
void row_dots(const T* X, std::size_t rows, std::size_t features, const T* v, T* out);

// row_dots, and in the same read of X squares[i] = x_i . x_i in the same order (the squared
// norms that steps by expansion bound with: the products of a pass that reads X from memory
// leave room for them).
template <std::floating_point T>
void row_dots_and_squares(const T* X, std::size_t rows, std::size_t features, const T* v, T* out,
                          T* squares);

// partial[j] += sum_i s[i] x_ij over rows [0, rows), j < features, in the order above.
template <std::floating_point T>
void add_weighted_rows(const T* X, std::size_t rows, std::size_t features, const T* s,
                       T* partial);

namespace detail {
// The portable variant (every CPU; the order spelled out with std::fma).
template <std::floating_point T>
void row_dots_portable(const T* X, std::size_t rows, std::size_t features, const T* v, T* out);
template <std::floating_point T>
void row_dots_and_squares_portable(const T* X, std::size_t rows, std::size_t features, const T* v,
                                   T* out, T* squares);
// The AVX2 + FMA variants: call only where the CPU has both (gram::cpu_has_avx2_fma()).
void row_dots_avx2(const double* X, std::size_t rows, std::size_t features, const double* v,
                   double* out);
void row_dots_avx2(const float* X, std::size_t rows, std::size_t features, const float* v,
                   float* out);
void row_dots_and_squares_avx2(const double* X, std::size_t rows, std::size_t features,
                               const double* v, double* out, double* squares);
void row_dots_and_squares_avx2(const float* X, std::size_t rows, std::size_t features,
                               const float* v, float* out, float* squares);
template <std::floating_point T>
void add_weighted_rows_portable(const T* X, std::size_t rows, std::size_t features, const T* s,
                                T* partial);
void add_weighted_rows_avx2(const double* X, std::size_t rows, std::size_t features,
                            const double* s, double* partial);
void add_weighted_rows_avx2(const float* X, std::size_t rows, std::size_t features,
                            const float* s, float* partial);
}  // namespace detail

}  // namespace rh::cpu
