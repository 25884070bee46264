#pragma once
// The host side of factorization="qr" (shared/spec/method.md, contract v4) that every engine
// shares: what is done with the (d+1) or (d+2) square triangle [R_H | q (| q_y)] once an engine
// has reduced its stacked rows to it (the CPU engine with LAPACK's tpqrt over row blocks, the CUDA
// engine with cuSOLVER's geqrf), and the history's rows [R~ S | z~] that go under the batch's.
// Everything here is O(d^3) on d x d matrices, on the host, with LAPACK (trtrs, trcon, gesvd,
// tpqrt), so the rung, rcond and the new (R~, z~) come out of one implementation.
//
// Layouts: triangles are column-major n x n (ld = n), d the coefficients, the columns of the
// first d equilibrated by `scales` (the stacked rows' column j was multiplied by scales[j]).

#include <concepts>
#include <cstddef>
#include <span>
#include <vector>

#include "rh/ops.hpp"

namespace rh::cpu {

// tpqrt's block size for a triangle of `columns` columns.
std::size_t reflector_block(std::size_t columns);

// Throws a logic error for LAPACK's negative info (an argument error: a bug, not the data).
void check_lapack(long long info, const char* routine);

// s_j = 1/sqrt(squares[j]) as the ladder's equilibration_scales takes H_jj (1 where that is not
// a finite positive normal number): squares are the stacked rows' columns' sums of squares.
template <std::floating_point T>
std::vector<T> column_scales(const std::vector<double>& squares);

// squares[j] += sum_i R~_ij^2: the history rows' share of the column sums (R~ d x d row-major).
template <std::floating_point T>
void add_history_squares(std::span<const T> factor, std::size_t d, std::vector<double>& squares);

// The history's d rows under the batch's, into `rows` (column-major, leading dimension ld, n
// columns; rows d.. of it untouched): [R~ S | z~] for the information update, or for a Newton step
// (history_residual = R~ beta - z~ at the current point, not null) [R~ S | z~ - R~ beta | z~].
template <std::floating_point T>
void history_rows(std::span<const T> factor, std::span<const T> vector,
                  const double* history_residual, const T* scales, std::size_t d, std::size_t n,
                  T* rows, std::size_t ld);

// The triangle of [triangle; rows] into `triangle` (n x n) by tpqrt; rows is m x n column-major
// (ld m) and is overwritten; reflectors and work hold reflector_block(n) * n entries each.
template <std::floating_point T>
void stack_below(T* triangle, std::size_t n, T* rows, std::size_t m, T* reflectors, T* work);

// A non-finite triangle has no usable step, and LAPACK's SVD must not see it (it can loop
// forever on one: rh/ladder.hpp): NumericalError naming the dtype.
template <std::floating_point T>
void require_finite_triangle(std::span<const T> triangle);

// The square-root Newton step from the step's triangle [R_H | q | q_y] ((d+2) x (d+2), modified
// in place when a ridge adds its rows) and the linear term c (float64, the outside rows' share):
// the minimizer of 1/2 ||R_H t - q||^2 - c^T t into out (d entries), with the rung (qr, or svd
// when R_H is rank-deficient: its minimum-norm step), trcon's rcond squared and the rank kept.
// With ridge > 0 the undamped factor decides the rank first; a full-rank one gets the rows
// sqrt(ridge) I stacked under it.
template <std::floating_point T>
SquareRootStep triangle_step(T* stacked, std::size_t n, std::size_t d, std::vector<T> scales,
                             const std::vector<double>& linear, double ridge, T* out);

// The information update's new (R~, z~) from the final point's triangle (`stacked`, n x n, its
// right-hand side in column rhs) and linear term c: R~ = R_H in the data's units, z~ = q +
// R_H^-T c (minimum-norm when R_H is rank-deficient), rows of a negative diagonal entry negated so
// the diagonal is >= 0. factor is d x d row-major, vector d.
template <std::floating_point T>
void triangle_information(const T* stacked, std::size_t n, std::size_t rhs, std::size_t d,
                          std::vector<T> scales, const std::vector<double>& linear, T* factor,
                          T* vector);

}  // namespace rh::cpu
