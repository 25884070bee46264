#pragma once
// The three rungs of the linear-solver ladder on a dense d x d matrix, with the buffers they
// need kept across calls. The SVD workspace is sized only when that rung is first reached.

#include <concepts>
#include <cstddef>
#include <vector>

#include "blas.hpp"
#include "rh/ops.hpp"

namespace rh::cpu {

template <std::floating_point T>
class DenseSolver {
 public:
  void resize(std::size_t dim);

  // H is row-major d x d. Each rung leaves H untouched and writes x only.
  SolveAttempt cholesky(const T* H, const T* rhs, T* x);
  SolveAttempt lu(const T* H, const T* rhs, T* x);
  // Singular values <= rcond * sigma_max count as zero; returns the rank kept.
  std::size_t min_norm(const T* H, const T* rhs, double rcond, T* x);
  // More right-hand sides (d x columns, column-major) with the factorization the last accepted
  // cholesky() or lu() left (several columns, one factorization: the drift test's J~^-1 A).
  void cholesky_again(const T* rhs, T* x, std::size_t columns = 1);
  void lu_again(const T* rhs, T* x, std::size_t columns = 1);
  // C = A B^T, all d x d row-major (BLAS GEMM; the drift test's A J~^-1 A).
  void multiply_transposed(const T* A, const T* B, T* C) const;

 private:
  T one_norm(const T* H) const;
  void load_column_major(const T* H);

  std::size_t dim_ = 0;
  std::vector<T> factor_;
  std::vector<T> condition_work_;
  std::vector<blas::lapack_index> condition_iwork_;
  std::vector<blas::lapack_index> pivots_;
  std::vector<T> singular_values_;  // the SVD buffers stay empty until first needed
  std::vector<T> svd_work_;
  std::vector<blas::lapack_index> svd_iwork_;
};

extern template class DenseSolver<float>;
extern template class DenseSolver<double>;

}  // namespace rh::cpu
